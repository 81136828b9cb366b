/**
 * Which Python runs the server, in this order (each step is logged):
 *
 * 1. the `pycsamt.server.python` setting;
 * 2. the interpreter selected in the Python Environments extension
 *    (`ms-python.vscode-python-envs`), when installed;
 * 3. the interpreter selected in the Python extension (`ms-python.python`):
 *    `environments.getActiveEnvironmentPath` + `resolveEnvironment`, else
 *    `settings.getExecutionDetails`;
 * 4. `python3`.
 */
import { execFile } from 'node:child_process';
import { DEFAULT_PYTHON, SERVER_MODULE } from './constants';
import { getExtension } from './vscodeapi';

/** `private`: the extension's own environment, where it installed its bundled server. */
export type InterpreterSource = 'setting' | 'python-envs' | 'python-extension' | 'default' | 'private';

export interface Interpreter {
  /** Executable followed by any leading arguments (e.g. `conda run -n env python`). */
  command: string[];
  source: InterpreterSource;
}

export interface InterpreterProviders {
  setting: () => string;
  pythonEnvs?: () => Promise<string[] | undefined>;
  pythonExtension?: () => Promise<string[] | undefined>;
  log: (line: string) => void;
}

export const SOURCE_LABELS: Readonly<Record<InterpreterSource, string>> = {
  setting: 'setting pycsamt.server.python',
  'python-envs': 'Python Environments extension',
  'python-extension': 'Python extension',
  default: 'default',
  private: "the extension's private environment",
};

function nonEmpty(cmd: string[] | undefined): cmd is string[] {
  return Array.isArray(cmd) && cmd.length > 0 && typeof cmd[0] === 'string' && cmd[0].trim() !== '';
}

async function attempt(
  name: string,
  fn: (() => Promise<string[] | undefined>) | undefined,
  log: (line: string) => void,
): Promise<string[] | undefined> {
  if (!fn) {
    return undefined;
  }
  try {
    const cmd = await fn();
    if (nonEmpty(cmd)) {
      return cmd;
    }
    log(`  - ${name}: no interpreter selected`);
  } catch (err) {
    log(`  - ${name}: failed (${err instanceof Error ? err.message : String(err)})`);
  }
  return undefined;
}

/** Resolve the interpreter, logging each step of the order. */
export async function resolveInterpreter(p: InterpreterProviders): Promise<Interpreter> {
  p.log('Choosing the Python interpreter for the server (setting, Python Environments, Python extension, python3):');
  const setting = p.setting().trim();
  if (setting) {
    p.log(`  - ${SOURCE_LABELS.setting}: ${setting}`);
    return { command: [setting], source: 'setting' };
  }
  p.log(`  - ${SOURCE_LABELS.setting}: not set`);
  const envs = await attempt(SOURCE_LABELS['python-envs'], p.pythonEnvs, p.log);
  if (envs) {
    p.log(`  - ${SOURCE_LABELS['python-envs']}: ${envs.join(' ')}`);
    return { command: envs, source: 'python-envs' };
  }
  const ext = await attempt(SOURCE_LABELS['python-extension'], p.pythonExtension, p.log);
  if (ext) {
    p.log(`  - ${SOURCE_LABELS['python-extension']}: ${ext.join(' ')}`);
    return { command: ext, source: 'python-extension' };
  }
  p.log(`  - ${SOURCE_LABELS.default}: ${DEFAULT_PYTHON}`);
  return { command: [DEFAULT_PYTHON], source: 'default' };
}

// --- the Python extensions' APIs (typed loosely: both are optional) --------------

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: unknown): { id?: string; path: string } | undefined;
    resolveEnvironment(env: unknown): Promise<{ executable?: { uri?: { fsPath: string } } } | undefined>;
    onDidChangeActiveEnvironmentPath?: (listener: () => void) => { dispose(): void };
  };
  settings?: {
    getExecutionDetails(resource?: unknown): { execCommand: string[] | undefined };
  };
}

interface PythonEnvsApi {
  getEnvironment?(scope: unknown): Promise<{ execInfo?: { run?: { executable?: string; args?: string[] } } } | undefined>;
  onDidChangeEnvironment?: (listener: () => void) => { dispose(): void };
}

const PYTHON_EXT = 'ms-python.python';
const PYTHON_ENVS_EXT = 'ms-python.vscode-python-envs';

async function activated<T>(id: string, log: (line: string) => void): Promise<T | undefined> {
  const ext = getExtension<T>(id);
  if (!ext) {
    log(`  - ${id}: not installed`);
    return undefined;
  }
  return ext.isActive ? ext.exports : await ext.activate();
}

