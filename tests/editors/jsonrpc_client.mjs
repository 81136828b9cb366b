#!/usr/bin/env node
// A real JSON-RPC client (vscode-languageserver-protocol, the protocol layer of
// vscode-languageclient) against the Python server over stdio:
// initialize -> open a buffer with a hallucinated import -> diagnostic ->
// quick fix -> hover -> pycsamt.query -> shutdown/exit.
//
//   PYTHON        interpreter that has (or, with PYTHONPATH=server, sees) pycsamt_lsp
//                 (default: <repo>/.venv/bin/python, else python3)
//   CORPUS_ROOT   pyCSAMT sources (default: `python -m pycsamt_lsp corpus fetch`)
//   TIMEOUT_S     per-step timeout (default 300: a cold index build of the sdist)
//
// Prints one line per check and a closing "jsonrpc: N passed, N failed";
// exits non-zero when a check fails.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const P = require('vscode-languageserver-protocol/node');

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const PYTHON = process.env.PYTHON || (fs.existsSync(path.join(REPO, '.venv/bin/python')) ? path.join(REPO, '.venv/bin/python') : 'python3');
const TIMEOUT_MS = Number(process.env.TIMEOUT_S || 300) * 1000;
const env = { ...process.env, PYTHONPATH: [path.join(REPO, 'server'), process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) };

function corpusRoot() {
  if (process.env.CORPUS_ROOT) return process.env.CORPUS_ROOT;
  const out = execFileSync(PYTHON, ['-m', 'pycsamt_lsp', 'corpus', 'fetch', '--json'], { env, encoding: 'utf8' });
  return JSON.parse(out).root;
}

// ---- a tiny check harness --------------------------------------------------------
const results = [];
function record(name, ok, detail = '') {
  results.push({ name, ok });
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${detail ? `: ${detail}` : ''}`);
}
async function step(name, fn) {
  const t0 = Date.now();
  try {
    const detail = await fn();
    record(name, true, `${detail ?? ''} (${Date.now() - t0} ms)`.trim());
    return true;
  } catch (err) {
    record(name, false, err && err.stack ? err.stack.split('\n').slice(0, 3).join(' | ') : String(err));
    return false;
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
function waitFor(pred, what, timeout = TIMEOUT_MS) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = () => {
      const v = pred();
      if (v) return resolve(v);
      if (Date.now() - t0 > timeout) return reject(new Error(`timed out after ${timeout} ms waiting for ${what}`));
      setTimeout(tick, 50);
    };
    tick();
  });
}
function withTimeout(promise, what, timeout = TIMEOUT_MS) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${timeout} ms: ${what}`)), timeout);
    }),
  ]).finally(() => clearTimeout(timer));
}

// ---- the session ---------------------------------------------------------------
const ROOT = corpusRoot();
const WS = fs.mkdtempSync(path.join(os.tmpdir(), 'pycsamt-jsonrpc-'));
const SCRIPT = path.join(WS, 'survey.py');
const TEXT = [
  'from pycsamt import static_shift',
  'from pycsamt.emtools.ss import estimate_ss_ama',
  '',
  'factors = estimate_ss_ama(sites, half_window=3)',
  '',
].join('\n');
fs.writeFileSync(SCRIPT, TEXT);
const uri = pathToFileURL(SCRIPT).href;
// a fresh index in a temp folder, so the run does not depend on earlier runs
const INDEX_DIR = process.env.INDEX_DIR || path.join(WS, '.index');
const settings = {
  corpusRoot: ROOT,
  indexDir: INDEX_DIR,
  profile: 'pycsamt',
  resultCount: 10,
  dense: false,
  openaiModel: 'gpt-4o-mini',
  logLevel: 'info',
  diagnosticsSeverity: 'error',
};

console.log(`# server: ${PYTHON} -m pycsamt_lsp serve`);
console.log(`# corpus: ${ROOT}`);
console.log(`# workspace: ${WS}`);
console.log(`# index: ${INDEX_DIR}`);

const proc = spawn(PYTHON, ['-m', 'pycsamt_lsp', 'serve'], { cwd: WS, env, stdio: ['pipe', 'pipe', 'pipe'] });
let stderr = '';
proc.stderr.on('data', (d) => (stderr += d));
const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));

