"""Fixture trees with hostile files, paths and planted credentials (issue 19).

Written by the tests into their own temp folders: the corpus is never
touched. :func:`write_odd_files` adds one of each kind of file that used to
fail or hang a whole build; :func:`write_outside_links` adds symlinks that
lead out of the corpus root.
"""

from __future__ import annotations

import os
from pathlib import Path

#: a token only the file outside the corpus holds: it must never be shown
OUTSIDE_TOKEN = "outsideleaktokenqzx"
#: a function only the BOM file defines: it must be indexed
BOM_TOKEN = "bom_unique_function_qzx"
#: a function of the file next to the odd ones: it must be indexed
GOOD_TOKEN = "good_neighbour_function_qzx"

HUGE_BYTES = 50 * 1024 * 1024


def write_odd_files(pkg: Path, *, huge: bool = True) -> dict[str, str]:
    """One file of each odd kind under *pkg*; returns ``{name: what it is}``."""
    made: dict[str, str] = {}

    def put(name: str | bytes, data: bytes, what: str) -> None:
        path = os.path.join(os.fsencode(pkg), os.fsencode(name))
        with open(path, "wb") as fh:
            fh.write(data)
        made[os.fsdecode(name)] = what

    put(
        "good_neighbour.py",
        f"def {GOOD_TOKEN}(x):\n    '''Kept.'''\n    return x\n".encode(),
        "valid",
    )
    put(b"bad_name_\xff.py", b"def odd_name():\n    pass\n", "non-UTF-8 name")
    put("deep.py", b"x = " + b"1+" * 100_000 + b"1\n", "deeply nested expression")
    put("deep_parens.py", b"x = " + b"(" * 50_000 + b")" * 50_000 + b"\n", "nesting")
    put("binary.py", bytes(range(256)) * 64 + b"\x00\x00", "binary named .py")
    put("latin.py", b"# caf\xe9\ndef latin_fn():\n    pass\n", "invalid UTF-8")
    put(
        "bom.py",
        f"\ufeff'''BOM module.'''\n\n\ndef {BOM_TOKEN}(a):\n    '''Doc.'''\n    return a\n".encode(),
        "UTF-8 BOM",
    )
    put("nul.py", b"def with_nul():\n    return '\x00'\n", "NUL byte")
    put("unreadable.py", b"def hidden():\n    pass\n", "unreadable")
    os.chmod(pkg / "unreadable.py", 0)
    if huge:
        line = b"VALUE_%08d = 1  # padding padding padding padding padding\n"
        n = HUGE_BYTES // len(line % 0) + 1
        with open(pkg / "huge.py", "wb") as fh:
            fh.write(b"".join(line % i for i in range(n)))
        made["huge.py"] = "50 MB"
    os.mkfifo(pkg / "fifo.py")
    made["fifo.py"] = "FIFO"
    (pkg / "folder.py").mkdir()
    (pkg / "folder.py" / "inner.txt").write_text("x")
    made["folder.py"] = "directory named .py"
    os.symlink("loop_a.py", pkg / "loop_b.py")
    os.symlink("loop_b.py", pkg / "loop_a.py")
    made["loop_a.py"] = "symlink loop"
    os.symlink(".", pkg / "selfdir")
    made["selfdir"] = "directory symlink loop"
    os.symlink("missing_target.py", pkg / "dangling.py")
    made["dangling.py"] = "dangling symlink"
    return made


def write_outside_links(root: Path, outside: Path) -> None:
    """Symlinks in the corpus to a file and a folder outside *root*, and one
    to a file inside it (that one may be followed)."""
    outside.mkdir(parents=True, exist_ok=True)
    text = f'"""Outside."""\n\n\ndef {OUTSIDE_TOKEN}():\n    """{OUTSIDE_TOKEN} doc."""\n'
    (outside / "leak.py").write_text(text, encoding="utf-8")
    (outside / "leak.md").write_text(f"# Leak\n\n{OUTSIDE_TOKEN} text\n", "utf-8")
    pkg = root / "pkg"
    os.symlink(outside / "leak.py", pkg / "linked_out.py")
    os.symlink(outside, pkg / "linked_dir")
    os.symlink(outside / "leak.md", root / "docs" / "linked_out.md")
    os.symlink(root / "pkg" / "phase.py", pkg / "linked_in.py")
