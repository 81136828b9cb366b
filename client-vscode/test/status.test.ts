import { strict as assert } from 'node:assert';
import { beforeEach, describe, it } from 'node:test';
import {
  IndexStatus,
  stateFromNotification,
  stateFromProgress,
  stateFromStats,
  statusText,
} from '../src/common/status';
import { resetStubs, vs } from './helpers';

describe('status text', () => {
  it('building N%, ready · N chunks, stale', () => {
    assert.equal(statusText({ state: 'building', percent: 42.4 }), '$(sync~spin) pyCSAMT: building 42%');
    assert.equal(statusText({ state: 'building' }), '$(sync~spin) pyCSAMT: building');
    assert.equal(statusText({ state: 'ready', nChunks: 12345 }), '$(database) pyCSAMT: ready · 12,345 chunks');
    assert.equal(statusText({ state: 'ready' }), '$(database) pyCSAMT: ready');
    assert.equal(statusText({ state: 'stale' }), '$(warning) pyCSAMT: stale');
    assert.equal(statusText({ state: 'stale', percent: 30 }), '$(warning) pyCSAMT: stale · updating 30%');
    assert.equal(statusText({ state: 'stale', percent: 100 }), '$(warning) pyCSAMT: stale');
    assert.equal(statusText({ state: 'error' }), '$(error) pyCSAMT: error');
    assert.equal(statusText({ state: 'building', percent: 140 }), '$(sync~spin) pyCSAMT: building 100%');
  });
});

describe('state sources', () => {
  it('$/progress begin/report; end asks for stats', () => {
    const b = stateFromProgress({ state: 'ready', nChunks: 5 }, { kind: 'begin', title: 'Indexing pyCSAMT', percentage: 0 });
    assert.deepEqual(b, { state: 'building', percent: 0, message: 'Indexing pyCSAMT' });
    const r = stateFromProgress(b!, { kind: 'report', percentage: 37, message: 'chunking' });
    assert.equal(r!.percent, 37);
    assert.equal(r!.message, 'chunking');
    assert.equal(stateFromProgress(r!, { kind: 'report', message: 'no pct' })!.percent, 37);
    assert.equal(stateFromProgress(r!, { kind: 'end' }), undefined);
  });

  it('pycsamt/indexState notification', () => {
    assert.deepEqual(stateFromNotification({ state: 'ready', nChunks: 900 }), {
      state: 'ready',
      percent: undefined,
      nChunks: 900,
      message: undefined,
    });
    assert.equal(stateFromNotification({ state: 'building', percent: 12.6 }).percent, 13);
  });

  it('pycsamt.stats result', () => {
    assert.deepEqual(stateFromStats({ state: 'stale', n_chunks: 10 }), { state: 'stale', nChunks: 10 });
    assert.deepEqual(stateFromStats({ n_chunks: 10 }), { state: 'ready', nChunks: 10 });
    assert.deepEqual(stateFromStats({ state: 'READY', n_chunks: 3 }), { state: 'ready', nChunks: 3 });
  });
});

describe('the status bar item', () => {
  beforeEach(resetStubs);

  it('shows the state, keeps the chunk count while building, clicks to stats', () => {
    const s = new IndexStatus();
    const item = vs.statusItems[0];
    assert.equal(item.command, 'pycsamt.client.stats');
    assert.ok(item.visible);
    assert.equal(item.text, '$(sync~spin) pyCSAMT: starting');
    s.set({ state: 'ready', nChunks: 100 });
    assert.equal(item.text, '$(database) pyCSAMT: ready · 100 chunks');
    s.set({ state: 'building', percent: 50 });
    assert.equal(item.text, '$(sync~spin) pyCSAMT: building 50%');
    assert.equal(s.state.nChunks, 100);
    s.set({ state: 'stale' });
    assert.equal(item.text, '$(warning) pyCSAMT: stale');
    assert.equal(item.backgroundColor.id, 'statusBarItem.warningBackground');
  });
});