const conn = P.createProtocolConnection(new P.StreamMessageReader(proc.stdout), new P.StreamMessageWriter(proc.stdin));
const diagnostics = new Map();
const progress = [];
const states = [];
const logs = [];
conn.onNotification(P.PublishDiagnosticsNotification.type, (p) => diagnostics.set(p.uri, p));
conn.onNotification('pycsamt/indexState', (p) => states.push(p));
conn.onNotification(P.LogMessageNotification.type, (p) => logs.push(p.message));
conn.onNotification(P.ShowMessageNotification.type, (p) => logs.push(`[showMessage] ${p.message}`));
// like vscode-languageclient: follow each token the server creates
conn.onRequest(P.WorkDoneProgressCreateRequest.type, ({ token }) => {
  conn.onProgress(P.WorkDoneProgress.type, token, (value) => progress.push({ token, value }));
  return null;
});
conn.onRequest(P.ConfigurationRequest.type, (p) => p.items.map((i) => (i.section === 'pycsamt' ? settings : null)));
conn.onRequest(P.RegistrationRequest.type, () => null);
conn.onRequest(P.UnregistrationRequest.type, () => null);
conn.onRequest(P.ShowMessageRequest.type, () => null);
conn.onRequest(P.ApplyWorkspaceEditRequest.type, () => ({ applied: true }));
conn.listen();

