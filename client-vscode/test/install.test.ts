import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  findBundledWheel,
  installServer,
  looksOffline,
  missingRequirement,
  venvPython,
  type RunResult,
} from '../src/common/install';
import { importsPycsamt, pycsamtProjectReason } from '../src/common/relevance';

const WHEEL = {
  path: '/ext/server-wheel/pycsamt_lsp-0.1.0-py3-none-any.whl',
  version: '0.1.0',
  requires: ['pygls', 'lsprotocol', 'numpy', 'watchfiles', 'PyYAML'],
};
const VENV = '/storage/server-venv';
const VPY = '/storage/server-venv/bin/python';
const ok = (stdout = ''): RunResult => ({ code: 0, stdout, stderr: '' });
const fail = (stderr: string, code = 1): RunResult => ({ code, stdout: '', stderr });

/** A scripted process runner: the first rule whose test matches answers. */
function runner(rules: [(file: string, args: string[]) => boolean, RunResult][]) {
  const calls: string[][] = [];
  const run = async (file: string, args: string[]) => {
    calls.push([file, ...args]);
    const hit = rules.find(([test]) => test(file, args));
    if (!hit) throw new Error(`unexpected ${file} ${args.join(' ')}`);
    return hit[1];
  };
  return { run, calls };
}
const isVersion = (_f: string, a: string[]) => a.includes('-c') && a.some((x) => x.includes('sys.version_info'));
const isVenv = (_f: string, a: string[]) => a.includes('venv');
const isOffline = (_f: string, a: string[]) => a.includes('install') && a.includes('--no-index');
const isIndex = (_f: string, a: string[]) => a.includes('install') && !a.includes('--no-index');
const isVerify = (f: string, a: string[]) => f === VPY && a[0] === '-c' && a[1].includes('import pycsamt_lsp');

function request(run: any, exists = (_p: string) => false) {
  const log: string[] = [];
  const progress: string[] = [];
  return {
    req: { basePython: ['/bare/bin/python'], venv: VENV, wheel: WHEEL, run, exists, log: (l: string) => log.push(l), progress: (p: string) => progress.push(p), platform: 'linux' as const },
    log,
    progress,
  };
}

describe('the bundled wheel and the private environment', () => {
  it('finds the newest pycsamt_lsp wheel', () => {
    const names = ['README', 'dependencies.json', 'pycsamt_lsp-0.1.0-py3-none-any.whl', 'pycsamt_lsp-0.10.0-py3-none-any.whl', 'other-1.0-py3-none-any.whl'];
    const read = (p: string) => {
      assert.equal(p, '/ext/server-wheel/dependencies.json');
      return '{"requires": ["pygls", "numpy", "PyYAML"]}';
    };
    const w = findBundledWheel('/ext/server-wheel', () => names, read);
    assert.deepEqual(w, { path: '/ext/server-wheel/pycsamt_lsp-0.10.0-py3-none-any.whl', version: '0.10.0', requires: ['pygls', 'numpy', 'PyYAML'] });
    // without the list (an older build): the usual names
    const old = findBundledWheel('/ext/server-wheel', () => names, () => { throw new Error('ENOENT'); });
    assert.deepEqual(old!.requires, ['pygls', 'lsprotocol', 'numpy', 'watchfiles']);
    assert.equal(findBundledWheel('/nope', () => { throw new Error('ENOENT'); }), undefined);
    assert.equal(findBundledWheel('/ext', () => []), undefined);
  });

  it('venv interpreter per platform', () => {
    assert.equal(venvPython('/s/v', 'linux'), '/s/v/bin/python');
    assert.match(venvPython('/s/v', 'win32'), /Scripts[\\/]python\.exe$/);
  });
});

