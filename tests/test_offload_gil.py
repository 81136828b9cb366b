"""The server process runs with a short GIL switch interval (lsp/offload.py,
"The GIL convoy"); a process that only imports the engine keeps CPython's.

``serve()`` runs in a child process with its stdio loop replaced by a probe,
so the setting is checked where it is made, without touching the test
process's own interpreter state.
"""

from __future__ import annotations

import json
import subprocess
import sys

from pycsamt_lsp.lsp.offload import SWITCH_INTERVAL_S

PROBE = """
import json, sys
from pycsamt_lsp.lsp import server

before = sys.getswitchinterval()

def probe(self, *args, **kwargs):
    print(json.dumps({"before": before, "serving": sys.getswitchinterval()}))

server.PycsamtServer.start_io = probe
raise SystemExit(server.serve())
"""


def test_serve_sets_the_switch_interval_before_serving():
    got = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(got.stdout.strip().splitlines()[-1])
    assert seen["before"] == 0.005  # CPython's default: importing changes nothing
    assert seen["serving"] == SWITCH_INTERVAL_S == 0.001
