/**
 * The language client's life cycle: choose the interpreter, check that it has the
 * server package, start `<python> -m pycsamt_lsp serve` over stdio, restart, and
 * forward commands with `workspace/executeCommand`.
 */
import type { LogOutputChannel } from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { CLIENT_ID, CLIENT_NAME, CONFIG_SECTION, INDEX_STATE_NOTIFICATION, SERVER_ARGS, ServerCommands } from './constants';
import type { IndexStateParams, StatsResponse } from './protocol';
import {
  checkServerPackage,
  packageProblemMessage,
  pythonEnvsProvider,
  pythonExtensionProvider,
  resolveInterpreter,
  type Interpreter,
  type PackageCheck,
} from './python';
import {
  didChangeConfigurationParams,
  firstWorkspaceFolder,
  readInitializationOptions,
  readPythonSetting,
  type InitializationOptions,
} from './settings';
import { IndexStatus, stateFromNotification, stateFromProgress, stateFromStats, type WorkDoneValue } from './status';
import { executeCommand, getWorkspaceFolders, showErrorMessage } from './vscodeapi';

export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
  { scheme: 'file', language: 'markdown' },
  { scheme: 'file', language: 'restructuredtext' },
];

const OPEN_SETTING = 'Open Setting';
const STATS_FALLBACK_MS = 5000;
const SHOW_OUTPUT = 'Show Output';

/** The `<python> -m pycsamt_lsp serve` command line for an interpreter. */
export function serverCommandLine(interp: Interpreter): { command: string; args: string[] } {
  const [command, ...pre] = interp.command;
  return { command, args: [...pre, ...SERVER_ARGS] };
}

/** Error text for a failed request, whatever was thrown. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  if (typeof err === 'object' && err !== null && 'message' in err) {
    return String((err as { message: unknown }).message);
  }
  return String(err);
}

/** What command handlers need from the running server. */
export interface ServerApi {
  execute<T>(command: string, arg: object): Promise<T>;
  /** Corpus root reported by the server (`root` in `pycsamt.stats`). */
  corpusRoot(): string | undefined;
  options(): InitializationOptions;
  refreshStats(): Promise<StatsResponse | undefined>;
  readonly output: LogOutputChannel;
}

export class ServerNotRunningError extends Error {
  constructor() {
    super('the pyCSAMT language server is not running (see the "pyCSAMT LSP" output)');
  }
}

export class ServerManager implements ServerApi {
  private client: LanguageClient | undefined;
  private root: string | undefined;
  private queue: Promise<void> = Promise.resolve();
  private restartTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly output: LogOutputChannel,
    private readonly status: IndexStatus,
    private readonly checkPackage: (command: string[]) => Promise<PackageCheck> = checkServerPackage,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  corpusRoot(): string | undefined {
    return this.root;
  }

  options(): InitializationOptions {
    return readInitializationOptions();
  }

  log(line: string): void {
    this.output.info(line);
  }

