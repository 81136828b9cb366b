import { strict as assert } from 'node:assert';
import { beforeEach, describe, it } from 'node:test';
import { DOCUMENT_SELECTOR, ServerManager, serverCommandLine } from '../src/common/server';
import { IndexStatus } from '../src/common/status';
import { fakeOutput, flush, lc, resetStubs, vs } from './helpers';

function manager(check = async (_cmd: string[]) => ({ ok: true as const, version: '0.1.0' })) {
  const output = fakeOutput();
  const status = new IndexStatus();
  const checked: string[][] = [];
  const m = new ServerManager(output, status, async (cmd) => {
    checked.push(cmd);
    return check(cmd);
  });
  return { m, output, status, checked, item: vs.statusItems[0] };
}

describe('server command line', () => {
  it('<python> -m pycsamt_lsp serve, keeping leading interpreter arguments', () => {
    assert.deepEqual(serverCommandLine({ command: ['/v/bin/python'], source: 'setting' }), {
      command: '/v/bin/python',
      args: ['-m', 'pycsamt_lsp', 'serve'],
    });
    assert.deepEqual(serverCommandLine({ command: ['conda', 'run', '-n', 'g', 'python'], source: 'python-extension' }), {
      command: 'conda',
      args: ['run', '-n', 'g', 'python', '-m', 'pycsamt_lsp', 'serve'],
    });
  });

  it('documents: python, and python fences in markdown and restructuredtext', () => {
    const langs = new Set(DOCUMENT_SELECTOR.map((d) => d.language));
    assert.deepEqual([...langs].sort(), ['markdown', 'python', 'restructuredtext']);
  });
});

describe('ServerManager', () => {
  beforeEach(resetStubs);

  it('starts the client over stdio with initializationOptions from the settings', async () => {
    vs.config['pycsamt.server.python'] = '/venv/bin/python';
    vs.config['pycsamt.corpusRoot'] = '/data/pycsamt-2.6.4';
    lc.onRequest = (method: string, params: any) =>
      params.command === 'pycsamt.stats' ? { n_chunks: 4321, state: 'ready', root: '/data/pycsamt-2.6.4' } : {};
    const { m, output, checked, item } = manager();
    await m.start();
    await flush();
    assert.deepEqual(checked, [['/venv/bin/python']]);
    const client = lc.clients[0];
    assert.equal(client.id, 'pycsamt');
    assert.equal(client.serverOptions.command, '/venv/bin/python');
    assert.deepEqual(client.serverOptions.args, ['-m', 'pycsamt_lsp', 'serve']);
    assert.equal(client.serverOptions.transport, 0);
    assert.deepEqual(client.clientOptions.initializationOptions, {
      corpusRoot: '/data/pycsamt-2.6.4',
      indexDir: '',
      profile: 'pycsamt',
      resultCount: 10,
      dense: false,
      openaiModel: 'gpt-4o-mini',
      openaiModelRouting: false,
      logLevel: 'info',
      diagnosticsSeverity: 'error',
      showSyntaxErrors: false,
      watch: 'auto',
      debounceMs: 250,
    });
    assert.equal(client.clientOptions.outputChannel, output);
    // the server says the index is ready: the client fetches the stats for the root
    client.handlers['pycsamt/indexState']({ state: 'ready', percent: 100, nChunks: 4321, message: 'load' });
    await flush();
    assert.equal(m.corpusRoot(), '/data/pycsamt-2.6.4');
    assert.equal(item.text, '$(database) pyCSAMT: ready · 4,321 chunks');
    assert.match(output.lines.join('\n'), /Choosing the Python interpreter/);
  });

  it('forwards commands as workspace/executeCommand with ONE argument', async () => {
    lc.onRequest = (_m: string, p: any) => ({ echo: p });
    const { m } = manager();
    await m.start();
    const res: any = await m.execute('pycsamt.query', { query: 'q', k: 3 });
    assert.deepEqual(res.echo, { command: 'pycsamt.query', arguments: [{ query: 'q', k: 3 }] });
    assert.equal(lc.clients[0].requests.at(-1).method, 'workspace/executeCommand');
  });

  it('a missing server package and no bundled wheel: error with a button that opens the setting; no client', async () => {
    const { m, item } = manager(async () => ({ ok: false, reason: 'missing', detail: "No module named 'pycsamt_lsp'" }) as any);
    vs.messageAnswers.push('Open Setting');
    await m.start();
    await flush();
    assert.equal(lc.clients.length, 0);
    assert.equal(vs.messages[0].level, 'error');
    assert.match(vs.messages[0].text, /server package pycsamt-lsp is not installed in "python3"/);
    assert.doesNotMatch(vs.messages[0].text, /pip install pycsamt-lsp/); // not on PyPI
    assert.deepEqual(vs.messages[0].items, ['Open Setting', 'Show Output']);
    assert.deepEqual(vs.commandsRun[0], ['workbench.action.openSettings', 'pycsamt.server.python']);
    assert.equal(item.text, '$(error) pyCSAMT: error');
    await assert.rejects(m.execute('pycsamt.stats', {}), /not running/);
  });

  it('status follows $/progress and pycsamt/indexState', async () => {
    lc.onRequest = () => ({ n_chunks: 77, state: 'ready' });
    const { m, item } = manager();
    await m.start();
    await flush();
    const client = lc.clients[0];
    const progress = client.clientOptions.middleware.handleWorkDoneProgress;
    let forwarded = 0;
    progress('tok', { kind: 'begin', title: 'Indexing', percentage: 0 }, () => forwarded++);
    progress('tok', { kind: 'report', percentage: 64 }, () => forwarded++);
    assert.equal(item.text, '$(sync~spin) pyCSAMT: building 64%');
    progress('tok', { kind: 'end' }, () => forwarded++);
    await flush();
    assert.equal(item.text, '$(database) pyCSAMT: ready · 77 chunks');
    assert.equal(forwarded, 3); // VS Code's own progress UI still gets them
    client.handlers['pycsamt/indexState']({ state: 'stale' });
    assert.equal(item.text, '$(warning) pyCSAMT: stale');
    client.handlers['pycsamt/indexState']({ state: 'building', percent: 5 });
    assert.equal(item.text, '$(sync~spin) pyCSAMT: building 5%');
  });

  it('answers workspace/configuration for section pycsamt; pushes didChangeConfiguration', async () => {
    vs.config['pycsamt.resultCount'] = 3;
    const { m } = manager();
    await m.start();
    const client = lc.clients[0];
    const got = client.clientOptions.middleware.workspace.configuration({ items: [{ section: 'pycsamt' }] }, {}, () => ['other']);
    assert.equal(got[0].resultCount, 3);
    vs.config['pycsamt.diagnostics.severity'] = 'warning';
    await m.notifyConfiguration();
    assert.deepEqual(client.notifications.at(-1).method, 'workspace/didChangeConfiguration');
    assert.equal(client.notifications.at(-1).params.settings.pycsamt.diagnosticsSeverity, 'warning');
  });

  it('restart stops the old client and starts a new one', async () => {
    const { m } = manager();
    await m.start();
    await m.restart('test');
    assert.equal(lc.clients.length, 2);
    assert.equal(lc.clients[0].state, 1);
    assert.equal(lc.clients[1].state, 2);
  });
});

