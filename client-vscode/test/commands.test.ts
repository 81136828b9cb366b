import { strict as assert } from 'node:assert';
import { beforeEach, describe, it } from 'node:test';
import { AskView } from '../src/common/askView';
import {
  askCommand,
  evalCommand,
  queryCommand,
  searchSourceCommand,
  statsCommand,
  validateCommand,
} from '../src/common/commands';
import type { ServerApi } from '../src/common/server';
import { FALLBACK } from '../src/common/settings';
import { fakeOutput, flush, resetStubs, vs } from './helpers';

/** A fake server: records (command, arg), answers from a table or throws. */
function fakeServer(answers: Record<string, unknown | ((arg: any) => unknown)>, root = '/corpus') {
  const calls: [string, any][] = [];
  const output = fakeOutput();
  const server: ServerApi = {
    output,
    corpusRoot: () => root,
    options: () => ({ ...FALLBACK, resultCount: 7 }),
    refreshStats: async () => ({ root, n_chunks: 3, state: 'ready' }),
    async execute<T>(command: string, arg: object): Promise<T> {
      calls.push([command, arg]);
      const a = answers[command];
      if (a instanceof Error) {
        throw a;
      }
      return (typeof a === 'function' ? (a as (x: any) => unknown)(arg) : a) as T;
    },
  };
  return { server, calls, output };
}

describe('Query', () => {
  beforeEach(resetStubs);

  it('input box -> pycsamt.query {query, k} -> QuickPick -> opens the file at the line', async () => {
    const { server, calls } = fakeServer({
      'pycsamt.query': {
        query: 'static shift',
        results: [
          { rank: 1, kind: 'python_symbol', workflow: 'static_shift', label: 'StaticShiftAgent', source_path: 'pycsamt/agents/ss.py', line_start: 12, line_end: 40, score: 30 },
          { rank: 2, kind: 'recipe', label: 'Recipe', source_path: 'r.md', line_start: 1, score: 3 },
        ],
      },
    });
    vs.inputBoxAnswers.push('static shift');
    let shown: any[] = [];
    let opts: any;
    vs.quickPick = (items: any[], o: any) => {
      shown = items;
      opts = o;
      return items[0];
    };
    await queryCommand(server);
    assert.deepEqual(calls, [['pycsamt.query', { query: 'static shift', k: 7 }]]);
    assert.equal(shown.length, 2);
    assert.equal(shown[0].description, 'python_symbol · static_shift · 30.00');
    assert.equal(opts.title, 'pyCSAMT: 2 results for "static shift"');
    assert.equal(vs.opened.length, 1);
    assert.equal(vs.opened[0].uri.fsPath, '/corpus/pycsamt/agents/ss.py');
    assert.equal(vs.opened[0].line, 11); // 0-based in VS Code
  });

  it('cancelled input box: nothing is sent', async () => {
    const { server, calls } = fakeServer({});
    vs.inputBoxAnswers.push(undefined);
    await queryCommand(server);
    assert.equal(calls.length, 0);
  });

  it('no results: an information message', async () => {
    const { server } = fakeServer({ 'pycsamt.query': { results: [] } });
    await queryCommand(server, { query: 'zzz' });
    assert.equal(vs.messages[0].level, 'info');
    assert.match(vs.messages[0].text, /no results for "zzz"/);
  });

  it('server errors are shown clearly', async () => {
    const { server, output } = fakeServer({ 'pycsamt.query': new Error('Invalid params: k must be positive') });
    await queryCommand(server, { query: 'x', k: -1 });
    assert.equal(vs.messages[0].level, 'error');
    assert.equal(vs.messages[0].text, 'pyCSAMT: Query failed: Invalid params: k must be positive');
    assert.deepEqual(vs.messages[0].items, ['Show Output']);
    assert.match(output.lines.join('\n'), /Query failed/);
  });
});

