"""Hover and completion latency on the real pyCSAMT corpus.

Measures (nothing is asserted; the issue's aim is under 10 ms):

* buffer analysis: ``lsp.buffer.analyze`` of a generated script and of the
  largest modules of the package (done once per document version);
* hover, in-process, through the functions the handler calls
  (``BufferCache.get`` + ``editor.card_at`` + ``Card.to_markdown``) at every
  package reference of the buffers: first pass (card cache empty), warm
  passes, and "after an edit" (the buffer re-analysed on each request);
* completion, in-process (``editor.complete`` and the documentation of
  every item, ``Card.to_markdown``) after ``from M import`` for every public
  module ``M``, after ``alias.`` for module aliases, after ``import
  pycsamt.`` and on an instance of a class;
* the same hover and completion requests end to end through a real LSP
  client (pygls ``BaseLanguageClient`` over stdio against ``pycsamt-lsp
  serve``), which adds JSON-RPC, the event loop and the worker thread;
* ``--load``: the same requests, and one the event loop answers itself,
  against a real server on a copy of the checkout or the sdist while heavy
  commands run (broad ``searchSource``, ``rebuild``, ``eval``, ``ask``, a
  burst of saved files, all at once): p50/p99/max, requests answered empty,
  server variants alternated (``head``, ``rev:REV``, ``si:SECONDS``). Why:
  a worker that keeps dropping and retaking the GIL can starve the event
  loop (the GIL convoy, ``lsp/offload.py``); this measures whether the
  product's own work does.

Usage::

    .venv/bin/python benchmarks/bench_editor.py [--quick] [--out FILE] [--root DIR] [--no-lsp]
    .venv/bin/python benchmarks/bench_editor.py --load [--corpus checkout|sdist|both]
        [--rounds 3] [--scenarios search,rebuild,eval,ask,burst,all] [--variants head,si:0.005]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from pycsamt_lsp.analysis.buffer import analyze
from pycsamt_lsp.analysis.editor import BufferCache, card_at, complete, current_package
from pycsamt_lsp.cards.card import card_for, clear_cache
from pycsamt_lsp.corpus.discovery import fetch_corpus
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace

# tests/lsp_raw.py: the message framing every raw JSON-RPC client here reads by
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from lsp_raw import read_message

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "bench_editor.json"
CACHE = Path.home() / ".cache" / "pycsamt-lsp"
CHECKOUT = CACHE / "checkout" / "pycsamt-checkout"
SDIST = CACHE / "pycsamt-2.6.4" / "pycsamt-2.6.4"


def pct(values: list[float], q: float) -> float:
    return (
        float(np.percentile(np.asarray(values, float), q)) if values else float("nan")
    )


def stats_ms(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": pct(ms, 50),
        "p95_ms": pct(ms, 95),
        "max_ms": max(ms) if ms else float("nan"),
    }


# -- workloads ----------------------------------------------------------------


def make_script(ws: Workspace, n_symbols: int) -> str:
    """A script importing real public functions and classes of many modules,
    calling them (with keyword arguments) and using module aliases."""
    model = ws.model
    pkg = model.package
    by_module: dict[str, list[tuple[str, str, list[str]]]] = {}
    for dotted in model.all_symbols():
        mod, _, name = dotted.rpartition(".")
        if not mod or any(p.startswith("_") for p in dotted.split(".")):
            continue
        res = model.resolve(dotted)
        if not res.exists or res.kind not in ("function", "class"):
            continue
        if res.target != dotted:  # re-exports: keep the defining module's
            continue
        sig = model.call_signature(dotted) or {}
        kws = [
            p["name"]
            for p in (sig.get("params") or [])
            if p["kind"] in ("keyword_only", "positional_or_keyword")
            and p["name"] not in ("self", "cls")
        ]
        by_module.setdefault(mod, []).append((name, res.kind, kws))
    picked: list[tuple[str, str, str, list[str]]] = []
    mods = sorted(by_module)
    i = 0
    while len(picked) < n_symbols and any(by_module.values()):
        mod = mods[i % len(mods)]
        if by_module[mod]:
            picked.append((mod, *by_module[mod].pop(0)))
        i += 1
    lines: list[str] = [f"import {pkg}"]
    imports: dict[str, list[str]] = {}
    for mod, name, _k, _kw in picked:
        imports.setdefault(mod, []).append(name)
    aliases: dict[str, str] = {}
    for j, (mod, names) in enumerate(sorted(imports.items())):
        lines.append(f"from {mod} import {', '.join(names)}")
        if j % 3 == 0:
            aliases[mod] = f"m{j}"
            lines.append(f"import {mod} as m{j}")
    lines.append("")
    for mod, name, kind, kws in picked:
        args = ", ".join(f"{k}=None" for k in kws[:3])
        var = f"v_{name.lower()}"
        lines.append(f"{var} = {name}({args})")
        if mod in aliases:
            lines.append(f"{aliases[mod]}.{name}")
        if kind == "class":
            lines.append(f"{var}.execute")
    return "\n".join(lines) + "\n"


def corpus_buffers(ws: Workspace, n: int) -> list[tuple[str, str]]:
    """The *n* largest indexed modules of the package: ``(path, text)``."""
    pkg = ws.profile.package
    snap = ws.snapshot
    files = [r for r in snap.files if r.startswith(pkg + "/") and r.endswith(".py")]
    files.sort(key=lambda r: -(ws.root / r).stat().st_size)
    return [
        (str(ws.root / r), (ws.root / r).read_text(encoding="utf-8")) for r in files[:n]
    ]


def completion_cases(ws: Workspace, script: str) -> list[tuple[str, str]]:
    """``(label, buffer)``: the cursor is at the end of the buffer."""
    model = ws.model
    pkg = model.package
    cases: list[tuple[str, str]] = []
    for mod in sorted(model.modules):
        if any(p.startswith("_") for p in mod.split(".")) or "tests" in mod:
            continue
        cases.append(("from_import", f"from {mod} import "))
        if model.modules[mod].is_package:
            cases.append(("import_dotted", f"import {mod}."))
        cases.append(("alias_dot", f"import {mod} as m\nm."))
    cases.append(
        ("instance_dot", script + "agent = pycsamt.agents.StaticShiftAgent()\nagent.")
    )
    cases.append(("pkg_dot", f"import {pkg}\n{pkg}."))
    return cases


# -- in-process ---------------------------------------------------------------


def bench_hover(
    ws: Workspace, buffers: list[tuple[str, str]], reps: int
) -> dict[str, Any]:
    pkg = ws.profile.package
    cache = BufferCache()
    analysis: list[float] = []
    positions: list[tuple[str, str, str | None, int, int]] = []
    for uri, text in buffers:
        cur = current_package(ws, uri)
        t0 = time.perf_counter()
        idx = analyze(text, pkg, cur)
        analysis.append(time.perf_counter() - t0)
        for r in idx.all_refs():
            positions.append((uri, text, cur, r.line, (r.start + r.end) // 2))

    def hover(uri: str, text: str, cur: str | None, line: int, col: int) -> bool:
        idx = cache.get(uri, text, pkg, cur)
        got = card_at(ws, idx, line, col)
        if got is None:
            return False
        got[1].to_markdown(focus=got[0].param)
        return True

    clear_cache(ws)
    cold: list[float] = []
    found = 0
    for p in positions:
        t0 = time.perf_counter()
        found += hover(*p)
        cold.append(time.perf_counter() - t0)
    warm: list[float] = []
    for _ in range(reps):
        for p in positions:
            t0 = time.perf_counter()
            hover(*p)
            warm.append(time.perf_counter() - t0)
    # after an edit: the script (a user's buffer) and the corpus modules
    # (a maintainer's, thousands of lines) apart
    edited: dict[str, list[float]] = {"script": [], "corpus_modules": []}
    script_uri = buffers[0][0]
    for key in edited:
        mine = [p for p in positions if (p[0] == script_uri) == (key == "script")]
        step = max(1, len(mine) // 200)
        for i, (uri, text, cur, line, col) in enumerate(mine[::step]):
            changed = text + f"\n# edit {i}\n"
            t0 = time.perf_counter()
            hover(uri, changed, cur, line, col)
            edited[key].append(time.perf_counter() - t0)
    return {
        "positions": len(positions),
        "with_card": found,
        "analysis": stats_ms(analysis),
        "analysis_by_buffer": [
            {"lines": len(t.splitlines()), "ms": a * 1000}
            for (_u, t), a in zip(buffers, analysis, strict=True)
        ],
        "cold": stats_ms(cold),
        "warm": stats_ms(warm),
        "after_edit_script": stats_ms(edited["script"]),
        "after_edit_corpus_modules": stats_ms(edited["corpus_modules"]),
    }


def bench_completion(
    ws: Workspace, cases: list[tuple[str, str]], reps: int
) -> dict[str, Any]:
    pkg = ws.profile.package
    prepared = []
    for label, text in cases:
        lines = text.split("\n")
        prepared.append((label, analyze(text, pkg), len(lines) - 1, len(lines[-1])))
    clear_cache(ws)
    out: dict[str, Any] = {"cases": len(prepared)}
    items: list[int] = []
    names_only: list[float] = []
    docs_cold: list[float] = []
    docs_warm: list[float] = []
    by_label: dict[str, list[float]] = {}
    for _label, idx, line, col in prepared:
        t0 = time.perf_counter()
        got = complete(ws, idx, line, col) or []
        for c in got:
            card = c.card(ws)
            if card is not None:
                card.to_markdown()
        docs_cold.append(time.perf_counter() - t0)
        items.append(len(got))
    for _ in range(reps):
        for label, idx, line, col in prepared:
            t0 = time.perf_counter()
            got = complete(ws, idx, line, col) or []
            names_only.append(time.perf_counter() - t0)
            for c in got:
                card = c.card(ws)
                if card is not None:
                    card.to_markdown()
            dt = time.perf_counter() - t0
            docs_warm.append(dt)
            by_label.setdefault(label, []).append(dt)
    out["items_median"] = float(np.median(items)) if items else 0
    out["items_max"] = max(items) if items else 0
    out["names_only"] = stats_ms(names_only)
    out["with_docs_cold"] = stats_ms(docs_cold)
    out["with_docs_warm"] = stats_ms(docs_warm)
    out["by_context_warm"] = {k: stats_ms(v) for k, v in sorted(by_label.items())}
    return out


# -- end to end ----------------------------------------------------------------


async def _lsp(
    root: Path, index_dir: Path, script: str, cases, tmp: Path, reps: int
) -> dict[str, Any]:
    from lsprotocol import types
    from pygls.lsp.client import BaseLanguageClient

    client = BaseLanguageClient("bench-editor", "1")
    ready = asyncio.get_running_loop().create_future()

    @client.feature("pycsamt/indexState")
    def _state(params):
        state = params["state"] if isinstance(params, dict) else params.state
        if state in ("ready", "error") and not ready.done():
            ready.set_result(state)

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def _log(_params):
        return None

    t0 = time.perf_counter()
    await client.start_io(sys.executable, "-m", "pycsamt_lsp", "serve")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            initialization_options={
                "corpusRoot": str(root),
                "indexDir": str(index_dir),
                "watch": "off",
                "logLevel": "warning",
            },
            root_uri=tmp.as_uri(),
        )
    )
    client.initialized(types.InitializedParams())
    state = await asyncio.wait_for(ready, 600)
    startup = time.perf_counter() - t0
    if state != "ready":
        raise RuntimeError("the server did not get ready")

    script_path = tmp / "bench_script.py"
    uri = script_path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=script
            )
        )
    )
    idx = analyze(script, "pycsamt")
    positions = [(r.line, (r.start + r.end) // 2) for r in idx.all_refs()]

    async def hover(line: int, col: int):
        return await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=col),
            )
        )

    first = time.perf_counter()
    await hover(*positions[0])
    first_s = time.perf_counter() - first
    hovers: list[float] = []
    for _ in range(reps):
        for line, col in positions:
            t = time.perf_counter()
            await hover(line, col)
            hovers.append(time.perf_counter() - t)

    comps: list[float] = []
    n_items: list[int] = []
    version = 1
    for _label, text in cases:
        version += 1
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=version
                ),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text=text)
                ],
            )
        )
        lines = text.split("\n")
        for _ in range(max(1, reps // 2)):
            t = time.perf_counter()
            got = await client.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(
                        line=len(lines) - 1, character=len(lines[-1])
                    ),
                )
            )
            comps.append(time.perf_counter() - t)
        n_items.append(len(got.items) if got is not None else 0)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "startup_to_ready_s": startup,
        "first_hover_ms": first_s * 1000,
        "hover": stats_ms(hovers),
        "completion": stats_ms(comps),
        "completion_items_median": float(np.median(n_items)) if n_items else 0,
    }


# -- report -------------------------------------------------------------------


def table(res: dict[str, Any]) -> str:
    h, c, e = res["hover"], res["completion"], res.get("lsp")
    rows = [
        ("buffer analysis (per version)", h["analysis"]),
        (f"hover, cold cards ({h['positions']} positions)", h["cold"]),
        ("hover, warm", h["warm"]),
        (
            f"hover after an edit, script ({h['analysis_by_buffer'][0]['lines']} lines)",
            h["after_edit_script"],
        ),
        ("hover after an edit, big corpus modules", h["after_edit_corpus_modules"]),
        (f"completion names ({c['cases']} contexts)", c["names_only"]),
        ("completion + card docs, cold", c["with_docs_cold"]),
        ("completion + card docs, warm", c["with_docs_warm"]),
    ]
    if e:
        rows += [
            ("LSP hover (stdio, end to end)", e["hover"]),
            ("LSP completion (stdio, end to end)", e["completion"]),
        ]
    width = max(len(r[0]) for r in rows)
    out = [
        f"{'measure':<{width}}  {'p50 ms':>8}  {'p95 ms':>8}  {'max ms':>8}  {'n':>6}"
    ]
    for name, s in rows:
        out.append(
            f"{name:<{width}}  {s['p50_ms']:8.3f}  {s['p95_ms']:8.3f}  {s['max_ms']:8.2f}  {s['n']:6d}"
        )
    out.append("")
    out.append(f"hover positions with a card: {h['with_card']}/{h['positions']}")
    sizes = ", ".join(
        f"{b['lines']} lines {b['ms']:.1f} ms" for b in h["analysis_by_buffer"]
    )
    out.append(f"buffer analysis (script first): {sizes}")
    out.append(
        f"completion items: median {c['items_median']:.0f}, max {c['items_max']}"
    )
    for label, s in c["by_context_warm"].items():
        out.append(
            f"  completion+docs warm, {label:<14} p50 {s['p50_ms']:.3f} ms  p95 {s['p95_ms']:.3f} ms"
        )
    if e:
        out.append(
            f"LSP: server start to index ready {e['startup_to_ready_s']:.2f} s, first hover {e['first_hover_ms']:.1f} ms"
        )
    return "\n".join(out)


# -- under background load (the GIL convoy, issue: no request freezes the server) --

LOAD_OUT = HERE / "results" / "bench_editor_load.json"
#: the server's editor budget (lsp.server.PycsamtServer.editor_budget)
EDITOR_BUDGET_S = 5.0
#: broad developer-search patterns: each matches most files of the corpus
BROAD_SEARCHES = ("data", "import numpy as np", "self", "def get", "the value of")
ASK_QUESTIONS = (
    "how do I correct static shift with AMA?",
    "read EDI files and plot apparent resistivity",
    "which inversion codes are supported?",
)
LOAD_SCENARIOS = ("search", "rebuild", "eval", "ask", "burst", "all")


class Wire:
    """A JSON-RPC client over a server's stdio, timed at the reader thread.

    Why not ``tests/lsp_raw.RawClient``: it polls for answers every 20 ms,
    too coarse for the latencies measured here; this one wakes the waiting
    thread at the moment the answer's bytes arrive.
    """

    def __init__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        import subprocess
        import threading

        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        self._wlock = threading.Lock()
        self._slock = threading.Lock()
        self._waiting: dict[int, tuple[threading.Event, list]] = {}
        self._next = 0
        self.states: list[tuple[float, str, str]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        with self._wlock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while (msg := read_message(out)) is not None:
            now = time.perf_counter()
            if "method" in msg:
                if "id" in msg:  # a request of the server: progress, config, ...
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                elif msg["method"] == "pycsamt/indexState":
                    p = msg.get("params") or {}
                    self.states.append((now, p.get("state", ""), p.get("message", "")))
                continue
            with self._slock:
                got = self._waiting.get(msg.get("id"))
            if got is not None:
                got[1].extend((now, msg))
                got[0].set()

    def request(
        self, method: str, params: Any, timeout: float = 600.0
    ) -> tuple[float, dict]:
        """``(seconds, response)``; the clock stops when the answer is read."""
        import threading

        ev, box = threading.Event(), []
        with self._slock:
            self._next += 1
            msg_id = self._next
            self._waiting[msg_id] = (ev, box)
        t0 = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        if not ev.wait(timeout):
            raise TimeoutError(f"no answer to {method} in {timeout} s")
        with self._slock:
            del self._waiting[msg_id]
        return box[0] - t0, box[1]

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def command(
        self, name: str, arg: dict, timeout: float = 600.0
    ) -> tuple[float, dict]:
        return self.request(
            "workspace/executeCommand", {"command": name, "arguments": [arg]}, timeout
        )

    def wait_state(self, states: tuple[str, ...], after: float, timeout: float) -> str:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for t, s, _m in list(self.states):
                if t >= after and s in states:
                    return s
            time.sleep(0.02)
        raise TimeoutError(f"no index state in {states} within {timeout} s")

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - the benchmark is over either way
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _public_defs(root: Path, pkg: str, limit: int) -> list[tuple[str, str]]:
    """``(module, name)`` of public top-level functions and classes of the
    package, read with :mod:`ast` (never imported), spread over modules."""
    import ast

    out: list[tuple[str, str]] = []
    seen_mods = 0
    for path in sorted((root / pkg).rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = rel.parts
        if any(p.startswith("_") or p == "tests" for p in parts):
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        names = [
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef)
            and not n.name.startswith("_")
        ]
        if names:
            seen_mods += 1
            out.append((".".join(parts), names[0]))
        if len(out) >= limit:
            break
    return out


def load_buffers(
    root: Path, pkg: str
) -> tuple[str, list[tuple[int, int]], str, list[tuple[int, int]]]:
    """A script to hover over and a buffer of completion contexts, with the
    positions to ask at: ``(script, hover_positions, completions, completion_positions)``."""
    defs = _public_defs(root, pkg, 40)
    lines = [f"import {pkg}"]
    hover: list[tuple[int, int]] = []
    for mod, name in defs:
        lines.append(f"from {mod} import {name}")
    lines.append("")
    for _mod, name in defs:
        hover.append((len(lines), 1))
        lines.append(f"{name}")
    script = "\n".join(lines) + "\n"
    mods = sorted({m for m, _ in defs})
    comp_lines = [f"import {pkg}"]
    comp: list[tuple[int, int]] = []
    for mod in mods[:12]:
        text = f"from {mod} import "
        comp.append((len(comp_lines), len(text)))
        comp_lines.append(text)
        parent = mod.rpartition(".")[0]
        if parent:
            text = f"import {parent}."
            comp.append((len(comp_lines), len(text)))
            comp_lines.append(text)
    comp.append((len(comp_lines), len(pkg) + 1))
    comp_lines.append(f"{pkg}.")
    return script, hover, "\n".join(comp_lines) + "\n", comp


class Probe:
    """Hover, completion and a loop probe, one after another, until stopped.

    The loop probe is a request for a method the server does not have: pygls
    answers it on the event loop itself (MethodNotFound), so its round trip
    is the loop's responsiveness with no worker thread involved.
    """

    def __init__(
        self,
        wire: Wire,
        hover_uri: str,
        hover_pos,
        comp_uri: str,
        comp_pos,
        gap: float = 0.02,
    ) -> None:
        import threading

        self.wire, self.gap = wire, gap
        self.hover_uri, self.hover_pos = hover_uri, hover_pos
        self.comp_uri, self.comp_pos = comp_uri, comp_pos
        self.samples: list[
            tuple[str, float, float, bool]
        ] = []  # kind, t, seconds, answered
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)

    def _one(self, kind: str, method: str, params: Any) -> None:
        t = time.perf_counter()
        dt, msg = self.wire.request(method, params, timeout=120)
        if kind == "loop":
            ok = "error" in msg
        else:
            res = msg.get("result")
            ok = bool(res) and (kind != "completion" or bool(res.get("items")))
        self.samples.append((kind, t, dt, ok))

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            line, col = self.hover_pos[i % len(self.hover_pos)]
            self._one(
                "hover",
                "textDocument/hover",
                {
                    "textDocument": {"uri": self.hover_uri},
                    "position": {"line": line, "character": col},
                },
            )
            line, col = self.comp_pos[i % len(self.comp_pos)]
            self._one(
                "completion",
                "textDocument/completion",
                {
                    "textDocument": {"uri": self.comp_uri},
                    "position": {"line": line, "character": col},
                },
            )
            self._one("loop", "pycsamt/benchLoopProbe", {})
            i += 1
            self._stop.wait(self.gap)

    def window(self, t0: float, t1: float) -> dict[str, Any]:
        """Per kind: p50/p99/max ms and the requests answered empty, over the
        samples started in ``[t0, t1]``."""
        out: dict[str, Any] = {}
        for kind in ("hover", "completion", "loop"):
            got = [
                (dt, ok) for k, t, dt, ok in self.samples if k == kind and t0 <= t <= t1
            ]
            ms = [dt * 1000 for dt, _ in got]
            out[kind] = {
                "n": len(ms),
                "p50_ms": round(pct(ms, 50), 2),
                "p99_ms": round(pct(ms, 99), 2),
                "max_ms": round(max(ms), 1) if ms else float("nan"),
                "empty": sum(1 for _, ok in got if not ok),
                "over_budget": sum(1 for m in ms if m >= EDITOR_BUDGET_S * 1000),
            }
        return out


def _copy_corpus(src: Path, tmp: Path) -> Path:
    import shutil

    dst = tmp / "corpus"
    shutil.copytree(
        src,
        dst,
        ignore=shutil.ignore_patterns(".pycsamt_rag", "__pycache__"),
        symlinks=True,
    )
    return dst


def _burst(wire: Wire, root: Path, pkg: str, n: int, token: str) -> None:
    """Append a function to *n* package modules, tell the server (one
    watched-files batch, as an editor sends after a checkout), and wait until
    the refresh is persisted (the manifest is rewritten)."""
    files = sorted(p for p in (root / pkg).rglob("*.py") if "tests" not in p.parts)[:n]
    manifest = root / ".pycsamt_rag" / "manifest.json"
    before = manifest.stat().st_mtime_ns if manifest.exists() else 0
    for i, p in enumerate(files):
        with open(p, "a", encoding="utf-8") as fh:
            fh.write(f"\n\ndef {token}_{i}():\n    return {i}\n")
    wire.notify(
        "workspace/didChangeWatchedFiles",
        {"changes": [{"uri": p.as_uri(), "type": 2} for p in files]},
    )
    deadline = time.perf_counter() + 180
    while time.perf_counter() < deadline:
        if manifest.exists() and manifest.stat().st_mtime_ns != before:
            return
        time.sleep(0.05)
    raise TimeoutError("the burst was not persisted in 180 s")


def _background(
    wire: Wire, scenario: str, root: Path, pkg: str, rnd: int
) -> dict[str, float]:
    """Run one scenario's background requests; seconds per part."""
    import threading

    parts: dict[str, float] = {}
    errors: list[str] = []

    def timed(name: str, fn) -> None:
        t = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            errors.append(f"{name}: {exc}")
        parts[name] = round(time.perf_counter() - t, 2)

    def search() -> None:
        for q in BROAD_SEARCHES:
            _dt, msg = wire.command(
                "pycsamt.searchSource", {"query": q, "includeTests": True}
            )
            if "error" in msg:
                raise RuntimeError(msg["error"].get("message"))

    def rebuild() -> None:
        _dt, msg = wire.command("pycsamt.rebuild", {})
        if "error" in msg:
            raise RuntimeError(msg["error"].get("message"))

    def run_eval() -> None:
        _dt, msg = wire.command("pycsamt.eval", {"ablate": True})
        if "error" in msg:
            raise RuntimeError(msg["error"].get("message"))

    def ask() -> None:
        for q in ASK_QUESTIONS:
            _dt, msg = wire.command("pycsamt.ask", {"question": q})
            if "error" in msg:
                raise RuntimeError(msg["error"].get("message"))

    def burst() -> None:
        _burst(wire, root, pkg, 200, f"bench_burst_r{rnd}")

    jobs = {
        "search": search,
        "rebuild": rebuild,
        "eval": run_eval,
        "ask": ask,
        "burst": burst,
    }
    chosen = [k for k in jobs if k != "rebuild"] if scenario == "all" else [scenario]
    threads = [threading.Thread(target=timed, args=(k, jobs[k])) for k in chosen]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        parts["errors"] = errors  # type: ignore[assignment]
    return parts


