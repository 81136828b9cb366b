/**
 * Installing the server the extension carries: the `pycsamt_lsp` wheel in
 * `server-wheel/` goes into a private virtual environment in the extension's global
 * storage, so a VS Code user needs neither this repository nor a package index
 * entry for the server itself.
 *
 *   1. `<python> -m venv <storage>/server-venv` (Python 3.11+, the chosen one or python3)
 *   2. offline first: `pip install --no-index --find-links <wheel dir> <wheel>`, which
 *      works when the dependencies are already there (a re-install or an update of
 *      the private environment, or wheels in a `PIP_FIND_LINKS` folder);
 *   3. else the same with the package index, for the dependencies only (named from
 *      `server-wheel/dependencies.json`, the wheel's Requires-Dist);
 *   4. `import pycsamt_lsp` in the new environment.
 *
 * No VS Code API here: processes run through an injected `RunFn`, so the unit tests
 * script every outcome.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SERVER_MODULE } from './constants';

export const WHEEL_DIR = 'server-wheel';
export const VENV_DIR = 'server-venv';
/** The server's `requires-python`. */
export const MIN_PYTHON: readonly [number, number] = [3, 11];
/** Named when `server-wheel/dependencies.json` (written by scripts/ci.sh) is absent. */
export const FALLBACK_DEPENDENCIES = ['pygls', 'lsprotocol', 'numpy', 'watchfiles'];

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Set when the process could not be started (e.g. ENOENT) or timed out. */
  error?: string;
}

export type RunFn = (file: string, args: string[], opts: { timeoutMs: number; onLine?: (line: string) => void }) => Promise<RunResult>;

/** Run a process, collecting its output and passing each line on (for the log). */
export const runProcess: RunFn = (file, args, opts) =>
  new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let settled = false;
    const done = (r: RunResult): void => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(r);
      }
    };
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PIP_NO_INPUT: '1' } });
    const lines = (chunk: Buffer, sink: 'out' | 'err'): void => {
      const text = chunk.toString('utf8');
      if (sink === 'out') {
        stdout += text;
      } else {
        stderr += text;
      }
      for (const l of text.split(/\r?\n/)) {
        if (l.trim()) {
          opts.onLine?.(l);
        }
      }
    };
    child.stdout.on('data', (c: Buffer) => lines(c, 'out'));
    child.stderr.on('data', (c: Buffer) => lines(c, 'err'));
    child.on('error', (err: NodeJS.ErrnoException) => done({ code: null, stdout, stderr, error: err.code ?? err.message }));
    child.on('close', (code) => done({ code, stdout, stderr }));
    const timer = setTimeout(() => {
      child.kill();
      done({ code: null, stdout, stderr, error: `timed out after ${Math.round(opts.timeoutMs / 1000)} s` });
    }, opts.timeoutMs);
  });

export interface BundledWheel {
  path: string;
  version: string;
  /** The wheel's runtime dependencies (what pip fetches into a new environment). */
  requires: string[];
}

/** The server wheel shipped in `<extension>/server-wheel/`, if any (newest version). */
export function findBundledWheel(
  wheelDir: string,
  readdir: (dir: string) => string[] = (d) => fs.readdirSync(d),
  readFile: (p: string) => string = (p) => fs.readFileSync(p, 'utf8'),
): BundledWheel | undefined {
  let names: string[];
  try {
    names = readdir(wheelDir);
  } catch {
    return undefined;
  }
  const wheels = names
    .map((n) => ({ n, m: /^pycsamt_lsp-([^-]+)-.*\.whl$/.exec(n) }))
    .filter((x): x is { n: string; m: RegExpExecArray } => x.m !== null)
    .sort((a, b) => compareVersions(b.m[1], a.m[1]));
  if (!wheels.length) {
    return undefined;
  }
  let requires = FALLBACK_DEPENDENCIES;
  try {
    const r = (JSON.parse(readFile(path.join(wheelDir, 'dependencies.json'))) as { requires?: unknown }).requires;
    if (Array.isArray(r) && r.every((x) => typeof x === 'string')) {
      requires = r;
    }
  } catch {
    // an older build without the list: name the usual ones
  }
  return { path: path.join(wheelDir, wheels[0].n), version: wheels[0].m[1], requires };
}

function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((x) => parseInt(x, 10) || 0);
  const pb = b.split('.').map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) {
      return d;
    }
  }
  return 0;
}

/** The interpreter of the private environment. */
export function venvPython(venv: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? path.join(venv, 'Scripts', 'python.exe') : path.join(venv, 'bin', 'python');
}

export type InstallResult =
  | { ok: true; python: string; source: 'offline' | 'index' }
  | { ok: false; stage: 'python' | 'venv' | 'pip' | 'verify'; message: string };

export interface InstallRequest {
  /** Python that creates the environment (executable and leading arguments). */
  basePython: string[];
  venv: string;
  wheel: BundledWheel;
  run: RunFn;
  log: (line: string) => void;
  progress: (message: string) => void;
  exists?: (p: string) => boolean;
  platform?: NodeJS.Platform;
}

const VERSION_SCRIPT = "import sys; print('%d.%d' % sys.version_info[:2])";
const PIP_TIMEOUT_MS = 15 * 60 * 1000;

function tail(r: RunResult, n = 1): string {
  const lines = `${r.stderr}\n${r.stdout}`
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !/^\[notice\]/.test(l));
  return lines.slice(-n).join(' ') || r.error || `exit code ${r.code}`;
}

