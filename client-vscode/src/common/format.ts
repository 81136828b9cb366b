/**
 * Pure formatting of server results for the UI: QuickPick items, tables for the
 * output channel, one-line summaries. No VS Code imports here.
 */
import * as path from 'node:path';
import type {
  Citation,
  EvalResponse,
  QueryResponse,
  QueryResult,
  SearchSourceResponse,
  SourceHit,
  StatsResponse,
  ValidateResponse,
  ValidationProblem,
} from './protocol';

// --- arguments -----------------------------------------------------------------

export function queryArgs(query: string, k: number): { query: string; k: number } {
  return { query: query.trim(), k };
}
/** The server's range for `pycsamt.ask`'s `k` (evidence chunks): `resultCount` goes up to 200. */
export const ASK_MAX_K = 50;
/** Ask's arguments; `k` is clamped to the server's 1-50 so a large `resultCount` cannot fail every Ask. */
export function askArgs(question: string, k: number): { question: string; k: number } {
  return { question: question.trim(), k: Math.max(1, Math.min(ASK_MAX_K, Math.trunc(k))) };
}
export function searchSourceArgs(query: string, includeTests: boolean): { query: string; includeTests: boolean } {
  return { query: query.trim(), includeTests };
}
export function validateArgs(code: string): { code: string } {
  return { code };
}

// --- locations -----------------------------------------------------------------

/** Where a result lives: a URI string from the server, or an absolute file path. */
export type SourceLocation = { uri: string; line: number } | { file: string; line: number };

function isAbsolute(p: string): boolean {
  return path.isAbsolute(p) || path.win32.isAbsolute(p);
}

/**
 * Prefer the server's `uri`; else an absolute `source_path`; else `source_path`
 * relative to the corpus root (from the result or from `pycsamt.stats`).
 */
export function resolveLocation(
  item: { uri?: string; source_path?: string; path?: string; line_start?: number },
  root: string | undefined,
): SourceLocation | undefined {
  const line = typeof item.line_start === 'number' && item.line_start > 0 ? item.line_start : 1;
  if (item.uri) {
    return { uri: item.uri, line };
  }
  const p = item.source_path ?? item.path;
  if (!p) {
    return undefined;
  }
  if (isAbsolute(p)) {
    return { file: p, line };
  }
  if (!root) {
    return undefined;
  }
  return { file: path.join(root, ...p.split('/')), line };
}

export function lineSpan(start?: number, end?: number): string {
  if (typeof start !== 'number') {
    return '';
  }
  return typeof end === 'number' && end > start ? `${start}-${end}` : `${start}`;
}

function fmtScore(score: unknown): string {
  return typeof score === 'number' && Number.isFinite(score) ? score.toFixed(2) : '';
}

