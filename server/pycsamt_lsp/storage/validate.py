"""Shape checks of the persisted index files, run on load (DESIGN 4, issue 19).

Why a module of its own: a persisted file is input like any other. A
``meta.json`` of another shape used to end indexing with "'list' object has
no attribute 'get'" and a manifest without ``source_fingerprint`` with a bare
``KeyError`` on every start, because the loaders indexed into whatever JSON
they found. Each check here raises :class:`IndexLoadError` with a reason a
user can read; the loader's caller turns that into a logged rebuild of that
part (the index, the package model, the vectors) and keeps the others.

The checks are about types and lengths, not values: a file that passes can
be indexed into without a ``KeyError``, ``TypeError`` or ``AttributeError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pycsamt_lsp.errors import IndexLoadError

__all__ = ["check_manifest", "check_meta", "require"]

#: manifest field -> accepted types (what :func:`load_snapshot` reads).
MANIFEST_FIELDS: Mapping[str, tuple[type, ...]] = MappingProxyType(
    {
        "index_version": (int,),
        "build_id": (str,),
        "n_chunks": (int,),
        "source_fingerprint": (str,),
        "chunks_sha256": (str,),
    }
)

#: meta.json list columns, one entry per chunk, and their item types.
META_COLUMNS: Mapping[str, tuple[type, ...]] = MappingProxyType(
    {
        "ids": (str,),
        "paths": (str,),
        "kinds": (str,),
        "symbols": (str, type(None)),
        "workflows": (str, type(None)),
    }
)


def require(doc: Any, name: str, fields: Mapping[str, tuple[type, ...]]) -> None:
    """*doc* is a JSON object holding every field of *fields* with its type."""
    if not isinstance(doc, dict):
        raise IndexLoadError(f"{name} is a {type(doc).__name__}, not an object")
    for key, types in fields.items():
        if key not in doc:
            raise IndexLoadError(f"{name} has no {key!r} field")
        value = doc[key]
        # bool is an int in Python; a JSON true is not a count
        if (isinstance(value, bool) and bool not in types) or not isinstance(
            value, types
        ):
            raise IndexLoadError(
                f"{name} field {key!r} is a {type(value).__name__}, "
                f"not {' or '.join(t.__name__ for t in types)}"
            )


def check_manifest(manifest: Any) -> None:
    """Raise :class:`IndexLoadError` unless *manifest* has the fields a load reads."""
    require(manifest, "manifest.json", MANIFEST_FIELDS)


def check_meta(meta: Any, n_chunks: int) -> None:
    """Raise :class:`IndexLoadError` unless *meta* has *n_chunks*-long columns
    of the right types and a file map ``rel -> [sha, [slot, ...]]``."""
    require(meta, "meta.json", {"build_id": (str,), "files": (dict,)})
    for key, types in META_COLUMNS.items():
        col = meta.get(key)
        if not isinstance(col, list):
            raise IndexLoadError(f"meta.json column {key!r} is missing or not a list")
        if len(col) != n_chunks:
            raise IndexLoadError(
                f"meta.json column {key!r} has {len(col)} entries, not the number of chunks ({n_chunks})"
            )
        # the distinct types, collected in C (a warm start checks ~40,000
        # values; the per-value isinstance loop was ~10 ms of it, issue 18)
        if not all(issubclass(t, types) for t in set(map(type, col))):
            raise IndexLoadError(
                f"meta.json column {key!r} holds values of another type"
            )
    if not _files_ok(meta["files"], n_chunks):
        _check_files(meta["files"], n_chunks)
    skipped = meta.get("skipped", {})
    if not isinstance(skipped, dict):
        raise IndexLoadError("meta.json 'skipped' is not an object")


def _files_ok(files: dict[str, Any], n_chunks: int) -> bool:
    """The file map's shape, checked in bulk (:func:`_check_files` names
    the first bad entry when this says no)."""
    entries = list(files.values())
    if set(map(type, entries)) - {list} or set(map(len, entries)) - {2}:
        return False
    shas, slot_lists = zip(*entries, strict=True) if entries else ((), ())
    if set(map(type, shas)) - {str} or set(map(type, slot_lists)) - {list}:
        return False
    slots = [s for sl in slot_lists for s in sl]
    if set(map(type, slots)) - {int}:  # bool is not int here: type, not isinstance
        return False
    return not slots or (min(slots) >= 0 and max(slots) < n_chunks)


def _check_files(files: dict[str, Any], n_chunks: int) -> None:
    for rel, entry in files.items():
        ok = (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and isinstance(entry[1], list)
            and all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s < n_chunks
                for s in entry[1]
            )
        )
        if not ok:
            raise IndexLoadError(f"meta.json file entry {rel!r} is malformed")
