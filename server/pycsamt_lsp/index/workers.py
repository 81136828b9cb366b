"""A build's worker processes.

The streamed build (``Workspace.rebuild``: the CLI's ``build``, a server's
build process) uses :class:`PipePool`: plain interpreters fed pickled
batches over pipes while the building process parses batches too
(:func:`ordered`), so a two-core build is the building process and one
worker, without ``multiprocessing``'s resource tracker (issue 18: the
process tree's peak is the sum of its processes).

The in-memory build (``Workspace.build``) still uses a
``ProcessPoolExecutor``, started with ``spawn`` (a server has threads;
forking it can deadlock). A spawned child first re-runs the parent's main
module when that module was a script file, as ``pycsamt-lsp`` is: every
worker then imported the whole command line (answers, commands,
evaluation, PDF support) before parsing a single file, ~0.8 s of CPU and
~40 MB each on two cores. The workers only need importable functions
(:func:`pycsamt_lsp.model.state.process_file`), so the main module is
hidden from ``multiprocessing`` while they start.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = [
    "PipePool",
    "batch_target",
    "discard_spares",
    "main_script_hidden",
    "ordered",
    "plan_batches",
    "prestart",
    "serve",
]

log = logging.getLogger(__name__)

#: batches per worker in a parallel build: more balance the end, fewer
#: cost less in messages (each is one round trip of the pool's queues)
_BATCHES_PER_WORKER = 24


@contextmanager
def main_script_hidden() -> Iterator[None]:
    """While inside, spawned children do not re-run ``__main__``'s file.

    ``multiprocessing.spawn`` re-runs the main module by path when it has a
    ``__file__`` and no import name (``python -m x`` and the interactive
    interpreter are left alone already). Only process start-up reads it, so
    wrap the calls that start the processes.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if main is None or spec is not None or "__file__" not in vars(main):
        yield
        return
    path = vars(main).pop("__file__")
    try:
        yield
    finally:
        main.__file__ = path