describe('ServerManager: installing the bundled server', () => {
  beforeEach(resetStubs);
  const WHEEL_DIR = '/ext/server-wheel';
  const STORAGE = '/gs';
  const PRIVATE = '/gs/server-venv/bin/python';

  /** A manager whose wheel dir holds a real file listing (a temp folder). */
  function installable(opts: { reason?: string; privateHasServer?: () => boolean; run?: any } = {}) {
    const fs = require('node:fs');
    const os = require('node:os');
    const path = require('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wheel-'));
    fs.writeFileSync(path.join(dir, 'pycsamt_lsp-0.1.0-py3-none-any.whl'), '');
    let installed = false;
    const runs: string[][] = [];
    const statuses: string[] = [];
    const run =
      opts.run ??
      (async (file: string, args: string[]) => {
        runs.push([file, ...args]);
        statuses.push(vs.statusItems.at(-1)?.text);
        if (args.some((a) => a.includes('sys.version_info'))) return { code: 0, stdout: '3.11', stderr: '' };
        if (args.includes('install')) installed = true;
        return { code: 0, stdout: '0.1.0', stderr: '' };
      });
    const output = fakeOutput();
    const status = new IndexStatus();
    const checked: string[][] = [];
    const has = opts.privateHasServer ?? (() => installed);
    const m = new ServerManager(
      output,
      status,
      async (cmd) => {
        checked.push(cmd);
        return cmd[0] === PRIVATE && has()
          ? { ok: true as const, version: '0.1.0' }
          : ({ ok: false, reason: 'missing', detail: "No module named 'pycsamt_lsp'" } as any);
      },
      {
        storageDir: STORAGE,
        wheelDir: dir,
        projectReason: () => (opts.reason === undefined ? 'a pycsamt.* setting is set' : opts.reason || undefined),
        run,
        exists: (p: string) => p === PRIVATE && (installed || has()),
      },
    );
    void WHEEL_DIR;
    return { m, output, status, checked, runs, statuses, item: vs.statusItems.at(-1), wheelDir: dir };
  }

  it('in a pyCSAMT project: offers to install; Install creates the venv, pip-installs the wheel, starts the server from it', async () => {
    vs.config['pycsamt.server.python'] = '/bare/bin/python';
    const { m, runs, output, item, statuses } = installable();
    vs.messageAnswers.push('Install');
    await m.start();
    await flush(20);
    const offer = vs.messages[0];
    assert.equal(offer.level, 'warning');
    assert.match(offer.text, /not installed in "\/bare\/bin\/python" \(setting pycsamt\.server\.python\)/);
    assert.match(offer.text, /Install the server the extension carries into a private environment/);
    assert.deepEqual(offer.items, ['Install', 'Open Setting', 'Show Output']);
    // progress notification, then the steps, with the chosen Python creating the venv
    const progress = vs.calls.find((c: any[]) => c[0] === 'withProgress');
    assert.equal(progress[1].location, 15);
    assert.ok(vs.calls.some((c: any[]) => c[0] === 'progress.report' && /offline/.test(c[1].message)));
    assert.deepEqual(runs[1], ['/bare/bin/python', '-m', 'venv', '--clear', '/gs/server-venv']);
    assert.equal(statuses[1], '$(sync~spin) pyCSAMT: installing the server');
    assert.ok(runs.some((r) => r[0] === PRIVATE && r.includes('--no-index')));
    // then the server runs from the private environment
    assert.equal(lc.clients.length, 1);
    assert.equal(lc.clients[0].serverOptions.command, PRIVATE);
    assert.match(vs.messages.at(-1).text, /the server is installed in \/gs\/server-venv \(offline\)/);
    assert.match(output.lines.join('\n'), /using the private environment/);
    assert.notEqual(item.text, '$(cloud-download) pyCSAMT: server not installed');
  });

  it('in an unrelated project: no popup, a quiet status bar item that installs on click', async () => {
    const { m, output, item } = installable({ reason: '' });
    await m.start();
    await flush();
    assert.equal(vs.messages.length, 0);
    assert.equal(lc.clients.length, 0);
    assert.equal(item.text, '$(cloud-download) pyCSAMT: server not installed');
    assert.equal(item.command, 'pycsamt.client.installServer');
    assert.equal(item.backgroundColor, undefined);
    assert.match(output.lines.join('\n'), /Not a pyCSAMT project/);
    // a pyCSAMT command is an explicit request: now it offers the install
    await assert.rejects(m.execute('pycsamt.query', {}), /not running/);
    assert.equal(vs.messages.length, 1);
    assert.deepEqual(vs.messages[0].items, ['Install', 'Open Setting', 'Show Output']);
  });

  it('the install command installs without asking, then starts', async () => {
    const { m } = installable({ reason: '' });
    await m.start();
    await m.installCommand();
    await flush(20);
    assert.equal(lc.clients.length, 1);
    assert.equal(lc.clients[0].serverOptions.command, PRIVATE);
  });

  it('an earlier install is used silently when the chosen Python lacks the server', async () => {
    const { m, checked } = installable({ privateHasServer: () => true });
    await m.start();
    await flush();
    assert.equal(vs.messages.length, 0);
    assert.deepEqual(checked, [['python3'], [PRIVATE]]);
    assert.equal(lc.clients[0].serverOptions.command, PRIVATE);
  });

  it('a failed install says why and keeps the server stopped', async () => {
    const run = async (_f: string, args: string[]) => {
      if (args.some((a) => a.includes('sys.version_info'))) return { code: 0, stdout: '3.11', stderr: '' };
      if (args.includes('install')) return { code: 1, stdout: '', stderr: 'ERROR: No matching distribution found for numpy>=1.26' };
      return { code: 0, stdout: '', stderr: '' };
    };
    const { m, item } = installable({ run });
    vs.messageAnswers.push('Install');
    await m.start();
    await flush(20);
    assert.equal(lc.clients.length, 0);
    const err = vs.messages.find((x: any) => x.level === 'error');
    assert.match(err.text, /"numpy>=1\.26" could not be fetched from the package index/);
    assert.equal(item.text, '$(error) pyCSAMT: error');
  });
});
