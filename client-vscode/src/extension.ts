/**
 * pyCSAMT LSP for VS Code: wiring only. The logic lives in common/*.ts.
 */
import type { ExtensionContext } from 'vscode';
import { AskView } from './common/askView';
import {
  askCommand,
  evalCommand,
  openSourceLocation,
  queryCommand,
  rebuildCommand,
  searchSourceCommand,
  statsCommand,
  validateCommand,
} from './common/commands';
import * as path from 'node:path';
import { ClientCommands, OUTPUT_CHANNEL_NAME } from './common/constants';
import { WHEEL_DIR } from './common/install';
import { resolveLocation } from './common/format';
import { onDidChangeSelectedInterpreter } from './common/python';
import { pycsamtProjectReason } from './common/relevance';
import { ServerManager } from './common/server';
import { classifyChange, readInitializationOptions, readPythonSetting } from './common/settings';
import { IndexStatus } from './common/status';
import {
  createOutputChannel,
  getWorkspaceFolders,
  onDidChangeConfiguration,
  openDocumentTexts,
  registerCommand,
} from './common/vscodeapi';

let manager: ServerManager | undefined;

export async function activate(context: ExtensionContext): Promise<{ manager: ServerManager }> {
  const output = createOutputChannel(OUTPUT_CHANNEL_NAME);
  const status = new IndexStatus();
  const server = new ServerManager(output, status, undefined, {
    storageDir: context.globalStorageUri.fsPath,
    wheelDir: path.join(context.extensionPath, WHEEL_DIR),
    projectReason: () =>
      pycsamtProjectReason({
        settings: [readPythonSetting(), readInitializationOptions().corpusRoot],
        folders: getWorkspaceFolders().map((f) => f.uri.fsPath),
        documents: openDocumentTexts('python'),
      }),
  });
  manager = server;
  const askView: AskView = new AskView({
    openCitation: (c, root) => openSourceLocation(server, resolveLocation(c, root), `citation [${c.n}]`),
    refine: (question): Promise<void> => askCommand(server, askView, { prefill: question }),
  });
  context.subscriptions.push(output, status, askView, { dispose: () => void server.dispose() });

  context.subscriptions.push(
    registerCommand(ClientCommands.query, (arg?: { query?: string; k?: number }) => queryCommand(server, arg)),
    registerCommand(ClientCommands.ask, (arg?: { question?: string; k?: number }) => askCommand(server, askView, arg)),
    registerCommand(ClientCommands.searchSource, (arg?: { query?: string; includeTests?: boolean }) =>
      searchSourceCommand(server, arg),
    ),
    registerCommand(ClientCommands.eval, () => evalCommand(server)),
    registerCommand(ClientCommands.rebuild, () => rebuildCommand(server)),
    registerCommand(ClientCommands.stats, () => statsCommand(server)),
    registerCommand(ClientCommands.validate, (arg?: { code?: string }) => validateCommand(server, arg)),
    registerCommand(ClientCommands.installServer, () => server.installCommand()),
    registerCommand(ClientCommands.restart, () => server.restart('requested by the user')),
  );

  context.subscriptions.push(
    onDidChangeConfiguration((e) => {
      const change = classifyChange((s) => e.affectsConfiguration(s));
      if (change === 'restart') {
        server.scheduleRestart('pycsamt.server.python changed');
      } else if (change === 'notify') {
        void server.notifyConfiguration();
      }
    }),
  );

  await server.start();
  // follow the Python extensions' interpreter when the setting does not pin one
  context.subscriptions.push(
    ...onDidChangeSelectedInterpreter(() => {
      if (!readPythonSetting()) {
        server.scheduleRestart('the selected Python interpreter changed');
      }
    }),
  );
  return { manager: server };
}

export async function deactivate(): Promise<void> {
  await manager?.dispose();
  manager = undefined;
}
