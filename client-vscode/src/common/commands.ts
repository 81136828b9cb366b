/**
 * Palette commands. Each asks for its input, forwards ONE JSON object to the
 * server's command with `workspace/executeCommand`, and shows the result.
 */
import type { QuickPickItem } from 'vscode';
import { AskView } from './askView';
import { ServerCommands } from './constants';
import {
  askArgs,
  evalSummary,
  formatEvalReport,
  formatStats,
  formatValidation,
  queryArgs,
  queryPickItems,
  resolveLocation,
  searchSourceArgs,
  sourcePickItems,
  statsSummary,
  validateArgs,
  type ResultPickItem,
  type SourceLocation,
} from './format';
import type {
  AskResponse,
  EvalResponse,
  QueryResponse,
  SearchSourceResponse,
  SourceHit,
  StatsResponse,
  ValidateResponse,
} from './protocol';
import { errorMessage, type ServerApi } from './server';
import {
  createQuickPick,
  getActiveTextEditor,
  openLocation,
  showErrorMessage,
  showInformationMessage,
  showInputBox,
  showQuickPick,
  showWarningMessage,
  uriFile,
  uriParse,
  themeIcon,
  withProgress,
} from './vscodeapi';

const SHOW_OUTPUT = 'Show Output';

/** The selected text (one line at most), to prefill input boxes. */
function selectedText(): string {
  const editor = getActiveTextEditor();
  if (!editor || editor.selection.isEmpty) {
    return '';
  }
  const text = editor.document.getText(editor.selection).trim();
  return text.includes('\n') ? '' : text.slice(0, 200);
}

/** Run a server command; show a clear error and return undefined on failure. */
export async function runServerCommand<T>(
  server: ServerApi,
  title: string,
  command: string,
  arg: object,
  progress: 'window' | 'notification' = 'window',
): Promise<T | undefined> {
  try {
    return await withProgress(`pyCSAMT: ${title}…`, progress === 'notification', () => server.execute<T>(command, arg));
  } catch (err) {
    const msg = `pyCSAMT: ${title} failed: ${errorMessage(err)}`;
    server.output.error(msg);
    void showErrorMessage(msg, SHOW_OUTPUT).then((c) => c && server.output.show(true));
    return undefined;
  }
}

export async function openSourceLocation(server: ServerApi, loc: SourceLocation | undefined, what: string): Promise<void> {
  if (!loc) {
    void showErrorMessage(`pyCSAMT: cannot locate ${what}: the server reported no corpus root.`);
    return;
  }
  try {
    const uri = 'uri' in loc ? uriParse(loc.uri) : uriFile(loc.file);
    await openLocation(uri, loc.line);
  } catch (err) {
    void showErrorMessage(`pyCSAMT: cannot open ${what}: ${errorMessage(err)}`);
  }
}

async function corpusRoot(server: ServerApi, fromResult?: unknown): Promise<string | undefined> {
  if (typeof fromResult === 'string' && fromResult) {
    return fromResult;
  }
  return server.corpusRoot() ?? (await server.refreshStats())?.root;
}

// --- Query -------------------------------------------------------------------------

