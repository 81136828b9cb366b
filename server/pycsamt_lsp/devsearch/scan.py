"""Listing the eligible files and reading each once, within the bounds.

Both passes are deterministic (sorted, depth-first) and bounded by
:class:`~pycsamt_lsp.devsearch.files.SearchLimits`; every bound reached is
reported as a ``limits_hit`` entry rather than silently cutting results.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.devsearch import files
from pycsamt_lsp.devsearch.files import (
    SearchLimits,
    dir_refusal,
    file_refusal,
    now_iso,
    target_refusal,
)
from pycsamt_lsp.devsearch.query import Query

__all__ = ["Cand", "Hit", "enumerate_files", "hint_matches", "limit_hit", "scan"]


@dataclass
class Cand:
    """A file that passed the path policy, to be read and matched."""

    rel: str
    path: Path
    size: int


@dataclass
class Hit:
    """A candidate that matched: its bytes as read, per-term match counts and
    the definitions of query targets it holds (scored by ``rank.rank_hits``).
    """

    cand: Cand
    data: bytes
    text: str
    read_at: str
    tf: dict[int, int]  # term index -> matches
    defs: dict[int, tuple[str, int, bool]]  # target -> (kind, offset, in its class)
    score: float = 0.0


def limit_hit(name: str, bound: object, message: str) -> dict:
    """The record of a search limit reached (``limits_hit`` in the result), so
    a bounded search says what it did not look at.
    """
    return {"limit": name, "bound": bound, "message": message}


def enumerate_files(
    base: Path,
    roots: list[str],
    profile: Profile,
    include_tests: bool,
    limits: SearchLimits,
    counts: dict,
    hits: list[dict],
) -> list[Cand]:
    """Eligible files in a deterministic (sorted, depth-first) order, bounded."""
    t0 = limits.clock()
    out: list[Cand] = []
    real_roots = []
    for r in roots:
        top = base / r
        if top.is_dir() and (real := top.resolve()).is_relative_to(base):
            real_roots.append((r, real))
    allowed = [real for _, real in real_roots]
    seen: set[str] = set()
    for top_rel, top in real_roots:
        stack = [(top, top_rel)]
        while stack:
            d, drel = stack.pop()
            try:
                with os.scandir(d) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                counts["files_unreadable"] += 1
                continue
            subdirs = []
            for e in entries:
                if limits.clock() - t0 > limits.enumerate_seconds:
                    hits.append(
                        limit_hit(
                            "enumerate_seconds",
                            limits.enumerate_seconds,
                            f"listing files stopped after the {limits.enumerate_seconds:g} s "
                            f"enumeration budget; files not yet listed were not searched",
                        )
                    )
                    return out
                rel = f"{drel}/{e.name}"
                try:
                    if e.is_symlink():  # symlinked folders are never followed
                        try:
                            real = Path(e.path).resolve()
                        except RuntimeError:  # a symlink loop (issue 19)
                            counts["files_excluded"] += 1
                            continue
                        if real.is_dir() or target_refusal(real, allowed, profile):
                            counts["files_excluded"] += 1
                            continue
                    elif e.is_dir():
                        if dir_refusal(e.name):
                            counts["dirs_excluded"] += 1
                        else:
                            subdirs.append((Path(e.path), rel))
                        continue
                    elif e.is_file():
                        real = Path(e.path)
                    else:
                        continue
                    if file_refusal(e.name, profile):
                        counts["files_excluded"] += 1
                        continue
                    if profile.is_test_path(rel) and not include_tests:
                        counts["tests_excluded"] += 1
                        continue
                    if rel in seen:
                        continue
                    if len(out) >= limits.max_files:
                        hits.append(
                            limit_hit(
                                "max_files",
                                limits.max_files,
                                f"stopped at {limits.max_files:,} candidate files; later "
                                f"files (in sorted path order) were not searched",
                            )
                        )
                        return out
                    seen.add(rel)
                    out.append(Cand(rel, real, real.stat().st_size))
                except OSError:
                    counts["files_unreadable"] += 1
            stack.extend(reversed(subdirs))
    return out


def scan(
    cands: list[Cand], q: Query, limits: SearchLimits, counts: dict, hits: list[dict]
) -> list[Hit]:
    """Read each candidate once; keep per-term counts of the files that match."""
    t0 = limits.clock()
    found: list[Hit] = []
    too_large: list[str] = []
    for n, c in enumerate(cands):
        if limits.clock() - t0 > limits.scan_seconds:
            hits.append(
                limit_hit(
                    "scan_seconds",
                    limits.scan_seconds,
                    f"scanning stopped after the {limits.scan_seconds:g} s scan budget; "
                    f"{len(cands) - n:,} listed files were not read",
                )
            )
            break
        if c.size > limits.max_file_bytes:
            too_large.append(c.rel)
            continue
        if counts["bytes_inspected"] + c.size > limits.max_bytes:
            hits.append(
                limit_hit(
                    "max_bytes",
                    limits.max_bytes,
                    f"stopped after inspecting {counts['bytes_inspected']:,} bytes: the next "
                    f"file would exceed the {limits.max_bytes:,}-byte budget",
                )
            )
            break
        read_at = now_iso()
        try:
            data = files.read_bytes(c.path, limits.max_file_bytes)
        except OSError:
            counts["files_unreadable"] += 1
            continue
        if data is None:
            too_large.append(c.rel)
            continue
        counts["files_scanned"] += 1
        counts["bytes_inspected"] += len(data)
        if b"\x00" in data:
            counts["files_binary"] += 1
            continue
        text = data.decode("utf-8", errors="replace")
        low = text.lower()
        tf = {
            i: n
            for i, t in enumerate(q.terms)
            if t.probe in low and (n := len(t.matches(text, low)))
        }
        defs: dict[int, tuple[str, int, bool]] = {}
        for j, tg in enumerate(q.targets):
            if q.terms[tg.term].probe in low and (got := tg.find(low)):
                qual = tg.qualifier and re.escape(tg.qualifier.lower())
                in_class = not qual or bool(
                    re.search(rf"class[ \t]+{qual}(?![a-z0-9_])", low)
                )
                defs[j] = (got[0], got[1], in_class)
        path_match = any(hint_matches(h, c.rel) for h in q.hints)
        if tf or defs or path_match:
            found.append(Hit(c, data, text, read_at, tf, defs))
    if too_large:
        counts["files_skipped_too_large"] = len(too_large)
        hits.append(
            limit_hit(
                "max_file_bytes",
                limits.max_file_bytes,
                f"{len(too_large)} file(s) over {limits.max_file_bytes:,} bytes were skipped: "
                + ", ".join(too_large[:5])
                + (" ..." if len(too_large) > 5 else ""),
            )
        )
    return found


def hint_matches(hint: str, rel: str) -> bool:
    """A path typed in the query (``tools/validation_tools.py``, ``pkg.mod.func``)."""
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", rel.lower())
    return (
        stem == hint
        or hint.startswith(stem + "/")
        or stem.endswith("/" + hint)
        or ("/" in hint and hint in stem)
    )
