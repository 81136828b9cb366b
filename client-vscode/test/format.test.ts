import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  askArgs,
  dictTable,
  evalSummary,
  formatEvalReport,
  formatStats,
  formatValidation,
  queryArgs,
  queryPickItems,
  renderTable,
  resolveLocation,
  searchSourceArgs,
  sourcePickItems,
  statsSummary,
  validateArgs,
} from '../src/common/format';

const QUERY_RESPONSE = {
  query: 'static shift correction',
  results: [
    {
      rank: 1,
      id: 'pycsamt/processing/ss.py:10-80',
      kind: 'python_symbol',
      workflow: 'static_shift',
      label: 'StaticShiftAgent',
      symbol: 'pycsamt.agents.StaticShiftAgent',
      source_path: 'pycsamt/agents/static_shift.py',
      line_start: 10,
      line_end: 80,
      score: 31.4159,
      snippet: 'class StaticShiftAgent:\n    """Correct static shift."""',
    },
    {
      rank: 2,
      id: 'recipe:1',
      kind: 'recipe',
      workflow: null,
      label: 'Static shift recipe',
      symbol: null,
      source_path: 'assistant_recipes/static_shift.md',
      line_start: 1,
      line_end: 1,
      score: 12,
      snippet: '',
      uri: 'file:///srv/recipes/static_shift.md',
    },
  ],
};

describe('command arguments: one JSON object each', () => {
  it('maps inputs to the server\'s named fields', () => {
    assert.deepEqual(queryArgs('  static shift  ', 10), { query: 'static shift', k: 10 });
    assert.deepEqual(askArgs('How to correct static shift?', 5), { question: 'How to correct static shift?', k: 5 });
    assert.deepEqual(searchSourceArgs('estimate_ss_ama', true), { query: 'estimate_ss_ama', includeTests: true });
  });
  it('keeps Ask inside the server\'s k range whatever resultCount says', () => {
    assert.deepEqual(askArgs('q', 200), { question: 'q', k: 50 });
    assert.deepEqual(askArgs('q', 51), { question: 'q', k: 50 });
    assert.deepEqual(askArgs('q', 50), { question: 'q', k: 50 });
    assert.deepEqual(askArgs('q', 0), { question: 'q', k: 1 });
    assert.deepEqual(validateArgs('from pycsamt import static_shift\n'), { code: 'from pycsamt import static_shift\n' });
  });
});

describe('Query QuickPick items', () => {
  it('label, kind · workflow · score, path:line', () => {
    const items = queryPickItems(QUERY_RESPONSE);
    assert.equal(items.length, 2);
    assert.equal(items[0].label, '$(symbol-class) StaticShiftAgent');
    assert.equal(items[0].description, 'python_symbol · static_shift · 31.42');
    assert.equal(items[0].detail, 'pycsamt/agents/static_shift.py:10-80');
    assert.equal(items[1].label, '$(lightbulb) Static shift recipe');
    assert.equal(items[1].description, 'recipe · 12.00');
    assert.equal(items[1].detail, 'assistant_recipes/static_shift.md:1');
    assert.equal(items[0].item, QUERY_RESPONSE.results[0]);
  });

  it('tolerates sparse results', () => {
    const items = queryPickItems({ results: [{ id: 'x' }] });
    assert.equal(items[0].label, '$(file) x');
    assert.equal(items[0].description, '');
    assert.deepEqual(queryPickItems({}), []);
  });
});

