"""``package_model.json`` does not depend on the interpreter's hash seed.

A module ``__getattr__`` over a literal set admitted its names in frozenset
(hash) order, so two builds of the same tree wrote the lazy bindings of
pyCSAMT's ``__init__`` in different orders (issue 18: the build's output is
compared byte for byte).
"""

from __future__ import annotations

import os
import subprocess
import sys

SRC = """
import importlib
_SUBPACKAGES = frozenset({"alpha", "beta", "gamma", "delta", "epsilon", "zeta"})
_GONE = {"old_a", "old_b", "old_c", "old_d"}

def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module("." + name, __name__)
    if name in _GONE:
        raise AttributeError(f"{name} was removed")
    raise AttributeError(name)
"""

PROBE = (
    "import json, sys\n"
    "from pycsamt_lsp.model.extract import ModuleInfo\n"
    "info = ModuleInfo.from_source(sys.stdin.read(), name='pkg', rel='pkg/__init__.py',"
    " is_package=True)\n"
    "print(json.dumps(info.to_dict()))\n"
)


def _extract(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        input=SRC,
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    return out.stdout


def test_module_facts_are_the_same_under_every_hash_seed():
    outputs = {_extract(seed) for seed in ("0", "1", "2", "3", "4")}
    assert len(outputs) == 1
    (doc,) = outputs
    assert '"alpha": [' in doc and '"old_a": ' in doc  # the names were admitted
