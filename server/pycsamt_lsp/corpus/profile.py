"""Corpus policy as data.

A *profile* says which files of a corpus are indexed, how they are tagged
with a workflow and a priority, and how queries are expanded. It is read
from a TOML file (``profiles/<name>.toml`` inside this package, or any path),
so indexing another package means writing another profile and nothing else.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pycsamt_lsp.corpus.testfiles import is_test_path
from pycsamt_lsp.errors import ProfileError

__all__ = ["PROFILE_DIR", "Profile", "ProfileError", "load_profile"]

PROFILE_DIR = Path(__file__).resolve().parent.parent / "profiles"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Profile:
    """The corpus policy of one package (see ``profiles/pycsamt.toml``)."""

    name: str
    package: str
    distribution: str = ""
    roots: tuple[str, ...] = ()
    root_docs: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = (".py", ".rst", ".md")
    excludes: tuple[str, ...] = ()
    test_globs: tuple[str, ...] = ("test_*.py", "conftest.py")
    max_file_bytes: int = 1_000_000
    recipe_dir: str = "assistant_recipes"
    devsearch_roots: tuple[str, ...] = ()
    papers_dir: str = "docs/papers"
    high_priority: tuple[str, ...] = ()
    doc_priority: tuple[str, ...] = ()
    workflows: tuple[tuple[str, tuple[str, ...]], ...] = ()
    identity_markers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    workflow_paths: tuple[tuple[str, str], ...] = ()
    expansions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # request routing (``pycsamt_lsp.routing``): cue phrases per intent rule,
    # descriptor phrases per workflow, and the clarifying-question template
    intents: tuple[tuple[str, tuple[str, ...]], ...] = ()
    workflow_descriptors: tuple[tuple[str, tuple[str, ...]], ...] = ()
    clarify_question: str = ""
    source: str = field(default="", compare=False)

    # -- file policy -------------------------------------------------------

    def is_test_path(self, rel: str) -> bool:
        """True for unit tests: under a ``tests`` folder or a test file name."""
        return is_test_path(rel, self.test_globs)

    def is_excluded(self, rel: str) -> bool:
        """True when *rel* matches an exclusion pattern (substring match)."""
        probe = "/" + rel
        return any(pat in probe for pat in self.excludes)

    def should_index(self, rel: str) -> bool:
        """True when the corpus-relative POSIX path *rel* is indexed."""
        if not rel.endswith(self.suffixes):
            return False
        if self.is_excluded(rel) or self.is_test_path(rel):
            return False
        if rel in self.root_docs:
            return True
        return any(rel == r or rel.startswith(r + "/") for r in self.roots)

    def priority_for(self, rel: str) -> int:
        """3 for high-priority implementation areas, 2 for docs, else 1."""
        if any(rel.startswith(h) for h in self.high_priority):
            return 3
        if any(
            rel == d or rel.startswith(d.rstrip("/") + "/") for d in self.doc_priority
        ):
            return 2
        return 1

    # -- workflows ---------------------------------------------------------

    @cached_property
    def workflow_names(self) -> tuple[str, ...]:
        """Every workflow id the profile knows, in declaration order."""
        return tuple(wf for wf, _ in self.workflows)

    def infer_workflow(self, *texts: str | None) -> str | None:
        """Workflow from text: identity markers on the first two texts, then keywords.

        The first two texts are the chunk's identity (path, symbol); a named
        2-D/3-D model there is more specific than any keyword in prose.
        """
        identity = " ".join(t for t in texts[:2] if t).lower().replace("\\", "/")
        if identity:
            for wf, markers in self.identity_markers:
                for m in markers:
                    if m in identity:
                        return wf
        blob = " ".join(t for t in texts if t).lower()
        if not blob:
            return None
        # plain loops, not any(genexpr) (20% of this call per chunk in a
        # build); one regex per workflow was 2.5x slower than the ``in`` scans
        for wf, checks in self._keyword_checks:
            for c in checks:
                if type(c) is str:
                    if c in blob:
                        return wf
                elif c[0] in blob:  # (guard, *keywords)
                    for k in c[1:]:
                        if k in blob:
                            return wf
        return None

    @cached_property
    def _keyword_checks(
        self,
    ) -> tuple[tuple[str, tuple[str | tuple[str, ...], ...]], ...]:
        """:attr:`workflows` with each workflow's keywords grouped behind
        a shared substring (:func:`_guarded`): the same answers, fewer
        scans. Why: a build asks once per chunk (11,000 on the checkout
        with docs, most matching no keyword: every keyword scanned), 0.18
        s of its CPU; ``static shift``, ``static-shift`` and ``staticshift``
        are one ``static`` scan where the text has none."""
        return tuple((wf, _guarded(keywords)) for wf, keywords in self.workflows)

    def workflow_for_path(self, rel: str) -> str | None:
        """Fallback workflow from the file's location (first fragment wins)."""
        for fragment, wf in self.workflow_paths:
            if fragment in rel:
                return wf
        return None

    def chunk_workflow(
        self, rel: str, symbol: str | None, text: str | None
    ) -> str | None:
        """The workflow of a chunk: keywords first, then the path map."""
        return self.infer_workflow(rel, symbol, text) or self.workflow_for_path(rel)

    def expand(self, query: str) -> list[str]:
        """Deterministic expansion terms implied by *query* (maybe empty).

        A trigger fires on a lowercased substring; terms already typed by
        the user or added by an earlier trigger are not repeated.
        """
        ql = (query or "").lower()
        present = set(_WORD.findall(ql))
        out: list[str] = []
        for trigger, terms in self.expansions:
            if trigger in ql:
                for t in terms:
                    if t not in present:
                        present.add(t)
                        out.append(t)
        return out

    def query_workflow(self, query: str, terms: list[str] | None = None) -> str | None:
        """The workflow a query is about: from its words, else its expansion
        (*terms*: ``expand(query)`` when the caller has it already)."""
        wf = self.infer_workflow(query)
        if wf is None:
            if terms is None:
                terms = self.expand(query)
            if terms:
                wf = self.infer_workflow(" ".join(terms))
        return wf


