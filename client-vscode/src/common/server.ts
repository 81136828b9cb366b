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
import {
  CLIENT_ID,
  CLIENT_NAME,
  CONFIG_SECTION,
  DEFAULT_PYTHON,
  INDEX_STATE_NOTIFICATION,
  SERVER_ARGS,
  ServerCommands,
} from './constants';
import {
  findBundledWheel,
  installServer,
  runProcess,
  VENV_DIR,
  venvPython,
  type BundledWheel,
  type InstallResult,
  type RunFn,
} from './install';
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
import {
  executeCommand,
  getWorkspaceFolders,
  showErrorMessage,
  showInformationMessage,
  showWarningMessage,
  withProgressMessages,
} from './vscodeapi';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
  { scheme: 'file', language: 'markdown' },
  { scheme: 'file', language: 'restructuredtext' },
];

const OPEN_SETTING = 'Open Setting';
const INSTALL = 'Install';
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

/** Where the extension keeps its server, and how it decides to ask. */
export interface ServerInstallContext {
  /** The extension's global storage folder (the private environment goes here). */
  storageDir: string;
  /** `<extension>/server-wheel`. */
  wheelDir: string;
  /** Why the workspace is a pyCSAMT project, or undefined (then never a popup). */
  projectReason: () => string | undefined;
  run?: RunFn;
  exists?: (p: string) => boolean;
}

/** Why the last start did not run the server (for the install command). */
interface MissingServer {
  interp: Interpreter;
  check: Exclude<PackageCheck, { ok: true }>;
}

export class ServerManager implements ServerApi {
  private client: LanguageClient | undefined;
  private root: string | undefined;
  private queue: Promise<void> = Promise.resolve();
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private missing: MissingServer | undefined;
  private installing: Promise<InstallResult | undefined> | undefined;

  constructor(
    readonly output: LogOutputChannel,
    private readonly status: IndexStatus,
    private readonly checkPackage: (command: string[]) => Promise<PackageCheck> = checkServerPackage,
    private readonly install?: ServerInstallContext,
  ) {}

  /** The server wheel the extension carries, if any. */
  bundledWheel(): BundledWheel | undefined {
    return this.install ? findBundledWheel(this.install.wheelDir) : undefined;
  }

