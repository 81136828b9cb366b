"""The reproducibility checklist of an eval run.

What a reader needs to re-run a number: tool and index versions, the commit
of this project (read by :mod:`pycsamt_lsp.devsearch.git`, without running
git), Python and OS, the index counts and the hash of every suite file.
"""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pycsamt_lsp.devsearch.git import head_commit
from pycsamt_lsp.errors import SuiteError
from pycsamt_lsp.evals.suites import load_suite

__all__ = ["git_commit", "reproducibility"]


def git_commit(project_root: str | Path | None = None) -> str | None:
    """The commit checked out at *project_root* (or the folder holding this
    file), read from ``.git`` without running git; ``None`` when unknown."""
    start = Path(project_root) if project_root is not None else Path(__file__).parent
    return head_commit(start)


def _sha256_file(p: Path) -> str | None:
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest()
    except OSError:
        return None


def reproducibility(
    *,
    tool_version: str | None = None,
    project_root: str | Path | None = None,
    build_command: str | Sequence[str] | None = None,
    manifest: Mapping[str, Any] | None = None,
    counts_by_kind: Mapping[str, int] | None = None,
    counts_by_workflow: Mapping[str, int] | None = None,
    dense: bool | None = None,
    dense_model: str | None = None,
    suite_paths: Iterable[str | Path] = (),
    corpus_root: str | Path | None = None,
    profile: str | None = None,
    k: int | None = None,
) -> dict[str, Any]:
    """The reproducibility checklist of an eval run.

    Fills what it can itself (tool version, git commit of this project read
    from ``.git``, Python, OS, suite file hashes) and takes the rest from the
    caller. Manifest fields are read from *manifest* under their usual names
    (``version``/``index_version``, ``created``, ``n_chunks``,
    ``fingerprint``/``source_fingerprint``, ``embedded``, ``embed_model``,
    ``counts_by_kind``, ``counts_by_workflow``); explicit arguments win.
    """
    if tool_version is None:
        try:
            from pycsamt_lsp import __version__ as tool_version
        except ImportError:  # pragma: no cover - package always has it
            tool_version = None
    m = dict(manifest or {})

    def pick(*names: str) -> Any:
        for n in names:
            if m.get(n) is not None:
                return m[n]
        return None

    if isinstance(build_command, (list, tuple)):
        build_command = " ".join(map(str, build_command))
    embedded = pick("embedded")
    suites = []
    for p in map(Path, suite_paths):
        n = None
        try:
            n = len(load_suite(p))
        except SuiteError:
            n = None
        suites.append({"path": str(p), "sha256": _sha256_file(p), "n_records": n})
    return {
        "tool_version": tool_version,
        "git_commit": git_commit(project_root),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "platform": sys.platform,
        "build_command": build_command,
        "manifest": {
            "version": pick("version", "index_version"),
            "created": pick("created"),
            "n_chunks": pick("n_chunks"),
            "fingerprint": pick("fingerprint", "source_fingerprint"),
            "embedded": embedded,
        },
        "counts_by_kind": dict(counts_by_kind or pick("counts_by_kind") or {}),
        "counts_by_workflow": dict(
            counts_by_workflow or pick("counts_by_workflow") or {}
        ),
        "dense": {
            "enabled": bool(dense if dense is not None else embedded),
            "model": dense_model or pick("embed_model", "embedding_model"),
        },
        "corpus_root": str(corpus_root)
        if corpus_root is not None
        else pick("corpus_root"),
        "profile": profile or pick("profile"),
        "k": k,
        "suites": suites,
        "run_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
