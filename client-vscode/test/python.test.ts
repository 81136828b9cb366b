import { strict as assert } from 'node:assert';
import { beforeEach, describe, it } from 'node:test';
import {
  CHECK_SCRIPT,
  checkServerPackage,
  packageProblemMessage,
  pythonEnvsProvider,
  pythonExtensionProvider,
  resolveInterpreter,
  type ExecFileFn,
} from '../src/common/python';
import { resetStubs, vs } from './helpers';

function providers(over: Partial<Parameters<typeof resolveInterpreter>[0]> = {}) {
  const log: string[] = [];
  return {
    log,
    p: {
      setting: () => '',
      pythonEnvs: async () => undefined,
      pythonExtension: async () => undefined,
      log: (l: string) => log.push(l),
      ...over,
    },
  };
}

describe('interpreter choice order', () => {
  it('1. the pycsamt.server.python setting wins', async () => {
    const { p, log } = providers({
      setting: () => '/opt/py/bin/python',
      pythonExtension: async () => ['/other/python'],
    });
    assert.deepEqual(await resolveInterpreter(p), { command: ['/opt/py/bin/python'], source: 'setting' });
    assert.match(log.join('\n'), /setting pycsamt.server.python: \/opt\/py\/bin\/python/);
  });

  it('2. then the Python Environments extension', async () => {
    const { p } = providers({ pythonEnvs: async () => ['/envs/a/bin/python'], pythonExtension: async () => ['/b'] });
    assert.deepEqual(await resolveInterpreter(p), { command: ['/envs/a/bin/python'], source: 'python-envs' });
  });

  it('3. then the Python extension, with its full exec command', async () => {
    const { p, log } = providers({ pythonExtension: async () => ['conda', 'run', '-n', 'geo', 'python'] });
    const got = await resolveInterpreter(p);
    assert.deepEqual(got, { command: ['conda', 'run', '-n', 'geo', 'python'], source: 'python-extension' });
    const text = log.join('\n');
    assert.ok(text.indexOf('setting pycsamt.server.python: not set') < text.indexOf('Python extension: conda run'));
  });

  it('4. else python3; failures are logged and skipped', async () => {
    const { p, log } = providers({
      pythonEnvs: async () => {
        throw new Error('boom');
      },
      pythonExtension: async () => [],
    });
    assert.deepEqual(await resolveInterpreter(p), { command: ['python3'], source: 'default' });
    const text = log.join('\n');
    assert.match(text, /Python Environments extension: failed \(boom\)/);
    assert.match(text, /Python extension: no interpreter selected/);
    assert.match(text, /default: python3/);
  });
});

describe('the Python extensions\' APIs', () => {
  beforeEach(resetStubs);

  it('ms-python.python: active environment, resolved to its executable', async () => {
    let activated = false;
    const api = {
      environments: {
        getActiveEnvironmentPath: () => ({ id: 'x', path: '/ws/.venv' }),
        resolveEnvironment: async (e: any) => (e.path === '/ws/.venv' ? { executable: { uri: { fsPath: '/ws/.venv/bin/python' } } } : undefined),
      },
    };
    vs.extensions['ms-python.python'] = {
      isActive: false,
      exports: undefined,
      activate: async () => {
        activated = true;
        return api;
      },
    };
    const cmd = await pythonExtensionProvider(undefined, () => undefined)();
    assert.deepEqual(cmd, ['/ws/.venv/bin/python']);
    assert.ok(activated);
  });

  it('ms-python.python: falls back to settings.getExecutionDetails', async () => {
    vs.extensions['ms-python.python'] = {
      isActive: true,
      exports: {
        environments: { getActiveEnvironmentPath: () => undefined, resolveEnvironment: async () => undefined },
        settings: { getExecutionDetails: () => ({ execCommand: ['/usr/bin/python3.11'] }) },
      },
    };
    assert.deepEqual(await pythonExtensionProvider(undefined, () => undefined)(), ['/usr/bin/python3.11']);
  });

  it('not installed: logged, undefined', async () => {
    const log: string[] = [];
    assert.equal(await pythonExtensionProvider(undefined, (l) => log.push(l))(), undefined);
    assert.equal(await pythonEnvsProvider(undefined, (l) => log.push(l))(), undefined);
    assert.match(log.join('\n'), /ms-python.python: not installed/);
  });

  it('ms-python.vscode-python-envs: execInfo.run', async () => {
    vs.extensions['ms-python.vscode-python-envs'] = {
      isActive: true,
      exports: { getEnvironment: async () => ({ execInfo: { run: { executable: '/e/python', args: ['-X', 'utf8'] } } }) },
    };
    assert.deepEqual(await pythonEnvsProvider(undefined, () => undefined)(), ['/e/python', '-X', 'utf8']);
  });
});

describe('is the server package installed?', () => {
  const fakeExec =
    (error: any, stdout: string, stderr: string, seen?: any[]): ExecFileFn =>
    (file, args, _opts, cb) => {
      seen?.push([file, args]);
      cb(error, stdout, stderr);
      return undefined;
    };

  it('runs <python> -c "import pycsamt_lsp"', async () => {
    const seen: any[] = [];
    const r = await checkServerPackage(['conda', 'run', 'python'], fakeExec(null, '0.1.0\n', '', seen));
    assert.deepEqual(r, { ok: true, version: '0.1.0' });
    assert.deepEqual(seen[0], ['conda', ['run', 'python', '-c', CHECK_SCRIPT]]);
  });

  it('classifies a missing module, a missing interpreter, other errors', async () => {
    const missing = await checkServerPackage(
      ['python3'],
      fakeExec(Object.assign(new Error('exit 1'), { code: 1 }), '', "Traceback...\nModuleNotFoundError: No module named 'pycsamt_lsp'"),
    );
    assert.equal(missing.ok, false);
    assert.equal((missing as any).reason, 'missing');
    const notFound = await checkServerPackage(['/nope/python'], fakeExec(Object.assign(new Error('spawn'), { code: 'ENOENT' }), '', ''));
    assert.equal((notFound as any).reason, 'not-found');
    const other = await checkServerPackage(['python3'], fakeExec(Object.assign(new Error('x'), { code: 1 }), '', 'SyntaxError: bad'));
    assert.equal((other as any).reason, 'error');
  });

  it('says which interpreter and how to fix it', () => {
    const msg = packageProblemMessage(
      { command: ['/usr/bin/python3'], source: 'default' },
      { ok: false, reason: 'missing', detail: '' },
    );
    assert.match(msg, /not installed in "\/usr\/bin\/python3"/);
    assert.doesNotMatch(msg, /pip install pycsamt-lsp/); // it is not on PyPI
    assert.match(msg, /python -m build/);
    assert.match(msg, /pycsamt\.server\.python/);
    const offer = packageProblemMessage({ command: ['python3'], source: 'default' }, { ok: false, reason: 'missing', detail: '' }, true);
    assert.match(offer, /Install the server the extension carries into a private environment/);
  });
});