def _strs(data: dict, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    value = data.get(key, default)
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, str) for v in value
    ):
        raise ProfileError(f"profile key {key!r} must be a list of strings")
    return tuple(value)


def _pairs_of_lists(raw: object, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    out = []
    # unvalidated TOML: anything not a table or a list of pairs raises below
    items: Any = raw.items() if isinstance(raw, dict) else raw
    try:
        for name, values in items:
            if not isinstance(name, str) or not all(isinstance(v, str) for v in values):
                raise TypeError
            out.append((name, tuple(values)))
    except (TypeError, ValueError):
        raise ProfileError(
            f"profile key {key!r} must map names to lists of strings"
        ) from None
    return tuple(out)


def profile_from_dict(data: dict, source: str = "") -> Profile:
    """Validate a parsed TOML document into a :class:`Profile`."""
    if not isinstance(data.get("package"), str) or not data["package"]:
        raise ProfileError(f"profile {source or '?'}: 'package' is required")
    # ``name`` is only a label (logs, manifest): the package names it by default
    name = data.get("name", data["package"])
    if not isinstance(name, str) or not name:
        raise ProfileError(
            f"profile {source or '?'}: 'name' must be a non-empty string"
        )
    prio = data.get("priority", {})
    paths = data.get("workflow_paths", [])
    try:
        wf_paths = tuple((str(a), str(b)) for a, b in paths)
    except (TypeError, ValueError):
        raise ProfileError(
            "profile key 'workflow_paths' must be [fragment, workflow] pairs"
        ) from None
    return Profile(
        name=name,
        package=data["package"],
        distribution=str(data.get("distribution", "")),
        roots=_strs(data, "roots"),
        root_docs=_strs(data, "root_docs"),
        suffixes=_strs(data, "suffixes", (".py", ".rst", ".md")),
        excludes=_strs(data, "excludes"),
        test_globs=_strs(data, "test_globs", ("test_*.py", "conftest.py")),
        max_file_bytes=int(data.get("max_file_bytes", 1_000_000)),
        recipe_dir=str(data.get("recipe_dir", "assistant_recipes")),
        devsearch_roots=_strs(data, "devsearch_roots", tuple(data.get("roots", ()))),
        papers_dir=str(data.get("papers_dir", "docs/papers")),
        high_priority=_strs(prio, "high"),
        doc_priority=_strs(prio, "docs"),
        workflows=_pairs_of_lists(data.get("workflows", {}), "workflows"),
        identity_markers=_pairs_of_lists(
            data.get("identity_markers", {}), "identity_markers"
        ),
        workflow_paths=wf_paths,
        expansions=_pairs_of_lists(data.get("expansions", []), "expansions"),
        intents=_pairs_of_lists(data.get("intents", {}), "intents"),
        workflow_descriptors=_pairs_of_lists(
            data.get("workflow_descriptors", {}), "workflow_descriptors"
        ),
        clarify_question=str((data.get("routing") or {}).get("clarify_question", "")),
        source=source,
    )


def _guarded(keywords: tuple[str, ...]) -> tuple[str | tuple[str, ...], ...]:
    """*keywords* as checks for "is one of them in a text": a keyword, or
    ``(guard, *keywords)`` where *guard* (3 characters or more) is in each
    of those keywords, so a text without it holds none of them. Greedy:
    the substring shared by the most keywords (the longest of those) first,
    while one is shared by two or more. A guard that is itself a keyword
    stands for its whole group (the others contain it). Exact by
    construction: a group is tried only where its guard, part of every
    member, is in the text; the order of the checks does not matter (any
    keyword found gives the same workflow)."""
    left = list(dict.fromkeys(keywords))
    out: list[str | tuple[str, ...]] = []
    while True:
        # each substring's holders, in the order the scan first meets it (the
        # keywords in order, short substrings first): one pass over the
        # substrings, not one scan of every keyword per substring (1.5 ms of
        # the server's first query before; it is on the warm start's path)
        holders: dict[str, list[str]] = {}
        for k in left:
            for n in range(3, len(k) + 1):
                for i in range(len(k) - n + 1):
                    got = holders.setdefault(k[i : i + n], [])
                    if not got or got[-1] is not k:
                        got.append(k)
        best: tuple[str, list[str]] | None = None
        for g, members in holders.items():
            if len(members) >= 2 and (
                best is None or (len(members), len(g)) > (len(best[1]), len(best[0]))
            ):
                best = (g, members)
        if best is None:
            break
        g, members = best
        out.append(g if g in members else (g, *members))
        left = [k for k in left if k not in members]
    return (*out, *left)


def load_profile(name_or_path: str | Path | None = None) -> Profile:
    """Load a profile by bundled name (``"pycsamt"``) or by TOML file path."""
    ref = str(name_or_path or "pycsamt")
    path = Path(ref)
    if not (ref.endswith(".toml") or path.is_file()):
        path = PROFILE_DIR / f"{ref}.toml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in PROFILE_DIR.glob("*.toml")))
            raise ProfileError(
                f"unknown profile {ref!r} (bundled: {known}; or give a .toml path)"
            )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProfileError(f"profile file not found: {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"profile {path} is not valid TOML: {exc}") from None
    return profile_from_dict(data, source=str(path))
