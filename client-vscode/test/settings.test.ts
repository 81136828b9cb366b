import { strict as assert } from 'node:assert';
import { beforeEach, describe, it } from 'node:test';
import {
  buildInitializationOptions,
  classifyChange,
  didChangeConfigurationParams,
  expandPath,
  FALLBACK,
  OPTION_SETTINGS,
  PYTHON_SETTING,
  readInitializationOptions,
  readPythonSetting,
  SEVERITIES,
} from '../src/common/settings';
import { packageJson, resetStubs, vs } from './helpers';

const props: Record<string, any> = packageJson.contributes.configuration.properties;
const fromPackageJson = (key: string) => props[`pycsamt.${key}`]?.default;

describe('initializationOptions from package.json defaults', () => {
  it('are exactly the contract the server reads (camelCase keys)', () => {
    const opts = buildInitializationOptions(fromPackageJson, { workspaceFolder: '/ws', home: '/home/u' });
    assert.deepEqual(opts, {
      corpusRoot: '',
      indexDir: '',
      profile: 'pycsamt',
      resultCount: 10,
      dense: false,
      openaiModel: 'gpt-4o-mini',
      logLevel: 'info',
      diagnosticsSeverity: 'error',
    });
    // the same object is what the client falls back to
    assert.deepEqual(opts, FALLBACK);
  });

  it('every option has a setting in package.json, and every setting is sent or used', () => {
    for (const key of Object.values(OPTION_SETTINGS)) {
      assert.ok(props[`pycsamt.${key}`], `package.json lacks pycsamt.${key}`);
    }
    const sent = new Set(Object.values(OPTION_SETTINGS).map((k) => `pycsamt.${k}`));
    const clientOnly = new Set([`pycsamt.${PYTHON_SETTING}`, 'pycsamt.trace.server']);
    for (const key of Object.keys(props)) {
      assert.ok(sent.has(key) || clientOnly.has(key), `${key} is neither sent to the server nor used by the client`);
    }
  });

  it('severity enum matches the client and the types match the defaults', () => {
    assert.deepEqual(props['pycsamt.diagnostics.severity'].enum, [...SEVERITIES]);
    for (const [opt, key] of Object.entries(OPTION_SETTINGS)) {
      const schemaType = props[`pycsamt.${key}`].type;
      const v = (FALLBACK as any)[opt];
      const jsType = schemaType === 'integer' ? 'number' : schemaType;
      assert.equal(typeof v, jsType, `${key}: ${schemaType} vs ${typeof v}`);
    }
  });

  it('the palette shows every command under the pyCSAMT category', () => {
    for (const c of packageJson.contributes.commands) {
      assert.equal(c.category, 'pyCSAMT');
      assert.ok(c.command === 'pycsamt.restart' || c.command.startsWith('pycsamt.client.'), c.command);
    }
    for (const lang of ['python', 'markdown', 'restructuredtext']) {
      assert.ok(packageJson.activationEvents.includes(`onLanguage:${lang}`));
    }
  });
});

describe('buildInitializationOptions', () => {
  it('replaces invalid values by defaults', () => {
    const bad: Record<string, unknown> = {
      resultCount: -3,
      dense: 'yes',
      'diagnostics.severity': 'fatal',
      profile: '  ',
      'openai.model': 42,
    };
    const opts = buildInitializationOptions((k) => bad[k]);
    assert.equal(opts.resultCount, 10);
    assert.equal(opts.dense, false);
    assert.equal(opts.diagnosticsSeverity, 'error');
    assert.equal(opts.profile, 'pycsamt');
    assert.equal(opts.openaiModel, 'gpt-4o-mini');
  });

  it('passes valid values through and expands paths', () => {
    const good: Record<string, unknown> = {
      corpusRoot: '${workspaceFolder}/vendor/pycsamt',
      resultCount: 25,
      dense: true,
      'diagnostics.severity': 'hint',
      logLevel: 'debug',
    };
    const opts = buildInitializationOptions((k) => good[k], { workspaceFolder: '/ws' });
    assert.equal(opts.corpusRoot, '/ws/vendor/pycsamt');
    assert.equal(opts.resultCount, 25);
    assert.equal(opts.dense, true);
    assert.equal(opts.diagnosticsSeverity, 'hint');
    assert.equal(opts.logLevel, 'debug');
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
    vs.config['pycsamt.server.python'] = '${workspaceFolder}/.venv/bin/python';
    vs.workspaceFolders = [{ uri: { fsPath: '/proj' }, name: 'proj', index: 0 }];
    const o = readInitializationOptions();
    assert.equal(o.resultCount, 7);
    assert.equal(o.openaiModel, 'gpt-4.1-mini');
    assert.equal(readPythonSetting(), '/proj/.venv/bin/python');
  });

  it('wraps the options for didChangeConfiguration', () => {
    assert.deepEqual(didChangeConfigurationParams(FALLBACK), { settings: { pycsamt: FALLBACK } });
  });

  it('restarts on an interpreter change, notifies on other settings', () => {
    assert.equal(classifyChange((s) => s === 'pycsamt.server.python' || s === 'pycsamt'), 'restart');
    assert.equal(classifyChange((s) => s === 'pycsamt.diagnostics.severity'), 'notify');
    assert.equal(classifyChange((s) => s === 'editor.fontSize'), 'none');
  });
});
