/** Identifiers shared by the extension's modules. */

export const EXTENSION_ID = 'pycsamt-lsp.pycsamt-lsp';
/** Client id: also the prefix of the `pycsamt.trace.server` setting read by vscode-languageclient. */
export const CLIENT_ID = 'pycsamt';
export const CLIENT_NAME = 'pyCSAMT LSP';
export const OUTPUT_CHANNEL_NAME = 'pyCSAMT LSP';
export const CONFIG_SECTION = 'pycsamt';
export const SERVER_MODULE = 'pycsamt_lsp';
export const SERVER_ARGS = ['-m', SERVER_MODULE, 'serve'];
export const DEFAULT_PYTHON = 'python3';
export const INDEX_STATE_NOTIFICATION = 'pycsamt/indexState';

/**
 * Commands the server registers for `workspace/executeCommand`. vscode-languageclient
 * registers these ids as VS Code commands itself, so the palette commands below use
 * distinct `pycsamt.client.*` ids and forward to these.
 */
export const ServerCommands = {
  query: 'pycsamt.query',
  ask: 'pycsamt.ask',
  searchSource: 'pycsamt.searchSource',
  eval: 'pycsamt.eval',
  rebuild: 'pycsamt.rebuild',
  stats: 'pycsamt.stats',
  validate: 'pycsamt.validate',
  inspectSymbol: 'pycsamt.inspectSymbol',
  readSource: 'pycsamt.readSource',
} as const;

/** Palette commands contributed in package.json. */
export const ClientCommands = {
  query: 'pycsamt.client.query',
  ask: 'pycsamt.client.ask',
  searchSource: 'pycsamt.client.searchSource',
  eval: 'pycsamt.client.eval',
  rebuild: 'pycsamt.client.rebuild',
  stats: 'pycsamt.client.stats',
  validate: 'pycsamt.client.validate',
  installServer: 'pycsamt.client.installServer',
  restart: 'pycsamt.restart',
} as const;
