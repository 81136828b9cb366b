"""Did-you-mean: real symbols of the package named like a hallucinated one.

:class:`_SuggestIndex` maps identifier tokens to every public symbol of a
:class:`~pycsamt_lsp.model.package.PackageModel`; the model builds it lazily
(:func:`suggest_index`, once) and drops it on every update.
"""

from __future__ import annotations

import difflib
import sys
import threading
import weakref
from array import array
from collections import defaultdict
from itertools import chain
from typing import TYPE_CHECKING

from pycsamt_lsp.corpus.testfiles import is_test_module
from pycsamt_lsp.model.facts import identifier_tokens

if TYPE_CHECKING:
    from pycsamt_lsp.model.package import PackageModel


def _stem(token: str) -> str:
    return token[:-1] if len(token) > 3 and token.endswith("s") else token


def _compact(dotted: str) -> str:
    """The leaf name without underscores, lower case (``EDI_file`` -> ``edifile``)."""
    return dotted.rpartition(".")[2].replace("_", "").lower()


def suggest_index(model: PackageModel, lock: threading.Lock) -> _SuggestIndex:
    """*model*'s suggestion index, built at most once however many threads ask.

    Why a lock: the first suggestions after a load often come from several
    editor threads at once (diagnostics of two buffers, a code action); each
    used to build its own index (0.15-0.17 CPU-s each on pyCSAMT, all under the
    GIL), so the first squiggle paid for N builds and the event loop competed
    with all of them. The first caller builds under *lock* (the model's own)
    while the others wait for it and reuse its index; once published, a
    reader takes no lock.
    """
    got = model._suggest_index
    if got is not None:
        return got
    with lock:
        got = model._suggest_index
        if got is None:
            got = _SuggestIndex(model)
            model._suggest_index = got
    return got


#: Below this a "suggestion" shares little more than a common word.
_MIN_SUGGEST_SCORE = 0.5


class _Table:
    """Token -> entries of some public names (the package-wide table, or
    the names of one module the package-wide table leaves out)."""

    __slots__ = ("by_token", "entries", "vocab_by_letter")

    def __init__(self) -> None:
        # dotted, distinct tokens (interned), is_module, static score part:
        # one small tuple per public symbol (11,500 on pyCSAMT), the leaf
        # name and its compact spelling derived from dotted when scored
        self.entries: list[tuple[str, tuple[str, ...], bool, float]] = []
        self.by_token: dict[str, array[int]] = defaultdict(lambda: array("i"))
        self.vocab_by_letter: dict[str, list[str]] = defaultdict(list)

    def add(self, dotted: str, toks: tuple[str, ...], is_module: bool, static: float):
        idx = len(self.entries)
        self.entries.append((dotted, toks, is_module, static))
        for t in toks:
            self.by_token[t].append(idx)

    def finish(self) -> _Table:
        for t in self.by_token:
            self.vocab_by_letter[t[0]].append(t)
        return self


