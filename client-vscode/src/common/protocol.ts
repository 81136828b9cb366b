/**
 * Shapes of the server's `workspace/executeCommand` arguments and results
 * (DESIGN.md section 7). Every command takes ONE argument, a JSON object.
 * Result fields are typed loosely: the client tolerates missing fields.
 */

export interface QueryArgs {
  query: string;
  k: number;
}
export interface AskArgs {
  question: string;
  k: number;
}
export interface SearchSourceArgs {
  query: string;
  includeTests: boolean;
}
export interface ValidateArgs {
  code: string;
}
export type EmptyArgs = Record<string, never>;

export interface QueryResult {
  rank?: number;
  id?: string;
  kind?: string;
  workflow?: string | null;
  label?: string;
  symbol?: string | null;
  source_path?: string;
  line_start?: number;
  line_end?: number;
  score?: number;
  snippet?: string;
  uri?: string;
}
export interface QueryResponse {
  query?: string;
  results?: QueryResult[];
  root?: string;
  [key: string]: unknown;
}

export interface Citation {
  n: number;
  source_path?: string;
  line_start?: number;
  line_end?: number;
  page?: number | null;
  label?: string;
  score?: number;
  snippet?: string;
  uri?: string;
}
/** The routing decision of `pycsamt.ask` (issue 15). */
export interface AskRoute {
  intent?: string;
  workflow?: string | null;
  workflows?: string[];
  line?: string | null;
  confidence?: number;
  scope?: string;
  clarify_question?: string | null;
  source?: string;
}
export interface AskResponse {
  question?: string;
  answer?: string;
  confident?: boolean;
  clarifying_question?: string | null;
  citations?: Citation[];
  route?: AskRoute | null;
  [key: string]: unknown;
}

export interface SourceHit {
  path?: string;
  line_start?: number;
  line_end?: number;
  /** The best matching symbol: the server sends `{name, kind, line_start, line_end}`. */
  symbol?: SourceSymbol | string | null;
  excerpt?: string;
  /** The best matching line, and the first line the excerpt covers. */
  line?: number;
  excerpt_line_start?: number;
  evidence?: {
    sha256?: string;
    flags?: string[];
    changed_during_search?: boolean;
    version_mismatch?: boolean;
    [key: string]: unknown;
  };
  uri?: string;
}
export interface SourceSymbol {
  name?: string;
  kind?: string;
  line_start?: number;
  line_end?: number;
}
export interface SearchSourceResponse {
  query?: string;
  results?: SourceHit[];
  limitation?: string | null;
  root?: string;
  [key: string]: unknown;
}

export interface StatsResponse {
  n_chunks?: number;
  by_kind?: Record<string, number>;
  by_workflow?: Record<string, number>;
  fingerprint?: string;
  root?: string;
  state?: string;
  [key: string]: unknown;
}

export type ValidationProblem =
  | string
  | { message?: string; msg?: string; line?: number; lineno?: number; col?: number; name?: string; [key: string]: unknown };

export interface ValidateResponse {
  ok?: boolean;
  syntax_ok?: boolean;
  errors?: ValidationProblem[];
  warnings?: ValidationProblem[];
  checked?: number | unknown[];
  [key: string]: unknown;
}

export interface EvalResponse {
  metrics?: Record<string, unknown>;
  [key: string]: unknown;
}

/** `pycsamt/indexState` notification (optional; `$/progress` is also followed). */
export interface IndexStateParams {
  state: 'building' | 'ready' | 'stale' | 'error';
  percent?: number;
  nChunks?: number;
  message?: string;
}
