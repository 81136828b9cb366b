"""Work-done progress of one server job (``$/progress``), when the client takes it.

Progress is a courtesy: a client without the capability, or one that refuses
the token, gets none and the job runs the same. The job itself runs in a
worker thread, so its reports are handed to the event loop, and a percentage
already sent is not sent again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from pycsamt_lsp.lsp.server import PycsamtServer

__all__ = ["WorkDone"]

log = logging.getLogger("pycsamt_lsp")


class WorkDone:
    """One job's progress token: ``open``, ``report`` (loop side), ``end``."""

    def __init__(self, ls: PycsamtServer, prefix: str) -> None:
        caps = ls.client_capabilities
        self.on = bool(caps.window and caps.window.work_done_progress)
        self.token = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self._progress = ls.work_done_progress
        loop = ls.loop
        assert loop is not None
        self._loop = loop

    async def open(self, title: str, **begin: Any) -> None:
        """Create the token and begin at 0 %; a refusal turns progress off."""
        if not self.on:
            return
        try:
            await self._progress.create_async(self.token)
            self._progress.begin(
                self.token,
                types.WorkDoneProgressBegin(title=title, percentage=0, **begin),
            )
        except Exception as exc:  # noqa: BLE001 - progress is a courtesy
            log.info("client refused progress: %s", exc)
            self.on = False

    def report(self, pct: int, message: str) -> None:
        """Send one report (on the event loop)."""
        if self.on:
            self._progress.report(
                self.token,
                types.WorkDoneProgressReport(message=message, percentage=pct),
            )

    def end(self, message: str) -> None:
        """End the progress with *message*."""
        if self.on:
            self._progress.end(self.token, types.WorkDoneProgressEnd(message=message))

    def from_thread(
        self, send: Callable[[int, str], None] | None = None
    ) -> Callable[[int, str], None]:
        """A ``progress(pct, message)`` callback for the worker thread: each
        new percentage runs *send* (default :meth:`report`) on the loop."""
        last = [-1]
        fn = send or self.report

        def progress(pct: int, message: str) -> None:
            if pct == last[0]:
                return
            last[0] = pct
            self._loop.call_soon_threadsafe(fn, pct, message)

        return progress