describe('installServer', () => {
  it('offline when the dependencies are present: venv, pip --no-index --find-links, import check', async () => {
    const { run, calls } = runner([
      [isVersion, ok('3.11\n')],
      [isVenv, ok()],
      [isOffline, ok('Successfully installed pycsamt-lsp-0.1.0')],
      [isVerify, ok('0.1.0\n')],
    ]);
    const { req, progress } = request(run);
    const r = await installServer(req);
    assert.deepEqual(r, { ok: true, python: VPY, source: 'offline' });
    assert.deepEqual(calls[1], ['/bare/bin/python', '-m', 'venv', '--clear', VENV]);
    const pip = calls[2];
    assert.equal(pip[0], VPY);
    assert.ok(pip.includes('--no-index'));
    assert.equal(pip[pip.indexOf('--find-links') + 1], '/ext/server-wheel');
    assert.equal(pip.at(-1), WHEEL.path);
    assert.equal(calls.length, 4);
    assert.ok(progress.some((p) => /offline/.test(p)));
  });

  it('falls back to the package index for missing dependencies', async () => {
    const { run, calls } = runner([
      [isVersion, ok('3.12')],
      [isVenv, ok()],
      [isOffline, fail('ERROR: Could not find a version that satisfies the requirement pygls<3,>=2.1 (from pycsamt-lsp)\nERROR: No matching distribution found for pygls<3,>=2.1')],
      [isIndex, ok('Successfully installed numpy pygls')],
      [isVerify, ok('0.1.0')],
    ]);
    const { req, log, progress } = request(run);
    const r = await installServer(req);
    assert.deepEqual(r, { ok: true, python: VPY, source: 'index' });
    assert.equal(calls.length, 5);
    assert.match(log.join('\n'), /pygls<3,>=2\.1 is not present/);
    assert.ok(progress.some((p) => /downloading/.test(p)));
  });

  it('a clear message when the dependencies cannot be fetched', async () => {
    const noNet = fail(
      "WARNING: Retrying ... after connection broken by 'NewConnectionError(': Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')'\nERROR: No matching distribution found for pygls<3,>=2.1",
    );
    const { run } = runner([
      [isVersion, ok('3.11')],
      [isVenv, ok()],
      [isOffline, fail('ERROR: No matching distribution found for pygls<3,>=2.1')],
      [isIndex, noNet],
    ]);
    const r = await installServer(request(run).req);
    assert.equal(r.ok, false);
    assert.equal((r as any).stage, 'pip');
    assert.match((r as any).message, /"pygls<3,>=2\.1" could not be fetched from the package index \(no network/);
    assert.match((r as any).message, /--no-index --find-links/);
  });

  it('names the wheel\'s dependencies when pip does not say which one failed', async () => {
    const { run } = runner([
      [isVersion, ok('3.11')],
      [isVenv, ok()],
      [isOffline, fail('ERROR: No matching distribution found for pygls<3,>=2.1')],
      [isIndex, fail('WARNING: Retrying... Failed to establish a new connection: [Errno 101] Network is unreachable\nERROR: Could not install packages')],
    ]);
    const { req, progress } = request(run);
    const r = await installServer(req);
    assert.match((r as any).message, /its dependencies \(pygls, lsprotocol, numpy, watchfiles, PyYAML\) could not be fetched/);
    assert.ok(progress.some((p) => /PyYAML/.test(p)));
  });

  it('reuses a working private environment (an update stays offline)', async () => {
    const { run, calls } = runner([
      [isVersion, ok('3.11')],
      [(f, a) => f === VPY && a.join(' ') === '-m pip --version', ok('pip 24')],
      [isOffline, ok()],
      [isVerify, ok('0.1.0')],
    ]);
    const r = await installServer(request(run, (p) => p === VPY).req);
    assert.equal(r.ok, true);
    assert.ok(!calls.some((c) => c.includes('venv')));
  });

  it('refuses a Python older than 3.11, and says which', async () => {
    const { run } = runner([[isVersion, ok('3.9')]]);
    const r = await installServer(request(run).req);
    assert.equal(r.ok, false);
    assert.match((r as any).message, /needs Python 3\.11 or newer; "\/bare\/bin\/python" is 3\.9/);
  });

  it('a missing interpreter and a missing venv module are named', async () => {
    let { run } = runner([[isVersion, { code: null, stdout: '', stderr: '', error: 'ENOENT' }]]);
    let r = await installServer(request(run).req);
    assert.match((r as any).message, /"\/bare\/bin\/python" was not found/);
    ({ run } = runner([
      [isVersion, ok('3.11')],
      [isVenv, fail('The virtual environment was not created successfully because ensurepip is not available.')],
    ]));
    r = await installServer(request(run).req);
    assert.equal((r as any).stage, 'venv');
    assert.match((r as any).message, /python3-venv/);
  });

  it('pip output helpers', () => {
    assert.equal(missingRequirement('ERROR: No matching distribution found for numpy>=1.26'), 'numpy>=1.26');
    assert.ok(looksOffline('Failed to establish a new connection'));
    assert.ok(!looksOffline('ERROR: some other failure'));
  });
});

describe('is this a pyCSAMT project?', () => {
  it('a setting, the package in a folder, or an import', () => {
    const none = { settings: ['', ''], folders: ['/w'], documents: ['import numpy\n'], exists: () => false };
    assert.equal(pycsamtProjectReason(none), undefined);
    assert.match(pycsamtProjectReason({ ...none, settings: ['/venv/bin/python', ''] })!, /setting/);
    assert.match(pycsamtProjectReason({ ...none, exists: (p) => p === '/w/pycsamt/__init__.py' })!, /holds the pycsamt package/);
    assert.match(pycsamtProjectReason({ ...none, documents: ['x = 1\nfrom pycsamt.emtools import ss\n'] })!, /imports pycsamt/);
  });

  it('recognises import forms, not mentions', () => {
    assert.ok(importsPycsamt('import pycsamt'));
    assert.ok(importsPycsamt('    from pycsamt import static_shift'));
    assert.ok(importsPycsamt('from pycsamt.agents import StaticShiftAgent'));
    assert.ok(!importsPycsamt('# we do not use pycsamt here'));
    assert.ok(!importsPycsamt('import pycsamtx'));
  });
});
