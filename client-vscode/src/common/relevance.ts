/**
 * Is this a pyCSAMT project? The extension activates on any Python file, so in an
 * unrelated project a missing server must not interrupt with a popup: the status bar
 * item and the output channel say it quietly. A project counts as pyCSAMT's when
 * a `pycsamt.*` path setting is set, a workspace folder holds the `pycsamt` package,
 * or an open document imports pycsamt.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface ProjectSignals {
  /** `pycsamt.server.python` and `pycsamt.corpusRoot` as set (empty when unset). */
  settings: string[];
  folders: string[];
  /** Text of the open Python documents. */
  documents: string[];
  exists?: (p: string) => boolean;
}

const IMPORTS_PYCSAMT = /^[ \t]*(?:from[ \t]+pycsamt(?:\.[\w.]+)?[ \t]+import\b|import[ \t]+pycsamt\b)/m;

/** Does Python source import pycsamt? */
export function importsPycsamt(text: string): boolean {
  return IMPORTS_PYCSAMT.test(text);
}

/** Why the project is pyCSAMT's, or undefined when nothing says so. */
export function pycsamtProjectReason(s: ProjectSignals): string | undefined {
  const exists = s.exists ?? ((p: string) => fs.existsSync(p));
  if (s.settings.some((v) => v.trim() !== '')) {
    return 'a pycsamt.* setting is set';
  }
  for (const f of s.folders) {
    if (exists(path.join(f, 'pycsamt', '__init__.py'))) {
      return `${f} holds the pycsamt package`;
    }
  }
  if (s.documents.some(importsPycsamt)) {
    return 'an open file imports pycsamt';
  }
  return undefined;
}
