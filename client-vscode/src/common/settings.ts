/**
 * Settings: the `pycsamt.*` configuration tree and the initializationOptions sent to
 * the server (camelCase keys, one flat object).
 *
 * Precedence is VS Code's own (folder > workspace > user > package.json default).
 * The same object is sent as `initializationOptions`, in
 * `workspace/didChangeConfiguration` as `{settings: {pycsamt: <options>}}`, and as the
 * answer to a `workspace/configuration` request for section `pycsamt`.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { CONFIG_SECTION } from './constants';
import { getConfiguration, getWorkspaceFolders } from './vscodeapi';

export type DiagnosticsSeverity = 'error' | 'warning' | 'information' | 'hint';
export const SEVERITIES: readonly DiagnosticsSeverity[] = ['error', 'warning', 'information', 'hint'];

export interface InitializationOptions {
  corpusRoot: string;
  indexDir: string;
  profile: string;
  resultCount: number;
  dense: boolean;
  openaiModel: string;
  logLevel: string;
  diagnosticsSeverity: DiagnosticsSeverity;
}

/** initializationOptions key -> setting key under `pycsamt.`. */
export const OPTION_SETTINGS: Readonly<Record<keyof InitializationOptions, string>> = {
  corpusRoot: 'corpusRoot',
  indexDir: 'indexDir',
  profile: 'profile',
  resultCount: 'resultCount',
  dense: 'dense',
  openaiModel: 'openai.model',
  logLevel: 'logLevel',
  diagnosticsSeverity: 'diagnostics.severity',
};

/** Setting key of the interpreter; a change restarts the server. */
export const PYTHON_SETTING = 'server.python';

/** Fallbacks when a value is missing or of the wrong type (same as package.json). */
export const FALLBACK: Readonly<InitializationOptions> = {
  corpusRoot: '',
  indexDir: '',
  profile: 'pycsamt',
  resultCount: 10,
  dense: false,
  openaiModel: 'gpt-4o-mini',
  logLevel: 'info',
  diagnosticsSeverity: 'error',
};

export interface ExpandContext {
  workspaceFolder?: string;
  home?: string;
}

/** Expand `${workspaceFolder}`, `${userHome}` and a leading `~` in a path setting. */
export function expandPath(value: string, ctx: ExpandContext = {}): string {
  let out = value.trim();
  if (!out) {
    return out;
  }
  const home = ctx.home ?? os.homedir();
  if (ctx.workspaceFolder !== undefined) {
    out = out.split('${workspaceFolder}').join(ctx.workspaceFolder);
  }
  out = out.split('${userHome}').join(home);
  if (out === '~') {
    out = home;
  } else if (out.startsWith('~/') || out.startsWith('~\\')) {
    out = path.join(home, out.slice(2));
  }
  return out;
}

type Getter = (key: string) => unknown;

function asString(v: unknown, d: string): string {
  return typeof v === 'string' ? v : d;
}

/**
 * Build initializationOptions from a setting getter (`key` relative to `pycsamt.`).
 * Invalid values fall back to the defaults, so the server always gets a full object.
 */
export function buildInitializationOptions(get: Getter, ctx: ExpandContext = {}): InitializationOptions {
  const count = get(OPTION_SETTINGS.resultCount);
  const severity = get(OPTION_SETTINGS.diagnosticsSeverity);
  return {
    corpusRoot: expandPath(asString(get(OPTION_SETTINGS.corpusRoot), FALLBACK.corpusRoot), ctx),
    indexDir: expandPath(asString(get(OPTION_SETTINGS.indexDir), FALLBACK.indexDir), ctx),
    profile: asString(get(OPTION_SETTINGS.profile), FALLBACK.profile).trim() || FALLBACK.profile,
    resultCount:
      typeof count === 'number' && Number.isFinite(count) && count >= 1
        ? Math.min(100, Math.floor(count))
        : FALLBACK.resultCount,
    dense: typeof get(OPTION_SETTINGS.dense) === 'boolean' ? (get(OPTION_SETTINGS.dense) as boolean) : FALLBACK.dense,
    openaiModel: asString(get(OPTION_SETTINGS.openaiModel), FALLBACK.openaiModel).trim() || FALLBACK.openaiModel,
    logLevel: asString(get(OPTION_SETTINGS.logLevel), FALLBACK.logLevel),
    diagnosticsSeverity: SEVERITIES.includes(severity as DiagnosticsSeverity)
      ? (severity as DiagnosticsSeverity)
      : FALLBACK.diagnosticsSeverity,
  };
}

export function firstWorkspaceFolder(): string | undefined {
  return getWorkspaceFolders()[0]?.uri.fsPath;
}

/** Current settings from VS Code. */
export function readInitializationOptions(): InitializationOptions {
  const cfg = getConfiguration(CONFIG_SECTION);
  return buildInitializationOptions((k) => cfg.get(k), { workspaceFolder: firstWorkspaceFolder() });
}

/** The raw `pycsamt.server.python` setting, expanded; '' when unset. */
export function readPythonSetting(): string {
  const cfg = getConfiguration(CONFIG_SECTION);
  return expandPath(asString(cfg.get(PYTHON_SETTING), ''), { workspaceFolder: firstWorkspaceFolder() });
}

/** Payload of `workspace/didChangeConfiguration`. */
export function didChangeConfigurationParams(options: InitializationOptions): { settings: { pycsamt: InitializationOptions } } {
  return { settings: { [CONFIG_SECTION]: options } as { pycsamt: InitializationOptions } };
}

/** Which kind of reaction a configuration change needs. */
export function classifyChange(affects: (section: string) => boolean): 'restart' | 'notify' | 'none' {
  if (affects(`${CONFIG_SECTION}.${PYTHON_SETTING}`)) {
    return 'restart';
  }
  for (const key of Object.values(OPTION_SETTINGS)) {
    if (affects(`${CONFIG_SECTION}.${key}`)) {
      return 'notify';
    }
  }
  return 'none';
}
