/**
 * The Ask answer in a webview: the answer (markdown rendered by VS Code's built-in
 * markdown extension), the clarifying question when the server is not confident,
 * and numbered citations that open their sources.
 */
import type { WebviewPanel } from 'vscode';
import { citationLocationText } from './format';
import type { AskResponse, AskRoute, Citation } from './protocol';
import { createWebviewPanel, executeCommand } from './vscodeapi';

export function escapeHtml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Turn `[n]` markers (outside code) into links to citation n. */
export function linkCitationMarkers(html: string, known: Set<number>): string {
  return html
    .split(/(<pre[\s\S]*?<\/pre>|<code[\s\S]*?<\/code>|<[^>]+>)/g)
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part.replace(/\[(\d{1,3})\]/g, (m, n) =>
            known.has(Number(n)) ? `<a href="#" class="cite" data-n="${Number(n)}">[${Number(n)}]</a>` : m,
          ),
    )
    .join('');
}

/** One line naming the route the server took: intent, workflow, line, scope. */
export function routeText(route: AskRoute | null | undefined): string {
  if (!route || !route.intent) {
    return '';
  }
  const parts = [`route: ${route.intent}`];
  const wfs = route.workflows && route.workflows.length ? route.workflows : route.workflow ? [route.workflow] : [];
  if (wfs.length) {
    parts.push(`workflow: ${wfs.join(' → ')}`);
  }
  if (route.line) {
    parts.push(`line: ${route.line}`);
  }
  if (route.scope && route.scope !== 'science') {
    parts.push(route.scope === 'developer_tests' ? 'developer search (tests included)' : 'developer search');
  }
  if (typeof route.confidence === 'number') {
    parts.push(`confidence ${route.confidence.toFixed(2)}`);
  }
  if (route.source && route.source !== 'offline') {
    parts.push(route.source === 'model' ? 'decided by the model' : route.source);
  }
  return parts.join(' · ');
}

export interface AskHtmlInput {
  question: string;
  resp: AskResponse;
  answerHtml: string;
  nonce: string;
  cspSource: string;
}

export function askHtml({ question, resp, answerHtml, nonce, cspSource }: AskHtmlInput): string {
  const citations = resp.citations ?? [];
  const known = new Set(citations.map((c) => c.n));
  const confident = resp.confident !== false;
  const route = resp.route ?? undefined;
  const clarify = (resp.clarifying_question ?? route?.clarify_question ?? '').trim();
  const routeLine = routeText(route);
  const routeHtml = routeLine ? `<p class="route">${escapeHtml(routeLine)}</p>` : '';
  const banner =
    route?.intent === 'clarify' && clarify
      ? `<div class="banner question"><strong>Before I answer, a question:</strong><p class="clarify">${escapeHtml(
          clarify,
        )}</p><button id="refine">Answer…</button></div>`
      : confident
    ? ''
    : `<div class="banner"><strong>Low confidence.</strong> The index holds little evidence for this question.${
        clarify ? `<p class="clarify">${escapeHtml(clarify)}</p>` : ''
      }<button id="refine">Ask again…</button></div>`;
  const items = citations
    .map(
      (c: Citation) => `<li value="${c.n}"><a href="#" class="cite" data-n="${c.n}">${escapeHtml(
        c.label || c.source_path || `citation ${c.n}`,
      )}</a> <span class="loc">${escapeHtml(citationLocationText(c))}</span>${
        typeof c.score === 'number' ? ` <span class="score">score ${c.score.toFixed(2)}</span>` : ''
      }${c.snippet ? `<pre class="snippet">${escapeHtml(c.snippet.split('\n').slice(0, 6).join('\n'))}</pre>` : ''}</li>`,
    )
    .join('\n');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>pyCSAMT: Ask</title>
<style>
  body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 16px 16px; line-height: 1.5; }
  h1 { font-size: 1.2em; margin-top: 16px; }
  .banner { border-left: 4px solid var(--vscode-editorWarning-foreground); background: var(--vscode-textBlockQuote-background); padding: 8px 12px; margin: 12px 0; }
  .clarify { font-size: 1.1em; font-style: italic; margin: 6px 0; }
  .route { color: var(--vscode-descriptionForeground); font-size: 0.9em; margin: 0 0 8px; }
  .banner.question { border-left-color: var(--vscode-editorInfo-foreground); }
  button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: 4px 10px; cursor: pointer; }
  pre, code { font-family: var(--vscode-editor-font-family); }
  pre { background: var(--vscode-textCodeBlock-background); padding: 6px 8px; overflow-x: auto; }
  .answer { margin-bottom: 16px; }
  ol.citations li { margin-bottom: 10px; }
  .loc, .score { color: var(--vscode-descriptionForeground); font-size: 0.9em; }
  pre.snippet { font-size: 0.85em; margin: 4px 0 0; max-height: 8em; }
  a.cite { cursor: pointer; }
