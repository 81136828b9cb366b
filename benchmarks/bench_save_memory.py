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
   each followed by the diagnostics pass of the open script; save -> found
   is split into: until the ``index updated`` state (debounce, queue,
   refresh, publish), the refresh's own wall and CPU time (the server's log
   line), the last query's round trip and the number of queries (polled
   every 5 ms, or once the state arrived with ``--wait-state``) and the CPU
   the server process used meanwhile (clock ticks: 10 ms steps); the server
   runs with the ``debounceMs`` users get (250) unless ``--debounce-ms``;
4. the persist the server schedules 2 s after the last save (waited for
   through ``pycsamt.stats``), then a second of idling.

``--cold`` starts each server without an index (it builds one in its child
process and loads it: the cold start of ``bench_server.py``'s edit figure);
``--files a.py,b.py`` saves those instead of the three picked by size
(``--files pycsamt/emtools/ss.py --no-open``: that figure's saves). Each
save's line ends with the server's ``VmRSS`` once it idled (``rss_mb``).

``VmRSS``/``RssAnon`` (MB, from ``/proc``) after each step, per variant in
the same run: ``--env NAME=VALUE`` (e.g. ``MALLOC_ARENA_MAX=2``) and
``--pythonpath DIR`` (another checkout's ``server/`` folder: the code before
a change) give further variants; ``--repeat`` runs them alternately. Nothing
is asserted.

Usage::

    .venv/bin/python benchmarks/bench_save_memory.py [--root DIR] [--saves 6]
        [--variant NAME:ENV=V,...:PYTHONPATH] [--repeat 2] [--cold]
        [--files REL,...] [--no-open] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
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
        #: (arrival time, message) of index states and log lines: the split
        #: of save -> found (when the snapshot was published, the refresh's
        #: own time as the server logs it)
        self.states: list[tuple[float, str]] = []
        self.logs: list[tuple[float, str]] = []

        @self.lc.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diag(params):
            self.diags.put_nowait(params)

        @self.lc.feature("pycsamt/indexState")
        def _state(params):
            msg = getattr(params, "message", None)
            if msg is None and isinstance(params, dict):
                msg = params.get("message")
            self.states.append((time.perf_counter(), str(msg)))

        @self.lc.feature(types.WINDOW_LOG_MESSAGE)
        def _log(params):
            self.logs.append((time.perf_counter(), str(params.message)))

        for method in (
            types.WINDOW_WORK_DONE_PROGRESS_CREATE,
            types.CLIENT_REGISTER_CAPABILITY,
            types.WINDOW_SHOW_MESSAGE,
        ):
            self.lc.feature(method)(lambda _params: None)

    async def start(
        self, root: Path, index_dir: Path, env: dict[str, str], debounce_ms: int | None
    ) -> None:
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
                    "watch": "client",
                    # None: the setting's default (250 ms), what users run
                    **({} if debounce_ms is None else {"debounceMs": debounce_ms}),
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

    def cpu_ms(self) -> float:
        """CPU time the server process has used (user + system, ms): what
        a save cost it, apart from waiting for a core on a busy machine."""
        with open(f"/proc/{self.lc._server.pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1e3 / os.sysconf("SC_CLK_TCK")

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


async def _idle(c: Client, quiet: float = 0.3, limit: float = 30.0) -> None:
    """Wait until the server used no CPU for *quiet* seconds (at most
    *limit*), so one save's after-work does not run into the next save."""
    end = time.perf_counter() + limit
    last = c.cpu_ms()
    while time.perf_counter() < end:
        await asyncio.sleep(quiet)
        now = c.cpu_ms()
        if now == last:
            return
        last = now


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
    debounce_ms: int | None = None,
    wait_state: bool = False,
    cold: bool = False,
) -> dict[str, Any]:
    """One server on a fresh copy of the corpus and index (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="bench-save-mem-") as tmpd:
        tmp = Path(tmpd)
        root = tmp / "corpus"
        shutil.copytree(corpus, root)
        idx = tmp / "idx"
        if cold:  # the server builds it (in its child process), then loads it
            idx.mkdir()
        else:
            shutil.copytree(index_dir, idx)
        c = Client()
        await c.start(root, idx, env, debounce_ms)
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
        split: list[dict[str, float | None]] = []
        for i in range(saves):
            target = root / picks[i % len(picks)]
            name = f"bench_memory_probe_{i}"
            with open(target, "a", encoding="utf-8") as fh:
                fh.write(f"\n\ndef {name}(data):\n    return data\n")
            cpu0 = c.cpu_ms()
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
            polls = 0
            while wait_state:  # a user's way: the status bar says so, then ask
                if any(t > t0 and m == "index updated" for t, m in c.states):
                    break
                if time.perf_counter() - t0 > 120:
                    raise TimeoutError("no 'index updated' state after the save")
                await asyncio.sleep(0.002)
            while True:
                tq = time.perf_counter()
                res = await c.command("pycsamt.query", {"query": name, "k": 5})
                polls += 1
                if any((r["symbol"] or "").endswith(name) for r in res["results"]):
                    break
                if time.perf_counter() - t0 > 120:
                    raise TimeoutError(f"the saved {name} was never found")
                await asyncio.sleep(0.005)
            t_found = time.perf_counter()
            lat.append(t_found - t0)
            split.append(_split(c, t0, t_found, tq, polls))
            split[-1]["server_cpu_ms"] = c.cpu_ms() - cpu0
            await _drain(c.diags, 0.3)  # the open script's diagnostics pass
            await _idle(c)  # and whatever else the save set off (card warm-up)
            split[-1]["rss_mb"] = c.memory()["VmRSS"]
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
    keys = [k for k in split[0] if k != "file"] if split else []
    return {
        "saves": split,
        "split_ms_median": {
            k: statistics.median(v)
            if (v := [s[k] for s in split if s[k] is not None])
            else None
            for k in keys
        },
        "steps": steps,
        "growth_after_saves_mb": steps["after saves"]["VmRSS"] - base,
        "growth_after_persist_mb": steps["after persist"]["VmRSS"] - base,
        "save_to_found_ms_median": statistics.median(lat) * 1e3,
    }


_REFRESH_MS = re.compile(r"refresh of \d+ paths: .*\(([\d.]+) ms(?:, CPU ([\d.]+) ms)?")


def _split(
    c: Client, t0: float, t_found: float, t_last: float, polls: int
) -> dict[str, float | None]:
    """Where one save -> found went (ms from the save's event): until the
    ``index updated`` state arrived (debounce, queue, refresh, publish),
    the refresh's own time (the server's log line), the last query's round
    trip, and how many queries were sent."""
    state = next((t for t, m in c.states if t > t0 and m == "index updated"), None)
    refresh = cpu = None
    for t, m in c.logs:
        got = _REFRESH_MS.search(m) if t > t0 else None
        if got:
            refresh = float(got.group(1))
            cpu = float(got.group(2)) if got.group(2) else None
            break
    return {
        "found_ms": (t_found - t0) * 1e3,
        "state_ms": None if state is None else (state - t0) * 1e3,
        "refresh_ms": refresh,
        "refresh_cpu_ms": cpu,
        "last_query_ms": (t_found - t_last) * 1e3,
        "queries": float(polls),
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
    ap.add_argument(
        "--debounce-ms",
        type=int,
        default=None,
        help="the server's debounceMs (default: the setting's default, 250)",
    )
    ap.add_argument(
        "--wait-state",
        action="store_true",
        help="query once the 'index updated' state arrived (no polling before)",
    )
    ap.add_argument(
        "--cold",
        action="store_true",
        help="start each server without an index (it builds one): the cold start",
    )
    ap.add_argument(
        "--files",
        default="",
        help="comma-separated corpus paths saved in turn (default: the largest "
        "module, the ones nearest 100 KB and 11 KB; the first is opened)",
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
        picks = [f for f in args.files.split(",") if f] or _picks(ws)
        del ws
        for _ in range(args.repeat):
            for name, env in variants:
                got = asyncio.run(
                    session(
                        corpus,
                        tmp / "idx",
                        picks,
                        args.saves,
                        env,
                        not args.no_open,
                        args.debounce_ms,
                        args.wait_state,
                        args.cold,
                    )
                )
                results[name].append(got)
                sp = got["split_ms_median"]
                print(
                    f"{name}: settled {got['steps']['settled']['VmRSS']:.1f} MB, "
                    f"+{got['growth_after_saves_mb']:.1f} after {args.saves} saves, "
                    f"+{got['growth_after_persist_mb']:.1f} after the persist "
                    f"(save -> found {got['save_to_found_ms_median']:.0f} ms; "
                    + ", ".join(f"{k} {v:.1f}" for k, v in sp.items() if v is not None)
                    + ")",
                    flush=True,
                )
                for s in got["saves"]:
                    print(
                        "   ",
                        ", ".join(
                            f"{k} {v:.1f}" for k, v in s.items() if v is not None
                        ),
                    )
    print(f"\nfiles saved in turn: {', '.join(picks)}")
    print("save -> found, ms (medians over runs of per-run medians):")
    for name, runs in results.items():
        keys = runs[0]["split_ms_median"]
        print(
            f"{name:>10s}  "
            + ", ".join(
                f"{k} {statistics.median(v):.1f}"
                for k in keys
                if (
                    v := [
                        r["split_ms_median"][k]
                        for r in runs
                        if r["split_ms_median"][k] is not None
                    ]
                )
            )
        )
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