export async function queryCommand(server: ServerApi, preset?: { query?: string; k?: number }): Promise<void> {
  const query =
    preset?.query ??
    (await showInputBox({
      title: 'pyCSAMT: Query',
      prompt: 'Search the pyCSAMT knowledge index (code, docs, examples, recipes)',
      placeHolder: 'e.g. static shift correction with AMA',
      value: selectedText(),
      ignoreFocusOut: true,
    }));
  if (!query?.trim()) {
    return;
  }
  const arg = queryArgs(query, preset?.k ?? server.options().resultCount);
  const resp = await runServerCommand<QueryResponse>(server, 'Query', ServerCommands.query, arg);
  if (!resp) {
    return;
  }
  const items = queryPickItems(resp);
  if (items.length === 0) {
    void showInformationMessage(`pyCSAMT: no results for "${arg.query}".`);
    return;
  }
  const picked = await showQuickPick(items, {
    title: `pyCSAMT: ${items.length} result${items.length === 1 ? '' : 's'} for "${arg.query}"`,
    placeHolder: 'Choose a result to open its source',
    matchOnDescription: true,
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  if (picked) {
    const root = await corpusRoot(server, resp.root);
    await openSourceLocation(server, resolveLocation(picked.item, root), picked.detail);
  }
}

// --- Ask ---------------------------------------------------------------------------

export async function askCommand(
  server: ServerApi,
  view: AskView,
  preset?: { question?: string; k?: number; prefill?: string },
): Promise<void> {
  const question =
    preset?.question ??
    (await showInputBox({
      title: 'pyCSAMT: Ask',
      prompt: 'Ask a question about pyCSAMT; the answer cites the indexed sources',
      placeHolder: 'e.g. How do I correct static shift in CSAMT data?',
      value: preset?.prefill ?? selectedText(),
      ignoreFocusOut: true,
    }));
  if (!question?.trim()) {
    return;
  }
  const arg = askArgs(question, preset?.k ?? server.options().resultCount);
  const resp = await runServerCommand<AskResponse>(server, 'Ask', ServerCommands.ask, arg, 'notification');
  if (!resp) {
    return;
  }
  const root = await corpusRoot(server, resp.root);
  await view.show(arg.question, resp, root);
}

// --- Search Source -----------------------------------------------------------------

type SourcePick = ResultPickItem<SourceHit> & QuickPickItem;

export async function searchSourceCommand(server: ServerApi, preset?: { query?: string; includeTests?: boolean }): Promise<void> {
  const query =
    preset?.query ??
    (await showInputBox({
      title: 'pyCSAMT: Search Source',
      prompt: 'Search the pyCSAMT source live (implementations, with line numbers and file hashes)',
      placeHolder: 'e.g. estimate_ss_ama',
      value: selectedText(),
      ignoreFocusOut: true,
    }));
  if (!query?.trim()) {
    return;
  }
  let includeTests = preset?.includeTests ?? false;
  const run = async (): Promise<{ resp: SearchSourceResponse; items: SourcePick[] } | undefined> => {
    const resp = await runServerCommand<SearchSourceResponse>(
      server,
      'Search Source',
      ServerCommands.searchSource,
      searchSourceArgs(query, includeTests),
    );
    return resp ? { resp, items: sourcePickItems(resp) } : undefined;
  };
  let res = await run();
  if (!res) {
    return;
  }
  const qp = createQuickPick<SourcePick>();
  const toggle = () => ({
    iconPath: themeIcon(includeTests ? 'beaker' : 'beaker-stop'),
    tooltip: includeTests ? 'Tests included: click to exclude tests' : 'Tests excluded: click to include tests',
  });
  const render = () => {
    const r = res!;
    qp.title = `pyCSAMT: ${r.items.length} source match${r.items.length === 1 ? '' : 'es'} for "${query.trim()}"${includeTests ? ' (with tests)' : ''}`;
    qp.placeholder = r.resp.limitation ? `Note: ${r.resp.limitation}` : 'Choose a match to open it';
    qp.items = r.items;
    qp.buttons = [toggle()];
  };
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  qp.ignoreFocusOut = true;
  render();
  const chosen = await new Promise<SourcePick | undefined>((resolve) => {
    qp.onDidTriggerButton(async () => {
      includeTests = !includeTests;
      qp.busy = true;
      const again = await run();
      qp.busy = false;
      if (again) {
        res = again;
        render();
      }
    });
    qp.onDidAccept(() => {
      resolve(qp.selectedItems[0]);
      qp.hide();
    });
    qp.onDidHide(() => resolve(undefined));
    qp.show();
  });
  qp.dispose();
  if (chosen) {
    const root = await corpusRoot(server, res.resp.root);
    await openSourceLocation(server, resolveLocation(chosen.item, root), chosen.label);
  }
}

// --- Run Eval, Rebuild Index, Show Index Stats -------------------------------------

export async function evalCommand(server: ServerApi): Promise<void> {
  const resp = await runServerCommand<EvalResponse>(server, 'Run Eval', ServerCommands.eval, {}, 'notification');
  if (!resp) {
    return;
  }
  server.output.appendLine('');
  for (const line of formatEvalReport(resp)) {
    server.output.appendLine(line);
  }
  server.output.show(true);
  void showInformationMessage(evalSummary(resp));
}

export async function rebuildCommand(server: ServerApi): Promise<void> {
  const resp = await runServerCommand<StatsResponse>(server, 'Rebuild Index', ServerCommands.rebuild, {}, 'notification');
  if (!resp) {
    return;
  }
  const stats = (await server.refreshStats()) ?? resp;
  void showInformationMessage(`Rebuilt. ${statsSummary(stats)}`);
}

export async function statsCommand(server: ServerApi): Promise<void> {
  const stats = await runServerCommand<StatsResponse>(server, 'Show Index Stats', ServerCommands.stats, {});
  if (!stats) {
    return;
  }
  await server.refreshStats();
  server.output.appendLine('');
  for (const line of formatStats(stats)) {
    server.output.appendLine(line);
  }
  void showInformationMessage(statsSummary(stats), SHOW_OUTPUT).then((c) => c && server.output.show(true));
}

// --- Validate Selection ------------------------------------------------------------

export async function validateCommand(server: ServerApi, preset?: { code?: string }): Promise<void> {
  let code = preset?.code;
  if (code === undefined) {
    const editor = getActiveTextEditor();
    if (!editor) {
      void showWarningMessage('pyCSAMT: open a Python file and select the code to validate.');
      return;
    }
    code = editor.selection.isEmpty ? editor.document.getText() : editor.document.getText(editor.selection);
  }
  const resp = await runServerCommand<ValidateResponse>(server, 'Validate Selection', ServerCommands.validate, validateArgs(code));
  if (!resp) {
    return;
  }
  const report = formatValidation(resp);
  if (report.details.length) {
    server.output.appendLine('');
    server.output.appendLine('pyCSAMT validation');
    for (const line of report.details) {
      server.output.appendLine(`  ${line}`);
    }
  }
  const show = report.level === 'error' ? showErrorMessage : report.level === 'warning' ? showWarningMessage : showInformationMessage;
  const buttons = report.details.length ? [SHOW_OUTPUT] : [];
  void show(report.summary, ...buttons).then((c) => c && server.output.show(true));
}