function firstLine(text: string | undefined, max = 120): string {
  const line = (text ?? '').split('\n').map((s) => s.trim()).find((s) => s.length > 0) ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

// --- Query -----------------------------------------------------------------------

export interface ResultPickItem<T> {
  label: string;
  description: string;
  detail: string;
  item: T;
}

const KIND_ICONS: Record<string, string> = {
  python_symbol: '$(symbol-class)',
  python_method: '$(symbol-method)',
  module_doc: '$(symbol-namespace)',
  doc_section: '$(book)',
  recipe: '$(lightbulb)',
  pdf_page: '$(file-pdf)',
};

export function queryPickItems(resp: QueryResponse): ResultPickItem<QueryResult>[] {
  return (resp.results ?? []).map((r) => {
    const name = r.label || r.symbol || r.id || r.source_path || '(unnamed)';
    const icon = KIND_ICONS[r.kind ?? ''] ?? '$(file)';
    const description = [r.kind, r.workflow, fmtScore(r.score)].filter((s) => s !== undefined && s !== null && s !== '').join(' · ');
    const where = r.source_path ? `${r.source_path}:${lineSpan(r.line_start, r.line_end) || '1'}` : (r.uri ?? '');
    return { label: `${icon} ${name}`, description, detail: where, item: r };
  });
}

// --- Search Source ----------------------------------------------------------------

export function shortHash(h: unknown, n = 12): string {
  return typeof h === 'string' && h.length > 0 ? h.slice(0, n) : '';
}

/** `name (kind)` of a search hit's symbol, whatever shape it came in. */
export function sourceSymbolText(sym: SourceHit['symbol']): string {
  if (typeof sym === 'string') {
    return sym;
  }
  if (sym && typeof sym === 'object' && typeof sym.name === 'string') {
    return typeof sym.kind === 'string' ? `${sym.name} (${sym.kind})` : sym.name;
  }
  return '';
}

/** Warnings the evidence carries: a file edited during the search, a version mismatch. */
function evidenceWarnings(ev: SourceHit['evidence']): string[] {
  const out = new Set<string>(Array.isArray(ev?.flags) ? ev.flags.map(String) : []);
  if (ev?.changed_during_search) {
    out.add('changed during the search');
  }
  if (ev?.version_mismatch) {
    out.add('checkout differs from the package version');
  }
  return [...out];
}

/** The excerpt's line at the match (else its first non-empty line), trimmed. */
function matchedLine(h: SourceHit): string {
  const lines = (h.excerpt ?? '').split('\n');
  if (typeof h.line === 'number' && typeof h.excerpt_line_start === 'number') {
    const at = lines[h.line - h.excerpt_line_start]?.trim();
    if (at) {
      return firstLine(at);
    }
  }
  return firstLine(h.excerpt);
}

export function sourcePickItems(resp: SearchSourceResponse): ResultPickItem<SourceHit>[] {
  return (resp.results ?? []).map((h) => {
    const where = `${h.path ?? h.uri ?? '?'}:${lineSpan(h.line_start, h.line_end) || '1'}`;
    const hash = shortHash(h.evidence?.sha256);
    const warn = evidenceWarnings(h.evidence).map((w) => `$(warning) ${w}`);
    const detail = [hash ? `sha256 ${hash}` : '', ...warn, matchedLine(h)].filter(Boolean).join(' · ');
    return { label: `$(file-code) ${where}`, description: sourceSymbolText(h.symbol), detail, item: h };
  });
}

// --- Ask -------------------------------------------------------------------------

export function citationLocationText(c: Citation): string {
  const page = typeof c.page === 'number' ? ` (page ${c.page})` : '';
  return `${c.source_path ?? c.uri ?? '?'}:${lineSpan(c.line_start, c.line_end) || '1'}${page}`;
}

// --- tables ----------------------------------------------------------------------

export function formatNumber(v: unknown): string {
  if (typeof v === 'number') {
    if (Number.isInteger(v)) {
      return String(v);
    }
    return Number.isFinite(v) ? v.toFixed(3) : String(v);
  }
  if (v === null || v === undefined) {
    return '-';
  }
  if (typeof v === 'object') {
    return JSON.stringify(v);
  }
  return String(v);
}

/** A plain-text table with a header rule; numbers right-aligned. */
export function renderTable(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = header.map((_, i) => i > 0 && rows.every((r) => /^-?[\d.]+%?$|^-$/.test(r[i] ?? '')));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (numeric[i] ? (c ?? '').padStart(widths[i]) : (c ?? '').padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(fmt)];
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isScalar(v: unknown): boolean {
  return v === null || ['string', 'number', 'boolean'].includes(typeof v);
}

/** dict -> table: dict of scalars as metric/value rows, dict of dicts as a matrix. */
export function dictTable(d: Record<string, unknown>, keyHeader = 'metric'): string[] {
  const entries = Object.entries(d);
  const nested = entries.filter(([, v]) => isPlainObject(v));
  const flat = entries.filter(([, v]) => !isPlainObject(v));
  const out: string[] = [];
  if (flat.length) {
    out.push(...renderTable([keyHeader, 'value'], flat.map(([k, v]) => [k, formatNumber(v)])));
  }
  if (nested.length) {
    const cols: string[] = [];
    for (const [, v] of nested) {
      for (const [k, vv] of Object.entries(v as Record<string, unknown>)) {
        if (isScalar(vv) && !cols.includes(k)) {
          cols.push(k);
        }
      }
    }
    if (out.length) {
      out.push('');
    }
    out.push(
      ...renderTable(
        ['', ...cols],
        nested.map(([k, v]) => [k, ...cols.map((c) => formatNumber((v as Record<string, unknown>)[c]))]),
      ),
    );
  }
  return out;
}

/** Run Eval: the metrics table first, then the other fields. */
/**
 * The overall metrics of an eval result: the server's `pycsamt.eval` answers
 * `{k, suites: {name: {metrics, n, ...}}, overall: {metrics, n, records, ...},
 * reproducibility}`; a flat `{metrics}` is accepted too.
 */
export function evalMetrics(resp: EvalResponse): Record<string, unknown> | undefined {
  if (isPlainObject(resp.metrics)) {
    return resp.metrics;
  }
  const overall = resp.overall;
  return isPlainObject(overall) && isPlainObject(overall.metrics) ? overall.metrics : undefined;
}

/** `value (n)` cells: the metric and how many records it was scored on. */
function scoredCells(part: Record<string, unknown>): Record<string, string> {
  const m = isPlainObject(part.metrics) ? part.metrics : {};
  const n = isPlainObject(part.n) ? part.n : {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) {
    out[k] = typeof n[k] === 'number' ? `${formatNumber(v)} (${n[k]})` : formatNumber(v);
  }
  return out;
}

const MAX_FAILURES = 30;

/** Why one eval record failed (the reasons the server's text report gives). */
export function evalRecordFailures(r: Record<string, unknown>): string[] {
  const why: string[] = [];
  const list = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
  if (list(r.missing_symbols).length) {
    why.push(`missing ${list(r.missing_symbols).join(', ')}`);
  }
  if (r.workflow_correct === false) {
    why.push(`workflow ${String(r.inferred_workflow)} != ${String(r.expected_workflow)}`);
  }
  if (r.workflow_in_topk === false) {
    const target = r.expected_retrieval_workflow ?? r.expected_workflow;
    why.push(`${String(target)} not in top-k [${list(r.retrieved_workflows).join(',') || 'none'}]`);
  }
  if (list(r.test_hits).length) {
    why.push(`${list(r.test_hits).length} test hit(s)`);
  }
  if (list(r.violations).length) {
    why.push(`guard: ${list(r.violations).join('; ')}`);
  }
  if (typeof r.error === 'string' && r.error) {
    why.push(`error: ${r.error}`);
  }
  return why;
}


export function formatEvalReport(resp: EvalResponse): string[] {
  const done = new Set<string>(['kind']); // keys rendered by a section below
  const k = typeof resp.k === 'number' ? ` at k=${resp.k}` : '';
  if (k) {
    done.add('k');
  }
  const out: string[] = [`pyCSAMT eval${k}`, ''];
  const metrics = evalMetrics(resp);
  const overall = isPlainObject(resp.overall) ? resp.overall : undefined;
  if (overall && isPlainObject(overall.metrics)) {
    const cells = scoredCells(overall);
    out.push(...renderTable(['metric', 'value (n scored)'], Object.entries(cells).map(([a, b]) => [a, b])));
    done.add('overall');
  } else if (metrics) {
    out.push(...dictTable(metrics));
    done.add('metrics');
  } else {
    out.push('(no metrics in the result)');
  }
  const suites = resp.suites;
  if (isPlainObject(suites) && Object.values(suites).some((v) => isPlainObject(v) && isPlainObject(v.metrics))) {
    const rows: Record<string, unknown> = {};
    for (const [name, part] of Object.entries(suites)) {
      if (isPlainObject(part)) {
        rows[name] = { records: part.n_records, ...scoredCells(part) };
      }
    }
    out.push('', 'per suite (value, records scored):', ...dictTable(rows, 'suite').map((l) => `  ${l}`));
    done.add('suites');
  }
  const records = overall && Array.isArray(overall.records) ? overall.records : [];
  const bad = records
    .filter(isPlainObject)
    .map((r) => [r, evalRecordFailures(r)] as const)
    .filter(([, why]) => why.length > 0);
  if (records.length) {
    out.push('', `records: ${records.length}, with a failure: ${bad.length}`);
    for (const [r, why] of bad.slice(0, MAX_FAILURES)) {
      const tag = typeof r.suite === 'string' ? `[${r.suite}] ` : '';
      out.push(`  - ${tag}${JSON.stringify(r.query)}: ${why.join(' | ')}`);
    }
    if (bad.length > MAX_FAILURES) {
      out.push(`  ... ${bad.length - MAX_FAILURES} more`);
    }
  }
  const repro = resp.reproducibility;
  if (isPlainObject(repro)) {
    done.add('reproducibility');
    out.push('', 'reproducibility:');
    for (const [key, v] of Object.entries(repro)) {
      if (isScalar(v)) {
        out.push(`  ${key}: ${formatNumber(v)}`);
      } else if (isPlainObject(v) && Object.values(v).every(isScalar)) {
        out.push(`  ${key}: ${Object.entries(v).map(([a, b]) => `${a}=${formatNumber(b)}`).join(', ')}`);
      } else if (Array.isArray(v)) {
        out.push(`  ${key}: ${v.length} item${v.length === 1 ? '' : 's'}`);
      }
    }
  }
  for (const [key, v] of Object.entries(resp)) {
    if (done.has(key)) {
      continue;
    }
    if (isScalar(v)) {
      out.push('', `${key}: ${formatNumber(v)}`);
    } else if (isPlainObject(v) && Object.keys(v).length > 0) {
      out.push('', `${key}:`, ...dictTable(v, key).map((l) => `  ${l}`));
    } else if (Array.isArray(v)) {
      out.push('', `${key}: ${v.length} item${v.length === 1 ? '' : 's'}`);
    }
  }
  // the output channel scrolls to its end: finish with the headline
  out.push('', evalSummary(resp));
  return out;
}

/** The headline metrics first (those the project's quality bar names), numbers only. */
const HEADLINE = ['symbol_recall', 'workflow_in_topk', 'no_test_in_topk', 'hallucination_violations'];

export function evalSummary(resp: EvalResponse): string {
  const m = evalMetrics(resp) ?? {};
  const numeric = Object.entries(m).filter(([, v]) => typeof v === 'number');
  const first = HEADLINE.filter((k) => typeof m[k] === 'number').map((k) => [k, m[k]] as const);
  const rest = numeric.filter(([k]) => !HEADLINE.includes(k));
  const parts = [...first, ...rest].slice(0, 4).map(([k, v]) => `${k} ${formatNumber(v)}`);
  return parts.length ? `pyCSAMT eval: ${parts.join(', ')}` : 'pyCSAMT eval finished';
}

// --- stats -----------------------------------------------------------------------

function countsLine(d: unknown): string {
  if (!isPlainObject(d)) {
    return '-';
  }
  return Object.entries(d)
    .sort((a, b) => Number(b[1]) - Number(a[1]))
    .map(([k, v]) => `${k} ${formatNumber(v)}`)
    .join(' · ');
}

export function formatStats(s: StatsResponse): string[] {
  const rows: string[][] = [
    ['state', String(s.state ?? '-')],
    ['chunks', formatNumber(s.n_chunks)],
    ['root', String(s.root ?? '-')],
    ['fingerprint', String(s.fingerprint ?? '-')],
    ['by kind', countsLine(s.by_kind)],
    ['by workflow', countsLine(s.by_workflow)],
  ];
  const shown = new Set(['state', 'n_chunks', 'root', 'fingerprint', 'by_kind', 'by_workflow']);
  for (const [k, v] of Object.entries(s)) {
    if (!shown.has(k)) {
      rows.push([k, isPlainObject(v) ? countsLine(v) : formatNumber(v)]);
    }
  }
  const w = Math.max(...rows.map((r) => r[0].length));
  return ['pyCSAMT index', ...rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`)];
}

export function statsSummary(s: StatsResponse): string {
  const n = typeof s.n_chunks === 'number' ? `${s.n_chunks.toLocaleString('en-US')} chunks` : 'no chunks';
  const fp = shortHash(s.fingerprint, 12);
  return `pyCSAMT index: ${s.state ?? 'unknown'} · ${n}${fp ? ` · fingerprint ${fp}` : ''}${s.root ? ` · ${s.root}` : ''}`;
}

// --- validate --------------------------------------------------------------------

export function problemText(p: ValidationProblem): string {
  if (typeof p === 'string') {
    return p;
  }
  const msg = p.message ?? p.msg ?? JSON.stringify(p);
  const line = p.line ?? p.lineno;
  return typeof line === 'number' ? `line ${line}: ${msg}` : msg;
}

export interface ValidationReport {
  level: 'info' | 'warning' | 'error';
  summary: string;
  details: string[];
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function formatValidation(r: ValidateResponse): ValidationReport {
  const errors = r.errors ?? [];
  const warnings = r.warnings ?? [];
  const checked = Array.isArray(r.checked) ? r.checked.length : typeof r.checked === 'number' ? r.checked : undefined;
  const checkedText = checked !== undefined ? `${plural(checked, 'import')} checked` : '';
  const details = [
    ...errors.map((e) => `error: ${problemText(e)}`),
    ...warnings.map((w) => `warning: ${problemText(w)}`),
  ];
  if (r.syntax_ok === false) {
    return {
      level: 'error',
      summary: `pyCSAMT: the selection is not valid Python${errors.length ? `: ${problemText(errors[0])}` : ''}`,
      details,
    };
  }
  if (errors.length) {
    const more = errors.length > 1 ? ` (+${errors.length - 1} more)` : '';
    return { level: 'error', summary: `pyCSAMT: ${plural(errors.length, 'error')}: ${problemText(errors[0])}${more}`, details };
  }
  if (warnings.length) {
    return {
      level: 'warning',
      summary: `pyCSAMT: no errors, ${plural(warnings.length, 'warning')}: ${problemText(warnings[0])}`,
      details,
    };
  }
  return { level: 'info', summary: `pyCSAMT: no problems${checkedText ? ` (${checkedText})` : ''}`, details };
}
