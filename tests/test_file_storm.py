"""A branch switch (500 files rewritten, 20 deleted, 20 added in about a
second) converges to exactly the final tree in one debounced refresh, with
and without watched-file events (issue 19). Hover and query keep answering
meanwhile; their latencies are measured by benchmarks/bench_storm.py, not
asserted here (timings never go in pass/fail tests)."""

from __future__ import annotations

import json
import time

import pytest

from lsp_helpers import write_fixture_corpus
from lsp_raw import RawClient
from storm import Prober, converged, storm, write_storm_corpus

USE = "from pkg.core.shift import correct_shift\ncorrect_shift(1)\n"


@pytest.mark.e2e
@pytest.mark.parametrize("watch", ["client", "server"])
def test_branch_switch_converges_in_one_refresh(tmp_path, watch):
    profile = write_fixture_corpus(tmp_path)
    write_storm_corpus(tmp_path)
    client = RawClient()
    try:
        client.initialize(tmp_path, profile, watch=watch, debounceMs=300)
        client.wait_ready(timeout=180)
        uri = (tmp_path / "use.py").as_uri()
        client.open(uri, USE)
        time.sleep(1.0)  # the server-side watcher is up
        n_logs = len(client.notifications("window/logMessage"))
        prober = Prober(client, uri)
        prober.start()
        res = storm(tmp_path)
        if watch == "client":
            changes = [{"uri": p.as_uri(), "type": 2} for p in res.changed]
            changes += [{"uri": p.as_uri(), "type": 3} for p in res.deleted]
            changes += [{"uri": p.as_uri(), "type": 1} for p in res.added]
            client.notify("workspace/didChangeWatchedFiles", {"changes": changes})
        end = time.monotonic() + 120
        while not converged(client, res):
            assert time.monotonic() < end, "the index did not converge"
            time.sleep(0.25)
        prober.stop()
        time.sleep(1.0)
        refreshes = [
            m
            for n in client.notifications("window/logMessage")[n_logs:]
            if "refresh of " in (m := n["params"]["message"])
        ]
        # one debounced refresh applied the whole storm
        assert len(refreshes) == 1, [
            n["params"]["message"] for n in client.notifications("window/logMessage")
        ][-30:]
        assert "500 changed, 20 added, 20 removed" in refreshes[0], refreshes
        # every probe during the storm got an answer
        assert prober.hover_ms and prober.query_ms
        got = client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 30}},
        )
        assert "def correct_shift(" in json.dumps(got)
    finally:
        client.close()
