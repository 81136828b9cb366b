"""Dense vectors follow the index: re-embed the chunks an edit changed.

With the ``dense`` setting on and ``embeddings.npz`` made by a local model
(``build --embed minilm`` or ``hash``), every refresh that changed files
(and the start, for edits made while the server was down) is followed by
:meth:`~pycsamt_lsp.search.dense.service.DenseService.reembed`: only chunks
whose embedded text changed go to the model, in the command lane (never on
the event loop), with work-done progress titled "Embedding changed chunks".
Until it is done queries are answered from BM25 and the vectors that are
still valid (a chunk of an edited file has a stale vector, which dense
ranking skips). A burst of saves makes one job that goes round again, never
a pile of them; vectors of a networked model are never refreshed here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.lsp.progress import WorkDone

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["TITLE", "reembed"]

log = logging.getLogger("pycsamt_lsp")

TITLE = "Embedding changed chunks"


async def reembed(ls: PycsamtServer, ws: Workspace) -> dict[str, Any] | None:
    """Bring *ws*'s vectors up to date off the loop; the run's report or None."""
    if not ls.settings.dense or ws.snapshot is None:
        return None
    try:
        if not await ls.run_blocking(
            "re-embed check", ws.dense.stale, ws, lane="command"
        ):
            return None
    except Exception:  # dense is optional: log it, keep serving
        log.exception("checking the dense vectors failed")
        return None
    if not ws.dense.claim():  # on the loop: a run is going, and goes round again
        return None
    started = False

    def run(report):
        nonlocal started
        started = True
        return ws.dense.run_claimed(ws, report)

    work = WorkDone(ls, "pycsamt-embed")
    summary = "vectors already current"
    result: dict[str, Any] | None = None
    try:
        await work.open(TITLE)
        result = await ls.run_blocking(
            "re-embed", run, work.from_thread(), lane="command"
        )
        if result is not None:
            summary = (
                f"embedded {result['embedded']} changed texts, reused "
                f"{result['reused']} of {result['n_vectors']} vectors in "
                f"{result['seconds']} s"
            )
            log.info("dense vectors refreshed: %s", summary)
    except Exception as exc:  # noqa: BLE001 - BM25 keeps serving
        summary = f"re-embedding failed: {exc}"
        log.warning("%s (dense retrieval skips the stale vectors)", summary)
    finally:
        if not started:  # cancelled or refused before the run began
            ws.dense.release()
        work.end(summary)
    return result
