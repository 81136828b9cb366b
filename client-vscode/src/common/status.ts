/**
 * The status bar item showing the index state. Fed by the server's work-done
 * progress (`$/progress` after `window/workDoneProgress/create`), by the optional
 * `pycsamt/indexState` notification, and by `pycsamt.stats` results.
 */
import type { StatusBarItem } from 'vscode';
import { ClientCommands } from './constants';
import type { IndexStateParams, StatsResponse } from './protocol';
import { createStatusBarItem, themeColor } from './vscodeapi';

/** `missing`: the chosen Python lacks the server (click the item to install it). */
export type IndexStateName = 'starting' | 'building' | 'ready' | 'stale' | 'error' | 'stopped' | 'missing' | 'installing';

export interface IndexState {
  state: IndexStateName;
  percent?: number;
  nChunks?: number;
  message?: string;
}

const ICONS: Record<IndexStateName, string> = {
  starting: '$(sync~spin)',
  building: '$(sync~spin)',
  ready: '$(database)',
  stale: '$(warning)',
  error: '$(error)',
  stopped: '$(circle-slash)',
  missing: '$(cloud-download)',
  installing: '$(sync~spin)',
};

function clampPercent(p: unknown): number | undefined {
  return typeof p === 'number' && Number.isFinite(p) ? Math.max(0, Math.min(100, Math.round(p))) : undefined;
}

export function statusText(s: IndexState): string {
  let body: string;
  switch (s.state) {
    case 'building': {
      const p = clampPercent(s.percent);
      body = p === undefined ? 'building' : `building ${p}%`;
      break;
    }
    case 'ready':
      body = typeof s.nChunks === 'number' ? `ready · ${s.nChunks.toLocaleString('en-US')} chunks` : 'ready';
      break;
    case 'stale': {
      // the server keeps answering from the old snapshot while it updates
      const p = clampPercent(s.percent);
      body = p !== undefined && p < 100 ? `stale · updating ${p}%` : 'stale';
      break;
    }
    case 'missing':
      body = 'server not installed';
      break;
    case 'installing':
      body = 'installing the server';
      break;
    default:
      body = s.state;
  }
  return `${ICONS[s.state]} pyCSAMT: ${body}`;
}

export function statusTooltip(s: IndexState): string {
  const lines = [`pyCSAMT index: ${s.state}`];
  if (s.message) {
    lines.push(s.message);
  }
  lines.push(s.state === 'missing' ? 'Click to install the server' : 'Click to show the index stats');
  return lines.join('\n');
}

const KNOWN: readonly IndexStateName[] = ['starting', 'building', 'ready', 'stale', 'error', 'stopped', 'missing', 'installing'];

/** Map a `pycsamt/indexState` notification to a state. */
export function stateFromNotification(p: IndexStateParams): IndexState {
  const state = KNOWN.includes(p.state as IndexStateName) ? (p.state as IndexStateName) : 'ready';
  return { state, percent: clampPercent(p.percent), nChunks: p.nChunks, message: p.message };
}

/** Map a `pycsamt.stats` result to a state. */
export function stateFromStats(s: StatsResponse): IndexState {
  const raw = String(s.state ?? '').toLowerCase();
  const state: IndexStateName = KNOWN.includes(raw as IndexStateName)
    ? (raw as IndexStateName)
    : typeof s.n_chunks === 'number'
      ? 'ready'
      : 'starting';
  return { state, nChunks: typeof s.n_chunks === 'number' ? s.n_chunks : undefined };
}

export type WorkDoneValue =
  | { kind: 'begin'; title?: string; percentage?: number; message?: string }
  | { kind: 'report'; percentage?: number; message?: string }
  | { kind: 'end'; message?: string };

/**
 * Map one `$/progress` value. Returns undefined for `end`: the caller then asks the
 * server for its stats (the chunk count is not in the progress payload).
 */
export function stateFromProgress(prev: IndexState, v: WorkDoneValue): IndexState | undefined {
  switch (v.kind) {
    case 'begin':
      return { state: 'building', percent: clampPercent(v.percentage) ?? 0, message: [v.title, v.message].filter(Boolean).join(': ') };
    case 'report':
      return {
        state: 'building',
        percent: clampPercent(v.percentage) ?? prev.percent,
        message: v.message ?? prev.message,
        nChunks: prev.nChunks,
      };
    default:
      return undefined;
  }
}

/** Owns the status bar item. */
export class IndexStatus {
  private readonly item: StatusBarItem;
  private current: IndexState = { state: 'starting' };

  constructor() {
    this.item = createStatusBarItem(100);
    this.item.name = 'pyCSAMT index';
    this.item.command = ClientCommands.stats;
    this.render();
    this.item.show();
  }

  get state(): IndexState {
    return this.current;
  }

  set(s: IndexState): void {
    // keep the last known chunk count while building
    this.current = { ...s, nChunks: s.nChunks ?? (s.state === 'building' ? this.current.nChunks : undefined) };
    this.render();
  }

  private render(): void {
    this.item.command = this.current.state === 'missing' ? ClientCommands.installServer : ClientCommands.stats;
    this.item.text = statusText(this.current);
    this.item.tooltip = statusTooltip(this.current);
    this.item.accessibilityInformation = { label: statusText(this.current).replace(/^\$\([^)]*\)\s*/, ''), role: 'button' };
    this.item.backgroundColor =
      this.current.state === 'error'
        ? themeColor('statusBarItem.errorBackground')
        : this.current.state === 'stale'
          ? themeColor('statusBarItem.warningBackground')
          : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
