"""One git reader for developer search and the evals, in parity with the
evals' old reader on every layout it handled (and safer on hostile refs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pycsamt_lsp.devsearch.git import find_git_dirs, git_dirs, head_commit, read_head
from pycsamt_lsp.evals.harness import git_commit

SHA1, SHA2 = "1" * 40, "2" * 40


# -- the evals' reader before it called devsearch/git.py (verbatim logic) ----
def _old_find_git_dir(start: Path) -> Path | None:
    for d in (start, *start.parents):
        g = d / ".git"
        if g.is_dir():
            return g
        if g.is_file():
            line = g.read_text(encoding="utf-8").strip()
            if line.startswith("gitdir:"):
                p = Path(line.split(":", 1)[1].strip())
                return p if p.is_absolute() else (d / p).resolve()
            return None
    return None


def _old_read_ref(git_dir: Path, ref: str) -> str | None:
    roots = [git_dir]
    common = git_dir / "commondir"
    if common.is_file():
        c = Path(common.read_text(encoding="utf-8").strip())
        roots.append(c if c.is_absolute() else (git_dir / c).resolve())
    for root in roots:
        f = root / ref
        if f.is_file():
            return f.read_text(encoding="utf-8").strip() or None
    for root in roots:
        packed = root / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                parts = line.strip().split(" ", 1)
                if len(parts) == 2 and parts[1] == ref and not line.startswith("#"):
                    return parts[0]
    return None


def old_git_commit(start: Path) -> str | None:
    git_dir = _old_find_git_dir(start.resolve())
    if git_dir is None:
        return None
    head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    if head.startswith("ref:"):
        return _old_read_ref(git_dir, head.split(":", 1)[1].strip())
    return head if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head) else None


def write(p: Path, text: str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def _layouts(tmp: Path) -> list[Path]:
    out = []
    a = tmp / "branch"
    write(a / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(a / ".git" / "refs" / "heads" / "main", SHA1 + "\n")
    (a / "sub" / "dir").mkdir(parents=True)
    out += [a, a / "sub" / "dir"]
    b = tmp / "packed"
    write(b / ".git" / "HEAD", "ref: refs/heads/dev\n")
    write(b / ".git" / "packed-refs", f"# pack-refs\n{SHA2} refs/heads/dev\n")
    out.append(b)
    c = tmp / "detached"
    write(c / ".git" / "HEAD", SHA1 + "\n")
    out.append(c)
    common = tmp / "main" / ".git"
    write(common / "refs" / "heads" / "feature", SHA2 + "\n")
    wt_git = common / "worktrees" / "wt"
    write(wt_git / "HEAD", "ref: refs/heads/feature\n")
    write(wt_git / "commondir", "../..\n")
    write(tmp / "wt" / ".git", f"gitdir: {wt_git}\n")
    out.append(tmp / "wt")
    d = tmp / "unborn"
    write(d / ".git" / "HEAD", "ref: refs/heads/missing\n")
    out.append(d)
    return out


def test_parity_with_the_evals_reader(tmp_path: Path):
    layouts = _layouts(tmp_path)
    for start in layouts:
        assert head_commit(start) == old_git_commit(start), start
        assert git_commit(start) == old_git_commit(start), start
    assert [head_commit(p) for p in layouts] == [SHA1, SHA1, SHA2, SHA1, SHA2, None]


def test_devsearch_reads_only_the_root_and_the_evals_search_upwards(tmp_path: Path):
    root = _layouts(tmp_path)[0]
    assert git_dirs(root / "sub") is None
    assert find_git_dirs(root / "sub" / "dir") == git_dirs(root)
    assert read_head(git_dirs(root / "sub"))["revision"] is None


@pytest.mark.parametrize("ref", ["../../../etc/passwd", "refs/../../x", "HEAD"])
def test_hostile_refs_are_never_read(tmp_path: Path, ref):
    write(tmp_path / ".git" / "HEAD", f"ref: {ref}\n")
    info = read_head(git_dirs(tmp_path))
    assert info["revision"] is None and "unresolved" in info["revision_source"]
