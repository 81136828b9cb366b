import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { askHtml, escapeHtml, linkCitationMarkers, routeText } from '../src/common/askView';

describe('Ask view HTML', () => {
  it('links [n] markers outside code only', () => {
    const html = linkCitationMarkers('<p>See [1] and [9].</p><pre><code>x[1]</code></pre>', new Set([1]));
    assert.equal(html, '<p>See <a href="#" class="cite" data-n="1">[1]</a> and [9].</p><pre><code>x[1]</code></pre>');
  });

  it('numbered citations, escaped text, CSP with nonce', () => {
    const html = askHtml({
      question: 'What is <static shift>?',
      resp: {
        answer: 'x',
        confident: true,
        citations: [
          { n: 1, source_path: 'a.py', line_start: 3, line_end: 9, label: 'A', score: 2 },
          { n: 2, source_path: 'doc.pdf', page: 4, label: 'Manual' },
        ],
      },
      answerHtml: '<p>x [2]</p>',
      nonce: 'NONCE',
      cspSource: 'vscode-webview:',
    });
    assert.match(html, /<h1>What is &lt;static shift&gt;\?<\/h1>/);
    assert.match(html, /<li value="1"><a href="#" class="cite" data-n="1">A<\/a> <span class="loc">a.py:3-9<\/span>/);
    assert.match(html, /doc.pdf:1 \(page 4\)/);
    assert.match(html, /script-src 'nonce-NONCE'/);
    assert.doesNotMatch(html, /Low confidence/);
  });

  it('escapes', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('Ask view: the route taken', () => {
  const base = { nonce: 'N', cspSource: 'vscode-webview:', answerHtml: '<p>plan</p>' };

  it('names intent, workflows, line and scope', () => {
    assert.equal(
      routeText({ intent: 'workflow', workflow: 'qc', workflows: ['qc', 'denoise'], line: 'L18PLT', scope: 'science', confidence: 0.85 }),
      'route: workflow · workflow: qc → denoise · line: L18PLT · confidence 0.85',
    );
    assert.equal(
      routeText({ intent: 'question', scope: 'developer_tests', source: 'model' }),
      'route: question · developer search (tests included) · decided by the model',
    );
    assert.equal(routeText(undefined), '');
    const html = askHtml({
      ...base,
      question: 'run qc on L18PLT',
      resp: { answer: 'plan', confident: true, route: { intent: 'workflow', workflow: 'qc', line: 'L18PLT' } },
    });
    assert.match(html, /<p class="route">route: workflow · workflow: qc · line: L18PLT<\/p>/);
    assert.doesNotMatch(html, /Low confidence/);
  });

  it('shows the clarifying question as a question, not as low confidence', () => {
    const q = 'Which workflow should I run (qc, denoise), and on which survey line (L18PLT)?';
    const html = askHtml({
      ...base,
      answerHtml: '',
      question: 'process my data',
      resp: { answer: q, confident: false, clarifying_question: q, route: { intent: 'clarify', clarify_question: q } },
    });
    assert.match(html, /Before I answer, a question:<\/strong><p class="clarify">Which workflow should I run \(qc, denoise\), and on which survey line \(L18PLT\)\?<\/p><button id="refine">Answer…<\/button>/);
    assert.doesNotMatch(html, /Low confidence/);
    assert.match(html, /<p class="route">route: clarify<\/p>/);
  });
});