describe('Ask', () => {
  beforeEach(resetStubs);

  it('pycsamt.ask {question, k} -> webview with citations; a citation opens its source', async () => {
    const { server, calls } = fakeServer({
      'pycsamt.ask': {
        answer: 'Use `StaticShiftAgent` [1].',
        confident: true,
        clarifying_question: null,
        citations: [{ n: 1, source_path: 'pycsamt/agents/ss.py', line_start: 12, line_end: 40, page: null, label: 'StaticShiftAgent', score: 30, snippet: 'class StaticShiftAgent' }],
      },
    });
    vs.commandResults['markdown.api.render'] = (md: string) => `<p>${md.replace('`StaticShiftAgent`', '<code>StaticShiftAgent</code>')}</p>`;
    const opened: any[] = [];
    const view = new AskView({ openCitation: (c, root) => void opened.push([c.n, root]), refine: () => undefined });
    vs.inputBoxAnswers.push('How do I correct static shift?');
    await askCommand(server, view);
    assert.deepEqual(calls, [['pycsamt.ask', { question: 'How do I correct static shift?', k: 7 }]]);
    const panel = vs.webviews[0];
    assert.match(panel.webview.html, /<code>StaticShiftAgent<\/code>/);
    assert.match(panel.webview.html, /<a href="#" class="cite" data-n="1">\[1\]<\/a>/);
    assert.match(panel.webview.html, /pycsamt\/agents\/ss.py:12-40/);
    panel._receive({ type: 'open', n: 1 });
    assert.deepEqual(opened, [[1, '/corpus']]);
  });

  it('low confidence shows the clarifying question', async () => {
    const { server } = fakeServer({
      'pycsamt.ask': { answer: '', confident: false, clarifying_question: 'Do you mean CSAMT or MT static shift?', citations: [] },
    });
    const refined: string[] = [];
    const view = new AskView({ openCitation: () => undefined, refine: (q) => void refined.push(q) });
    await askCommand(server, view, { question: 'shift?' });
    const html = vs.webviews[0].webview.html;
    assert.match(html, /Low confidence/);
    assert.match(html, /Do you mean CSAMT or MT static shift\?/);
    vs.webviews[0]._receive({ type: 'refine' });
    assert.deepEqual(refined, ['shift?']);
  });
});

describe('Search Source', () => {
  beforeEach(resetStubs);

  it('pycsamt.searchSource {query, includeTests}; the button re-runs with tests', async () => {
    const { server, calls } = fakeServer({
      'pycsamt.searchSource': (arg: any) => ({
        results: [
          { path: arg.includeTests ? 'tests/test_ss.py' : 'pycsamt/ss.py', line_start: 5, line_end: 9, symbol: 'estimate_ss_ama', excerpt: 'def estimate_ss_ama()', evidence: { sha256: 'feedfacecafebeef00' } },
        ],
        limitation: 'bounded search',
      }),
    });
    const titles: string[] = [];
    // first show: trigger the button, then accept the refreshed first item
    vs.quickPick = async (items: any[], qp: any, ev: any) => {
      titles.push(qp.title);
      assert.equal(qp.placeholder, 'Note: bounded search');
      ev.button.fire(qp.buttons[0]);
      await flush(10);
      assert.equal(qp.items[0].label, '$(file-code) tests/test_ss.py:5-9');
      return qp.items[0];
    };
    await searchSourceCommand(server, { query: 'estimate_ss_ama' });
    assert.deepEqual(calls, [
      ['pycsamt.searchSource', { query: 'estimate_ss_ama', includeTests: false }],
      ['pycsamt.searchSource', { query: 'estimate_ss_ama', includeTests: true }],
    ]);
    assert.match(titles[0], /1 source match for "estimate_ss_ama"/);
    assert.equal(vs.opened[0].uri.fsPath, '/corpus/tests/test_ss.py');
    assert.equal(vs.opened[0].line, 4);
  });
});

describe('Run Eval, Show Index Stats, Validate Selection', () => {
  beforeEach(resetStubs);

  it('eval: {} -> metrics table in the output channel', async () => {
    const { server, calls, output } = fakeServer({ 'pycsamt.eval': { metrics: { 'recall@5': 0.75, mrr: 0.5 } } });
    await evalCommand(server);
    assert.deepEqual(calls, [['pycsamt.eval', {}]]);
    const text = output.lines.join('\n');
    assert.match(text, /metric\s+value/);
    assert.match(text, /recall@5\s+0\.750/);
    assert.ok(output.shown);
    assert.equal(vs.messages[0].text, 'pyCSAMT eval: recall@5 0.750, mrr 0.500');
  });

  it('stats: {} -> summary message and block', async () => {
    const { server, calls, output } = fakeServer({ 'pycsamt.stats': { n_chunks: 3, state: 'ready', root: '/corpus', fingerprint: 'ab' } });
    await statsCommand(server);
    assert.deepEqual(calls[0], ['pycsamt.stats', {}]);
    assert.match(vs.messages[0].text, /pyCSAMT index: ready · 3 chunks/);
    assert.match(output.lines.join('\n'), /fingerprint\s+ab/);
  });

  it('validate: the selection as {code}', async () => {
    const { server, calls } = fakeServer({
      'pycsamt.validate': { ok: false, syntax_ok: true, errors: ["'pycsamt' has no attribute or submodule 'static_shift'"], warnings: [], checked: 1 },
    });
    const code = 'from pycsamt import static_shift';
    vs.activeTextEditor = {
      selection: { isEmpty: false },
      document: { getText: (sel?: unknown) => (sel ? code : `${code}\nprint(1)\n`) },
    };
    await validateCommand(server);
    assert.deepEqual(calls, [['pycsamt.validate', { code }]]);
    assert.equal(vs.messages[0].level, 'error');
    assert.match(vs.messages[0].text, /1 error: 'pycsamt' has no attribute or submodule 'static_shift'/);
  });
});