describe('resolving a result to a location', () => {
  it('prefers the server\'s uri', () => {
    assert.deepEqual(resolveLocation(QUERY_RESPONSE.results[1], '/corpus'), { uri: 'file:///srv/recipes/static_shift.md', line: 1 });
  });
  it('joins source_path to the corpus root', () => {
    assert.deepEqual(resolveLocation(QUERY_RESPONSE.results[0], '/corpus'), {
      file: '/corpus/pycsamt/agents/static_shift.py',
      line: 10,
    });
  });
  it('keeps absolute paths, fails without a root', () => {
    assert.deepEqual(resolveLocation({ path: '/abs/x.py', line_start: 3 }, undefined), { file: '/abs/x.py', line: 3 });
    assert.equal(resolveLocation({ source_path: 'rel/x.py' }, undefined), undefined);
    assert.deepEqual(resolveLocation({ source_path: 'rel/x.py', line_start: 0 }, '/r'), { file: '/r/rel/x.py', line: 1 });
  });
});

describe('Search Source QuickPick items', () => {
  it('path:line, symbol and evidence hash', () => {
    const items = sourcePickItems({
      results: [
        {
          path: 'pycsamt/processing/corrections.py',
          line_start: 120,
          line_end: 160,
          symbol: 'estimate_ss_ama',
          excerpt: '\ndef estimate_ss_ama(z, freq, *, n_skin=3):\n    ...',
          evidence: { sha256: '0123456789abcdef0123456789abcdef', bytes: 100 },
        },
      ],
      limitation: 'bounded to 200 files',
    });
    assert.equal(items[0].label, '$(file-code) pycsamt/processing/corrections.py:120-160');
    assert.equal(items[0].description, 'estimate_ss_ama');
    assert.equal(items[0].detail, 'sha256 0123456789ab · def estimate_ss_ama(z, freq, *, n_skin=3):');
  });

  it('the server shape: symbol as {name, kind}, evidence flags shown', () => {
    // one result as `pycsamt-lsp search --json` printed it on the real corpus
    const items = sourcePickItems({
      results: [
        {
          path: 'pycsamt/assistant/tools/validation_tools.py',
          line_start: 24,
          line_end: 26,
          symbol: { name: 'validate_generated_code', kind: 'function', line_start: 24, line_end: 349 },
          line: 24,
          excerpt_line_start: 22,
          excerpt: '"""Validate code."""\n\ndef validate_generated_code(code, *, root=None, execute_fixture=False,\n',
          evidence: {
            sha256: '4ea8fe077a6ead492ee701db3bebe57a8d7e1552fcc7353b01d133a07680b29f',
            size_bytes: 15113,
            package_version: '2.6.4',
            version_mismatch: false,
            changed_during_search: true,
            flags: [],
          },
        },
      ],
    });
    assert.equal(items[0].label, '$(file-code) pycsamt/assistant/tools/validation_tools.py:24-26');
    assert.equal(items[0].description, 'validate_generated_code (function)');
    assert.equal(
      items[0].detail,
      'sha256 4ea8fe077a6e · $(warning) changed during the search · def validate_generated_code(code, *, root=None, execute_fixture=False,',
    );
  });
});

