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

  it('documents: python, markdown, restructuredtext', () => {
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
      logLevel: 'info',
      diagnosticsSeverity: 'error',
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

  it('a missing server package: error with a button that opens the setting; no client', async () => {
    const { m, item } = manager(async () => ({ ok: false, reason: 'missing', detail: "No module named 'pycsamt_lsp'" }) as any);
    vs.messageAnswers.push('Open Setting');
    await m.start();
    await flush();
    assert.equal(lc.clients.length, 0);
    assert.equal(vs.messages[0].level, 'error');
    assert.match(vs.messages[0].text, /server package is not installed in "python3"/);
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
