/** Access to the stubs' control objects (see register.js). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const vs: any = require('vscode').__stub;
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const lc: any = require('vscode-languageclient/node').__stub;

import * as fs from 'node:fs';
import * as path from 'node:path';

/** The extension's package.json (tests run from out/test, sources in test/). */
export const PACKAGE_JSON_PATH = path.resolve(__dirname, '..', '..', 'package.json');
export const packageJson: any = JSON.parse(fs.readFileSync(PACKAGE_JSON_PATH, 'utf8'));

export function resetStubs(): void {
  vs.reset();
  lc.reset();
}

/** Let queued promise callbacks run. */
export async function flush(times = 5): Promise<void> {
  for (let i = 0; i < times; i++) {
    await new Promise((r) => setImmediate(r));
  }
}

export function fakeOutput(): any {
  const ch: any = {
    lines: [] as string[],
    shown: false,
    appendLine(v: string) { ch.lines.push(v); },
    append(v: string) { ch.lines.push(v); },
    info(v: string) { ch.lines.push(`[info] ${v}`); },
    warn(v: string) { ch.lines.push(`[warn] ${v}`); },
    error(v: string) { ch.lines.push(`[error] ${v}`); },
    debug() {},
    trace() {},
    show() { ch.shown = true; },
  };
  return ch;
}
