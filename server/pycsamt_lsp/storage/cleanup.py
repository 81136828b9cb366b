"""Removing what an interrupted write left in an index folder (issue 19).

:func:`~pycsamt_lsp.storage.atomic.atomic_write` writes ``.NAME.XXXXXX``
next to ``NAME`` and renames it; a build process killed mid-write (the
server cancelling its child, an OOM kill) leaves that temp file behind, and
they piled up (``.chunks.jsonl.*`` of tens of MB each). A workspace removes
them when it opens its index folder. Only temps of the index's own files
that nobody wrote to for :data:`STALE_SECONDS` are removed, so a second
server building the same folder right now keeps its file.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path

__all__ = ["STALE_SECONDS", "remove_stale_temps"]

log = logging.getLogger(__name__)

#: a temp file untouched this long belongs to no live writer
STALE_SECONDS = 60.0

_OWN = (
    "chunks.jsonl",
    "meta.json",
    "index.npz",
    "manifest.json",
    "package_model.json",
    "embeddings.npz",
    "papers_cache.json",
    "fresh.json",  # workspace/freshness.py, written with atomic_write_bytes
    "names.npz",  # workspace/warm.py, written with atomic_write
    "ranks.npz",  # workspace/warm.py, written with atomic_write
)
_TEMP = re.compile(r"^\.(?:" + "|".join(map(re.escape, _OWN)) + r")\.[A-Za-z0-9_]+$")


def remove_stale_temps(index_dir: Path, *, older_than: float = STALE_SECONDS) -> int:
    """Remove stale ``.NAME.XXXXXX`` temps from *index_dir*; return how many."""
    try:
        entries = list(os.scandir(index_dir))
    except OSError:
        return 0
    now, removed = time.time(), 0
    for entry in entries:
        if not _TEMP.match(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if now - st.st_mtime < older_than:
                continue
            os.unlink(entry.path)
            removed += 1
        except OSError as exc:
            log.info("could not remove stale temp file %s: %s", entry.name, exc)
    if removed:
        log.info("removed %d stale temp files from %s", removed, index_dir)
    return removed
