#!/usr/bin/env node
// The real VS Code, end to end: code-server (VS Code 1.139 in headless Chromium,
// driven by puppeteer-core) with the pycsamt-lsp .vsix installed, a pycsamt script
// with a hallucinated import, and the real pyCSAMT sdist as the corpus.
// Asserts only what the page shows, and saves screenshots.
//
// Run through run_vscode_e2e.sh, which installs code-server, builds the .vsix,
// installs it and prepares the workspace. Environment:
//   CODE_SERVER   code-server executable          NODE24_BIN  its node's bin dir
//   WORKSPACE     folder holding survey.py         SHOTS       screenshot folder
//   STATE_DIR     user-data/extensions/XDG dirs    CHROMIUM    /usr/bin/chromium
//   TIMEOUT_S     per-wait timeout (default 300)
//   BARE_PYTHON   the `pycsamt.server.python` of the workspace: a Python WITHOUT the
//                 server; the extension must offer to install its bundled wheel
//   INSTALL_TIMEOUT_S  wait for that install (venv + pip from the index; default 480)
//   UNRELATED_WS  optional: a folder without pycsamt, opened afterwards in a second
//                 code-server with its own user data and UNRELATED_PATH first on PATH
//                 (its python3 lacks the server): the extension must stay quiet
'use strict';
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const puppeteer = require('puppeteer-core');

