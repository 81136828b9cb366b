"""Live, bounded developer source search with evidence (issue 6).

Why a second search next to the science index: implementation questions
("where is ``_dispatch_code`` implemented?") need the checkout as it is *now*,
line numbers that are right, and proof of what was read. The BM25 index ranks
chunks for conceptual questions and changes only on a rebuild; this module
reads the eligible roots on every call (no index, so a saved edit is found at
once) and attaches evidence to every hit: the file's SHA-256, when it was
read, the checkout revision, the package version, and flags when the two
disagree or the file changed while it was being read.

Safety is structural rather than best effort: nothing is imported or
executed (files are read as bytes, Python is parsed with :mod:`ast` only);
every path is resolved and confined to the eligible roots; hidden folders,
caches, generated assets and sensitive file names are never opened; and
credential assignments are masked in every line of text handed back.
Every bound (files, bytes, time) is reported when it is reached, and an empty
answer says what was searched instead of guessing.
"""

from __future__ import annotations

import bisect
import re
import time
from pathlib import Path

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.devsearch.checkout import evidence, read_checkout
from pycsamt_lsp.devsearch.files import (
    PY_SUFFIXES,
    TEST_ROLE,
    SearchLimits,
    eligible_roots,
    reread,
    role,
    root_dir,
)
from pycsamt_lsp.devsearch.inspect import inspect_symbol, read_source
from pycsamt_lsp.devsearch.query import Query, parse_query
from pycsamt_lsp.devsearch.rank import has_whole_term, rank_hits
from pycsamt_lsp.devsearch.scan import Hit, enumerate_files, scan
from pycsamt_lsp.devsearch.symbols import Sym, enclosing, py_symbols
from pycsamt_lsp.errors import DevSearchError
from pycsamt_lsp.text.secrets import mask_secrets

__all__ = [
    "MAX_RESULTS",
    "TEST_ROLE",
    "DevSearchError",
    "SearchLimits",
    "inspect_symbol",
    "mask_secrets",
    "read_checkout",
    "read_source",
    "search_source",
]

MAX_RESULTS = 6
MAX_QUERY_CHARS = 1000


def _region(
    h: Hit, q: Query, lines: list[str], syms: list[Sym] | None
) -> tuple[int, int, str]:
    """``(line_start, line_end, match)``: the definition, else the densest window."""
    # definitions before assignments, named identifiers before plain words;
    # otherwise the query's own order (the sort is stable)
    ranked = sorted(
        h.defs, key=lambda j: (h.defs[j][0] != "def", -q.targets[j].strength)
    )
    for j in ranked:
        tg, (kind, offset, _) = q.targets[j], h.defs[j]
        if syms is not None and kind == "def":
            cands = [s for s in syms if tg.leaf.fullmatch(s.name.split(".")[-1])]
            if tg.qualifier:  # Cls.method: the method of that class first
                qual = tg.qualifier.lower()
                cands.sort(key=lambda s: s.name.lower().split(".")[-2:-1] != [qual])
            if cands:
                return cands[0].line, cands[0].sig_end, "definition"
        line = h.text.lower().count("\n", 0, offset) + 1
        return line, line, "definition" if kind == "def" else "assignment"
    # line starts of the text and of its lowercased copy (lower() may change
    # the length of a few Unicode characters, never the number of lines)
    low = h.text.lower()
    starts = {
        flag: [0] + [m.end() for m in re.finditer("\n", t)]
        for flag, t in ((False, h.text), (True, low))
    }
    per_line: dict[int, set[int]] = {}
    for i in h.tf:
        for offset, on_low in q.terms[i].matches(h.text, low)[:2000]:
            line = bisect.bisect_right(starts[on_low], offset)
            per_line.setdefault(line, set()).add(i)
    if not per_line:
        return 1, 1, "path"
    hit_lines = sorted(per_line)
    best, best_w = (hit_lines[0], hit_lines[0]), -1.0
    for k, first in enumerate(hit_lines):
        inside = [ln for ln in hit_lines[k : k + 8] if ln < first + 8]
        terms = set().union(*(per_line[ln] for ln in inside))
        w = sum(q.terms[i].weight for i in terms)
        if w > best_w:
            best, best_w = (first, inside[-1]), w
    return best[0], best[1], "mention"


def _excerpt(
    lines: list[str], start: int, end: int, python: bool
) -> tuple[str, int, int]:
    """A few masked lines around the hit (long lines cut, CRLF normalised)."""
    lo = max(1, start - 2)
    hi = min(len(lines), max(start, end) + 3, lo + 11)
    shown = [ln.rstrip("\r") for ln in lines[lo - 1 : hi]]
    shown = [ln if len(ln) <= 300 else ln[:300] + " ..." for ln in shown]
    text, _ = mask_secrets("\n".join(shown), python=python)
    return text, lo, hi


