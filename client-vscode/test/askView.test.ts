import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { askHtml, escapeHtml, linkCitationMarkers } from '../src/common/askView';

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
