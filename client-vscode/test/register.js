// Module-load hook for the unit tests (node --require ./test/register.js --test ...):
// `vscode` and `vscode-languageclient/node` resolve to the stubs in test/stubs,
// so the extension's logic runs under node's test runner without VS Code.
'use strict';
const Module = require('node:module');
const path = require('node:path');

const STUBS = {
  vscode: path.join(__dirname, 'stubs', 'vscode.js'),
  'vscode-languageclient/node': path.join(__dirname, 'stubs', 'languageclient.js'),
};

const original = Module._resolveFilename;
Module._resolveFilename = function resolveWithStubs(request, ...rest) {
  if (Object.prototype.hasOwnProperty.call(STUBS, request)) {
    return STUBS[request];
  }
  return original.call(this, request, ...rest);
};