def variant_cmd(spec: str, tmp: Path) -> tuple[list[str], dict[str, str]]:
    """The server command of a variant: ``head`` (this working tree),
    ``rev:REV`` (``server/`` of a git revision on ``PYTHONPATH``), or
    ``si:SECONDS`` (this tree with that ``sys.setswitchinterval``, which the
    server then cannot change: measurement only)."""
    serve = [sys.executable, "-m", "pycsamt_lsp", "serve"]
    if spec == "head":
        return serve, {}
    kind, _, value = spec.partition(":")
    if kind == "si":
        code = (
            f"import sys; sys.setswitchinterval({float(value)}); "
            "sys.setswitchinterval = lambda _s: None; "
            "from pycsamt_lsp.cli import main; raise SystemExit(main(['serve']))"
        )
        return [sys.executable, "-c", code], {}
    if kind == "rev":
        import subprocess
        import tarfile

        blob = subprocess.run(
            ["git", "archive", value, "server"],
            cwd=HERE.parent,
            capture_output=True,
            check=True,
        ).stdout
        dest = tmp / f"rev-{value}"
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "server.tar").write_bytes(blob)
        with tarfile.open(dest / "server.tar") as tf:
            tf.extractall(dest, filter="data")
        return serve, {"PYTHONPATH": str(dest / "server")}
    raise SystemExit(f"unknown variant {spec!r} (head, rev:REV, si:SECONDS)")


