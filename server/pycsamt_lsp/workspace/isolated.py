"""Building an index in a child process, so its transient memory never lands
in the server's heap.

The child (spawned, not forked: a server has threads) builds, persists and
reports through a pipe: ``("progress", percent, text)``, then ``("done",
report)`` or ``("error", text)``. It leads its own process group, so a
cancel stops it with the pool workers it started.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from pycsamt_lsp.corpus.profile import Profile

__all__ = ["ChildBuild", "WorkspaceFactory"]


class _Buildable(Protocol):
    def rebuild(self, progress: Callable[[int, str], None]) -> dict[str, Any]: ...

    @property
    def persisted(self) -> bool: ...


#: ``factory(root, profile, index_dir=..., workers=...)``: the workspace
#: class itself, passed by the caller (pickled by reference into the child)
WorkspaceFactory = Callable[..., _Buildable]


def _child_main(
    factory: WorkspaceFactory,
    root: Path,
    profile: Profile,
    index_dir: Path,
    workers: int,
    conn: Connection,
) -> None:
    """Body of the build process. Nothing may reach stdout (a server's
    stdout is the LSP channel)."""
    sys.stdout = sys.stderr
    if hasattr(os, "setpgrp"):
        # its own process group, with the pool workers it starts, so that a
        # cancel stops them all (a killed parent would orphan its workers)
        os.setpgrp()

    def send(pct: int, message: str) -> None:
        conn.send(("progress", pct, message))

    try:
        ws = factory(root, profile, index_dir=index_dir, workers=workers)
        report = ws.rebuild(send)  # built and persisted in one streamed pass
        if not ws.persisted:
            conn.send(("error", f"could not write the index to {index_dir}"))
        else:
            conn.send(("done", report))
    except BrokenPipeError:  # the server went away: nothing to report to
        pass
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class ChildBuild:
    """One workspace's build processes: start one, wait for it, cancel it."""

    def __init__(self) -> None:
        self._child: multiprocessing.process.BaseProcess | None = None
        self.cancelled = False

    def run(
        self,
        factory: WorkspaceFactory,
        root: Path,
        profile: Profile,
        index_dir: Path,
        workers: int,
        progress: Callable[[int, str], None] | None,
    ) -> tuple[dict[str, Any] | None, str]:
        """Build in a child and wait: ``(report, "")`` when it persisted the
        index, ``(None, why)`` when it failed. :attr:`cancelled` says whether
        :meth:`cancel` stopped it."""
        self.cancelled = False
        ctx = multiprocessing.get_context("spawn")
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_child_main,
            args=(factory, root, profile, index_dir, workers, send),
            name="pycsamt-lsp-build",
        )
        proc.start()
        send.close()
        self._child = proc
        report: dict[str, Any] | None = None
        error = ""
        try:
            while True:
                try:
                    msg = recv.recv()
                except EOFError:
                    break
                if msg[0] == "progress":
                    if progress:
                        progress(msg[1], msg[2])
                elif msg[0] == "done":
                    report = msg[1]
                else:
                    error = msg[1]
        finally:
            recv.close()
            proc.join()
            self._child = None
        if report is None and not error:
            error = f"exit code {proc.exitcode}"
        return report, error

    def cancel(self) -> None:
        """Stop a build process still running, with its workers."""
        proc = self._child
        if proc is None or proc.pid is None or not proc.is_alive():
            return
        self.cancelled = True
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the child leads its group
        except (AttributeError, OSError):
            proc.terminate()
