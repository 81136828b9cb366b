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
export function askArgs(question: string, k: number): { question: string; k: number } {
  return { question: question.trim(), k };
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

export function sourcePickItems(resp: SearchSourceResponse): ResultPickItem<SourceHit>[] {
  return (resp.results ?? []).map((h) => {
    const where = `${h.path ?? h.uri ?? '?'}:${lineSpan(h.line_start, h.line_end) || '1'}`;
    const hash = shortHash(h.evidence?.sha256);
    const detail = [hash ? `sha256 ${hash}` : '', firstLine(h.excerpt)].filter(Boolean).join(' · ');
    return { label: `$(file-code) ${where}`, description: h.symbol ?? '', detail, item: h };
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
export function formatEvalReport(resp: EvalResponse): string[] {
  const out: string[] = ['pyCSAMT eval', ''];
  if (isPlainObject(resp.metrics)) {
    out.push(...dictTable(resp.metrics));
  } else {
    out.push('(no metrics in the result)');
  }
  for (const [k, v] of Object.entries(resp)) {
    if (k === 'metrics') {
      continue;
    }
    if (isScalar(v)) {
      out.push('', `${k}: ${formatNumber(v)}`);
    } else if (isPlainObject(v) && Object.keys(v).length > 0) {
      out.push('', `${k}:`, ...dictTable(v, k).map((l) => `  ${l}`));
    } else if (Array.isArray(v)) {
      out.push('', `${k}: ${v.length} item${v.length === 1 ? '' : 's'}`);
    }
  }
  return out;
}

export function evalSummary(resp: EvalResponse): string {
  const m = isPlainObject(resp.metrics) ? resp.metrics : {};
  const parts = Object.entries(m)
    .filter(([, v]) => typeof v === 'number')
    .slice(0, 4)
    .map(([k, v]) => `${k} ${formatNumber(v)}`);
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
