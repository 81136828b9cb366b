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
  serve``), which adds JSON-RPC, the event loop and the worker thread.

Usage::

    .venv/bin/python benchmarks/bench_editor.py [--quick] [--out FILE] [--root DIR] [--no-lsp]
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

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "bench_editor.json"


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    ap.add_argument("--root", type=Path, help="corpus root (default: fetched pyCSAMT)")
    ap.add_argument("--no-lsp", action="store_true", help="skip the end-to-end client")
    args = ap.parse_args(argv)
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