  /** Start, stop and restart are serialized. */
  private enqueue(task: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(task, task);
    return this.queue;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  restart(reason: string): Promise<void> {
    return this.enqueue(async () => {
      this.log(`Restarting the server: ${reason}`);
      await this.doStop();
      await this.doStart();
    });
  }

  /** Debounced restart, for bursts of setting or interpreter changes. */
  scheduleRestart(reason: string, delayMs = 500): void {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.restart(reason);
    }, delayMs);
  }

  private async doStart(): Promise<void> {
    this.status.set({ state: 'starting' });
    const resource = getWorkspaceFolders()[0]?.uri;
    const interp = await resolveInterpreter({
      setting: readPythonSetting,
      pythonEnvs: pythonEnvsProvider(resource, (l) => this.log(l)),
      pythonExtension: pythonExtensionProvider(resource, (l) => this.log(l)),
      log: (l) => this.log(l),
    });
    const check = await this.checkPackage(interp.command);
    if (!check.ok) {
      const msg = packageProblemMessage(interp, check);
      this.log(msg);
      this.status.set({ state: 'error', message: msg });
      void showErrorMessage(msg, OPEN_SETTING, SHOW_OUTPUT).then((choice) => {
        if (choice === OPEN_SETTING) {
          void executeCommand('workbench.action.openSettings', `${CONFIG_SECTION}.server.python`);
        } else if (choice === SHOW_OUTPUT) {
          this.output.show(true);
        }
      });
      return;
    }
    const options = readInitializationOptions();
    const { command, args } = serverCommandLine(interp);
    this.log(`Starting: ${command} ${args.join(' ')} (pycsamt_lsp ${check.version || 'unknown version'})`);
    this.log(`initializationOptions: ${JSON.stringify(options)}`);

    let heard = false; // progress or pycsamt/indexState arrived
    const serverOptions: ServerOptions = {
      command,
      args,
      transport: TransportKind.stdio,
      options: { cwd: firstWorkspaceFolder(), env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: options,
      middleware: {
        handleWorkDoneProgress: (token, params, next) => {
          heard = true;
          const next_ = stateFromProgress(this.status.state, params as WorkDoneValue);
          if (next_) {
            this.status.set(next_);
          } else {
            void this.refreshStats();
          }
          next(token, params);
        },
        workspace: {
          // the server may pull settings: answer section `pycsamt` with the same flat object
          configuration: (params, token, next) => {
            const current = readInitializationOptions();
            if (params.items.every((i) => i.section === CONFIG_SECTION)) {
              return params.items.map(() => current);
            }
            return next(params, token);
          },
          // changes are pushed by the extension's own listener (see notifyConfiguration)
          didChangeConfiguration: async () => undefined,
        },
      },
    };
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    client.onNotification(INDEX_STATE_NOTIFICATION, (p: IndexStateParams) => {
      heard = true;
      this.status.set(stateFromNotification(p));
      // the corpus root (for results without a uri) comes with the stats
      if (p.state === 'ready' && (typeof p.nChunks !== 'number' || this.root === undefined)) {
        void this.refreshStats();
      }
    });
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.status.set({ state: 'stopped', message: 'The server stopped; run "pyCSAMT: Restart Server".' });
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      const msg = `pyCSAMT LSP: the server failed to start: ${errorMessage(err)}`;
      this.log(msg);
      this.status.set({ state: 'error', message: msg });
      void showErrorMessage(msg, SHOW_OUTPUT).then((c) => c && this.output.show(true));
      return;
    }
    this.log('Server started.');
    // a server that sends neither progress nor pycsamt/indexState: ask for its stats
    const timer = setTimeout(() => {
      if (!heard && this.client === client && client.state === State.Running) {
        void this.refreshStats();
      }
    }, STATS_FALLBACK_MS);
    timer.unref?.();
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) {
      return;
    }
    try {
      if (client.state !== State.Stopped) {
        await client.stop(3000);
      }
    } catch (err) {
      this.log(`Stopping the server: ${errorMessage(err)}`);
    }
    try {
      await client.dispose(1000);
    } catch {
      // already stopped
    }
    this.status.set({ state: 'stopped' });
  }

  async execute<T>(command: string, arg: object): Promise<T> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      throw new ServerNotRunningError();
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] })) as T;
  }

  async refreshStats(): Promise<StatsResponse | undefined> {
    try {
      const stats = await this.execute<StatsResponse>(ServerCommands.stats, {});
      if (stats && typeof stats === 'object') {
        if (typeof stats.root === 'string' && stats.root) {
          this.root = stats.root;
        }
        this.status.set(stateFromStats(stats));
      }
      return stats;
    } catch (err) {
      this.log(`pycsamt.stats failed: ${errorMessage(err)}`);
      return undefined;
    }
  }

  /** Push changed settings with `workspace/didChangeConfiguration`. */
  async notifyConfiguration(): Promise<void> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      return;
    }
    const options = readInitializationOptions();
    this.log(`Settings changed: ${JSON.stringify(options)}`);
    await client.sendNotification(DidChangeConfigurationNotification.type, didChangeConfigurationParams(options));
  }

  async dispose(): Promise<void> {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    await this.stop();
  }
}