def batch_target(sizes: Sequence[int], workers: int) -> int:
    """Bytes of one batch of :func:`plan_batches`; files this large or
    larger are batches of their own."""
    return max(sum(sizes) // max(workers * _BATCHES_PER_WORKER, 1), 1)


def plan_batches(sizes: Sequence[int], workers: int) -> list[list[int]]:
    """Work items of a parallel build: lists of job positions.

    About :data:`_BATCHES_PER_WORKER` batches per worker of similar byte
    totals (parse time grows with size), so the last one to finish is
    short; files larger than a batch go first, each alone, largest first,
    so no long parse starts at the end. The rest keep path order (results
    are written in that order: early ones need not wait for late ones);
    their last ``2 * workers`` batches' worth of bytes is cut in batches a
    quarter the size, so the processes run out of work within a short batch
    of each other (the build waits for the last one).
    """
    target = batch_target(sizes, workers)
    big = sorted(
        (i for i, n in enumerate(sizes) if n >= target), key=lambda i: -sizes[i]
    )
    out: list[list[int]] = [[i] for i in big]
    taken = set(big)
    tail = sum(sizes) - sum(sizes[i] for i in big) - 2 * workers * target
    cur: list[int] = []
    acc = seen = 0
    for i, n in enumerate(sizes):
        if i in taken:
            continue
        cur.append(i)
        acc += n
        seen += n
        if acc >= (target if seen < tail else max(target // 4, 1)):
            out.append(cur)
            cur, acc = [], 0
    if cur:
        out.append(cur)
    return out


# -- pipe workers: the streamed build's pool ------------------------------------

#: ``python -c`` body of a pipe worker: ``sys.path`` first (as
#: ``multiprocessing.spawn`` hands it over), then the loop of :func:`serve`;
#: the modules named after it on the command line are imported while the
#: worker waits for its task (:func:`prestart`)
_BOOT = (
    "import sys, pickle; sys.path[:] = pickle.load(sys.stdin.buffer); "
    "from pycsamt_lsp.index.workers import serve; serve()"
)
#: batches sent to a worker ahead of its results: one running, one waiting
#: in the pipe, so it never idles while the building process is busy
_DEPTH = 2
_HEADER = 8  # bytes of a result's length prefix
#: capacity asked for each pipe (Linux ``F_SETPIPE_SZ``; 1 MiB is the
#: default ``/proc/sys/fs/pipe-max-size``): a batch's answer (~0.4 MB on
#: the sdist) then fits in the pipe whole, so the worker goes on to its
#: next batch at once. With the default 64 KiB the worker waited in
#: ``write`` while the reader thread took the GIL back from the busy
#: building thread once per 64 KiB (up to a 5 ms switch interval each):
#: 0.74 s of a 5.4 s sdist build's worker time
_PIPE_BYTES = 1 << 20
#: what a build worker imports before its task comes (:func:`prestart`)
_BUILD_MODULE = "pycsamt_lsp.model.state"


def _wide_pipe(fh: Any) -> None:
    """Ask for a :data:`_PIPE_BYTES` pipe behind *fh* (best effort)."""
    try:
        import fcntl

        fcntl.fcntl(fh.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError, ValueError):
        pass  # not Linux, or over the limit: the default pipe still works


def _spawn(preload: Sequence[str]) -> Any:
    """One pipe worker process, already given ``sys.path``; None when it
    could not be started. *preload*: modules it imports right away."""
    import pickle
    import subprocess

    # what multiprocessing.spawn passes on: interpreter flags, sys.path
    cmd = [
        sys.executable,
        *subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]
        "-c",
        _BOOT,
        *preload,
    ]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as exc:
        log.warning("could not start a build worker: %s", exc)
        return None
    stdin = proc.stdin
    assert stdin is not None  # stdin=PIPE
    _wide_pipe(proc.stdout)
    _wide_pipe(stdin)
    try:
        stdin.write(pickle.dumps(list(sys.path)))
        stdin.flush()
    except OSError:  # died at once: its reader will see the end of its pipe
        pass
    return proc


def prestart(n: int | None = None) -> list[Any]:
    """Start *n* build workers now (default: one fewer than the build's
    ``min(2, cpu_count)`` processes), before the caller's own imports.

    A ``pycsamt-lsp build`` spends its first ~0.3 s importing (numpy, the
    engine) and listing the corpus before it starts its pool; a worker
    started then spends ~0.15 s more starting an interpreter and importing
    the chunkers before it parses, while the second core idles. Started
    first (the CLI calls this as soon as it knows the command is
    ``build``), the worker boots and imports :data:`_BUILD_MODULE` while
    the building process imports and lists. The next :class:`PipePool`
    takes them (its ``spares``: the caller holds the list, no module
    global, so two workspaces of one process never share workers);
    :func:`discard_spares` lets unused ones go (a corpus too small for a
    pool), and so does this process's exit (their stdin ends).
    """
    if n is None:
        n = min(2, os.cpu_count() or 1) - 1
    spares: list[Any] = []
    for _ in range(max(n, 0)):
        proc = _spawn((_BUILD_MODULE,))
        if proc is None:
            break
        spares.append(proc)
    return spares


def discard_spares(spares: list[Any], *, wait: bool = False) -> None:
    """Let the workers :func:`prestart` made and no pool took exit (their
    stdin closed). Not waited for unless *wait*: one may still be importing
    (~0.15 s), and a small build should not wait for a worker it never
    used; ``subprocess`` reaps it later."""
    while spares:
        proc = spares.pop()
        for fh in (proc.stdin, proc.stdout):
            try:
                fh.close()
            except OSError:
                pass
        if wait:
            try:
                proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
                proc.kill()
                proc.wait()


def serve() -> None:
    """A pipe worker's main loop (started by :class:`PipePool`).

    Reads pickles from stdin: ``sys.path`` (read by the boot line), then
    ``("module:function", fixed)``, then ``(key, item)`` per batch until
    EOF; answers each batch with one length-prefixed pickle on stdout,
    ``(key, True, function((*fixed, item)))`` or ``(key, False, traceback)``.
    The modules named on its command line are imported first, before the
    task is read (:func:`prestart`: the building process is still busy).
    Its stdout is the result channel only: file descriptor 1 is pointed at
    stderr, so a stray print cannot corrupt it. No cyclic collection (the
    work makes no cyclic garbage worth a collection, :func:`heap.no_gc`);
    what the imports made is frozen out of reach anyway. Ctrl-C is left to
    the parent (the terminal sends it to the whole group): it stops the
    workers, so they do not each print a traceback; a parent gone (its end
    of a pipe closed) ends the worker quietly. At the end of its input it
    leaves with ``os._exit``: every answer is flushed already, and the
    interpreter's teardown (freeing every module and the frozen heap, ~20
    ms) would only delay the building process, which waits for it.
    """
    import gc
    import importlib
    import pickle
    import queue
    import signal
    import traceback

    gc.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inp = sys.stdin.buffer
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    for module in sys.argv[1:]:
        importlib.import_module(module)

    def leave() -> None:
        for fh in (sys.stdout, sys.stderr):
            try:
                fh.flush()
            except (OSError, ValueError):
                pass
        os._exit(0)

    # Answers are written by a thread of their own: one blocking ``write``
    # of a whole answer (0.8 MB on average on the sdist, more than a pipe
    # holds) releases the GIL until the reader has taken it all, so this
    # thread parses the next batch meanwhile instead of waiting for the
    # building process's reader, which needs the GIL of a busy process.
    answers: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    def write_answers() -> None:
        while (data := answers.get()) is not None:
            try:
                out.write(len(data).to_bytes(_HEADER, "little"))
                out.write(data)
                out.flush()
            except OSError:  # BrokenPipeError: the parent is gone
                leave()
            del data

    writer = threading.Thread(target=write_answers, name="answers", daemon=True)

    def finish() -> None:
        answers.put(None)
        if writer.is_alive():
            writer.join()
        leave()

    try:
        target, fixed = pickle.load(inp)
    except (EOFError, OSError):
        leave()  # a spare nobody took, or a parent gone
    module, _, name = target.partition(":")
    func = getattr(importlib.import_module(module), name)
    gc.freeze()
    writer.start()
    while True:
        try:
            key, item = pickle.load(inp)
        except (EOFError, OSError):
            finish()
        try:
            reply = (key, True, func((*fixed, item)))
        except Exception:  # noqa: BLE001 - the parent re-runs the batch itself
            reply = (key, False, traceback.format_exc())
        answers.put(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
        del reply


class _Worker:
    """One pipe worker: its process, its stdin, and the batches it holds."""

    def __init__(self, proc: Any, index: int) -> None:
        self.proc = proc
        self.index = index
        self.held: list[int] = []  # batch keys sent, not taken by ordered() yet
        self.inflight = 0  # batches sent, not answered yet (the feeder's count)
        self.alive = True
        self.reader: threading.Thread | None = None


#: what the reader threads tell the feeder besides "worker i answered"
_KICK = -1  # top every worker up (new batches, or a start)
_STOP = -2  # the pool is closing


class PipePool:
    """Worker processes fed and read over pipes, without ``multiprocessing``.

    A ``ProcessPoolExecutor`` costs a build more than its workers: spawning
    starts ``multiprocessing``'s resource tracker (one more interpreter,
    ~12 MB resident for the whole build) and each worker imports
    ``multiprocessing`` and ``concurrent.futures``. These workers are plain
    ``python -c`` processes (:func:`serve`) that get pickled batches on
    stdin and answer on stdout. One reader thread per worker moves the
    answers, still encoded, onto a queue (reads release the GIL, so the
    building thread keeps working) and tells the feeder thread, which
    sends that worker its next batch at once (:meth:`set_refill`): a worker
    waits neither for the building thread to finish its own batch nor for
    it to look at the queue. Only the feeder writes to the workers' pipes
    (after the first message), so the building thread never blocks on a
    full pipe, and a reader never does anything but read (a worker blocked
    writing its answer is always drained). A worker that dies ends its
    pipe: the reader reports it and :func:`ordered` gives its batches to
    the others or to the building process, so a killed worker never hangs
    a build. Workers leave with their stdin (the parent's exit or
    :meth:`close`) and stay in the parent's process group (a cancelled
    build stops them too). Workers :func:`prestart` started (*spares*)
    are taken first, out of that list.
    """

    def __init__(
        self,
        n: int,
        target: str,
        fixed: tuple[Any, ...],
        spares: list[Any] | None = None,
    ) -> None:
        import pickle
        import queue

        self._events: queue.SimpleQueue[tuple[int, bytes | None]] = queue.SimpleQueue()
        self._wake: queue.SimpleQueue[int] = queue.SimpleQueue()
        #: guards ``held``, ``inflight`` and ``alive`` of the workers and
        #: what the refill function reads (never held while writing a pipe)
        self.lock = threading.Lock()
        self._refill: Callable[[], list[tuple[_Worker, bytes]]] | None = None
        self.workers: list[_Worker] = []
        hello = pickle.dumps((target, fixed), protocol=pickle.HIGHEST_PROTOCOL)
        module = target.partition(":")[0]
        for i in range(n):
            proc = spares.pop(0) if spares else _spawn((module,))
            if proc is None:
                break
            w = _Worker(proc, i)
            self.workers.append(w)
            w.reader = threading.Thread(
                target=self._read,
                args=(w,),
                name=f"pycsamt-build-read-{i}",
                daemon=True,
            )
            w.reader.start()
            self._send(w, hello)
        self._feeder = threading.Thread(
            target=self._feed, name="pycsamt-build-feed", daemon=True
        )
        self._feeder.start()

    def _read(self, w: _Worker) -> None:
        """Reader thread: each answer's bytes onto the queue (and a word to
        the feeder); None at EOF."""
        fh = w.proc.stdout
        try:
            while True:
                head = fh.read(_HEADER)  # buffered: whole, or short at EOF
                if len(head) < _HEADER:
                    break
                size = int.from_bytes(head, "little")
                data = fh.read(size)
                if len(data) < size:
                    break
                self._events.put((w.index, data))
                self._wake.put(w.index)
                del data
        except (OSError, ValueError):
            pass
        self._events.put((w.index, None))

    def _feed(self) -> None:
        """Feeder thread: on each answer (or :meth:`kick`), the refill
        function's batches are written to their workers."""
        while True:
            got = self._wake.get()
            if got == _STOP:
                return
            with self.lock:
                if got >= 0:
                    self.workers[got].inflight -= 1
                refill = self._refill
                sends = refill() if refill is not None else []
            for w, data in sends:
                self._send(w, data)

    def _send(self, w: _Worker, data: bytes) -> bool:
        try:
            w.proc.stdin.write(data)
            w.proc.stdin.flush()
            return True
        except (OSError, ValueError):  # it died: its reader says so
            return False

    def send_now(self, w: _Worker, data: bytes) -> None:
        """Write a :meth:`message` from this thread: only before
        :func:`ordered` hands the pipes to the feeder (a build's early
        batches, sent before its plan exists)."""
        self._send(w, data)

    def message(self, w: _Worker, key: int, item: Any) -> bytes:
        """Account for batch *key* given to *w* (held until its answer or
        its end) and return the bytes the feeder writes; call with
        :attr:`lock` held."""
        import pickle

        w.held.append(key)
        w.inflight += 1
        return pickle.dumps((key, item), protocol=pickle.HIGHEST_PROTOCOL)

    def set_refill(
        self, refill: Callable[[], list[tuple[_Worker, bytes]]] | None
    ) -> None:
        """What the feeder calls (with :attr:`lock` held) after each answer
        and each :meth:`kick`: the messages to write now (made with
        :meth:`message`)."""
        with self.lock:
            self._refill = refill

    def kick(self) -> None:
        """Have the feeder call the refill function now."""
        self._wake.put(_KICK)

    def next_event(self) -> tuple[_Worker, bytes | None]:
        """The next answer (or a worker's end: None), waiting for it."""
        i, data = self._events.get()
        return self.workers[i], data

    def ready(self) -> bool:
        """Whether an event waits (:meth:`next_event` would not block)."""
        return not self._events.empty()

    def release(self) -> None:
        """Let the workers go without waiting for them: the feeder stops
        and their stdin is closed, so each exits at once (every answer was
        read: a build calls this after its last result). :meth:`close`
        reaps them later. Why: waiting here for their exit (the kernel
        freeing an interpreter's memory, ~5-10 ms) was on the build's
        serial tail."""
        self.set_refill(None)
        self._wake.put(_STOP)
        self._feeder.join(timeout=10)
        for w in self.workers:
            try:
                w.proc.stdin.close()
            except OSError:
                pass

    def close(self, *, kill: bool = False) -> None:
        """Let the workers go (stdin closed: they exit); *kill* stops them
        now (a failed build). Waits for them, killing any that lingers."""
        self.set_refill(None)
        self._wake.put(_STOP)
        self._feeder.join(timeout=10)
        for w in self.workers:
            if kill:
                w.proc.kill()
            try:
                w.proc.stdin.close()
            except OSError:
                pass
        for w in self.workers:
            # its reader ends when the process does (the kernel closes its
            # stdout after freeing its memory): a blocking join, where
            # ``Popen.wait(timeout)`` polls with sleeps of 0.5, 1, 2, 4 ...
            # ms and saw a ~10 ms exit ~15 ms late, on the build's serial
            # tail; the wait after it then finds the process ended
            if w.reader is not None:
                w.reader.join(timeout=10)
            stuck = w.reader is not None and w.reader.is_alive()
            try:
                w.proc.wait(timeout=0 if stuck else 10)
            except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
                w.proc.kill()
                w.proc.wait()
            if w.reader is not None:  # its pipe ended with the process
                w.reader.join(timeout=10)
            try:
                w.proc.stdout.close()
            except OSError:
                pass


def ordered(
    batches: Sequence[Sequence[int]],
    item_of: Callable[[Sequence[int]], Any],
    here: Callable[[Any], list[Any]],
    pool: PipePool | None,
    *,
    big: Collection[int] = (),
    sent: Collection[int] = (),
    redo: Collection[int] = (),
) -> Iterator[Any]:
    """Results of every batch, one per position (``batches`` lists
    positions), yielded in position order.

    The building process works too: whenever the next result in order is
    not there yet and no answer is waiting, it runs the next batch itself
    (``here(item_of(batch))``), so the build needs one worker process fewer
    for the same cores (each is an interpreter with its own imports and
    heap: the tree's peak is their sum). Workers are kept ``_DEPTH``
    batches ahead by the pool's feeder thread, the moment each answer
    arrives, and take the batches in plan order, *big* ones (parsed alone:
    their syntax trees are the largest transient) before the building
    process would. A worker's failed batch is run here (its error, if it
    is one, is raised here); a dead worker's batches go back to the queue.
    *sent*: batches a worker was given before (:meth:`PipePool.message`);
    *redo*: batches whose answer must not be used (sent with a guess that
    proved wrong): they are run here when it comes.
    """
    import pickle
    from collections import deque

    pending = deque(k for k in range(len(batches)) if k not in sent)
    waiting: dict[int, Any] = {}
    total = sum(len(b) for b in batches)
    nxt = 0
    live = [w for w in pool.workers if w.alive] if pool is not None else []

    def put(key: int, out: list[Any]) -> None:
        waiting.update(zip(batches[key], out, strict=True))

    def refill() -> list[tuple[_Worker, bytes]]:
        """The feeder's messages (pool lock held). Near the end one batch
        each: a batch queued behind a running one could be the last to
        finish while this process has nothing to do."""
        assert pool is not None
        sends = []
        depth = _DEPTH if len(pending) > 2 * (len(live) + 1) else 1
        for w in live:
            while w.inflight < depth and pending:
                key = pending.popleft()
                sends.append((w, pool.message(w, key, item_of(batches[key]))))
        return sends

    def take() -> None:
        """Handle one worker event (waits for it)."""
        assert pool is not None
        w, data = pool.next_event()
        if data is None:
            with pool.lock:
                if not w.alive:
                    return
                w.alive = False
                live.remove(w)
            try:  # its pipe ends as it exits: reaped in a moment
                code = w.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
                code = None
            with pool.lock:
                log.warning(
                    "build worker %d ended (exit code %s); %d batch(es) it held "
                    "are parsed here",
                    w.index,
                    code,
                    len(w.held),
                )
                pending.extendleft(reversed(w.held))
                w.held.clear()
            pool.kick()  # another worker may take them
            return
        key, ok, value = pickle.loads(data)
        del data
        with pool.lock:
            w.held.remove(key)
        if key in redo:
            put(key, here(item_of(batches[key])))
        elif ok:
            put(key, value)
        else:
            log.warning(
                "build worker %d failed on a batch; parsing it here:\n%s",
                w.index,
                value,
            )
            put(key, here(item_of(batches[key])))

    def mine() -> int | None:
        """The batch this process runs next (a big one only when no other
        is left), taken off the queue."""
        with lock:
            key = next((k for k in pending if k not in big), None)
            if key is None and pending:
                key = pending[0]
            if key is not None:
                pending.remove(key)
            return key

    lock = pool.lock if pool is not None else threading.Lock()
    if pool is not None:
        # the first batches are the workers' (big files first), written from
        # here before this process picks its own; the feeder writes from then
        # on (not before set_refill: never two threads on one pipe)
        with lock:
            first = refill()
        for w, message in first:
            pool._send(w, message)
        pool.set_refill(refill)
        pool.kick()  # in case a worker answered before the refill was set
    try:
        while nxt < total:
            while pool is not None and pool.ready():
                take()
            if nxt in waiting:
                while nxt in waiting:
                    yield waiting.pop(nxt)
                    nxt += 1
                continue
            key = mine()
            if key is not None:
                put(key, here(item_of(batches[key])))
            elif pool is not None and any(w.held for w in live):
                take()
            else:
                raise RuntimeError("build results missing (positions not covered)")
    finally:
        if pool is not None:
            pool.set_refill(None)