let failedHard = false;
try {
  let init;
  const ok = await step('initialize', async () => {
    init = await withTimeout(
      conn.sendRequest(P.InitializeRequest.type, {
        processId: process.pid,
        clientInfo: { name: 'pycsamt-jsonrpc-test', version: '1' },
        rootUri: pathToFileURL(WS).href,
        workspaceFolders: [{ uri: pathToFileURL(WS).href, name: 'ws' }],
        initializationOptions: settings,
        capabilities: {
          window: { workDoneProgress: true, showMessage: {} },
          workspace: {
            configuration: true,
            workspaceFolders: true,
            executeCommand: { dynamicRegistration: false },
            didChangeWatchedFiles: { dynamicRegistration: true },
            didChangeConfiguration: { dynamicRegistration: false },
            applyEdit: true,
          },
          textDocument: {
            synchronization: { didSave: true, dynamicRegistration: false },
            publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true, dataSupport: true },
            hover: { contentFormat: ['markdown', 'plaintext'] },
            completion: { completionItem: { snippetSupport: false, documentationFormat: ['markdown', 'plaintext'] } },
            codeAction: {
              codeActionLiteralSupport: { codeActionKind: { valueSet: ['quickfix', 'refactor', 'source'] } },
              isPreferredSupport: true,
              dataSupport: true,
              resolveSupport: { properties: ['edit'] },
            },
            definition: {},
          },
        },
      }),
      'initialize',
      60000,
    );
    const cmds = init.capabilities.executeCommandProvider?.commands ?? [];
    for (const c of ['pycsamt.query', 'pycsamt.stats']) assert(cmds.includes(c), `executeCommandProvider lacks ${c}: ${cmds}`);
    return `${init.serverInfo?.name ?? '?'} ${init.serverInfo?.version ?? ''}, ${cmds.length} commands`;
  });
  if (!ok) {
    failedHard = true;
    throw new Error('initialize failed');
  }
  await conn.sendNotification(P.InitializedNotification.type, {});
  await conn.sendNotification(P.DidOpenTextDocumentNotification.type, {
    textDocument: { uri, languageId: 'python', version: 1, text: TEXT },
  });

  let diag;
  await step('diagnostic for the hallucinated import', async () => {
    const got = await waitFor(() => {
      const d = diagnostics.get(uri);
      return d && d.diagnostics.length > 0 ? d : undefined;
    }, 'publishDiagnostics with a problem');
    diag = got.diagnostics.find((d) => /static_shift/.test(d.message));
    assert(diag, `no diagnostic mentions static_shift: ${JSON.stringify(got.diagnostics)}`);
    assert(diag.range.start.line === 0, `diagnostic on line ${diag.range.start.line}, expected 0`);
    assert(diag.severity === P.DiagnosticSeverity.Error, `severity ${diag.severity}, expected Error (1)`);
    const others = got.diagnostics.filter((d) => d !== diag && d.severity === P.DiagnosticSeverity.Error);
    assert(others.length === 0, `unexpected errors: ${JSON.stringify(others)}`);
    return JSON.stringify(diag.message);
  });

  await step('quick fix for the hallucinated import', async () => {
    assert(diag, 'no diagnostic to fix');
    const actions = await withTimeout(
      conn.sendRequest(P.CodeActionRequest.type, {
        textDocument: { uri },
        range: diag.range,
        context: { diagnostics: [diag], only: ['quickfix'] },
      }),
      'codeAction',
    );
    const fixes = (actions ?? []).filter((a) => a.kind === 'quickfix' || a.edit);
    assert(fixes.length > 0, `no quick fix: ${JSON.stringify(actions)}`);
    const edits = JSON.stringify(fixes[0].edit ?? {});
    assert(/StaticShift|static_shift|ss/i.test(edits), `the fix does not name a real symbol: ${edits}`);
    return `${fixes.length} fix(es), first: ${JSON.stringify(fixes[0].title)}`;
  });

  await step('hover shows the real signature', async () => {
    assert(init.capabilities.hoverProvider, 'the server has no hoverProvider');
    const line = 3;
    const character = TEXT.split('\n')[line].indexOf('estimate_ss_ama') + 3;
    const hover = await withTimeout(
      conn.sendRequest(P.HoverRequest.type, { textDocument: { uri }, position: { line, character } }),
      'hover',
    );
    assert(hover, 'no hover');
    const c = hover.contents;
    const text = typeof c === 'string' ? c : Array.isArray(c) ? c.map((x) => x.value ?? x).join('\n') : c.value;
    assert(/estimate_ss_ama/.test(text), `hover lacks the name: ${text.slice(0, 300)}`);
    assert(/half_window/.test(text), `hover lacks the real parameter half_window: ${text.slice(0, 300)}`);
    return JSON.stringify(text.split('\n').slice(0, 2).join(' ').slice(0, 120));
  });

  await step('pycsamt.query returns static-shift results', async () => {
    const res = await withTimeout(
      conn.sendRequest(P.ExecuteCommandRequest.type, {
        command: 'pycsamt.query',
        arguments: [{ query: 'static shift correction', k: 5 }],
      }),
      'pycsamt.query',
    );
    assert(res && Array.isArray(res.results), `no results array: ${JSON.stringify(res).slice(0, 300)}`);
    assert(res.results.length > 0 && res.results.length <= 5, `${res.results.length} results for k=5`);
    for (const f of ['rank', 'id', 'kind', 'label', 'source_path', 'score']) {
      assert(f in res.results[0], `result lacks ${f}: ${JSON.stringify(res.results[0]).slice(0, 300)}`);
    }
    const hit = res.results.find((r) => /static.?shift|(^|[/_])ss[._]/i.test(`${r.label} ${r.symbol} ${r.source_path}`));
    assert(hit, `no static-shift result: ${res.results.map((r) => r.label).join(', ')}`);
    return `${res.results.length} results, top ${JSON.stringify(res.results[0].label)} (${res.results[0].source_path})`;
  });

  await step('a bad argument is an error response, the server stays up', async () => {
    let err;
    try {
      await conn.sendRequest(P.ExecuteCommandRequest.type, { command: 'pycsamt.query', arguments: [{ k: 3 }] });
    } catch (e) {
      err = e;
    }
    assert(err, 'no error for a query without "query"');
    const stats = await withTimeout(
      conn.sendRequest(P.ExecuteCommandRequest.type, { command: 'pycsamt.stats', arguments: [{}] }),
      'pycsamt.stats',
    );
    assert(stats && stats.n_chunks > 0, `stats: ${JSON.stringify(stats).slice(0, 200)}`);
    return `error ${err.code}: ${JSON.stringify(err.message)}; then ${stats.n_chunks} chunks, root ${stats.root}`;
  });

  await step('index progress was reported', async () => {
    const kinds = progress.map((p) => p.value?.kind);
    assert(kinds.includes('begin') && kinds.includes('end'), `$/progress kinds: ${kinds.join(',')}`);
    assert(states.some((s) => s.state === 'ready'), `pycsamt/indexState: ${JSON.stringify(states.slice(-3))}`);
    return `${progress.length} $/progress, last state ${JSON.stringify(states.at(-1))}`;
  });

  await step('shutdown and exit', async () => {
    await withTimeout(conn.sendRequest(P.ShutdownRequest.type), 'shutdown', 30000);
    await conn.sendNotification(P.ExitNotification.type);
    const { code, signal } = await withTimeout(exited, 'server exit', 15000);
    assert(code === 0, `server exited with ${code ?? signal}`);
    return 'exit code 0';
  });
} catch (err) {
  if (!failedHard) console.error(err);
} finally {
  conn.dispose();
  if (proc.exitCode === null) proc.kill('SIGKILL');
  fs.rmSync(WS, { recursive: true, force: true });
}

const failed = results.filter((r) => !r.ok).length;
if (failed) {
  const errLog = path.join(os.tmpdir(), `pycsamt-jsonrpc-server-${process.pid}.stderr`);
  fs.writeFileSync(errLog, stderr);
  console.log(`# full server stderr: ${errLog}`);
  console.log('# server stderr (last 40 lines):');
  console.log(stderr.split('\n').slice(-40).map((l) => `#   ${l}`).join('\n'));
  console.log('# server log messages (last 20):');
  console.log(logs.slice(-20).map((l) => `#   ${l}`).join('\n'));
}
console.log(`jsonrpc: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