def _validate_search_args(query: object, include_tests: object, limit: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise DevSearchError("query must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise DevSearchError(f"query is longer than {MAX_QUERY_CHARS:,} characters")
    if not isinstance(include_tests, bool):
        raise DevSearchError("include_tests must be true or false")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise DevSearchError(
            "limit must be a positive integer (at most 6 results are returned)"
        )
    return query.strip()


def search_source(
    root: Path,
    query: str,
    *,
    profile: Profile,
    include_tests: bool = False,
    limit: int = MAX_RESULTS,
    limits: SearchLimits | None = None,
) -> dict:
    """Search the current checkout for *query*; at most 6 results, with evidence.

    Files are read on every call, so the answer reflects the files on disk
    at the time of the request. Definitions of an identifier named in the
    query outrank its mentions. See the module docstring for the policy.
    """
    query = _validate_search_args(query, include_tests, limit)
    limits = limits or SearchLimits(max_file_bytes=profile.max_file_bytes)
    base = root_dir(root)
    started = time.perf_counter()
    q = parse_query(query, profile)
    roots = eligible_roots(profile)
    present = [r for r in roots if (base / r).is_dir()]
    counts = dict.fromkeys(
        (
            "files_considered",
            "files_scanned",
            "files_matched",
            "bytes_inspected",
            "files_skipped_too_large",
            "files_binary",
            "files_unreadable",
            "files_excluded",
            "dirs_excluded",
            "tests_excluded",
        ),
        0,
    )
    hits: list[dict] = []
    checkout = read_checkout(base, profile)
    cands = (
        enumerate_files(base, roots, profile, include_tests, limits, counts, hits)
        if q.terms or q.hints
        else []
    )
    counts["files_considered"] = len(cands)
    found = scan(cands, q, limits, counts, hits)
    counts["files_matched"] = len(found)
    rank_hits(found, q, max(counts["files_scanned"], 1))
    # a file that only shares a fragment of a name ("dispatch" of
    # _dispatch_code) is noise once any file matches a whole term
    strong = [h for h in found if h.defs or has_whole_term(h, q)]
    found = sorted(strong or found, key=lambda h: (-h.score, h.cand.rel))
    results = []
    for rank, h in enumerate(found[: min(limit, MAX_RESULTS)], 1):
        python = h.cand.rel.endswith(PY_SUFFIXES)
        lines = h.text.split("\n")
        syms = py_symbols(h.text) if python else None
        start, end, match = _region(h, q, lines, syms)
        text, lo, hi = _excerpt(lines, start, end, python)
        after = reread(h.cand.path, limits.max_file_bytes)
        results.append(
            {
                "rank": rank,
                "path": h.cand.rel,
                "line": start,
                "line_start": start,
                "line_end": max(start, end),
                "match": match,
                "symbol": enclosing(h.cand.rel, lines, syms, start),
                "matched_terms": sorted(q.terms[i].low for i in h.tf),
                "excerpt": text,
                "excerpt_line_start": lo,
                "excerpt_line_end": hi,
                "score": round(h.score, 3),
                "role": role(h.cand.rel, profile),
                "evidence": evidence(h.data, h.read_at, checkout, after),
            }
        )
    limitation = None
    searched = ", ".join(present) or (
        f"none of the eligible roots ({', '.join(roots)}) exists under {base}"
    )
    named = [t for t in q.targets if q.terms[t.term].kind == "identifier"]
    absent = [t.name for t in named if not any(t.term in h.tf for h in found)]
    if not q.terms and not q.hints:
        limitation = "the query has no searchable words; nothing was searched"
    elif not results:
        limitation = (
            f"no implementation found within the searched bounds "
            f"({counts['files_scanned']:,} files, {counts['bytes_inspected']:,} "
            f"bytes; {searched})"
        )
    elif absent and len(absent) == len(named):
        limitation = (
            f"{', '.join(absent)} does not occur in the searched files; the results "
            f"only share words with the query"
        )
    if hits:
        cut = "; ".join(h["message"] for h in hits)
        limitation = (
            limitation + "; " if limitation else "results may be incomplete: "
        ) + cut
    return {
        "query": query,
        "include_tests": include_tests,
        "limit": min(limit, MAX_RESULTS),
        "terms": {
            "identifiers": [t.name for t in named],
            "words": [t.low for t in q.terms if t.kind == "word"],
            "paths": q.hints,
        },
        "roots": present,
        "results": results,
        "truncated": bool(hits),
        "limits_hit": hits,
        "counts": counts,
        "limitation": limitation,
        "checkout": checkout,
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
    }
