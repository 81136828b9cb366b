import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import {
  buildInitializationOptions,
  classifyChange,
  CLIENT_ONLY_SETTINGS,
  didChangeConfigurationParams,
  expandPath,
  FALLBACK,
  invalidReason,
  OPTION_SETTINGS,
  PYTHON_SETTING,
  readInitializationOptions,
  readPythonSetting,
  SETTINGS,
  SEVERITIES,
  wireKey,
} from '../src/common/settings';
import { packageJson, resetStubs, vs } from './helpers';

const props: Record<string, any> = packageJson.contributes.configuration.properties;
const fromPackageJson = (key: string) => props[`pycsamt.${key}`]?.default;

/** The server's settings contract (the one source of truth). */
const SCHEMA_PATH = path.resolve(__dirname, '..', '..', '..', 'server', 'pycsamt_lsp', 'settings_schema.json');
const schema: any = JSON.parse(fs.readFileSync(SCHEMA_PATH, 'utf8'));

describe('initializationOptions from package.json defaults', () => {
  it('are the server schema defaults, under the server keys', () => {
    const opts = buildInitializationOptions(fromPackageJson, { workspaceFolder: '/ws', home: '/home/u' });
    const wanted = Object.fromEntries(schema.settings.map((s: any) => [s.key, s.default]));
    assert.deepEqual(opts, wanted);
    assert.deepEqual(Object.keys(opts).sort(), [
      'corpusRoot', 'debounceMs', 'dense', 'diagnosticsSeverity', 'indexDir', 'logLevel', 'openaiModel',
      'openaiModelRouting', 'profile', 'resultCount', 'showSyntaxErrors', 'watch',
    ]);
    assert.equal(opts.resultCount, 10);
    assert.equal(opts.watch, 'auto');
    assert.equal(opts.debounceMs, 250);
    // the same object is what the client falls back to
    assert.deepEqual(opts, { ...FALLBACK });
  });

  it('wire keys and setting names are the schema\'s', () => {
    for (const s of schema.settings) {
      assert.equal(wireKey(s.setting.replace(/^pycsamt\./, '')), s.key, s.setting);
      assert.equal(OPTION_SETTINGS[s.key as keyof typeof OPTION_SETTINGS], s.setting.replace(/^pycsamt\./, ''));
    }
    assert.deepEqual(
      [...CLIENT_ONLY_SETTINGS].sort(),
      schema.clientSettings.map((s: any) => s.setting.replace(/^pycsamt\./, '')).sort(),
    );
    assert.equal(SETTINGS.length, schema.settings.length);
  });

  it('ranges and enums are the server\'s: resultCount 1..200, debounceMs 0..10000', () => {
    assert.equal(props['pycsamt.resultCount'].minimum, 1);
    assert.equal(props['pycsamt.resultCount'].maximum, 200);
    assert.equal(props['pycsamt.debounceMs'].maximum, 10000);
    assert.deepEqual(props['pycsamt.watch'].enum, ['auto', 'client', 'server', 'off']);
    assert.deepEqual(props['pycsamt.diagnostics.severity'].enum, [...SEVERITIES]);
    for (const s of schema.settings) {
      const p = props[s.setting];
      for (const k of ['type', 'default', 'minimum', 'maximum', 'minLength', 'enum']) {
        assert.deepEqual(p[k], s[k], `${s.setting}.${k}`);
      }
    }
  });

  it('activates on Python only; commands activate it on use', () => {
    assert.deepEqual(packageJson.activationEvents, ['onLanguage:python']);
    for (const c of packageJson.contributes.commands) {
      assert.equal(c.category, 'pyCSAMT');
      assert.ok(c.command === 'pycsamt.restart' || c.command.startsWith('pycsamt.client.'), c.command);
    }
    assert.ok(packageJson.contributes.commands.some((c: any) => c.command === 'pycsamt.client.installServer'));
  });

  it('has an icon, a repository and a walkthrough whose files exist', () => {
    const root = path.resolve(__dirname, '..', '..');
    const icon = fs.readFileSync(path.join(root, packageJson.icon));
    assert.deepEqual([...icon.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(icon.readUInt32BE(16), 128); // IHDR width
    assert.match(packageJson.repository.url, /^https:\/\//);
    const [walk] = packageJson.contributes.walkthroughs;
    assert.ok(walk.steps.length >= 3);
    for (const step of walk.steps) {
      assert.ok(fs.existsSync(path.join(root, step.media.markdown)), step.media.markdown);
      assert.ok(step.completionEvents.length > 0, step.id);
    }
  });
});

describe('buildInitializationOptions', () => {
  it('replaces values the server would reject by defaults, and says why', () => {
    const bad: Record<string, unknown> = {
      resultCount: 201,
      debounceMs: -1,
      dense: 'yes',
      'diagnostics.severity': 'fatal',
      watch: 'sometimes',
      profile: '  ',
      'openai.model': 42,
    };
    const problems: string[] = [];
    const opts = buildInitializationOptions((k) => bad[k], {}, problems);
    assert.equal(opts.resultCount, 10);
    assert.equal(opts.debounceMs, 250);
    assert.equal(opts.dense, false);
    assert.equal(opts.diagnosticsSeverity, 'error');
    assert.equal(opts.watch, 'auto');
    assert.equal(opts.profile, 'pycsamt');
    assert.equal(opts.openaiModel, 'gpt-4o-mini');
    assert.equal(problems.length, 7);
    assert.match(problems.join('\n'), /pycsamt\.resultCount must be an integer from 1 to 200; using 10/);
  });

  it('accepts each schema bound and rejects one past it', () => {
    for (const s of schema.settings.filter((x: any) => x.type === 'integer')) {
      assert.equal(invalidReason(s, s.minimum), undefined, `${s.key} min`);
      assert.equal(invalidReason(s, s.maximum), undefined, `${s.key} max`);
      assert.ok(invalidReason(s, s.minimum - 1), `${s.key} below`);
      assert.ok(invalidReason(s, s.maximum + 1), `${s.key} above`);
      assert.ok(invalidReason(s, s.minimum + 0.5), `${s.key} fraction`);
    }
    for (const s of schema.settings.filter((x: any) => x.enum)) {
      for (const v of s.enum) assert.equal(invalidReason(s, v), undefined, `${s.key}=${v}`);
      assert.ok(invalidReason(s, 'bogus'));
    }
  });

  it('passes valid values through and expands paths', () => {
    const good: Record<string, unknown> = {
      corpusRoot: '${workspaceFolder}/vendor/pycsamt',
      resultCount: 150,
      dense: true,
      'diagnostics.severity': 'hint',
      logLevel: 'debug',
      watch: 'server',
      debounceMs: 0,
    };
    const opts = buildInitializationOptions((k) => good[k], { workspaceFolder: '/ws' });
    assert.equal(opts.corpusRoot, '/ws/vendor/pycsamt');
    assert.equal(opts.resultCount, 150);
    assert.equal(opts.dense, true);
    assert.equal(opts.diagnosticsSeverity, 'hint');
    assert.equal(opts.logLevel, 'debug');
    assert.equal(opts.watch, 'server');
    assert.equal(opts.debounceMs, 0);
  });

  it('expands ~ and ${userHome}', () => {
    assert.equal(expandPath('~/x', { home: '/home/u' }), '/home/u/x');
    assert.equal(expandPath('${userHome}/y', { home: '/home/u' }), '/home/u/y');
    assert.equal(expandPath('  ', { home: '/home/u' }), '');
  });
});

describe('reading VS Code settings', () => {
  beforeEach(resetStubs);

  it('reads pycsamt.* through workspace.getConfiguration', () => {
    vs.config['pycsamt.resultCount'] = 7;
    vs.config['pycsamt.openai.model'] = 'gpt-4.1-mini';
    vs.config['pycsamt.openai.modelRouting'] = true;
    vs.config['pycsamt.watch'] = 'off';
    vs.config['pycsamt.server.python'] = '${workspaceFolder}/.venv/bin/python';
    vs.workspaceFolders = [{ uri: { fsPath: '/proj' }, name: 'proj', index: 0 }];
    const o = readInitializationOptions();
    assert.equal(o.resultCount, 7);
    assert.equal(o.openaiModel, 'gpt-4.1-mini');
    assert.equal(o.openaiModelRouting, true);
    assert.equal(o.watch, 'off');
    assert.equal(readPythonSetting(), '/proj/.venv/bin/python');
  });

  it('wraps the options for didChangeConfiguration', () => {
    assert.deepEqual(didChangeConfigurationParams(FALLBACK), { settings: { pycsamt: FALLBACK } });
  });

  it('restarts on an interpreter change, notifies on other settings', () => {
    assert.equal(classifyChange((s) => s === `pycsamt.${PYTHON_SETTING}` || s === 'pycsamt'), 'restart');
    assert.equal(classifyChange((s) => s === 'pycsamt.diagnostics.severity'), 'notify');
    assert.equal(classifyChange((s) => s === 'pycsamt.debounceMs'), 'notify');
    assert.equal(classifyChange((s) => s === 'editor.fontSize'), 'none');
  });
});
