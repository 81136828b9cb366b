/**
 * Settings: the `pycsamt.*` configuration tree and the initializationOptions sent to
 * the server (camelCase keys, one flat object).
 *
 * The contract (names, types, defaults, ranges, enums) is the server's
 * `settings_schema.json`; package.json's `contributes.configuration` is generated
 * from it (scripts/settings.mjs) and this module reads its rules from package.json,
 * so a value the server would reject is never sent: it is replaced by the default
 * and the reason is logged, as the server itself does.
 *
 * Precedence is VS Code's own (folder > workspace > user > package.json default).
 * The same object is sent as `initializationOptions`, in
 * `workspace/didChangeConfiguration` as `{settings: {pycsamt: <options>}}`, and as the
 * answer to a `workspace/configuration` request for section `pycsamt`.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import packageJson from '../../package.json';
import { CONFIG_SECTION } from './constants';
import { getConfiguration, getWorkspaceFolders } from './vscodeapi';

export type DiagnosticsSeverity = 'error' | 'warning' | 'information' | 'hint';
export const SEVERITIES: readonly DiagnosticsSeverity[] = ['error', 'warning', 'information', 'hint'];
export type WatchMode = 'auto' | 'client' | 'server' | 'off';

export interface InitializationOptions {
  corpusRoot: string;
  indexDir: string;
  profile: string;
  resultCount: number;
  dense: boolean;
  openaiModel: string;
  openaiModelRouting: boolean;
  logLevel: string;
  diagnosticsSeverity: DiagnosticsSeverity;
  watch: WatchMode;
  debounceMs: number;
}

/** One `contributes.configuration` property (the JSON-schema keywords used). */
export interface SettingProperty {
  type: 'string' | 'integer' | 'boolean' | 'number';
  default: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  enum?: string[];
}

/** A server setting: its wire key, its key under `pycsamt.`, and its rules. */
export interface SettingSpec extends SettingProperty {
  key: keyof InitializationOptions;
  setting: string;
}

/** Settings read by the extension only (never sent to the server). */
export const CLIENT_ONLY_SETTINGS: readonly string[] = ['server.python', 'trace.server'];

/** Setting key of the interpreter; a change restarts the server. */
export const PYTHON_SETTING = 'server.python';

/** Path settings: `${workspaceFolder}` and `~` are expanded before sending. */
const PATH_OPTIONS: ReadonlySet<string> = new Set(['corpusRoot', 'indexDir']);

/** Wire key of a setting: `openai.model` -> `openaiModel` (the server's rule too). */
export function wireKey(setting: string): string {
  return setting.replace(/\.([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** The server settings described by a `contributes.configuration.properties` map. */
export function settingSpecs(
  properties: Record<string, SettingProperty> = packageJson.contributes.configuration.properties as Record<
    string,
    SettingProperty
  >,
): SettingSpec[] {
  const prefix = `${CONFIG_SECTION}.`;
  return Object.entries(properties)
    .filter(([name]) => name.startsWith(prefix) && !CLIENT_ONLY_SETTINGS.includes(name.slice(prefix.length)))
    .map(([name, prop]) => {
      const setting = name.slice(prefix.length);
      return { ...prop, setting, key: wireKey(setting) as keyof InitializationOptions };
    });
}

export const SETTINGS: readonly SettingSpec[] = settingSpecs();

/** The defaults of package.json (= the server's schema). */
export const FALLBACK: Readonly<InitializationOptions> = Object.freeze(
  Object.fromEntries(SETTINGS.map((s) => [s.key, s.default])) as unknown as InitializationOptions,
);

/** initializationOptions key -> setting key under `pycsamt.`. */
export const OPTION_SETTINGS: Readonly<Record<keyof InitializationOptions, string>> = Object.freeze(
  Object.fromEntries(SETTINGS.map((s) => [s.key, s.setting])) as Record<keyof InitializationOptions, string>,
);

/** Why a value breaks a setting's rules, or undefined when it is valid. */
export function invalidReason(spec: SettingProperty, value: unknown): string | undefined {
  switch (spec.type) {
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be true or false';
    case 'integer':
    case 'number': {
      const lo = spec.minimum ?? -Infinity;
      const hi = spec.maximum ?? Infinity;
      const ok =
        typeof value === 'number' &&
        Number.isFinite(value) &&
        (spec.type === 'number' || Number.isInteger(value)) &&
        value >= lo &&
        value <= hi;
      return ok ? undefined : `must be an ${spec.type} from ${lo} to ${hi}`;
    }
    default:
      if (typeof value !== 'string') {
        return 'must be a string';
      }
      if (spec.enum && !spec.enum.includes(value)) {
        return `must be one of ${spec.enum.join(', ')}`;
      }
      if (spec.minLength !== undefined && value.length < spec.minLength) {
        return 'must not be empty';
      }
      return undefined;
  }
}

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

/**
 * Build initializationOptions from a setting getter (`key` relative to `pycsamt.`).
 * Invalid values fall back to the defaults (each reason goes to `problems`), so the
 * server always gets a full, valid object.
 */
export function buildInitializationOptions(get: Getter, ctx: ExpandContext = {}, problems?: string[]): InitializationOptions {
  const out: Record<string, unknown> = {};
  for (const spec of SETTINGS) {
    let value = get(spec.setting);
    if (value === undefined || value === null) {
      out[spec.key] = spec.default;
      continue;
    }
    if (typeof value === 'string') {
      value = PATH_OPTIONS.has(spec.key) ? expandPath(value, ctx) : value.trim();
    }
    const why = invalidReason(spec, value);
    if (why) {
      problems?.push(`setting ${CONFIG_SECTION}.${spec.setting} ${why}; using ${JSON.stringify(spec.default)}`);
      out[spec.key] = spec.default;
    } else {
      out[spec.key] = value;
    }
  }
  return out as unknown as InitializationOptions;
}

export function firstWorkspaceFolder(): string | undefined {
  return getWorkspaceFolders()[0]?.uri.fsPath;
}

/** Current settings from VS Code (invalid values are reported to `problems`). */
export function readInitializationOptions(problems?: string[]): InitializationOptions {
  const cfg = getConfiguration(CONFIG_SECTION);
  return buildInitializationOptions((k) => cfg.get(k), { workspaceFolder: firstWorkspaceFolder() }, problems);
}

/** The raw `pycsamt.server.python` setting, expanded; '' when unset. */
export function readPythonSetting(): string {
  const cfg = getConfiguration(CONFIG_SECTION);
  const v = cfg.get(PYTHON_SETTING);
  return expandPath(typeof v === 'string' ? v : '', { workspaceFolder: firstWorkspaceFolder() });
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
