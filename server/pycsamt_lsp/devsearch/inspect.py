"""``inspect_symbol`` and ``read_source``: one file, bounded, with evidence.

Naming a file is asking for it, so tests are readable here (labelled as
expected-behaviour examples); every line handed back is secret-masked.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.devsearch.checkout import evidence, read_checkout
from pycsamt_lsp.devsearch.files import (
    PY_SUFFIXES,
    load,
    reread,
    resolve_request,
    role,
    root_dir,
)
from pycsamt_lsp.devsearch.symbols import py_symbols
from pycsamt_lsp.errors import DevSearchError
from pycsamt_lsp.pyast.signatures import def_header
from pycsamt_lsp.text.secrets import mask_secrets

__all__ = ["READ_MAX_CHARS", "READ_MAX_LINES", "inspect_symbol", "read_source"]

READ_MAX_LINES = 80
READ_MAX_CHARS = 4000


def inspect_symbol(root: Path, path: str, symbol: str, *, profile: Profile) -> dict:
    """Signature, docstring and line span of *symbol* (``func`` or ``Cls.method``).

    Found with :mod:`ast` (never imported). An exact qualified name wins;
    otherwise a unique leaf name is accepted, and other candidates are listed.
    """
    if not isinstance(symbol, str) or not re.fullmatch(
        r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", symbol.strip()
    ):
        raise DevSearchError(
            "symbol must be a dotted Python name such as 'func' or 'Class.method'"
        )
    symbol = symbol.strip()
    rel, real = resolve_request(root, path, profile)
    if not rel.endswith(PY_SUFFIXES):
        raise DevSearchError(f"inspect_symbol reads Python files only, not {rel}")
    base = root_dir(root)
    data, text, read_at = load(real, rel, profile.max_file_bytes)
    syms = py_symbols(text)
    if syms is None:
        raise DevSearchError(f"{rel} does not parse as Python; use read_source instead")
    exact = [s for s in syms if s.name == symbol]
    leaf = symbol.split(".")[-1]
    matches = (
        exact
        or [s for s in syms if s.name.endswith("." + symbol)]
        or [s for s in syms if s.name.split(".")[-1] == leaf and "." not in symbol]
    )
    if not matches:
        names = ", ".join(s.name for s in syms[:20]) or "none"
        raise DevSearchError(
            f"symbol {symbol!r} not found in {rel} (defined there: {names}"
            f"{' ...' if len(syms) > 20 else ''})"
        )
    s = matches[0]
    node = s.node
    doc = (
        ast.get_docstring(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        else None
    )
    doc_text, doc_masked = (
        mask_secrets(doc[:READ_MAX_CHARS], python=True) if doc else (None, 0)
    )
    sig, sig_masked = mask_secrets(def_header(node), python=True)
    decorators = [
        mask_secrets("@" + ast.unparse(d))[0]
        for d in getattr(node, "decorator_list", [])
    ]
    checkout = read_checkout(base, profile)
    return {
        "path": rel,
        "symbol": s.name,
        "kind": s.kind,
        "signature": sig,
        "decorators": decorators,
        "docstring": doc_text,
        "docstring_truncated": bool(doc and len(doc) > READ_MAX_CHARS),
        "line_start": s.line,
        "line_end": s.end,
        "decorator_line_start": s.start,
        "other_matches": [
            {"symbol": m.name, "line_start": m.line} for m in matches[1:]
        ],
        "masked_lines": sig_masked + doc_masked,
        "role": role(rel, profile),
        "evidence": evidence(
            data, read_at, checkout, reread(real, profile.max_file_bytes)
        ),
    }


def read_source(
    root: Path,
    path: str,
    start: int = 1,
    lines: int = READ_MAX_LINES,
    *,
    profile: Profile,
) -> dict:
    """Up to 80 lines / 4,000 characters of a corpus file, secrets masked.

    Naming a test file is asking for it, so tests are readable here (and
    labelled as expected-behaviour examples), unlike in an unasked search.

    ``lines`` above 80 is clamped (and said so) rather than refused, since an
    editor asking for "the rest of the function" should get what is allowed.
    """
    for name, value in (("start", start), ("lines", lines)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise DevSearchError(f"{name} must be an integer")
    if start < 1:
        raise DevSearchError("start must be 1 or more (lines are numbered from 1)")
    if lines < 1:
        raise DevSearchError("lines must be 1 or more")
    rel, real = resolve_request(root, path, profile)
    base = root_dir(root)
    data, text, read_at = load(real, rel, profile.max_file_bytes)
    all_lines = [ln.rstrip("\r") for ln in text.split("\n")]
    if text.endswith("\n"):
        all_lines.pop()
    total = len(all_lines)
    if start > max(total, 1):
        raise DevSearchError(f"start {start} is past the end of {rel} ({total} lines)")
    notes = []
    want = lines
    if lines > READ_MAX_LINES:
        want = READ_MAX_LINES
        notes.append(f"clamped to {READ_MAX_LINES} lines (asked for {lines})")
    chunk = all_lines[start - 1 : start - 1 + want]
    masked_text, masked = mask_secrets(
        "\n".join(chunk), python=rel.endswith(PY_SUFFIXES)
    )
    kept: list[str] = []
    used = 0
    for ln in masked_text.split("\n") if chunk else []:
        cost = len(ln) + (1 if kept else 0)
        if used + cost > READ_MAX_CHARS:
            if not kept:  # a single huge line: cut inside it
                kept.append(ln[:READ_MAX_CHARS])
                notes.append(f"line {start} cut at {READ_MAX_CHARS:,} characters")
            else:
                notes.append(
                    f"cut at {READ_MAX_CHARS:,} characters after line "
                    f"{start + len(kept) - 1}"
                )
            break
        kept.append(ln)
        used += cost
    end = start + len(kept) - 1
    checkout = read_checkout(base, profile)
    return {
        "path": rel,
        "start": start,
        "end": end,
        "total_lines": total,
        "requested": {"start": start, "lines": lines},
        "text": "\n".join(kept),
        "truncated": bool(notes),
        "truncation": "; ".join(notes) or None,
        "more_after": end < total,
        "masked_lines": masked,
        "role": role(rel, profile),
        "evidence": evidence(
            data, read_at, checkout, reread(real, profile.max_file_bytes)
        ),
    }