</style>
</head>
<body>
<h1>${escapeHtml(question)}</h1>
${routeHtml}
${banner}
<div class="answer">${linkCitationMarkers(answerHtml, known)}</div>
${citations.length ? `<h2>Sources</h2>\n<ol class="citations">\n${items}\n</ol>` : '<p class="loc">No sources cited.</p>'}
<script nonce="${nonce}">
  const vscode = acquireVsCodeApi();
  document.addEventListener('click', (e) => {
    const a = e.target.closest && e.target.closest('a.cite');
    if (a) { e.preventDefault(); vscode.postMessage({ type: 'open', n: Number(a.dataset.n) }); }
    if (e.target.id === 'refine') { vscode.postMessage({ type: 'refine' }); }
  });
</script>
</body>
</html>`;
}

function makeNonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < 32; i++) {
    out += chars[Math.floor(Math.random() * chars.length)];
  }
  return out;
}

/** Render markdown with VS Code's markdown extension; plain text when unavailable. */
export async function renderMarkdown(md: string): Promise<string> {
  try {
    const html = await executeCommand<string>('markdown.api.render', md);
    if (typeof html === 'string') {
      return html;
    }
  } catch {
    // fall through
  }
  return `<pre>${escapeHtml(md)}</pre>`;
}

export interface AskViewHandlers {
  openCitation(c: Citation, root: string | undefined): void | Promise<void>;
  refine(question: string): void | Promise<void>;
}

/** One reusable panel. */
export class AskView {
  private panel: WebviewPanel | undefined;
  private state: { question: string; resp: AskResponse; root: string | undefined } | undefined;

  constructor(private readonly handlers: AskViewHandlers) {}

  async show(question: string, resp: AskResponse, root: string | undefined): Promise<void> {
    this.state = { question, resp, root };
    if (!this.panel) {
      this.panel = createWebviewPanel('pycsamt.ask', 'pyCSAMT: Ask');
      this.panel.onDidDispose(() => (this.panel = undefined));
      this.panel.webview.onDidReceiveMessage((m: { type?: string; n?: number }) => {
        const st = this.state;
        if (!st) {
          return;
        }
        if (m.type === 'open') {
          const c = (st.resp.citations ?? []).find((x) => x.n === m.n);
          if (c) {
            void this.handlers.openCitation(c, st.root);
          }
        } else if (m.type === 'refine') {
          void this.handlers.refine(st.question);
        }
      });
    }
    const asked = resp.route?.intent === 'clarify';
    const answer = asked
      ? ''
      : resp.answer?.trim()
        ? resp.answer
        : resp.confident === false
          ? ''
          : '_No answer._';
    const answerHtml = answer ? await renderMarkdown(answer) : '';
    this.panel.title = `pyCSAMT: ${question.length > 40 ? `${question.slice(0, 39)}…` : question}`;
    this.panel.webview.html = askHtml({
      question,
      resp,
      answerHtml,
      nonce: makeNonce(),
      cspSource: this.panel.webview.cspSource,
    });
    this.panel.reveal(undefined, false);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

