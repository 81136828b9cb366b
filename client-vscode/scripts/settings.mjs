#!/usr/bin/env node
// package.json's `contributes.configuration` is generated from the settings contract
// the server ships (server/pycsamt_lsp/settings_schema.json), so the editor shows the
// server's own names, defaults, ranges and enums.
//
//   node scripts/settings.mjs --check   exit 1 when package.json differs (CI)
//   node scripts/settings.mjs --write   rewrite package.json's configuration
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PACKAGE_JSON = path.resolve(HERE, '..', 'package.json');
const SCHEMA = path.resolve(HERE, '..', '..', 'server', 'pycsamt_lsp', 'settings_schema.json');

/** Schema-only fields that are not JSON-schema keywords VS Code understands. */
const CONTRACT_ONLY = new Set(['key', 'setting', 'emptyIsUnset']);

/** The `contributes.configuration` object for a schema. */
export function configurationFromSchema(schema) {
  const entries = [...schema.clientSettings.filter((s) => s.setting === 'pycsamt.server.python'), ...schema.settings,
    ...schema.clientSettings.filter((s) => s.setting !== 'pycsamt.server.python')];
  const properties = {};
  for (const entry of entries) {
    const prop = {};
    for (const [k, v] of Object.entries(entry)) {
      if (!CONTRACT_ONLY.has(k)) prop[k] = v;
    }
    properties[entry.setting] = prop;
  }
  return { title: schema.title, properties };
}

function main() {
  const mode = process.argv[2];
  if (mode !== '--check' && mode !== '--write') {
    console.error('usage: settings.mjs --check|--write');
    process.exit(2);
  }
  const schema = JSON.parse(fs.readFileSync(SCHEMA, 'utf8'));
  const pkg = JSON.parse(fs.readFileSync(PACKAGE_JSON, 'utf8'));
  const wanted = configurationFromSchema(schema);
  const same = JSON.stringify(pkg.contributes.configuration) === JSON.stringify(wanted);
  if (mode === '--check') {
    if (!same) {
      console.error(`package.json's contributes.configuration differs from ${path.relative(process.cwd(), SCHEMA)}:`);
      const have = pkg.contributes.configuration.properties ?? {};
      for (const key of new Set([...Object.keys(have), ...Object.keys(wanted.properties)])) {
        if (JSON.stringify(have[key]) !== JSON.stringify(wanted.properties[key])) {
          console.error(`  ${key}: package.json ${JSON.stringify(have[key])} != schema ${JSON.stringify(wanted.properties[key])}`);
        }
      }
      console.error('run `node scripts/settings.mjs --write` in client-vscode/');
      process.exit(1);
    }
    console.log(`settings: package.json matches the server's schema (${Object.keys(wanted.properties).length} settings)`);
    return;
  }
  pkg.contributes.configuration = wanted;
  fs.writeFileSync(PACKAGE_JSON, `${JSON.stringify(pkg, null, 2)}\n`);
  console.log(`settings: wrote ${Object.keys(wanted.properties).length} settings into package.json`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main();
}
