"""Measure a whole child process the way a user experiences it.

Wall time, CPU (user + system of the child and every descendant it waited for,
from ``os.wait4``), the child's peak RSS (``ru_maxrss`` from the same call: the
largest single process of the tree) and the peak *sum* of RSS over the process
tree, sampled from ``/proc`` (a parallel build's workers are alive together, so
their memory adds up; ``ru_maxrss`` alone would hide that), with the peak sum
of PSS beside it (shared pages split among the processes sharing them, so a
forked worker's view of its parent is not counted twice).
``root_cpu_s`` is the CPU of the child process alone (sampled from
``/proc``): for a build whose building process is busy throughout, it is
the critical path, about what the build takes on idle cores when the other
processes keep up, a figure a loaded machine blurs less than wall time.

Used by ``bench_build.py`` for our CLI and for the reference's, so both sides are
measured by the same code.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICKS = os.sysconf("SC_CLK_TCK")


def _children_map() -> dict[int, list[int]]:
    """ppid -> pids for every process visible in ``/proc``."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name is in parentheses and may contain spaces
        rest = stat[stat.rfind(b")") + 2 :].split()
        kids.setdefault(int(rest[1]), []).append(int(name))
    return kids


def _tree(root_pid: int) -> list[int]:
    kids = _children_map()
    out, stack = [], [root_pid]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(kids.get(pid, ()))
    return out


def tree_rss_bytes(root_pid: int) -> int:
    """Sum of the resident set of ``root_pid`` and all its descendants now."""
    return tree_memory(root_pid)[0]


def tree_memory(root_pid: int) -> tuple[int, int]:
    """``(RSS sum, PSS sum)`` in bytes over ``root_pid`` and its descendants.

    RSS counts a page shared by several processes (a forked worker's view
    of its parent's heap, the interpreter's own pages) once in each of them;
    PSS (``/proc/PID/smaps_rollup``) splits it among them, so the PSS sum is
    the memory the tree really occupies. 0 for PSS where the kernel has no
    ``smaps_rollup``.
    """
    rss = pss = 0
    for pid in _tree(root_pid):
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                rss += int(fh.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Pss:"):
                        pss += int(line.split()[1]) * 1024
                        break
        except (OSError, IndexError, ValueError):
            pass
    return rss, pss


def _own_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of *pid* itself so far, from
    ``/proc/PID/stat`` (0.0 where unreadable): sampled, so the last sample
    misses at most one sampling interval of the process's end."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            rest = fh.read().rsplit(b")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / _TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


def run_measured(
    cmd: list[str],
    *,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    stdin_text: str | None = None,
    sample_s: float = 0.05,
    timeout_s: float = 1800.0,
) -> dict[str, Any]:
    """Run ``cmd`` to completion and return its figures and output.

    The child is reaped with ``os.wait4`` so the CPU and ``maxrss`` figures
    belong to this child alone (not to earlier children of this process, as
    ``RUSAGE_CHILDREN`` would mix them). Output goes to temp files rather than
    pipes so the sampling loop can never deadlock on a full pipe.
    """
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryFile() as inp,
    ):
        if stdin_text is not None:
            inp.write(stdin_text.encode("utf-8"))
            inp.seek(0)
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=inp, stdout=out, stderr=err
        )
        peak_tree = peak_pss = 0
        root_cpu = 0.0
        status = 0
        usage = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            root_cpu = max(root_cpu, _own_cpu_s(proc.pid))
            rss, pss = tree_memory(proc.pid)
            peak_tree, peak_pss = max(peak_tree, rss), max(peak_pss, pss)
            if time.perf_counter() - t0 > timeout_s:
                proc.kill()
            time.sleep(sample_s)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    assert usage is not None
    return {
        "cmd": cmd,
        "returncode": proc.returncode,
        "wall_s": wall,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "maxrss_mb": usage.ru_maxrss / 1024.0,
        "tree_peak_rss_mb": peak_tree / 2**20,
        "tree_peak_pss_mb": peak_pss / 2**20,
        "root_cpu_s": root_cpu,
        "stdout": stdout,
        "stderr": stderr,
    }


def offline_env() -> dict[str, str]:
    """This environment without API keys, so neither side can go online."""
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def git_state(repo: Path | str | None = None) -> dict[str, Any]:
    """HEAD commit and whether tracked files differ from it.

    Several people work in one tree: a figure is only comparable to another
    when both say which commit (and how dirty a tree) they measured.
    """
    repo = Path(repo) if repo else Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True
        )
        return proc.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "server")
    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "server_dirty_files": len(dirty.splitlines()) if dirty else 0,
    }
