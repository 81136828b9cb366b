"""The language server's resident memory across saves and a persist (issue 18).

What an editor session does to the server's memory after start-up, through
a real LSP client (pygls over stdio against ``pycsamt-lsp serve``), on a
copy of the corpus whose index was built and persisted beforehand (so the
figures are the saves', not a cold build's):

1. settled: an open script's diagnostics have run (the package model is
   loaded) and the server has idled a second;
2. the largest module opened in the editor (``didOpen``: its parse tree is
   kept for its first save);
3. ``--saves N`` saves, rotating over the largest module, the one nearest
   100 KB and the one nearest 11 KB (a function appended, reported through
   ``didChangeWatchedFiles``, waited for until ``pycsamt.query`` finds it),
   each followed by the diagnostics pass of the open script;
4. the persist the server schedules 2 s after the last save (waited for
   through ``pycsamt.stats``), then a second of idling.

``VmRSS``/``RssAnon`` (MB, from ``/proc``) after each step, per variant in
the same run: ``--env NAME=VALUE`` (e.g. ``MALLOC_ARENA_MAX=2``) and
``--pythonpath DIR`` (another checkout's ``server/`` folder: the code before
a change) give further variants; ``--repeat`` runs them alternately. Nothing
is asserted.

Usage::

    .venv/bin/python benchmarks/bench_save_memory.py [--root DIR] [--saves 6]
        [--variant NAME:ENV=V,...:PYTHONPATH] [--repeat 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import BaseLanguageClient

from pycsamt_lsp.corpus.discovery import fetch_corpus
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "bench_save_memory.json"
SIZES = (11 * 1024, 100 * 1024)


class Client:
    """A pygls client that records index states and diagnostics."""

    def __init__(self) -> None:
        self.lc = BaseLanguageClient("bench-save-memory", "0")
        self.diags: asyncio.Queue = asyncio.Queue()

        @self.lc.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diag(params):
            self.diags.put_nowait(params)

        for method in (
            "pycsamt/indexState",
            types.WINDOW_WORK_DONE_PROGRESS_CREATE,
            types.WINDOW_LOG_MESSAGE,
            types.CLIENT_REGISTER_CAPABILITY,
            types.WINDOW_SHOW_MESSAGE,
        ):
            self.lc.feature(method)(lambda _params: None)

    async def start(self, root: Path, index_dir: Path, env: dict[str, str]) -> None:
        await self.lc.start_io(
            sys.executable, "-m", "pycsamt_lsp", "serve", env={**os.environ, **env}
        )
        caps = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                    dynamic_registration=True
                )
            ),
        )
        await self.lc.initialize_async(
            types.InitializeParams(
                capabilities=caps,
                initialization_options={
                    "corpusRoot": str(root),
                    "indexDir": str(index_dir),
                    "debounceMs": 0,
                    "watch": "client",
                },
                root_uri=root.as_uri(),
            )
        )
        self.lc.initialized(types.InitializedParams())
        await self.command("pycsamt.query", {"query": "static shift correction"})

    async def command(self, name: str, arg: dict[str, Any]) -> Any:
        return await self.lc.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=[arg])
        )

    def open(self, path: Path, text: str) -> None:
        self.lc.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=path.as_uri(), language_id="python", version=1, text=text
                )
            )
        )

    def memory(self) -> dict[str, float]:
        out: dict[str, float] = {}
        with open(f"/proc/{self.lc._server.pid}/status", encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                    out[key] = int(rest.split()[0]) / 1024
        return out

    async def stop(self) -> None:
        await self.lc.shutdown_async(None)
        self.lc.exit(None)
        await self.lc.stop()


async def _drain(q: asyncio.Queue, wait: float) -> None:
    """Take diagnostics notifications until none came for *wait* seconds."""
    while True:
        try:
            await asyncio.wait_for(q.get(), wait)
        except TimeoutError:
            return


async def session(
    corpus: Path,
    index_dir: Path,
    picks: list[str],
    saves: int,
    env: dict[str, str],
    open_largest: bool = True,
) -> dict[str, Any]:
    """One server on a fresh copy of the corpus and index (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="bench-save-mem-") as tmpd:
        tmp = Path(tmpd)
        root = tmp / "corpus"
        shutil.copytree(corpus, root)
        idx = tmp / "idx"
        shutil.copytree(index_dir, idx)
        c = Client()
        await c.start(root, idx, env)
        steps: dict[str, Any] = {}
        script = tmp / "script.py"
        code = "import pycsamt\nfrom pycsamt.utils.funcutils import nope_fn\n"
        c.open(script, code)
        await asyncio.wait_for(c.diags.get(), 120)
        # the package model loaded for sure (it may load lazily after start)
        await c.command("pycsamt.validate", {"code": code})
        await _drain(c.diags, 1.0)
        steps["settled"] = c.memory()
        largest = root / picks[0]
        if open_largest:
            c.open(largest, largest.read_text(encoding="utf-8"))
        await _drain(c.diags, 1.0)
        steps["largest module opened"] = c.memory()
        lat = []
        for i in range(saves):
            target = root / picks[i % len(picks)]
            name = f"bench_memory_probe_{i}"
            with open(target, "a", encoding="utf-8") as fh:
                fh.write(f"\n\ndef {name}(data):\n    return data\n")
            t0 = time.perf_counter()
            c.lc.workspace_did_change_watched_files(
                types.DidChangeWatchedFilesParams(
                    changes=[
                        types.FileEvent(
                            uri=target.as_uri(), type=types.FileChangeType.Changed
                        )
                    ]
                )
            )
            while True:
                res = await c.command("pycsamt.query", {"query": name, "k": 5})
                if any((r["symbol"] or "").endswith(name) for r in res["results"]):
                    break
                if time.perf_counter() - t0 > 120:
                    raise TimeoutError(f"the saved {name} was never found")
                await asyncio.sleep(0.005)
            lat.append(time.perf_counter() - t0)
            await _drain(c.diags, 0.3)  # the open script's diagnostics pass
        steps["after saves"] = c.memory()
        t0 = time.perf_counter()
        while not (await c.command("pycsamt.stats", {}))["persisted"]:
            if time.perf_counter() - t0 > 120:
                break
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)
        steps["after persist"] = c.memory()
        await c.stop()
    base = steps["settled"]["VmRSS"]
    return {
        "steps": steps,
        "growth_after_saves_mb": steps["after saves"]["VmRSS"] - base,
        "growth_after_persist_mb": steps["after persist"]["VmRSS"] - base,
        "save_to_found_ms_median": statistics.median(lat) * 1e3,
    }