/** A requirement pip could not get, from its error output. */
export function missingRequirement(stderr: string): string | undefined {
  const m =
    /No matching distribution found for ([^\s]+)/.exec(stderr) ??
    /Could not find a version that satisfies the requirement ([^\s]+)/.exec(stderr);
  return m?.[1];
}

/** Does pip's output say the index could not be reached? */
export function looksOffline(stderr: string): boolean {
  return /Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|ConnectionError|ProxyError|Max retries exceeded|Could not fetch URL|SSLError|timed out/i.test(
    stderr,
  );
}

/** The message for a pip failure in both attempts. */
export function pipFailureMessage(index: RunResult, py: string, wheel: BundledWheel): string {
  const req = missingRequirement(index.stderr);
  const what = req ? `the dependency "${req}"` : `its dependencies (${wheel.requires.join(', ')})`;
  if (req || looksOffline(index.stderr)) {
    return (
      `pyCSAMT LSP: could not install the server: ${what} could not be fetched from the package index ` +
      `(no network, or a proxy?). Connect and run "pyCSAMT: Install Server" again, or install them offline: ` +
      `\`${py} -m pip install --no-index --find-links <folder of wheels> ${wheel.path}\`.`
    );
  }
  return `pyCSAMT LSP: could not install the server with pip: ${tail(index)}. See the "pyCSAMT LSP" output.`;
}

/** Create (or reuse) the private environment and install the bundled wheel into it. */
export async function installServer(req: InstallRequest): Promise<InstallResult> {
  const exists = req.exists ?? ((p: string) => fs.existsSync(p));
  const [base, ...pre] = req.basePython;
  const baseLabel = req.basePython.join(' ');
  const onLine = (l: string): void => req.log(`  ${l}`);

  req.progress(`checking ${baseLabel}`);
  const ver = await req.run(base, [...pre, '-c', VERSION_SCRIPT], { timeoutMs: 30000 });
  if (ver.code !== 0) {
    const why = ver.error === 'ENOENT' ? 'was not found' : `failed (${tail(ver)})`;
    return {
      ok: false,
      stage: 'python',
      message: `pyCSAMT LSP: cannot create the server's environment: the Python "${baseLabel}" ${why}. Set "pycsamt.server.python" to a Python ${MIN_PYTHON.join('.')} or newer.`,
    };
  }
  const [major, minor] = ver.stdout.trim().split('.').map((x) => parseInt(x, 10));
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
    return {
      ok: false,
      stage: 'python',
      message: `pyCSAMT LSP: the server needs Python ${MIN_PYTHON.join('.')} or newer; "${baseLabel}" is ${ver.stdout.trim()}. Set "pycsamt.server.python" to a newer Python.`,
    };
  }

  const py = venvPython(req.venv, req.platform);
  const reuse = exists(py) && (await req.run(py, ['-m', 'pip', '--version'], { timeoutMs: 60000 })).code === 0;
  if (reuse) {
    req.log(`Reusing the private environment ${req.venv}`);
  } else {
    req.progress('creating a private Python environment');
    req.log(`Creating the private environment: ${baseLabel} -m venv --clear ${req.venv}`);
    const venv = await req.run(base, [...pre, '-m', 'venv', '--clear', req.venv], { timeoutMs: 180000, onLine });
    if (venv.code !== 0) {
      const hint = /ensurepip|python3-venv/.test(venv.stderr + venv.stdout)
        ? ' Install the venv module (e.g. `apt install python3-venv`) or choose another Python.'
        : '';
      return { ok: false, stage: 'venv', message: `pyCSAMT LSP: "${baseLabel} -m venv" failed: ${tail(venv)}.${hint}` };
    }
  }

  const wheelDir = path.dirname(req.wheel.path);
  const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--upgrade', '--find-links', wheelDir];
  req.progress(`installing pycsamt-lsp ${req.wheel.version} (offline)`);
  req.log(`Installing offline: ${py} ${[...pip, '--no-index', req.wheel.path].join(' ')}`);
  const offline = await req.run(py, [...pip, '--no-index', req.wheel.path], { timeoutMs: PIP_TIMEOUT_MS, onLine });
  let source: 'offline' | 'index' = 'offline';
  if (offline.code !== 0) {
    const req1 = missingRequirement(offline.stderr);
    req.log(`Offline install incomplete${req1 ? ` (${req1} is not present)` : ''}; fetching the dependencies from the package index.`);
    req.progress(`downloading the server's dependencies (${req.wheel.requires.join(', ')})`);
    const index = await req.run(py, [...pip, req.wheel.path], { timeoutMs: PIP_TIMEOUT_MS, onLine });
    if (index.code !== 0) {
      return { ok: false, stage: 'pip', message: pipFailureMessage(index, py, req.wheel) };
    }
    source = 'index';
  }

  req.progress('checking the installed server');
  const check = await req.run(py, ['-c', `import ${SERVER_MODULE}; print(${SERVER_MODULE}.__version__)`], { timeoutMs: 60000 });
  if (check.code !== 0) {
    return { ok: false, stage: 'verify', message: `pyCSAMT LSP: the server was installed but does not import: ${tail(check)}` };
  }
  req.log(`Installed pycsamt_lsp ${check.stdout.trim()} in ${req.venv} (${source === 'offline' ? 'offline' : 'dependencies from the package index'}).`);
  return { ok: true, python: py, source };
}