export function pythonExtensionProvider(resource: unknown, log: (line: string) => void): () => Promise<string[] | undefined> {
  return async () => {
    const api = await activated<PythonExtensionApi>(PYTHON_EXT, log);
    if (!api) {
      return undefined;
    }
    const envPath = api.environments?.getActiveEnvironmentPath(resource);
    if (envPath && api.environments) {
      const resolved = await api.environments.resolveEnvironment(envPath);
      const exe = resolved?.executable?.uri?.fsPath;
      if (exe) {
        return [exe];
      }
    }
    return api.settings?.getExecutionDetails(resource)?.execCommand;
  };
}

export function pythonEnvsProvider(resource: unknown, log: (line: string) => void): () => Promise<string[] | undefined> {
  return async () => {
    const api = await activated<PythonEnvsApi>(PYTHON_ENVS_EXT, log);
    const env = await api?.getEnvironment?.(resource);
    const run = env?.execInfo?.run;
    return run?.executable ? [run.executable, ...(run.args ?? [])] : undefined;
  };
}

/** Subscribe to interpreter changes in either Python extension (when active). */
export function onDidChangeSelectedInterpreter(listener: () => void): { dispose(): void }[] {
  const out: { dispose(): void }[] = [];
  const py = getExtension<PythonExtensionApi>(PYTHON_EXT);
  const d1 = py?.isActive ? py.exports?.environments?.onDidChangeActiveEnvironmentPath?.(listener) : undefined;
  if (d1) {
    out.push(d1);
  }
  const envs = getExtension<PythonEnvsApi>(PYTHON_ENVS_EXT);
  const d2 = envs?.isActive ? envs.exports?.onDidChangeEnvironment?.(listener) : undefined;
  if (d2) {
    out.push(d2);
  }
  return out;
}

// --- is the server package installed? ------------------------------------------

export type PackageCheck =
  | { ok: true; version: string }
  | { ok: false; reason: 'missing' | 'not-found' | 'error'; detail: string };

export type ExecFileFn = (
  file: string,
  args: string[],
  options: { timeout: number },
  callback: (error: (Error & { code?: unknown }) | null, stdout: string, stderr: string) => void,
) => unknown;

export const CHECK_SCRIPT = `import ${SERVER_MODULE}; print(getattr(${SERVER_MODULE}, '__version__', ''))`;

/** Run `<python> -c "import pycsamt_lsp"` and classify the outcome. */
export function checkServerPackage(
  command: string[],
  exec: ExecFileFn = execFile as unknown as ExecFileFn,
  timeoutMs = 30000,
): Promise<PackageCheck> {
  const [file, ...pre] = command;
  return new Promise((resolve) => {
    exec(file, [...pre, '-c', CHECK_SCRIPT], { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (!error) {
        resolve({ ok: true, version: String(stdout).trim() });
        return;
      }
      if (error.code === 'ENOENT') {
        resolve({ ok: false, reason: 'not-found', detail: `${file}: no such executable` });
      } else if (/ModuleNotFoundError|No module named/.test(String(stderr))) {
        resolve({ ok: false, reason: 'missing', detail: String(stderr).trim().split('\n').pop() ?? '' });
      } else {
        resolve({ ok: false, reason: 'error', detail: (String(stderr).trim() || error.message).split('\n').pop() ?? '' });
      }
    });
  });
}

/**
 * The message shown when the server cannot start from the chosen interpreter. The
 * server is not on PyPI: the fix offered is the wheel the extension carries
 * (`canInstall`), or a Python that has the package.
 */
export function packageProblemMessage(
  interp: Interpreter,
  check: Exclude<PackageCheck, { ok: true }>,
  canInstall = false,
): string {
  const py = interp.command.join(' ');
  const from = SOURCE_LABELS[interp.source];
  const offer = canInstall
    ? ' Install the server the extension carries into a private environment, or set "pycsamt.server.python" to a Python that has it.'
    : ' Set "pycsamt.server.python" to a Python that has it (pip install a pycsamt_lsp wheel built with `python -m build`).';
  switch (check.reason) {
    case 'not-found':
      return `pyCSAMT LSP: the Python interpreter "${py}" (${from}) was not found.${offer}`;
    case 'missing':
      return `pyCSAMT LSP: the server package pycsamt-lsp is not installed in "${py}" (${from}).${offer}`;
    default:
      return `pyCSAMT LSP: "${py} -c 'import ${SERVER_MODULE}'" failed (${from}): ${check.detail}.${offer}`;
  }
}
