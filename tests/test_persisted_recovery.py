"""A persisted file of another shape is a logged rebuild of that part, never a
failed start (DESIGN 4, issue 19).

Each case corrupts one file of ``.pycsamt_rag/`` after a good build, then
starts the real server (stdio, :mod:`lsp_raw`): it must become ready, answer
hover and ``pycsamt.query``, run ``pycsamt.rebuild``, and the next start must
load what was rebuilt. The files it did not corrupt are kept (a foreign
package model does not rebuild the index).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_helpers import write_fixture_corpus
from lsp_raw import RawClient
from pycsamt_lsp.errors import IndexLoadError
from pycsamt_lsp.storage.validate import check_manifest, check_meta

USE = "from pkg.core.shift import correct_shift\ncorrect_shift(1)\n"


def _edit_json(name: str, change: Callable[[dict], object]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        doc = json.loads((d / name).read_text(encoding="utf-8"))
        out = change(doc)
        (d / name).write_text(json.dumps(doc if out is None else out), "utf-8")

    return apply


def _write(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(data)


CASES: dict[str, tuple[Callable[[Path], None], bool]] = {
    # case -> (corruption, does the index have to be rebuilt)
    "meta_is_a_list": (_write("meta.json", b"[1, 2, 3]"), True),
    "manifest_without_fingerprint": (
        _edit_json("manifest.json", lambda m: m.pop("source_fingerprint")),
        True,
    ),
    "manifest_n_chunks_a_string": (
        _edit_json("manifest.json", lambda m: m.update(n_chunks="10")),
        True,
    ),
    "meta_columns_short": (
        _edit_json("meta.json", lambda m: m["ids"].pop()),
        True,
    ),
    "meta_files_reshaped": (
        _edit_json("meta.json", lambda m: m.update(files={"x.py": {"a": 1}})),
        True,
    ),
    "index_npz_garbage": (_write("index.npz", b"PK\x03\x04 not a zip"), True),
    "chunks_truncated": (_write("chunks.jsonl", b'{"id": '), True),
    "package_model_foreign": (
        _write("package_model.json", json.dumps({"modules": [1, 2]}).encode()),
        False,
    ),
    "package_model_a_list": (_write("package_model.json", b'[{"model": 1}]'), False),
    "package_model_reshaped": (
        _edit_json("package_model.json", lambda m: m.update(model=[1, 2])),
        False,
    ),
    "embeddings_garbage": (_write("embeddings.npz", b"\x00" * 64), False),
    "paper_cache_a_list": (_write("papers_cache.json", b"[1]"), False),
}


def _start(root: Path, profile: Path) -> tuple[RawClient, dict]:
    client = RawClient()
    client.initialize(root, profile)
    client.wait_ready()
    state = client.notifications("pycsamt/indexState")[-1]["params"]
    return client, state


def _check_answers(client: RawClient, root: Path) -> None:
    uri = (root / "use.py").as_uri()
    client.open(uri, USE)
    hover = client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 30}},
    )
    assert "def correct_shift(" in hover["result"]["contents"]["value"], hover
    got = client.request(
        "workspace/executeCommand",
        {"command": "pycsamt.query", "arguments": [{"query": "static shift", "k": 3}]},
    )
    assert "error" not in got, got
    assert got["result"]["results"], got


@pytest.mark.e2e
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_reshaped_file_is_rebuilt_not_a_failed_start(tmp_path: Path, case: str):
    profile = write_fixture_corpus(tmp_path)
    client, _ = _start(tmp_path, profile)
    client.close()
    d = tmp_path / ".pycsamt_rag"
    corrupt, index_rebuilt = CASES[case]
    corrupt(d)

    client, state = _start(tmp_path, profile)
    try:
        # the index is rebuilt only when one of its own files was bad
        assert state["message"].startswith("build" if index_rebuilt else "load"), state
        _check_answers(client, tmp_path)
        got = client.request(
            "workspace/executeCommand",
            {"command": "pycsamt.rebuild", "arguments": [{}]},
        )
        assert "error" not in got, got
        assert got["result"]["n_chunks"] > 0
    finally:
        client.close()
    err = client.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-2000:]
    logged = " ".join(
        n["params"]["message"] for n in client.notifications("window/logMessage")
    )
    if index_rebuilt:
        assert "rebuilding the index:" in logged, logged[-2000:]

    client, state = _start(tmp_path, profile)
    try:
        assert state["message"].startswith("load"), state
        _check_answers(client, tmp_path)
    finally:
        client.close()


def _good_meta() -> dict:
    return {
        "build_id": "b",
        "ids": ["a", "b"],
        "paths": ["p.py", "p.py"],
        "kinds": ["function", "module"],
        "symbols": ["p.f", None],
        "workflows": [None, "x"],
        "files": {"p.py": ["sha", [0, 1]]},
        "skipped": {},
    }


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.pop("files"),
        lambda m: m["files"]["p.py"][1].append(5),
        lambda m: m["files"]["p.py"][1].append(True),
        lambda m: m.update(kinds=["a", 3]),
        lambda m: m.update(skipped=[]),
        lambda m: m.update(ids="ab"),
    ],
)
def test_check_meta_names_what_is_wrong(change):
    check_meta(_good_meta(), 2)
    meta = _good_meta()
    change(meta)
    with pytest.raises(IndexLoadError, match=r"meta\.json"):
        check_meta(meta, 2)


def test_check_manifest_refuses_a_bool_count_and_missing_fields():
    good = {
        "index_version": 1,
        "build_id": "b",
        "n_chunks": 2,
        "source_fingerprint": "f",
        "chunks_sha256": "s",
    }
    check_manifest(good)
    for bad in ({**good, "n_chunks": True}, {k: good[k] for k in list(good)[:-1]}, []):
        with pytest.raises(IndexLoadError, match=r"manifest\.json"):
            check_manifest(bad)