const CS = must('CODE_SERVER');
const WS = must('WORKSPACE');
const SHOTS = must('SHOTS');
const STATE = must('STATE_DIR');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TIMEOUT = Number(process.env.TIMEOUT_S || 300) * 1000;
const INSTALL_TIMEOUT = Number(process.env.INSTALL_TIMEOUT_S || 480) * 1000;
const BARE_PYTHON = process.env.BARE_PYTHON || '';
const XDG = {
  XDG_CONFIG_HOME: `${STATE}/xdg/config`,
  XDG_DATA_HOME: `${STATE}/xdg/data`,
  XDG_CACHE_HOME: `${STATE}/xdg/cache`,
  XDG_STATE_HOME: `${STATE}/xdg/state`,
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function must(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set (run tests/editors/run_vscode_e2e.sh)`);
    process.exit(2);
  }
  return v;
}

// ---- checks ----------------------------------------------------------------------
const results = [];
let shotNo = 0;
let page;
function record(name, ok, detail) {
  results.push({ name, ok });
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${detail ? `: ${detail}` : ''}`);
}
async function shot(name) {
  const file = path.join(SHOTS, `${String(++shotNo).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file }).catch((e) => console.log(`# screenshot ${file} failed: ${e.message}`));
  return file;
}
async function step(name, fn) {
  const t0 = Date.now();
  try {
    const detail = await fn();
    record(name, true, `${detail ?? ''} (${Date.now() - t0} ms)`.trim());
    return true;
  } catch (err) {
    record(name, false, String(err && err.message ? err.message : err).split('\n')[0]);
    await shot(`FAILED-${name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`);
    return false;
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
async function poll(fn, what, timeout = TIMEOUT, every = 200) {
  const t0 = Date.now();
  let last;
  for (;;) {
    last = await fn().catch((e) => ({ __error: e.message }));
    if (last && !last.__error) return last;
    if (Date.now() - t0 > timeout) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${last && last.__error ? ` (${last.__error})` : ''}`);
    }
    await sleep(every);
  }
}

// ---- page helpers ----------------------------------------------------------------
async function keys(combo) {
  const parts = combo.split('+');
  for (const k of parts.slice(0, -1)) await page.keyboard.down(k);
  await page.keyboard.press(parts.at(-1));
  for (const k of parts.slice(0, -1).reverse()) await page.keyboard.up(k);
}
async function statusTexts() {
  return page.$$eval('.statusbar-item', (els) =>
    els.map((e) => ({ id: e.id, text: e.innerText.trim(), label: e.getAttribute('aria-label') || '' })),
  );
}
async function pycsamtStatus() {
  const items = await statusTexts();
  const it = items.find((i) => /pyCSAMT:/.test(i.text) || /pyCSAMT:/.test(i.label));
  return it ? it.text || it.label : '';
}
async function problemsLabel() {
  return page.$eval('#status\\.problems', (e) => e.getAttribute('aria-label') || e.textContent).catch(() => '');
}
function countOf(label, word) {
  // the Problems item reads "No Problems" when it is empty
  if (/^\s*no problems/i.test(label)) return 0;
  const m = new RegExp(`${word}s?:\\s*(\\d+)|(\\d+)\\s+${word}`, 'i').exec(label);
  return m ? Number(m[1] ?? m[2]) : undefined;
}
/** Rects of every occurrence of `word` in the visible editor lines, top to bottom. */
async function tokenRects(word) {
  return page.$$eval(
    '.monaco-editor .view-lines .view-line',
    (lines, w) => {
      const out = [];
      for (const line of lines) {
        const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const text = n.textContent.replace(/\u00a0/g, ' ');
          for (let i = text.indexOf(w); i >= 0; i = text.indexOf(w, i + 1)) {
            const range = document.createRange();
            range.setStart(n, i);
            range.setEnd(n, i + w.length);
            const r = range.getBoundingClientRect();
            out.push({ x: r.x, y: r.y, w: r.width, h: r.height });
          }
        }
      }
      return out.sort((a, b) => a.y - b.y || a.x - b.x);
    },
    word,
  );
}
async function editorLines() {
  return page.$$eval('.monaco-editor .view-lines .view-line', (els) =>
    els
      .map((e) => ({ top: parseFloat(e.style.top || '0'), text: e.innerText.replace(/\u00a0/g, ' ') }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text),
  );
}
async function hoverText() {
  return page.$$eval('.monaco-hover, .workbench-hover', (els) => els.map((e) => e.innerText).join('\n')).catch(() => '');
}
async function runCommand(title) {
  await page.keyboard.press('Escape');
  await keys('F1');
  await page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true, timeout: 20000 });
  await page.keyboard.type(title, { delay: 15 });
  await poll(
    async () => {
      const rows = await page.$$eval('.quick-input-list .monaco-list-row', (els) => els.map((e) => e.innerText));
      return rows.some((r) => r.includes(title)) ? rows : undefined;
    },
    `the palette to list "${title}"`,
    20000,
  );
  await page.keyboard.press('Enter');
}
async function quickInputText() {
  return page.$eval('.quick-input-widget', (e) => e.innerText).catch(() => '');
}
async function toastTexts() {
  return page.$$eval('.notification-toast, .notifications-toasts .notification-list-item', (els) =>
    els.map((e) => e.innerText.replace(/\n+/g, ' ')).join(' | '),
  );
}
/** Run a palette command that asks for text in an input box showing `prompt`. */
async function runCommandWithInput(title, prompt, text) {
  await runCommand(title);
  await poll(async () => (prompt.test(await quickInputText()) ? true : undefined), `the ${title} input box`, 20000);
  await keys('Control+A'); // a box prefilled with the selection: replace it
  await page.keyboard.type(text, { delay: 10 });
  await page.keyboard.press('Enter');
}
async function quickPickRows() {
  return page.$$eval('.quick-input-widget .quick-input-list .monaco-list-row', (els) =>
    els.map((e) => e.innerText.replace(/\n+/g, ' | ')),
  );
}
/** Click a button of a notification toast by its label. */
async function clickToastButton(label) {
  const buttons = await page.$$('.notification-toast .monaco-button, .notifications-toasts .monaco-button');
  for (const b of buttons) {
    const t = await b.evaluate((e) => (e.innerText || e.textContent || '').trim());
    if (t === label) {
      await b.click();
      return true;
    }
  }
  return false;
}
/** Files or folders named `name` under `dir` (depth-first, not inside a match). */
function findFiles(dir, name, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.name === name) out.push(p);
    else if (e.isDirectory() && !e.isSymbolicLink()) findFiles(p, name, out);
  }
  return out;
}
async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/**
 * An unrelated project: a plain Python folder, no pycsamt setting, python3 without the
 * server, fresh user data (no private environment). The extension activates on the
 * Python file but must not pop anything up: the status bar item says it quietly.
 */
async function unrelatedProject(ws) {
  const userData = `${STATE}/user-data-unrelated`;
  fs.mkdirSync(`${userData}/User`, { recursive: true });
  fs.copyFileSync(`${STATE}/user-data/User/settings.json`, `${userData}/User/settings.json`);
  const port = await freePort();
  const env = { ...process.env, ...XDG };
  env.PATH = [process.env.UNRELATED_PATH, process.env.NODE24_BIN, env.PATH].filter(Boolean).join(':');
  const cs = spawn(
    CS,
    [
      '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none',
      '--user-data-dir', userData, '--extensions-dir', `${STATE}/extensions`,
      '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', ws,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let csLog = '';
  cs.stdout.on('data', (d) => (csLog += d));
  cs.stderr.on('data', (d) => (csLog += d));
  let browser;
  try {
    await poll(async () => csLog.includes('HTTP server listening') || undefined, 'code-server (unrelated project) to listen', 60000, 100);
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
      env,
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 860 });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { waitUntil: 'domcontentloaded' });
    await step('unrelated project: the extension activates on a Python file, no popup, a quiet status bar item', async () => {
      await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
      await poll(async () => (await page.$('.explorer-folders-view, .explorer-viewlet')) || undefined, 'the explorer', 60000);
      await sleep(1500);
      await keys('Control+P');
      await page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true, timeout: 20000 });
      await page.keyboard.type('hello.py', { delay: 20 });
      await poll(async () => ((await quickPickRows()).some((r) => r.includes('hello.py')) ? true : undefined), 'Quick Open to find hello.py', 20000);
      await page.keyboard.press('Enter');
      const status = await poll(async () => {
        const st = await pycsamtStatus();
        return /server not installed/.test(st) ? st : undefined;
      }, 'the status bar item to read "server not installed"', 60000);
      // the popup, if any, comes right after the status; give it time to show
      const t1 = Date.now();
      while (Date.now() - t1 < 5000) {
        const t = await toastTexts();
        assert(!/pyCSAMT/.test(t), `a notification popped up: ${t.slice(0, 200)}`);
        await sleep(250);
      }
      const bell = await page
        .$eval('#status\\.notifications, .statusbar-item[id$="notifications"]', (e) => e.getAttribute('aria-label') || e.innerText)
        .catch(() => '');
      await shot('unrelated-project-quiet');
      return `status ${JSON.stringify(status)}; no pyCSAMT notification for 5 s; notifications: ${JSON.stringify(bell)}`;
    });
  } finally {
    if (browser) await browser.close().catch(() => undefined);
    cs.kill('SIGTERM');
    fs.writeFileSync(path.join(SHOTS, 'code-server-unrelated.log'), csLog);
  }
}

// ---- the run ---------------------------------------------------------------------
(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const port = await freePort();
  const t0 = Date.now();
  const env = { ...process.env, ...XDG };
  if (process.env.NODE24_BIN) env.PATH = `${process.env.NODE24_BIN}:${env.PATH}`;
  const cs = spawn(
    CS,
    [
      '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none',
      '--user-data-dir', `${STATE}/user-data`, '--extensions-dir', `${STATE}/extensions`,
      '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', WS,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let csLog = '';
  cs.stdout.on('data', (d) => (csLog += d));
  cs.stderr.on('data', (d) => (csLog += d));
  let browser;
  const browserErrors = [];
  try {
    await poll(async () => csLog.includes('HTTP server listening') || undefined, 'code-server to listen', 60000, 100);
    console.log(`# code-server on 127.0.0.1:${port} after ${Date.now() - t0} ms`);
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
      env,
    });
    page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') browserErrors.push(m.text());
    });
    page.on('pageerror', (e) => browserErrors.push(`pageerror: ${e.message}`));
    await page.setViewport({ width: 1400, height: 860 });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(WS)}`, { waitUntil: 'domcontentloaded' });

    await step('workbench loads', async () => {
      await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
      await poll(async () => (await page.$('.explorer-folders-view, .explorer-viewlet')) || undefined, 'the explorer', 60000);
      return `after ${Date.now() - t0} ms`;
    });

    await step('open survey.py', async () => {
      await sleep(1500);
      await keys('Control+P');
      await page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true, timeout: 20000 });
      await page.keyboard.type('survey.py', { delay: 20 });
      await poll(async () => ((await quickPickRows()).some((r) => r.includes('survey.py')) ? true : undefined), 'Quick Open to find survey.py', 20000);
      await page.keyboard.press('Enter');
      await poll(async () => ((await editorLines()).some((l) => l.includes('static_shift')) ? true : undefined), 'the editor to show survey.py', 30000);
      return (await editorLines())[0];
    });

    // the workspace's pycsamt.server.python has no server: the extension offers its own
    if (BARE_PYTHON) {
      await step('offers to install the bundled server (the chosen Python lacks it)', async () => {
        const toast = await poll(async () => {
          const t = await toastTexts();
          return /not installed in ".*bare-venv\/bin\/python"/.test(t) ? t : undefined;
        }, 'the install offer', 90000);
        assert(/Install the server the extension carries into a private environment/.test(toast), toast.slice(0, 300));
        assert(!/pip install pycsamt-lsp/.test(toast), `the offer still says pip install pycsamt-lsp: ${toast.slice(0, 300)}`);
        const status = await pycsamtStatus();
        await shot('install-offer');
        const clicked = await poll(async () => (await clickToastButton('Install')) || undefined, 'the Install button', 20000);
        assert(clicked, 'no Install button');
        return `${JSON.stringify(toast.match(/pyCSAMT LSP: the server package[^|]*/)?.[0]?.slice(0, 160) ?? toast.slice(0, 160))}; status ${JSON.stringify(status)}`;
      });

      await step('installs it into a private environment with progress, then starts it', async () => {
        let sawProgress = '';
        const toast = await poll(async () => {
          const t = await toastTexts();
          if (!sawProgress && /installing the server/i.test(t)) {
            sawProgress = (t.match(/pyCSAMT LSP: installing the server[^|]*/) || [t])[0].slice(0, 160);
            await shot('install-progress');
          }
          if (/could not install the server|cannot create the server's environment/.test(t)) throw new Error(t.slice(0, 300));
          return /the server is installed in \S*server-venv/.test(t) ? t : undefined;
        }, 'the "server is installed" notification', INSTALL_TIMEOUT, 500);
        assert(sawProgress, 'no progress notification was seen');
        await shot('install-done');
        // on disk: the private environment has the server; the user's Python still has none
        const pys = findFiles(path.join(STATE, 'user-data'), 'server-venv').map((d) => path.join(d, 'bin', 'python'));
        assert(pys.length === 1 && /globalStorage/.test(pys[0]), `private environments: ${JSON.stringify(pys)}`);
        const version = execFileSync(pys[0], ['-c', 'import pycsamt_lsp; print(pycsamt_lsp.__version__)'], { encoding: 'utf8' }).trim();
        let bareHas = true;
        try {
          execFileSync(BARE_PYTHON, ['-c', 'import pycsamt_lsp'], { stdio: 'ignore' });
        } catch {
          bareHas = false;
        }
        assert(!bareHas, `${BARE_PYTHON} was changed: it imports pycsamt_lsp now`);
        const done = toast.match(/pyCSAMT LSP: the server is installed[^|]*/)[0];
        return `progress ${JSON.stringify(sawProgress)}; ${JSON.stringify(done.slice(0, 200))}; pycsamt_lsp ${version} in ${path.relative(STATE, pys[0])}`;
      });
    }

    // the status bar: building -> ready · N chunks
    let sawBuilding = '';
    await step('status bar shows the index ready', async () => {
      const text = await poll(async () => {
        const s = await pycsamtStatus();
        if (/building|updating/.test(s) && !sawBuilding) {
          sawBuilding = s;
          await shot('status-building');
        }
        if (/error|stopped/.test(s)) throw new Error(`status: ${s}`);
        return /ready · [\d,]+ chunks/.test(s) ? s : undefined;
      }, 'the pyCSAMT status bar item to read "ready · N chunks"');
      const n = Number(/ready · ([\d,]+) chunks/.exec(text)[1].replace(/,/g, ''));
      assert(n > 1000, `only ${n} chunks`);
      return `${JSON.stringify(text)}${sawBuilding ? `, earlier ${JSON.stringify(sawBuilding)}` : ''}`;
    });

    let problems = '';
    await step('Problems count shows the hallucinated import', async () => {
      problems = await poll(async () => {
        const l = await problemsLabel();
        return (countOf(l, 'error') ?? 0) >= 1 ? l : undefined;
      }, 'an error in the Problems status');
      assert(countOf(problems, 'error') === 1, `expected exactly 1 error: ${problems}`);
      return JSON.stringify(problems);
    });

    await step('squiggle message names the hallucinated import', async () => {
      const sq = await poll(async () => (await page.$('.squiggly-error')) || undefined, 'an error squiggle', 20000);
      const box = await sq.boundingBox();
      await page.mouse.move(box.x + Math.min(20, box.width / 2), box.y + box.height / 2);
      const text = await poll(async () => {
        const t = await hoverText();
        return /static_shift/.test(t) ? t : undefined;
      }, 'the squiggle hover', 20000);
      assert(/has no attribute or submodule 'static_shift'|static_shift/.test(text), text);
      await shot('squiggle-hover');
      return JSON.stringify(text.split('\n').find((l) => l.includes('static_shift')));
    });

    await step('Problems panel lists the diagnostic', async () => {
      await page.mouse.move(5, 5);
      await page.keyboard.press('Escape');
      await keys('Control+Shift+M');
      const rows = await poll(async () => {
        const r = await page.$$eval('.markers-panel .monaco-list-row', (els) => els.map((e) => e.innerText.replace(/\n+/g, ' | ')));
        return r.some((x) => x.includes('static_shift')) ? r : undefined;
      }, 'the Problems panel rows', 20000);
      await shot('problems-panel');
      await keys('Control+J'); // hide the panel again
      return JSON.stringify(rows.find((x) => x.includes('static_shift')));
    });

    await step('hover card shows the real parameters', async () => {
      await page.keyboard.press('Escape');
      const rects = await poll(async () => {
        const r = await tokenRects('estimate_ss_ama');
        return r.length >= 2 ? r : undefined;
      }, 'the estimate_ss_ama call in the editor', 20000);
      const r = rects.at(-1); // the call on line 4
      await page.mouse.move(r.x + r.w / 2, r.y + r.h / 2);
      const text = await poll(async () => {
        const t = await hoverText();
        return /half_window/.test(t) ? t : undefined;
      }, 'a hover card with half_window', 30000);
      assert(/estimate_ss_ama/.test(text), `hover lacks the name: ${text.slice(0, 200)}`);
      await shot('hover-card');
      const params = ['sites', 'half_window', 'weights', 'max_skew'].filter((p) => text.includes(p));
      return `parameters shown: ${params.join(', ')}`;
    });

    await step('quick fix replaces the hallucinated import', async () => {
      await page.mouse.move(5, 5);
      await page.keyboard.press('Escape');
      const rects = await tokenRects('static_shift');
      assert(rects.length >= 1, 'static_shift not found in the editor');
      await page.mouse.click(rects[0].x + 3, rects[0].y + rects[0].h / 2);
      await keys('Control+Period');
      const before = countOf(await problemsLabel(), 'error');
      assert(before === 1, `expected 1 error before the fix: ${await problemsLabel()}`);
      // the action rows of the Quick Fix menu (the "Quick Fix" header row is not an action)
      const items = await poll(async () => {
        const t = await page.$$eval('.action-widget .monaco-list-row.action, .context-view .action-item', (els) =>
          els.map((e) => e.innerText.trim()).filter(Boolean),
        );
        return t.length ? t : undefined;
      }, 'the quick fix menu', 20000);
      await shot('quick-fix-menu');
      assert(/Import `StaticShiftAgent` from `pycsamt\.agents`/.test(items[0]), `first quick fix: ${JSON.stringify(items)}`);
      await page.keyboard.press('Enter'); // the first action is focused
      const lines = await poll(async () => {
        const l = await editorLines();
        return l[0] && !/import static_shift\b/.test(l[0]) ? l : undefined;
      }, 'line 1 to change', 20000);
      assert(lines[0].trim() === 'from pycsamt.agents import StaticShiftAgent', `line 1 is ${JSON.stringify(lines[0])}`);
      const after = await poll(async () => {
        const l = await problemsLabel();
        return countOf(l, 'error') === 0 ? l : undefined;
      }, 'the Problems count to drop to 0 errors', 30000);
      await shot('quick-fix-applied');
      return `${items.length} fixes, first ${JSON.stringify(items[0])}; line 1 now ${JSON.stringify(lines[0])}; problems 1 error -> ${JSON.stringify(after)}`;
    });

    await step('pyCSAMT: Query lists a static-shift result and opens it', async () => {
      await runCommandWithInput('pyCSAMT: Query', /Search the pyCSAMT knowledge index/, 'static shift correction');
      const rows = await poll(async () => {
        const t = await quickInputText();
        if (!/results? for "static shift correction"/.test(t)) return undefined;
        const r = await quickPickRows();
        return r.length ? r : undefined;
      }, 'the Query results', 60000);
      const hit = rows.find((r) => /static.?shift/i.test(r));
      assert(hit, `no static-shift result in ${JSON.stringify(rows.slice(0, 5))}`);
      await shot('query-quickpick');
      // open a static-shift Python source (else the first Python result)
      let idx = rows.findIndex((r) => /static_shift\.py:\d+|\/ss\.py:\d+/.test(r));
      if (idx < 0) idx = rows.findIndex((r) => /\.py:\d+/.test(r));
      for (let i = 0; i < Math.max(idx, 0); i++) await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter');
      const wanted = idx >= 0 ? /([\w.-]+\.py):\d+/.exec(rows[idx])[1] : undefined;
      if (wanted) {
        await poll(async () => ((await page.title()).includes(wanted) ? true : undefined), `the window title to name ${wanted}`, 20000);
        await sleep(500);
        await shot('query-opened');
      }
      return `${rows.length} rows; first static-shift row ${JSON.stringify(hit)}${wanted ? `; opened ${wanted}` : ''}`;
    });

    await step('pyCSAMT: Search Source finds validate_generated_code with evidence', async () => {
      await runCommandWithInput(
        'pyCSAMT: Search Source',
        /Search the pyCSAMT source live/,
        'Where is validate_generated_code implemented?',
      );
      const rows = await poll(async () => {
        const t = await quickInputText();
        if (!/source match(es)? for "Where is validate_generated_code/.test(t)) return undefined;
        // the list renders after the title: wait for source rows (path:line)
        const r = await quickPickRows();
        return r.length && /\.\w+:\d+/.test(r[0]) ? r : undefined;
      }, 'the Search Source matches', 60000);
      await shot('search-source');
      assert(/pycsamt\/assistant\/tools\/validation_tools\.py:\d+/.test(rows[0]), `first match: ${JSON.stringify(rows[0])}`);
      assert(/sha256 [0-9a-f]{8,}/.test(rows[0]), `no file hash in the first match: ${JSON.stringify(rows[0])}`);
      await page.keyboard.press('Enter');
      await poll(async () => ((await page.title()).includes('validation_tools.py') ? true : undefined), 'validation_tools.py to open', 20000);
      return `${rows.length} matches; first ${JSON.stringify(rows[0].slice(0, 140))}`;
    });

    await step('pyCSAMT: Ask shows an answer with numbered citations that open', async () => {
      await runCommandWithInput('pyCSAMT: Ask', /Ask a question about pyCSAMT/, 'How do I correct static shift in CSAMT data?');
      // the webview's document lives in nested iframes: find the one with the citations
      const found = await poll(async () => {
        for (const f of page.frames()) {
          const info = await f
            .evaluate(() => {
              const items = [...document.querySelectorAll('ol.citations li')];
              const answer = document.querySelector('.answer');
              return items.length && answer
                ? { n: items.length, first: items[0].innerText.split('\n')[0], answer: answer.innerText }
                : null;
            })
            .catch(() => null);
          if (info) return { frame: f, info };
        }
        return undefined;
      }, 'the Ask webview with citations', 60000);
      const { frame, info } = found;
      assert(/\[1\]/.test(info.answer), `the answer cites nothing: ${info.answer.slice(0, 200)}`);
      assert(/static.?shift|ss\.py|StaticShift/i.test(info.answer + info.first), `off-topic answer: ${info.answer.slice(0, 200)}`);
      await sleep(500);
      await shot('ask-answer');
      const before = await page.title();
      await frame.click('ol.citations li a.cite');
      const title = await poll(async () => {
        const t = await page.title();
        return t !== before && /\.(py|rst|md|txt)\b/.test(t) ? t : undefined;
      }, 'citation 1 to open its source', 20000);
      await sleep(500);
      await shot('ask-citation-opened');
      return `${info.n} citations, first ${JSON.stringify(info.first)}; answer ${JSON.stringify(info.answer.slice(0, 100))}; opened ${JSON.stringify(title)}`;
    });

    await step('pyCSAMT: Run Eval reports the metrics', async () => {
      await runCommand('pyCSAMT: Run Eval');
      const toast = await poll(async () => {
        const t = await toastTexts();
        return /pyCSAMT eval: symbol_recall/.test(t) ? t : undefined;
      }, 'the eval summary notification', 60000);
      const m = /symbol_recall ([\d.]+), workflow_in_topk ([\d.]+)/.exec(toast);
      assert(m && Number(m[1]) === 1, `symbol recall is not 1: ${toast.slice(0, 200)}`);
      // the report goes to the output channel, which scrolls to its end
      const out = await poll(async () => {
        const t = await page.$$eval('.panel .view-lines .view-line', (els) =>
          els.map((e) => e.innerText.replace(/\u00a0/g, ' ')).join('\n'),
        );
        return /pyCSAMT eval: symbol_recall [\d.]+, workflow_in_topk/.test(t) ? t : undefined;
      }, 'the eval report in the output channel', 30000);
      await shot('eval-output');
      await keys('Control+J'); // hide the panel again
      return `${JSON.stringify(toast.slice(0, 140))}; output ends ${JSON.stringify(out.split('\n').slice(-2).join(' / '))}`;
    });

    await step('pyCSAMT: Validate Selection reports an invented keyword argument', async () => {
      await page.keyboard.press('Escape');
      await keys('Control+P');
      await page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true, timeout: 20000 });
      await page.keyboard.type('survey.py', { delay: 20 });
      await poll(async () => ((await quickPickRows()).some((r) => r.includes('survey.py')) ? true : undefined), 'Quick Open to find survey.py', 20000);
      await page.keyboard.press('Enter');
      await poll(async () => ((await page.title()).includes('survey.py') ? true : undefined), 'survey.py to be active', 20000);
      await sleep(300);
      await keys('Control+End');
      await page.keyboard.press('Enter');
      await page.keyboard.type('again = estimate_ss_ama(sites, half_windw=3', { delay: 10 });
      await page.keyboard.press('Escape'); // any suggestion widget
      await runCommand('pyCSAMT: Validate Selection');
      const toast = await poll(async () => {
        const t = await toastTexts();
        return /pyCSAMT: 1 error: .*half_windw/.test(t) ? t : undefined;
      }, 'the validation notification naming half_windw', 30000);
      await shot('validate-selection');
      return JSON.stringify(toast.slice(0, 200));
    });

    await step('pyCSAMT: Rebuild Index rebuilds with progress and comes back ready', async () => {
      await runCommand('pyCSAMT: Rebuild Index');
      let sawBusy = '';
      const toast = await poll(async () => {
        const s = await pycsamtStatus();
        if (/building|stale/.test(s) && !sawBusy) sawBusy = s;
        const t = await toastTexts();
        return /Rebuilt\. pyCSAMT index: ready · [\d,]+ chunks/.test(t) ? t : undefined;
      }, 'the rebuild notification', 180000);
      const s = await poll(async () => {
        const st = await pycsamtStatus();
        return /ready · [\d,]+ chunks/.test(st) ? st : undefined;
      }, 'the status bar to read ready again', 30000);
      await shot('rebuilt');
      return `${sawBusy ? `status went ${JSON.stringify(sawBusy)}, ` : ''}${JSON.stringify(toast.match(/Rebuilt\.[^|]*/)[0].slice(0, 120))}; status ${JSON.stringify(s)}`;
    });

    await step('status bar still ready; clicking it shows the index stats', async () => {
      const s = await pycsamtStatus();
      assert(/ready · [\d,]+ chunks/.test(s), s);
      await page.keyboard.press('Escape');
      const item = await page.evaluateHandle(() =>
        [...document.querySelectorAll('.statusbar-item')].find((e) => /pyCSAMT:/.test(e.innerText || e.getAttribute('aria-label') || '')),
      );
      const target = (await item.$('a, .statusbar-item-label')) || item;
      await target.click();
      const toast = await poll(async () => {
        const t = await toastTexts();
        return /pyCSAMT index: ready · [\d,]+ chunks/.test(t) ? t : undefined;
      }, 'the index stats notification', 20000);
      await shot('status-stats');
      return `${JSON.stringify(s)}; click: ${JSON.stringify(toast.slice(0, 160))}`;
    });
  } catch (err) {
    record('driver', false, err && err.stack ? err.stack.split('\n').slice(0, 3).join(' | ') : String(err));
  } finally {
    if (browser) await browser.close().catch(() => undefined);
    cs.kill('SIGTERM');
    fs.writeFileSync(path.join(SHOTS, 'code-server.log'), csLog);
    fs.writeFileSync(path.join(SHOTS, 'browser-errors.log'), browserErrors.join('\n'));
  }
  if (process.env.UNRELATED_WS) {
    await unrelatedProject(process.env.UNRELATED_WS).catch((err) =>
      record('driver (unrelated project)', false, err && err.stack ? err.stack.split('\n').slice(0, 3).join(' | ') : String(err)),
    );
  }
  const failed = results.filter((r) => !r.ok).length;
  console.log(`# screenshots: ${SHOTS}`);
  console.log(`vscode-e2e: ${results.length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