  /** The private environment's interpreter (it may not exist yet). */
  privatePython(): string | undefined {
    return this.install ? venvPython(path.join(this.install.storageDir, VENV_DIR)) : undefined;
  }

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
    let interp = await resolveInterpreter({
      setting: readPythonSetting,
      pythonEnvs: pythonEnvsProvider(resource, (l) => this.log(l)),
      pythonExtension: pythonExtensionProvider(resource, (l) => this.log(l)),
      log: (l) => this.log(l),
    });
    let check = await this.checkPackage(interp.command);
    if (!check.ok) {
      const priv = await this.privateServer(check);
      if (priv) {
        interp = priv.interp;
        check = priv.check;
      }
    }
    if (!check.ok) {
      this.missing = { interp, check };
      this.reportMissing(this.missing, false);
      return;
    }
    this.missing = undefined;
    const problems: string[] = [];
    const options = readInitializationOptions(problems);
    problems.forEach((p) => this.output.warn(p));
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
      if (this.install?.projectReason() ?? true) {
        void showErrorMessage(msg, SHOW_OUTPUT).then((c) => c && this.output.show(true));
      }
      return;
    }
    this.runningFrom = command;
    this.log('Server started.');
    // a server that sends neither progress nor pycsamt/indexState: ask for its stats
    const timer = setTimeout(() => {
      if (!heard && this.client === client && client.state === State.Running) {
        void this.refreshStats();
      }
    }, STATS_FALLBACK_MS);
    timer.unref?.();
  }

  /**
   * The private environment, when the chosen Python lacks the server and an earlier
   * install put the bundled version there.
   */
  private async privateServer(
    failed: Exclude<PackageCheck, { ok: true }>,
  ): Promise<{ interp: Interpreter; check: PackageCheck } | undefined> {
    const py = this.privatePython();
    const exists = this.install?.exists ?? ((p: string) => fs.existsSync(p));
    if (!py || !exists(py)) {
      return undefined;
    }
    const check = await this.checkPackage([py]);
    const wheel = this.bundledWheel();
    if (check.ok && (!wheel || !check.version || check.version === wheel.version)) {
      this.log(`  - the chosen Python lacks the server (${failed.detail}); using the private environment ${py}`);
      return { interp: { command: [py], source: 'private' }, check };
    }
    this.log(
      `  - private environment ${py}: ${check.ok ? `pycsamt_lsp ${check.version}, the extension carries ${wheel?.version}` : check.detail}`,
    );
    return undefined;
  }

  /**
   * The chosen Python lacks the server: say so in the status bar and the log; in a
   * pyCSAMT project (or when `explicit`, i.e. the user asked) also offer to install
   * the bundled server.
   */
  private reportMissing(m: MissingServer, explicit: boolean): void {
    const wheel = this.bundledWheel();
    const msg = packageProblemMessage(m.interp, m.check, wheel !== undefined);
    this.log(msg);
    this.status.set({ state: wheel ? 'missing' : 'error', message: msg });
    const reason = explicit ? 'requested' : this.install ? this.install.projectReason() : 'no project check';
    if (!reason) {
      this.log(
        'Not a pyCSAMT project (no pycsamt setting, package or import): not interrupting. ' +
          'Run "pyCSAMT: Install Server" or click the status bar item to install the server.',
      );
      return;
    }
    if (!wheel) {
      void showErrorMessage(msg, OPEN_SETTING, SHOW_OUTPUT).then((choice) => this.onChoice(choice));
      return;
    }
    void showWarningMessage(msg, INSTALL, OPEN_SETTING, SHOW_OUTPUT).then((choice) => this.onChoice(choice));
  }

  private onChoice(choice: string | undefined): void {
    if (choice === INSTALL) {
      void this.installAndStart();
    } else if (choice === OPEN_SETTING) {
      void executeCommand('workbench.action.openSettings', `${CONFIG_SECTION}.server.python`);
    } else if (choice === SHOW_OUTPUT) {
      this.output.show(true);
    }
  }

  /**
   * "pyCSAMT: Install Server" and the status bar item: install when the server is
   * missing, else say where it runs from.
   */
  async installCommand(): Promise<void> {
    await this.queue;
    if (this.running) {
      void showInformationMessage(`pyCSAMT LSP: the server is running (${this.runningFrom ?? 'unknown interpreter'}).`);
      return;
    }
    await this.installAndStart();
  }

  private runningFrom: string | undefined;

  /** Install the bundled wheel into the private environment (with progress), then start. */
  installAndStart(): Promise<InstallResult | undefined> {
    if (this.installing) {
      return this.installing;
    }
    const ctx = this.install;
    const wheel = this.bundledWheel();
    if (!ctx || !wheel) {
      const msg = 'pyCSAMT LSP: this build of the extension carries no server wheel; set "pycsamt.server.python" to a Python that has pycsamt-lsp.';
      this.log(msg);
      void showErrorMessage(msg, OPEN_SETTING).then((c) => this.onChoice(c));
      return Promise.resolve(undefined);
    }
    const venv = path.join(ctx.storageDir, VENV_DIR);
    // the Python that creates the environment: the chosen one when it runs, else python3
    const m = this.missing;
    const base = m && m.check.reason !== 'not-found' ? m.interp.command : [DEFAULT_PYTHON];
    this.log(`Installing the bundled server ${path.basename(wheel.path)} into ${venv} (with ${base.join(' ')})`);
    const task = withProgressMessages('pyCSAMT LSP: installing the server', (report) =>
      installServer({
        basePython: base,
        venv,
        wheel,
        run: ctx.run ?? runProcess,
        exists: ctx.exists,
        log: (l) => this.log(l),
        progress: (p) => {
          this.log(`[install] ${p}`);
          this.status.set({ state: 'installing', message: p });
          report(p);
        },
      }),
    ).then(async (result) => {
      if (result.ok) {
        const how = result.source === 'offline' ? 'offline' : 'dependencies from the package index';
        void showInformationMessage(`pyCSAMT LSP: the server is installed in ${venv} (${how}); starting it.`);
        await this.restart('the server was installed');
      } else {
        this.log(result.message);
        this.status.set({ state: 'error', message: result.message });
        void showErrorMessage(result.message, SHOW_OUTPUT, OPEN_SETTING).then((c) => this.onChoice(c));
      }
      return result;
    });
    this.installing = Promise.resolve(task).finally(() => {
      this.installing = undefined;
    });
    return this.installing;
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
      if (this.missing && !this.installing) {
        // the user asked for something the server does: offer the install now
        this.reportMissing(this.missing, true);
      }
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
