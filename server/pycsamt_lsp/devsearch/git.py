"""The one git reader: HEAD, refs and tags read from files, never by running git.

Why from files: a corpus or project checkout is evidence, and the machine
that reads it need not have git (or may have a git that runs hooks). Used by
developer search (the revision a hit was read at) and by the evals'
reproducibility record (the commit of this project).

Ref names are untrusted text (``HEAD`` may say anything): a ref must stay
under ``refs/`` and never contain ``..``, so reading one can never open an
arbitrary file. Symbolic refs are followed a few levels at most.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

__all__ = [
    "SHA",
    "GitDirs",
    "find_git_dirs",
    "git_dirs",
    "head_commit",
    "packed_refs",
    "peel_loose",
    "read_head",
    "resolve_ref",
    "tags_at",
]

#: A full object id: SHA-1 (40 hex) or SHA-256 (64 hex).
SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")

GitDirs = tuple[Path, Path]  # (gitdir, commondir)
PackedRefs = dict[str, tuple[str, str | None]]


def git_dirs(root: Path) -> GitDirs | None:
    """``(gitdir, commondir)`` of *root* itself; a ``.git`` file may redirect.

    A worktree's ``.git`` file says ``gitdir: <path>``; that gitdir's
    ``commondir`` names the shared repository (refs, objects, packed-refs).
    """
    dot = root / ".git"
    try:
        if dot.is_dir():
            gd = dot
        elif dot.is_file():
            line = dot.read_text(encoding="utf-8", errors="replace").strip()
            if not line.startswith("gitdir:"):
                return None
            gd = Path(line[7:].strip())
            gd = gd if gd.is_absolute() else (root / gd)
            if not gd.is_dir():
                return None
        else:
            return None
        common = gd
        if (gd / "commondir").is_file():
            rel = (gd / "commondir").read_text(encoding="utf-8").strip()
            common = Path(rel) if Path(rel).is_absolute() else gd / rel
        return gd, common
    except OSError:
        return None


def find_git_dirs(start: Path) -> GitDirs | None:
    """:func:`git_dirs` of the nearest folder at or above *start* with a ``.git``.

    The search stops at the first ``.git`` found, even an unusable one, so a
    broken inner checkout never lends itself an enclosing repository's HEAD.
    """
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return git_dirs(d)
    return None


def packed_refs(common: Path) -> PackedRefs:
    """``ref -> (sha, peeled sha)`` from ``packed-refs`` (empty when absent)."""
    refs: PackedRefs = {}
    try:
        lines = (common / "packed-refs").read_text(encoding="utf-8").splitlines()
    except OSError:
        return refs
    last = None
    for line in lines:
        if line.startswith("^") and last:
            refs[last] = (refs[last][0], line[1:].strip())
        elif line and not line.startswith("#"):
            sha, _, ref = line.partition(" ")
            if SHA.fullmatch(sha):
                refs[ref.strip()] = (sha, None)
                last = ref.strip()
    return refs


def resolve_ref(
    gd: Path, common: Path, ref: str, packed: PackedRefs, depth: int = 0
) -> str | None:
    """The object id *ref* names (loose refs first, then ``packed-refs``)."""
    if depth > 5 or not ref.startswith("refs/") or ".." in ref.split("/"):
        return None
    for base in (gd, common):
        try:
            content = (base / ref).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if content.startswith("ref:"):
            return resolve_ref(gd, common, content[4:].strip(), packed, depth + 1)
        return content if SHA.fullmatch(content) else None
    return packed[ref][0] if ref in packed else None


def peel_loose(common: Path, sha: str) -> str | None:
    """Target of an annotated tag stored as a loose object (zlib, no git)."""
    try:
        raw_obj = (common / "objects" / sha[:2] / sha[2:]).read_bytes()
        raw = zlib.decompressobj().decompress(raw_obj, 4096)  # a tag header is tiny
    except (OSError, zlib.error):
        return None
    if not raw.startswith(b"tag "):
        return None
    m = re.search(rb"\x00object ([0-9a-f]{40,64})\n", raw)
    return m.group(1).decode() if m else None


def tags_at(common: Path, sha: str, packed: PackedRefs) -> list[str]:
    """Tag names pointing at *sha* (directly or through an annotated tag)."""
    tags = {
        ref[10:]
        for ref, (s, peeled) in packed.items()
        if ref.startswith("refs/tags/") and sha in (s, peeled)
    }
    tag_dir = common / "refs" / "tags"
    for n, path in enumerate(p for p in tag_dir.rglob("*") if p.is_file()):
        if n >= 2000:
            break
        try:
            s = path.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if s == sha or (SHA.fullmatch(s) and peel_loose(common, s) == sha):
            tags.add(path.relative_to(tag_dir).as_posix())
    return sorted(tags)


def _no_revision(source: str, ref: str | None = None) -> dict:
    return {"revision": None, "ref": ref, "tags_at_head": [], "revision_source": source}


def read_head(dirs: GitDirs | None, *, tags: bool = True) -> dict:
    """HEAD of the repository *dirs*: revision, ref, tags and how it was read.

    Returns ``{"revision", "ref", "tags_at_head", "revision_source"}``; the
    revision is ``None`` (with the reason in ``revision_source``) when HEAD
    cannot be resolved.
    """
    if dirs is None:
        return _no_revision("not a git checkout (no .git at the corpus root)")
    gd, common = dirs
    try:
        head = (gd / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return _no_revision(".git has no readable HEAD")
    packed = packed_refs(common)
    ref = None
    if head.startswith("ref:"):
        ref = head[4:].strip()
        sha = resolve_ref(gd, common, ref, packed)
        loose = (
            any((b / ref).is_file() for b in (gd, common))
            if ref.startswith("refs/")
            else False
        )
        source = f"git HEAD -> {ref} ({'loose ref' if loose else 'packed-refs'})"
    else:
        sha = head if SHA.fullmatch(head) else None
        source = "git HEAD (detached)"
    if sha is None:
        return _no_revision(f"{source}: unresolved (unborn branch or bad ref)", ref=ref)
    return {
        "revision": sha,
        "ref": ref,
        "tags_at_head": tags_at(common, sha, packed) if tags else [],
        "revision_source": source,
    }


def head_commit(start: Path) -> str | None:
    """The commit checked out at *start* or the nearest folder above it."""
    return read_head(find_git_dirs(start.resolve()), tags=False)["revision"]