class _SuggestIndex:
    """Token -> symbols map over every public name, for fast suggestions.

    Scoring (identifier parts, not characters, carry the meaning): coverage
    of the query's parts (an acronym of the query, ``ss`` for
    ``static_shift``, covers them all), precision over the candidate's parts,
    a small bonus for exact/prefix names and for package-level (re-exported)
    paths, a penalty per nesting level, and a character ratio for the final
    order of the shortlist.

    Equal scores are ordered by dotted name, both where the shortlist is cut
    and in the final order, so a typo gets the same suggestions in every
    process: the order names are first met follows a set of tokens, i.e.
    ``PYTHONHASHSEED`` (tests/test_suggest_hashseed.py).

    A module the model's ``suggest_demote`` predicate demotes (the server's:
    a module the index leaves out, UI glue and the package's own RAG
    internals) is ranked last by its module name, and its names are left out
    of the package-wide table unread: the profile judges those modules not
    worth indexing, so a did-you-mean anywhere in the package never offers
    them, and a build need not parse them (``model.deferred``). A query
    *inside* such a module (``pkg.app.window.MainWindw``, or ``within`` it)
    reads that one module's names (parsing it if deferred) and ranks them
    undemoted: the user named that module (demoted, as they were when the
    package-wide table held them, no typo of them scored 0.5: none of 158
    sampled one-letter typos inside the sdist's UI glue got a suggestion
    from its own module).
    """

    def __init__(self, model: PackageModel) -> None:
        # A proxy, not a reference: the model owns this index, and a cycle
        # would keep every replaced model alive until a full collection.
        self.model = weakref.proxy(model)
        demote = model.suggest_demote
        mods = model.modules
        self._demote = demote
        #: modules whose names the package-wide table leaves out (demoted)
        self.left_out: frozenset[str] = frozenset(
            () if demote is None else (m for m, i in mods.items() if demote(i.rel))
        )
        self._local: dict[str, _Table] = {}
        self._lock = threading.Lock()
        table = _Table()
        seen: set[str] = set()
        # a test module's names are never suggested: not read (not parsed),
        # nor a demoted module's (its module name is)
        for dotted in model.all_symbols(
            skip=is_test_module, names_of=lambda m: m not in self.left_out
        ):
            if dotted in seen or is_test_module(dotted):
                continue
            seen.add(dotted)
            self._add(table, dotted, mods)
        self.main = table.finish()

    def _add(
        self, table: _Table, dotted: str, mods: dict, *, demote: bool = True
    ) -> None:
        parent, _, name = dotted.rpartition(".")
        is_module = dotted in mods
        intern = sys.intern
        toks = tuple(dict.fromkeys(intern(_stem(t)) for t in identifier_tokens(name)))
        if not toks:
            return
        pinfo = mods.get(parent)
        static = -0.03 * max(0, dotted.count(".") - 1)
        if pinfo is not None and pinfo.is_package:
            static += 0.08
        home = mods.get(dotted) if is_module else pinfo
        pred = self._demote if demote else None
        if pred is not None and home is not None and pred(home.rel):
            static -= 0.5
        table.add(dotted, toks, is_module, static)

    def _tables(self, parent: str, within: str | None) -> list[_Table]:
        """The package-wide table, and the names of the left-out modules the
        query is inside (its dotted parent, or *within*)."""
        inside = [m for m in dict.fromkeys((parent, within)) if m in self.left_out]
        if not inside:
            return [self.main]
        return [self.main, *(self._module_table(m) for m in inside)]

    def _module_table(self, mod: str) -> _Table:
        """The names of the left-out module *mod*, scored as the
        package-wide table scores names but not demoted (built once;
        reading them may parse the module)."""
        got = self._local.get(mod)
        if got is not None:
            return got
        with self._lock:
            got = self._local.get(mod)
            if got is None:
                model = self.model
                mods = model.modules
                got = _Table()
                if not is_test_module(mod):
                    for dotted in dict.fromkeys(model.module_symbols(mod)):
                        if not is_test_module(dotted):
                            # asked inside it: its names are not demoted
                            self._add(got, dotted, mods, demote=False)
                self._local[mod] = got.finish()
        return got

    def query(
        self, text: str, k: int, *, kind: str | None, within: str | None
    ) -> list[str]:
        parent, _, name = text.rpartition(".")
        raw = identifier_tokens(name)
        qset = {_stem(t) for t in raw}
        if not qset:
            return []
        tables = self._tables(parent, within)
        acronym = "".join(t[0] for t in raw) if len(raw) >= 2 else None
        qcompact = name.replace("_", "").lower()
        lookup = set(qset)
        for t in qset:
            if len(t) >= 4 and not any(t in tb.by_token for tb in tables):
                vocab = tables[0].vocab_by_letter.get(t[0], [])
                if len(tables) > 1:
                    vocab = list(
                        dict.fromkeys(
                            chain.from_iterable(
                                tb.vocab_by_letter.get(t[0], ()) for tb in tables
                            )
                        )
                    )
                lookup.update(difflib.get_close_matches(t, vocab, n=3, cutoff=0.8))
        if acronym and any(acronym in tb.by_token for tb in tables):
            lookup.add(acronym)
        scores: dict[str, float] = {}  # by dotted: one entry a name in all tables
        acronym_only: set[str] = set()
        # sorted, not set order: which table's entry scores a name listed in
        # two (a left-out module's own table) must not depend on the hash seed
        for t in sorted(lookup):
            for tb in tables:
                for i in tb.by_token.get(t, ()):
                    dotted, toks, is_module, static = tb.entries[i]
                    if dotted in scores:
                        continue
                    if kind == "module" and not is_module:
                        continue
                    if within and not dotted.startswith(within + "."):
                        continue
                    exact = len(qset.intersection(toks))
                    matched = exact + 0.8 * len(
                        {u for u in toks if u in lookup and u != acronym} - qset
                    )
                    if acronym and acronym in toks and matched < len(qset):
                        cover, prec = 0.5, min(1.0, (matched + 1) / len(toks))
                        if not matched:
                            acronym_only.add(dotted)
                    else:
                        cover, prec = (
                            min(1.0, matched / len(qset)),
                            min(1.0, matched / len(toks)),
                        )
                    score = 0.6 * cover + 0.25 * prec + static
                    compact = _compact(dotted)
                    if compact == qcompact:
                        score += 0.15
                    elif compact.startswith(qcompact):
                        score += 0.05
                    if parent and dotted.startswith(parent + "."):
                        score += 0.05
                    scores[dotted] = score
        if not scores:
            return []
        # ties broken by name: the shortlist's cut used to fall among equal
        # scores in the order the names were first met, i.e. the set order
        # of ``lookup``, so the same typo got other suggestions in another
        # process (PYTHONHASHSEED)
        top = sorted(scores, key=lambda d: (-scores[d], d))[: max(30, 8 * k)]
        words = [t for t in raw if len(t) > 2] or raw
        ranked = []
        for dotted in top:
            compact = _compact(dotted)
            # Evidence from the docstring: "static shift" in the summary of
            # ``emtools.ss`` is what makes the acronym match meaningful.
            doc = (self.model.doc(dotted) or "")[:400].lower()
            evidence = bool(doc) and all(w in doc for w in words)
            if dotted in acronym_only and not evidence:
                continue
            final = (
                scores[dotted]
                + 0.15 * difflib.SequenceMatcher(None, qcompact, compact).ratio()
            )
            final += 0.1 if evidence else 0.0
            if final >= _MIN_SUGGEST_SCORE:
                ranked.append((final, dotted))
        ranked.sort(key=lambda x: (-x[0], x[1]))
        out: list[str] = []
        canon: set[str] = set()
        for _, dotted in ranked:
            res = self.model.resolve(dotted)
            if not res.exists:
                continue
            key = res.target or dotted
            if key in canon:
                continue
            canon.add(key)
            out.append(dotted)
            if len(out) >= 3 * k:
                break
        if kind != "module":
            # A module whose own definitions are suggested too is a worse fix
            # than the definition (``agents.static_shift`` vs ``StaticShiftAgent``).
            mods = self.model.modules
            homes = {
                (self.model.resolve(d).target or d).rpartition(".")[0]
                for d in out
                if d not in mods
            }
            out = [d for d in out if d not in mods or d not in homes]
        return out[:k]
