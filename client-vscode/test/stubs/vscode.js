// A stub of the `vscode` module: enough of the API for the extension's logic,
// with a `__stub` control object that records calls and scripts user answers.
'use strict';
const path = require('node:path');

class Disposable {
  constructor(fn) { this._fn = fn; }
  dispose() { if (this._fn) { this._fn(); this._fn = undefined; } }
  static from(...ds) { return new Disposable(() => ds.forEach((d) => d && d.dispose && d.dispose())); }
}

class EventEmitter {
  constructor() { this.listeners = []; }
  get event() {
    return (l) => { this.listeners.push(l); return new Disposable(() => { this.listeners = this.listeners.filter((x) => x !== l); }); };
  }
  fire(e) { for (const l of [...this.listeners]) l(e); }
  dispose() { this.listeners = []; }
}

class Uri {
  constructor(scheme, p, raw) { this.scheme = scheme; this.fsPath = p; this.path = p; this._raw = raw; }
  static file(p) { return new Uri('file', path.resolve(p)); }
  static parse(s) {
    const m = /^([a-z][\w+.-]*):(?:\/\/)?(.*)$/i.exec(s);
    if (m && m[1] === 'file') return new Uri('file', decodeURIComponent(m[2]), s);
    return new Uri(m ? m[1] : 'file', m ? m[2] : s, s);
  }
  toString() { return this._raw || `${this.scheme}://${this.fsPath}`; }
}

class Position { constructor(line, character) { this.line = line; this.character = character; } }
class Range {
  constructor(a, b, c, d) {
    if (a instanceof Position) { this.start = a; this.end = b; } else { this.start = new Position(a, b); this.end = new Position(c, d); }
  }
  get isEmpty() { return this.start.line === this.end.line && this.start.character === this.end.character; }
}
class Selection extends Range {}
class ThemeColor { constructor(id) { this.id = id; } }
class ThemeIcon { constructor(id) { this.id = id; } }

const StatusBarAlignment = { Left: 1, Right: 2 };
const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };
const ViewColumn = { Active: -1, Beside: -2, One: 1 };
const TextEditorRevealType = { Default: 0, InCenter: 1, InCenterIfOutsideViewport: 2, AtTop: 3 };

// --- control ----------------------------------------------------------------------
const stub = {
  config: {},            // 'pycsamt.profile' -> value
  workspaceFolders: undefined,
  calls: [],             // [name, ...args]
  messages: [],          // {level, text, items}
  messageAnswers: [],    // queued answers for show*Message
  inputBoxAnswers: [],   // queued answers for showInputBox
  quickPick: (items) => items[0],
  extensions: {},        // id -> {isActive, exports, activate()}
  commandsRun: [],
  commandResults: {},    // command id -> fn(...args)
  registered: {},
  opened: [],            // {uri, line}
  statusItems: [],
  outputChannels: [],
  webviews: [],
  activeTextEditor: undefined,
  textDocuments: [],     // {languageId, getText()}
  configListeners: new EventEmitter(),
  reset() {
    this.config = {}; this.workspaceFolders = undefined; this.calls = []; this.messages = []; this.messageAnswers = [];
    this.inputBoxAnswers = []; this.quickPick = (items) => items[0]; this.extensions = {}; this.commandsRun = [];
    this.commandResults = {}; this.registered = {}; this.opened = []; this.statusItems = []; this.outputChannels = [];
    this.webviews = []; this.activeTextEditor = undefined; this.textDocuments = []; this.configListeners = new EventEmitter();
  },
};

function message(level) {
  return (text, ...items) => {
    stub.messages.push({ level, text, items });
    return Promise.resolve(stub.messageAnswers.length ? stub.messageAnswers.shift() : undefined);
  };
}

function makeOutputChannel(name) {
  const ch = {
    name, lines: [], shown: false, logLevel: 2,
    append(v) { this.lines.push(v); }, appendLine(v) { this.lines.push(v); },
    info(v) { this.lines.push(`[info] ${v}`); }, warn(v) { this.lines.push(`[warn] ${v}`); },
    error(v) { this.lines.push(`[error] ${v}`); }, debug(v) { this.lines.push(`[debug] ${v}`); }, trace() {},
    show() { this.shown = true; }, hide() {}, clear() { this.lines = []; }, replace() {}, dispose() {},
    onDidChangeLogLevel: () => new Disposable(),
  };
  stub.outputChannels.push(ch);
  return ch;
}