def load_round(
    src: Path, scenarios: list[str], rnd: int, variant: str, idle_s: float
) -> dict[str, Any]:
    """One server on a fresh copy of *src*: an idle window, then each scenario."""
    pkg = load_profile().package
    with tempfile.TemporaryDirectory(prefix="f-bench-load-") as tmpd:
        tmp = Path(tmpd)
        root = _copy_corpus(src, tmp)
        serve, env = variant_cmd(variant, tmp)
        wire = Wire(serve, env)
        try:
            t0 = time.perf_counter()
            wire.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "rootUri": root.as_uri(),
                    "capabilities": {},
                    "initializationOptions": {
                        "corpusRoot": str(root),
                        "watch": "off",
                        "logLevel": "warning",
                    },
                },
            )
            wire.notify("initialized", {})
            wire.wait_state(("ready",), t0, 900)
            ready_s = time.perf_counter() - t0
            script, hpos, comps, cpos = load_buffers(root, pkg)
            huri, curi = (
                (tmp / "hover_script.py").as_uri(),
                (tmp / "complete_script.py").as_uri(),
            )
            for uri, text in ((huri, script), (curi, comps)):
                wire.notify(
                    "textDocument/didOpen",
                    {
                        "textDocument": {
                            "uri": uri,
                            "languageId": "python",
                            "version": 1,
                            "text": text,
                        }
                    },
                )
            # warm: the model loads after the first answers
            wire.command("pycsamt.validate", {"code": "import pycsamt\n"})
            for line, col in hpos[:3]:
                wire.request(
                    "textDocument/hover",
                    {
                        "textDocument": {"uri": huri},
                        "position": {"line": line, "character": col},
                    },
                )
            time.sleep(1.0)
            probe = Probe(wire, huri, hpos, curi, cpos)
            probe.start()
            out: dict[str, Any] = {"ready_s": round(ready_s, 2), "windows": {}}
            a = time.perf_counter()
            time.sleep(idle_s)
            b = time.perf_counter()
            out["windows"]["idle"] = {
                "probes": probe.window(a, b),
                "background_s": {},
                "wall_s": round(b - a, 2),
            }
            for sc in scenarios:
                time.sleep(1.0)
                a = time.perf_counter()
                parts = _background(wire, sc, root, pkg, rnd)
                b = time.perf_counter()
                out["windows"][sc] = {
                    "probes": probe.window(a, b),
                    "background_s": parts,
                    "wall_s": round(b - a, 2),
                }
            probe.stop()
        finally:
            wire.close()
    return out


