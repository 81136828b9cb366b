// A stub of `vscode-languageclient/node`: records the client's construction and
// requests; `__stub.onRequest` scripts the server's answers.
'use strict';

const State = { Stopped: 1, Starting: 3, Running: 2 };
const TransportKind = { stdio: 0, ipc: 1, pipe: 2, socket: 3 };
const RevealOutputChannelOn = { Debug: 0, Info: 1, Warn: 2, Error: 3, Never: 4 };
const ExecuteCommandRequest = { type: { method: 'workspace/executeCommand' } };
const DidChangeConfigurationNotification = { type: { method: 'workspace/didChangeConfiguration' } };

const stub = {
  clients: [],
  startError: undefined,
  onRequest: (method, params) => ({}),
  reset() { this.clients = []; this.startError = undefined; this.onRequest = () => ({}); },
};

class LanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    this.id = id; this.name = name; this.serverOptions = serverOptions; this.clientOptions = clientOptions;
    this.state = State.Stopped; this.requests = []; this.notifications = []; this.handlers = {}; this.stateListeners = [];
    stub.clients.push(this);
  }
  async start() {
    if (stub.startError) { throw stub.startError; }
    this.setState(State.Running);
  }
  async stop() { this.setState(State.Stopped); }
  async dispose() { this.setState(State.Stopped); }
  setState(s) { const old = this.state; this.state = s; for (const l of this.stateListeners) l({ oldState: old, newState: s }); }
  onDidChangeState(l) { this.stateListeners.push(l); return { dispose() {} }; }
  onNotification(method, handler) { this.handlers[method] = handler; return { dispose() {} }; }
  async sendRequest(type, params) {
    this.requests.push({ method: type.method, params });
    return stub.onRequest(type.method, params);
  }
  async sendNotification(type, params) { this.notifications.push({ method: type.method, params }); }
}

module.exports = { __stub: stub, LanguageClient, State, TransportKind, RevealOutputChannelOn, ExecuteCommandRequest, DidChangeConfigurationNotification };