function makeQuickPick() {
  const accept = new EventEmitter(); const hide = new EventEmitter(); const button = new EventEmitter();
  const qp = {
    items: [], selectedItems: [], activeItems: [], buttons: [], title: '', placeholder: '', busy: false,
    matchOnDescription: false, matchOnDetail: false, ignoreFocusOut: false,
    onDidAccept: accept.event, onDidHide: hide.event, onDidTriggerButton: button.event,
    show() {
      stub.calls.push(['createQuickPick.show', this]);
      Promise.resolve().then(async () => {
        const choice = await stub.quickPick(this.items, this, { accept, hide, button });
        if (choice === undefined) { hide.fire(); return; }
        this.selectedItems = [choice]; accept.fire();
      });
    },
    hide() { hide.fire(); }, dispose() {},
  };
  return qp;
}

const window = {
  createOutputChannel: (name) => makeOutputChannel(name),
  createStatusBarItem: (id, alignment, priority) => {
    const item = { id, alignment, priority, text: '', tooltip: '', command: undefined, name: '', backgroundColor: undefined, visible: false,
      show() { this.visible = true; }, hide() { this.visible = false; }, dispose() {} };
    stub.statusItems.push(item);
    return item;
  },
  showErrorMessage: message('error'),
  showWarningMessage: message('warning'),
  showInformationMessage: message('info'),
  showInputBox: (opts) => { stub.calls.push(['showInputBox', opts]); return Promise.resolve(stub.inputBoxAnswers.shift()); },
  showQuickPick: (items, opts) => { stub.calls.push(['showQuickPick', items, opts]); return Promise.resolve(stub.quickPick(items, opts)); },
  createQuickPick: () => makeQuickPick(),
  withProgress: (opts, task) => {
    stub.calls.push(['withProgress', opts]);
    return task({ report(v) { stub.calls.push(['progress.report', v]); } }, { isCancellationRequested: false });
  },
  get activeTextEditor() { return stub.activeTextEditor; },
  showTextDocument: (doc, opts) => {
    const line = opts && opts.selection ? opts.selection.start.line : 0;
    stub.opened.push({ uri: doc.uri, line });
    stub.activeTextEditor = { document: doc, selection: opts && opts.selection, revealRange() {} };
    return Promise.resolve(stub.activeTextEditor);
  },
  createWebviewPanel: (viewType, title, showOptions, options) => {
    const msg = new EventEmitter(); const disp = new EventEmitter();
    const panel = {
      viewType, title, options, visible: true, revealed: 0,
      webview: { html: '', cspSource: 'vscode-resource:', options, onDidReceiveMessage: msg.event, postMessage: () => Promise.resolve(true) },
      onDidDispose: disp.event, reveal() { this.revealed++; }, dispose() { disp.fire(); },
      _receive: (m) => msg.fire(m),
    };
    stub.webviews.push(panel);
    return panel;
  },
};

const workspace = {
  getConfiguration: (section) => ({
    get: (key, dflt) => {
      const full = section ? `${section}.${key}` : key;
      return Object.prototype.hasOwnProperty.call(stub.config, full) ? stub.config[full] : dflt;
    },
    has: (key) => Object.prototype.hasOwnProperty.call(stub.config, section ? `${section}.${key}` : key),
    inspect: () => undefined,
    update: () => Promise.resolve(),
  }),
  onDidChangeConfiguration: (l) => stub.configListeners.event(l),
  get workspaceFolders() { return stub.workspaceFolders; },
  get textDocuments() { return stub.textDocuments; },
  openTextDocument: (uri) => Promise.resolve({ uri, lineCount: 100000, getText: () => '' }),
};

const commands = {
  registerCommand: (id, fn) => { stub.registered[id] = fn; return new Disposable(() => delete stub.registered[id]); },
  executeCommand: (id, ...args) => {
    stub.commandsRun.push([id, ...args]);
    const fn = stub.commandResults[id];
    return Promise.resolve(fn ? fn(...args) : undefined);
  },
};

const extensions = {
  getExtension: (id) => stub.extensions[id],
};

module.exports = {
  __stub: stub,
  Disposable, EventEmitter, Uri, Position, Range, Selection, ThemeColor, ThemeIcon,
  StatusBarAlignment, ProgressLocation, ViewColumn, TextEditorRevealType,
  window, workspace, commands, extensions,
};