describe('tables', () => {
  it('right-aligns numeric columns', () => {
    assert.deepEqual(renderTable(['metric', 'value'], [['recall@5', '0.800'], ['mrr', '0.612']]), [
      'metric    value',
      '--------  -----',
      'recall@5  0.800',
      'mrr       0.612',
    ]);
  });

  it('eval: metrics table, matrices for nested suites, scalars after', () => {
    const lines = formatEvalReport({
      metrics: { 'recall@5': 0.8, mrr: 0.61234, n: 40 },
      per_suite: { static_shift: { 'recall@5': 1, mrr: 0.9 }, inversion: { 'recall@5': 0.5, mrr: 0.25 } },
      suites: ['a.jsonl', 'b.jsonl'],
      elapsed_s: 1.5,
    });
    const text = lines.join('\n');
    assert.match(text, /^pyCSAMT eval/);
    assert.match(text, /recall@5\s+0\.800/);
    assert.match(text, /mrr\s+0\.612/);
    assert.match(text, /n\s+40/);
    assert.match(text, /static_shift\s+1\s+0\.900/);
    assert.match(text, /suites: 2 items/);
    assert.match(text, /elapsed_s: 1\.500/);
  });

  it('eval: the real pycsamt.eval response (overall, suites, records, reproducibility)', () => {
    // a trimmed copy of what `pycsamt-lsp eval --json` printed on the real corpus
    const resp = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', '..', 'test', 'fixtures', 'eval-response.json'), 'utf8'),
    );
    const text = formatEvalReport(resp).join('\n');
    assert.match(text, /^pyCSAMT eval at k=10/);
    assert.doesNotMatch(text, /no metrics in the result/);
    assert.match(text, /symbol_recall\s+1 \(9\)/);
    assert.match(text, /workflow_in_topk\s+0\.939 \(98\)/);
    assert.match(text, /hallucination_violations\s+0 \(2\)/);
    assert.match(text, /per suite/);
    assert.match(text, /adversarial\.jsonl\s+13\s/);
    assert.match(text, /static_shift\.jsonl\s+5\s/);
    assert.match(text, /records: 3, with a failure: 1/);
    assert.match(text, /- \[inversion\.jsonl\] "prepare an Occam2D inversion": workflow inv2d != pre_inversion/);
    assert.match(text, /git_commit: [0-9a-f]{40}/);
    assert.match(text, /manifest: version=1, created=.*n_chunks=7862/);
    assert.match(text, /\npyCSAMT eval: symbol_recall 1, workflow_in_topk 0\.939, [^\n]*$/);
    assert.equal(
      evalSummary(resp),
      'pyCSAMT eval: symbol_recall 1, workflow_in_topk 0.939, no_test_in_topk 1, hallucination_violations 0',
    );
  });

  it('dict of dicts becomes a matrix', () => {
    const t = dictTable({ a: { x: 1, y: 2 }, b: { x: 3 } });
    assert.deepEqual(t, ['   x  y', '-  -  -', 'a  1  2', 'b  3  -']);
  });
});

describe('stats', () => {
  const stats = {
    n_chunks: 1234,
    by_kind: { python_symbol: 800, doc_section: 34, recipe: 400 },
    by_workflow: { static_shift: 40 },
    fingerprint: 'abcdef0123456789abcdef',
    root: '/corpus',
    state: 'ready',
    profile: 'pycsamt',
  };
  it('block for the output channel', () => {
    const text = formatStats(stats).join('\n');
    assert.match(text, /chunks\s+1234/);
    assert.match(text, /by kind\s+python_symbol 800 · recipe 400 · doc_section 34/);
    assert.match(text, /profile\s+pycsamt/);
  });
  it('one-line summary', () => {
    assert.equal(statsSummary(stats), 'pyCSAMT index: ready · 1,234 chunks · fingerprint abcdef012345 · /corpus');
  });
});

describe('validation report', () => {
  it('errors first, with a count', () => {
    const r = formatValidation({
      ok: false,
      syntax_ok: true,
      errors: ["'pycsamt' has no attribute or submodule 'static_shift'", { message: 'x', line: 3 }],
      warnings: [],
      checked: 2,
    });
    assert.equal(r.level, 'error');
    assert.equal(r.summary, "pyCSAMT: 2 errors: 'pycsamt' has no attribute or submodule 'static_shift' (+1 more)");
    assert.deepEqual(r.details, ["error: 'pycsamt' has no attribute or submodule 'static_shift'", 'error: line 3: x']);
  });
  it('syntax errors, warnings, clean', () => {
    assert.equal(formatValidation({ ok: false, syntax_ok: false, errors: ['invalid syntax'] }).summary, 'pyCSAMT: the selection is not valid Python: invalid syntax');
    assert.equal(formatValidation({ ok: true, syntax_ok: true, errors: [], warnings: ['maybe'], checked: 1 }).level, 'warning');
    assert.equal(formatValidation({ ok: true, syntax_ok: true, errors: [], warnings: [], checked: ['a', 'b'] }).summary, 'pyCSAMT: no problems (2 imports checked)');
  });
});