def _picks(ws: Workspace) -> list[str]:
    assert ws.snapshot is not None
    size = {
        r: (ws.root / r).stat().st_size for r in ws.snapshot.files if r.endswith(".py")
    }
    out = [max(size, key=lambda r: (size[r], r))]
    for want in reversed(SIZES):
        out.append(min(size, key=lambda r: (abs(size[r] - want), r)))
    return out


def _variant(spec: str) -> tuple[str, dict[str, str]]:
    """``NAME:ENV=V,ENV2=V2:PYTHONPATH`` (the last two parts optional)."""
    name, _, rest = spec.partition(":")
    envs, _, pypath = rest.partition(":")
    env = dict(kv.split("=", 1) for kv in envs.split(",") if kv)
    if pypath:
        env["PYTHONPATH"] = pypath
    return name, env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="corpus root (default: fetched pyCSAMT)")
    ap.add_argument("--saves", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME:ENV=V,...:PYTHONPATH (repeatable; none: this checkout as it is)",
    )
    ap.add_argument(
        "--no-open",
        action="store_true",
        help="the largest module is saved without being opened in the editor",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    profile = load_profile()
    src = (args.root or fetch_corpus(profile)).resolve()
    variants = [_variant(v) for v in args.variant] or [("default", {})]
    results: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
    with tempfile.TemporaryDirectory(prefix="bench-save-mem-src-") as tmpd:
        tmp = Path(tmpd)
        corpus = tmp / "corpus"
        shutil.copytree(
            src, corpus, ignore=shutil.ignore_patterns(".pycsamt_rag", "__pycache__")
        )
        ws = Workspace(corpus, profile, index_dir=tmp / "idx")
        ws.build()
        ws.persist()
        picks = _picks(ws)
        del ws
        for _ in range(args.repeat):
            for name, env in variants:
                got = asyncio.run(
                    session(
                        corpus, tmp / "idx", picks, args.saves, env, not args.no_open
                    )
                )
                results[name].append(got)
                print(
                    f"{name}: settled {got['steps']['settled']['VmRSS']:.1f} MB, "
                    f"+{got['growth_after_saves_mb']:.1f} after {args.saves} saves, "
                    f"+{got['growth_after_persist_mb']:.1f} after the persist "
                    f"(save -> found {got['save_to_found_ms_median']:.0f} ms)",
                    flush=True,
                )
    print(f"\nfiles saved in turn: {', '.join(picks)}")
    head = ("variant", "settled", "opened", "saves", "persist", "+saves", "+persist")
    print("  ".join(f"{h:>10s}" for h in head), "(VmRSS MB, medians)")
    for name, runs in results.items():

        def med(step: str, runs: list[dict[str, Any]] = runs) -> float:
            return statistics.median(r["steps"][step]["VmRSS"] for r in runs)

        vals = [
            med("settled"),
            med("largest module opened"),
            med("after saves"),
            med("after persist"),
            statistics.median(r["growth_after_saves_mb"] for r in runs),
            statistics.median(r["growth_after_persist_mb"] for r in runs),
        ]
        print(f"{name:>10s}  " + "  ".join(f"{v:10.1f}" for v in vals))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"saves": args.saves, "files": picks, "runs": results}, indent=2),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
