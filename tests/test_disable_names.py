"""Unknown ranking-stage names in ``disable`` are an error naming the known
stages, never the full ranking without a word: in the engine
(``search``, ``Workspace.query`` / ``pool``, ``dense_query``), the
``pycsamt.query`` and ``pycsamt.eval`` commands (an error response, and the
server keeps answering) and the CLI (exit code 2, one line on stderr).
Known names still work, ``+name`` included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_helpers import write_fixture_corpus
from pycsamt_lsp.commands.catalog import run_command
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.errors import ArgumentError, QueryError
from pycsamt_lsp.search.dense.fusion import (
    FUSION_OFF_BY_DEFAULT,
    FUSION_STAGES,
    dense_query,
)
from pycsamt_lsp.search.retrieval import COMPONENTS, check_disable
from pycsamt_lsp.search.stages import OFF_BY_DEFAULT, STAGES
from pycsamt_lsp.workspace.facade import Workspace

Q = "correct the static shift"


def assert_names_known(message: str, *, fusion: bool = False) -> None:
    """The message lists every plain name and ``+name`` of the off ones."""
    for name in COMPONENTS:
        assert name in message, (name, message)
    for name in OFF_BY_DEFAULT:
        assert f"+{name}" in message, message
    if fusion:
        for name in FUSION_STAGES:
            assert name in message, (name, message)
        for name in FUSION_OFF_BY_DEFAULT:
            assert f"+{name}" in message, message


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "corpus"
    root.mkdir()
    profile = write_fixture_corpus(root)
    w = Workspace(
        root, load_profile(str(profile)), index_dir=tmp_path / "idx", workers=1
    )
    w.build()
    return w


def test_unknown_names_raise_in_the_engine(ws: Workspace):
    with pytest.raises(QueryError) as info:
        ws.query(Q, 5, disable=("feild_head",))
    msg = str(info.value)
    assert "'feild_head'" in msg and "did you mean 'field_head'" in msg
    assert_names_known(msg)
    with pytest.raises(QueryError, match="stages 'nope', '\\+nope';"):
        ws.pool(Q, 50, disable=("dedup", "nope", "+nope"))
    with pytest.raises(QueryError, match="not the string"):
        ws.query(Q, 5, disable="field_head")  # its letters would be the names
    with pytest.raises(QueryError):  # a fusion stage is no BM25 stage
        ws.query(Q, 5, disable=("bm25_first",))


def test_known_names_still_switch_stages(ws: Workspace):
    base = ws.query(Q, 5)["results"]
    assert base
    # every name, and +name (on; a no-op for a stage already on)
    for name in (*COMPONENTS, *(f"+{x}" for x in STAGES)):
        ws.query(Q, 5, disable=(name,))
    assert ws.query(Q, 5, disable=())["results"] == base
    seed = ws.query(Q, 5, disable=STAGES)["results"]
    assert [r["score"] for r in seed] != [r["score"] for r in base]
    check_disable(())  # nothing to check


def test_dense_query_names_fusion_stages(ws: Workspace):
    with pytest.raises(QueryError) as info:
        dense_query(ws, Q, 5, disable=("bm25_frist",))
    msg = str(info.value)
    assert "did you mean 'bm25_first'" in msg
    assert_names_known(msg, fusion=True)
    # known fusion and ranking names pass (no vectors: BM25, said so)
    res = dense_query(ws, Q, 5, disable=("bm25_first", "+prf", "field_head"))
    assert res["retrieval"] == "bm25" and res["results"]


def test_commands_refuse_unknown_names(ws: Workspace):
    with pytest.raises(ArgumentError) as info:
        run_command("pycsamt.query", ws, {"query": Q, "disable": ["feild_head"]})
    assert_names_known(str(info.value))
    with pytest.raises(ArgumentError) as info:  # fusion names with dense only
        run_command(
            "pycsamt.query", ws, {"query": Q, "dense": True, "disable": ["bm25_frist"]}
        )
    assert_names_known(str(info.value), fusion=True)
    with pytest.raises(ArgumentError):
        run_command("pycsamt.query", ws, {"query": Q, "disable": ["+prf"]})
    got = run_command(
        "pycsamt.query", ws, {"query": Q, "dense": True, "disable": ["+prf"]}
    )
    assert got["results"]
    got = run_command("pycsamt.query", ws, {"query": Q, "disable": ["code_first"]})
    assert got["results"] == ws.query(Q, 10, disable=("code_first",))["results"]
    with pytest.raises(ArgumentError) as info:
        run_command("pycsamt.eval", ws, {"disable": ["workflow_bost"]})
    assert "did you mean 'workflow_boost'" in str(info.value)


def run_cli(*argv: str, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pycsamt_lsp", *argv],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYCSAMT_LSP_CACHE=str(cache)),
        timeout=120,
        check=False,
    )


def test_cli_exits_2_naming_the_stages(ws: Workspace, tmp_path: Path):
    ws.persist()
    common = [
        "--root",
        str(ws.root),
        "--profile",
        str(ws.root / "fixture.toml"),
        "--index-dir",
        str(ws.index_dir),
    ]
    p = run_cli("query", Q, *common, "--disable", "feild_head", cache=tmp_path / "c")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stdout == ""
    [line] = p.stderr.strip().splitlines()
    assert line.startswith("pycsamt-lsp: error:") and "'feild_head'" in line
    assert_names_known(line)
    p = run_cli(
        "query",
        Q,
        *common,
        "--disable",
        "code_first",
        "--disable",
        "+dedup",
        "--json",
        cache=tmp_path / "c",
    )
    assert p.returncode == 0, p.stderr
    want = ws.query(Q, 10, disable=("code_first", "+dedup"))["results"]
    assert [r["id"] for r in json.loads(p.stdout)["results"]] == [r["id"] for r in want]
    p = run_cli("eval", *common, "--disable", "nope", cache=tmp_path / "c")
    assert p.returncode == 2 and "'nope'" in p.stderr, p.stderr