def _median_windows(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per window and kind, the median over rounds of each figure (max: the max)."""
    out: dict[str, Any] = {}
    names = list(rounds[0]["windows"])
    for w in names:
        out[w] = {}
        for kind in ("hover", "completion", "loop"):
            rows = [
                r["windows"][w]["probes"][kind] for r in rounds if w in r["windows"]
            ]
            out[w][kind] = {
                "n": int(sum(x["n"] for x in rows)),
                "p50_ms": round(float(np.median([x["p50_ms"] for x in rows])), 2),
                "p99_ms": round(float(np.median([x["p99_ms"] for x in rows])), 2),
                "max_ms": round(float(max(x["max_ms"] for x in rows)), 1),
                "empty": int(sum(x["empty"] for x in rows)),
                "over_budget": int(sum(x["over_budget"] for x in rows)),
            }
        out[w]["wall_s"] = float(
            np.median([r["windows"][w].get("wall_s", 0) for r in rounds])
        )
    return out


def load_table(summary: dict[str, Any]) -> str:
    head = f"{'window':<8} {'kind':<10} {'n':>5} {'p50 ms':>8} {'p99 ms':>9} {'max ms':>9} {'empty':>5} {'>budget':>7} {'wall s':>7}"
    out = [head]
    for w, kinds in summary.items():
        for kind in ("hover", "completion", "loop"):
            s = kinds[kind]
            out.append(
                f"{w:<8} {kind:<10} {s['n']:5d} {s['p50_ms']:8.2f} {s['p99_ms']:9.2f} {s['max_ms']:9.1f} {s['empty']:5d} {s['over_budget']:7d} {kinds['wall_s']:7.1f}"
            )
    return "\n".join(out)


def ratio_table(per: dict[str, Any], variants: list[str]) -> str:
    """Each variant's medians over the first one's: hover/completion/loop p99
    and max, and the background work's wall time (the throughput cost)."""
    base = per[variants[0]]["median"]
    out = [
        f"{'window':<8} {'variant':<14} {'hover p99':>9} {'hover max':>9} "
        f"{'comp p99':>9} {'loop p99':>9} {'loop max':>9} {'wall':>6}"
    ]
    for w in base:
        for v in variants[1:]:
            m = per[v]["median"].get(w)
            if m is None:
                continue

            def r(kind: str, key: str, m=m, w=w) -> float:
                b = base[w][kind][key]
                return m[kind][key] / b if b else float("nan")

            wall = (
                m["wall_s"] / base[w]["wall_s"] if base[w]["wall_s"] else float("nan")
            )
            out.append(
                f"{w:<8} {v:<14} {r('hover', 'p99_ms'):9.2f} {r('hover', 'max_ms'):9.2f} "
                f"{r('completion', 'p99_ms'):9.2f} {r('loop', 'p99_ms'):9.2f} "
                f"{r('loop', 'max_ms'):9.2f} {wall:6.2f}"
            )
    return "\n".join(out)


def main_load(args: argparse.Namespace) -> int:
    corpora = (
        {"checkout": CHECKOUT, "sdist": SDIST}
        if args.corpus == "both"
        else {args.corpus: {"checkout": CHECKOUT, "sdist": SDIST}[args.corpus]}
    )
    scenarios = args.scenarios.split(",") if args.scenarios else list(LOAD_SCENARIOS)
    result: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_before": os.getloadavg(),
        },
        "settings": {
            "rounds": args.rounds,
            "scenarios": scenarios,
            "variants": args.variants,
            "budget_s": EDITOR_BUDGET_S,
        },
        "corpora": {},
    }
    variants = args.variants.split(",")
    if args.out == DEFAULT_OUT:
        args.out = LOAD_OUT
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name, src in corpora.items():
        by_variant: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        for rnd in range(args.rounds):
            # alternate the order of the variants and of the scenarios
            vorder = variants if rnd % 2 == 0 else list(reversed(variants))
            order = scenarios if rnd % 2 == 0 else list(reversed(scenarios))
            for v in vorder:
                by_variant[v].append(load_round(src, order, rnd, v, args.idle))
                partial = args.out.with_suffix(".partial.json")
                partial.write_text(json.dumps(by_variant), encoding="utf-8")
                print(
                    f"{name} {v} round {rnd + 1}/{args.rounds} done, load "
                    f"{os.getloadavg()[0]:.1f}",
                    file=sys.stderr,
                )
        result["corpora"][name] = {}
        for v, rounds in by_variant.items():
            summary = _median_windows(rounds)
            result["corpora"][name][v] = {"rounds": rounds, "median": summary}
            print(
                f"\n{name}, {v}: medians over {args.rounds} rounds "
                "(max: the max; empty, >budget: sums)"
            )
            print(load_table(summary))
        if len(variants) > 1:
            print(f"\n{name}: ratios {variants[1:]} / {variants[0]} (medians)")
            print(ratio_table(result["corpora"][name], variants))
    result["machine"]["load_after"] = os.getloadavg()
    out = args.out
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(
        json.dumps(
            {
                c: {v: r["median"] for v, r in per.items()}
                for c, per in result["corpora"].items()
            }
        )
    )
    print(f"\nresults written to {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    ap.add_argument("--root", type=Path, help="corpus root (default: fetched pyCSAMT)")
    ap.add_argument("--no-lsp", action="store_true", help="skip the end-to-end client")
    ap.add_argument(
        "--load",
        action="store_true",
        help="hover/completion/loop latency while background commands run",
    )
    ap.add_argument("--corpus", choices=("checkout", "sdist", "both"), default="both")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle", type=float, default=5.0, help="idle window, seconds")
    ap.add_argument(
        "--scenarios", help=f"comma-separated, of {','.join(LOAD_SCENARIOS)}"
    )
    ap.add_argument(
        "--variants",
        default="head",
        help="servers to alternate: head, rev:REV, si:SECONDS (comma-separated)",
    )
    args = ap.parse_args(argv)
    if args.load:
        return main_load(args)
    reps = 2 if args.quick else 10
    profile = load_profile()
    root = (args.root or fetch_corpus(profile)).resolve()
    with tempfile.TemporaryDirectory(prefix="pycsamt-bench-editor-") as tmpd:
        tmp = Path(tmpd)
        # as the server makes it: the index frozen out of the cyclic GC
        ws = Workspace(root, profile, index_dir=tmp / "idx", long_lived=True)
        t0 = time.perf_counter()
        ws.open()
        ws.ensure_model()
        open_s = time.perf_counter() - t0
        script = make_script(ws, 60 if args.quick else 150)
        buffers = [
            (str(tmp / "script.py"), script),
            *corpus_buffers(ws, 3 if args.quick else 10),
        ]
        cases = completion_cases(ws, script)
        print(
            f"corpus: {root}; {len(script.splitlines())}-line script, {len(buffers) - 1} corpus modules",
            file=sys.stderr,
        )
        hover = bench_hover(ws, buffers, reps)
        completion = bench_completion(ws, cases, reps)
        assert card_for(ws, "pycsamt.emtools.ss.estimate_ss_ama") is not None
        lsp = None
        if not args.no_lsp:
            lsp_cases = [
                c for i, c in enumerate(cases) if i % (8 if args.quick else 3) == 0
            ]
            lsp = asyncio.run(
                _lsp(root, ws.index_dir, script, lsp_cases, tmp, max(1, reps // 2))
            )
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "corpus": str(root),
        "settings": {"quick": args.quick, "repetitions": reps},
        "open_s": open_s,
        "hover": hover,
        "completion": completion,
        "lsp": lsp,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(table(result))
    print(f"\nresults written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
