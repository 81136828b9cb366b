"""Server-level figures on the real corpus, through a real LSP client over stdio.

- time from ``initialize`` to the first query answered, cold (no persisted
  index) and warm (persisted index loaded);
- time from a file write (plus its ``didChangeWatchedFiles``) to the query
  that finds the new function;
- diagnostics latency for a 1,000-line buffer with 30 package imports:
  in-process (``Workspace.problems``) and through the server (``didChange``
  to ``publishDiagnostics`` with the debounce set to 0).

Prints a table and writes JSON (``benchmarks/results/bench_server.json``).
Every figure is measured in this run; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from pycsamt_lsp.corpus.discovery import fetch_corpus
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace

IMPORTS = [
    "from pycsamt.agents import StaticShiftAgent",
    "from pycsamt.emtools.ss import estimate_ss_ama",
    "from pycsamt import static_shift",
    "import pycsamt.emtools as et",
    "from pycsamt.emtools import build_qc_table",
    "from pycsamt.site import Sites",
]


def make_buffer(n_lines: int = 1000, n_imports: int = 30) -> str:
    """A 1,000-line script with 30 package imports, some of them invented."""
    head = [
        IMPORTS[i % len(IMPORTS)].replace("static_shift", f"static_shift_{i}")
        for i in range(n_imports)
    ]
    body = [
        f"value_{i} = {i} * 2  # filler line {i}" for i in range(n_lines - n_imports)
    ]
    return "\n".join(head + body) + "\n"


class Client:
    """A pygls client that records notifications the benchmark waits for."""

    def __init__(self) -> None:
        self.lc = LanguageClient("bench", "0")
        self.states: asyncio.Queue = asyncio.Queue()
        self.diags: asyncio.Queue = asyncio.Queue()

        @self.lc.feature("pycsamt/indexState")
        def _state(params):
            self.states.put_nowait(params)

        @self.lc.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diag(params):
            self.diags.put_nowait((time.perf_counter(), params))

        @self.lc.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def _create(params):
            return None

        @self.lc.feature(types.WINDOW_LOG_MESSAGE)
        def _log(params):
            return None

        @self.lc.feature(types.CLIENT_REGISTER_CAPABILITY)
        def _register(params):
            return None

    async def start(self, root: Path, index_dir: Path) -> float:
        """Initialize; returns seconds until the first query is answered."""
        t0 = time.perf_counter()
        await self.lc.start_io(sys.executable, "-m", "pycsamt_lsp", "serve")
        caps = types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
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
        await self.query("static shift correction")
        return time.perf_counter() - t0

    async def query(self, text: str) -> dict:
        return await self.lc.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="pycsamt.query", arguments=[{"query": text, "k": 5}]
            )
        )

    async def settled_rss_mb(self, folder: Path) -> tuple[float, float]:
        """Server RSS and peak RSS (MB) once a diagnostics pass has run (the
        package model is loaded) and the background work has settled."""
        uri = (folder / "rss_probe.py").as_uri()
        self.lc.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri,
                    language_id="python",
                    version=1,
                    text="from pycsamt import static_shift\n",
                )
            )
        )
        await self.diags.get()
        await asyncio.sleep(1.0)
        fields = {}
        with open(f"/proc/{self.lc._server.pid}/status", encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                fields[key] = rest.split()[0] if rest.split() else ""
        return int(fields["VmRSS"]) / 1024, int(fields["VmHWM"]) / 1024

    async def stop(self) -> None:
        await self.lc.shutdown_async(None)
        self.lc.exit(None)
        await self.lc.stop()


async def server_figures(root: Path, reps: int) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        idx = Path(tmp) / "idx"
        c = Client()
        out["init_to_first_query_cold_s"] = await c.start(root, idx)
        rss, peak = await c.settled_rss_mb(Path(tmp))
        out["server_rss_cold_mb"], out["server_peak_rss_cold_mb"] = rss, peak
        await c.stop()
        warm = []
        for i in range(reps):
            c = Client()
            warm.append(await c.start(root, idx))
            if i == 0:
                rss, peak = await c.settled_rss_mb(Path(tmp))
                out["server_rss_warm_mb"], out["server_peak_rss_warm_mb"] = rss, peak
            await c.stop()
        out["init_to_first_query_warm_s"] = statistics.median(warm)

        # a write in a copy of the corpus, seen through didChangeWatchedFiles
        copy = Path(tmp) / "corpus"
        shutil.copytree(root / "pycsamt", copy / "pycsamt")
        c = Client()
        await c.start(copy, Path(tmp) / "idx2")
        target = copy / "pycsamt" / "emtools" / "ss.py"
        lat = []
        for i in range(reps):
            name = f"benchmark_marker_function_{i}"
            t0 = time.perf_counter()
            target.write_text(
                target.read_text() + f"\n\ndef {name}():\n    return {i}\n"
            )
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
                res = await c.query(name)
                if any(
                    r["symbol"] and r["symbol"].endswith(name) for r in res["results"]
                ):
                    break
                try:
                    await asyncio.wait_for(c.states.get(), 0.2)
                except TimeoutError:
                    pass
            lat.append(time.perf_counter() - t0)
        out["write_to_updated_query_ms_median"] = 1000 * statistics.median(lat)

        # diagnostics through the server
        buf = make_buffer()
        uri = (Path(tmp) / "script.py").as_uri()
        c.lc.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=buf
                )
            )
        )
        await c.diags.get()
        d_lat = []
        for v in range(2, 2 + reps * 3):
            t0 = time.perf_counter()
            c.lc.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=uri, version=v
                    ),
                    content_changes=[
                        types.TextDocumentContentChangeWholeDocument(
                            text=buf + f"# edit {v}\n"
                        )
                    ],
                )
            )
            while True:
                t1, params = await c.diags.get()
                if params.version == v:
                    break
            d_lat.append(t1 - t0)
        out["diagnostics_lsp_ms_p50"] = 1000 * statistics.median(d_lat)
        out["diagnostics_lsp_ms_p95"] = (
            1000 * sorted(d_lat)[int(0.95 * (len(d_lat) - 1))]
        )
        out["diagnostics_count"] = len(params.diagnostics)
        await c.stop()
    return out


def engine_diagnostics(root: Path, reps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        # as the server makes it: the index frozen out of the cyclic GC
        ws = Workspace(root, load_profile(), index_dir=Path(tmp), long_lived=True)
        ws.open()
        ws.ensure_model()
        buf = make_buffer()
        ws.problems(buf)
        times = []
        for i in range(reps * 5):
            t0 = time.perf_counter()
            ws.problems(buf + f"# {i}\n")
            times.append(time.perf_counter() - t0)
        times.sort()
        return {
            "diagnostics_engine_ms_p50": 1000 * statistics.median(times),
            "diagnostics_engine_ms_p95": 1000 * times[int(0.95 * (len(times) - 1))],
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--out", default=str(Path(__file__).with_name("results") / "bench_server.json")
    )
    args = ap.parse_args()
    reps = 3 if args.quick else 7
    root = fetch_corpus(load_profile())
    figures = {
        **engine_diagnostics(root, reps),
        **asyncio.run(server_figures(root, reps)),
    }
    rows = [
        (
            "initialize -> first query, cold (s)",
            figures["init_to_first_query_cold_s"],
            "",
        ),
        (
            "initialize -> first query, warm (s)",
            figures["init_to_first_query_warm_s"],
            "median",
        ),
        (
            "server RSS / peak after cold start (MB)",
            f"{figures['server_rss_cold_mb']:.1f} / {figures['server_peak_rss_cold_mb']:.1f}",
            "index + package model, settled; aim < 100 MB",
        ),
        (
            "server RSS / peak after warm start (MB)",
            f"{figures['server_rss_warm_mb']:.1f} / {figures['server_peak_rss_warm_mb']:.1f}",
            "",
        ),
        (
            "file write -> updated query (ms)",
            figures["write_to_updated_query_ms_median"],
            "pycsamt/emtools/ss.py, median",
        ),
        (
            "diagnostics in-process p50 / p95 (ms)",
            f"{figures['diagnostics_engine_ms_p50']:.1f} / {figures['diagnostics_engine_ms_p95']:.1f}",
            "1,000 lines, 30 imports; aim < 20 ms",
        ),
        (
            "diagnostics via LSP p50 / p95 (ms)",
            f"{figures['diagnostics_lsp_ms_p50']:.1f} / {figures['diagnostics_lsp_ms_p95']:.1f}",
            "didChange -> publish, debounce 0",
        ),
    ]
    print(f"{'metric':<42}{'value':>16}  note")
    for name, value, note in rows:
        v = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{name:<42}{v:>16}  {note}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(figures, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
