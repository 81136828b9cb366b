"""Ranking stages after the seed's score composition (issue 14).

The seed's model (DESIGN 5, :func:`pycsamt_lsp.search.retrieval.search`)
computes ``s(c)`` exactly; these stages then re-weigh the candidates. Each is
named, documented and switched off by putting its name in ``disable`` (the
eval's ablation does exactly that), and with all of them off the ranking is
the seed's, bit for bit.

Why they exist: on questions nobody tuned on, prose about a symbol (recipes,
doc sections, the module docstring) ranks above the symbol that answers, and
the symbol's own name counts no more than any word of its body. The stages:

``symbol_specific``
    The seed's symbol boost fires when a chunk's leaf name (3+ characters)
    occurs anywhere in the query text, so "map", "plot" or "eta" (in "beta")
    lift every method of that name. This stage keeps the boost only where the
    query typed the leaf as an identifier (a whole word with an underscore, a
    digit or inner capitals: ``estimate_ss_ama``, ``StaticShiftAgent``) and
    takes it back elsewhere (runs inside the seed's composition, at the
    boost, since it undoes exactly that factor).
``field_bm25``
    A second BM25 over the *name field* of every code chunk (the leaf name and
    its enclosing class, split like identifiers). A query word that names the
    symbol counts more than the same word deep in a docstring. The field
    score is added to ``L(c)`` with weight :data:`FIELD_WEIGHT`, under the
    chunk's seed multipliers.
``name_cover``
    Off by default (``+name_cover``). Scales each code chunk's name-field
    score by ``(m / n) ** NAME_COVER_POWER``: *m* of the query's *n*
    distinct indexed words are in the chunk's name. One plain word of a
    long question that happens to be a name part (``put``, ``far`` in
    ``all_far_field``) then counts less than a name that spells several of
    the question's words. Leave-one-fold-out on the tuning split raised
    hit@10 and wf@10 on both corpora but lowered MRR@10 on two of six
    held-out folds, so it ships off (docs/ranking.md).
``fold``
    The query words' other grammatical number (``points`` -> ``point``,
    ``station`` -> ``stations``), where the index knows it and the query
    does not hold it, scored with the body BM25 and the name field and added
    to ``L(c)`` with weight ``FOLD_WEIGHT`` (the seed's expansion weight)
    under the seed multipliers, for the candidates only
    (``search/fold.py``).
``field_head``
    A second field of code chunks, the *head*: parameter names and the
    docstring's first sentence, scored with the body index's idf and added
    to ``L(c)`` with weight ``HEAD_WEIGHT`` under the seed multipliers, for
    the ``HEAD_POOL`` best code candidates (``search/head.py``).
``head_wide``
    Off by default (``+head_wide``). ``field_head`` scores the
    :data:`HEAD_POOL_WIDE` best code candidates instead of ``HEAD_POOL``:
    a question in plain words often matches the answer's docstring summary
    while its body and name match less than those of 20 other symbols, so
    with the narrow pool the head never speaks for it.
``inherit``
    A code chunk inherits evidence from the prose that names it: each of the
    :data:`INHERIT_TOP` best-scored recipes / doc sections passes
    :data:`INHERIT_SHARE` of its score to the code chunks it names (dotted
    references, or identifiers unique in the package); a chunk keeps the
    largest share it is given. So a how-to led by a recipe continues with the
    symbols that recipe names.
``module_inherit``
    The same from a module's docstring to the module's own top-level symbols
    (:data:`MODULE_SHARE`, the :data:`INHERIT_MODULES` best modules): a
    question that matches what a module is about lifts the module's
    functions, not only its docstring.
``code_first``
    Prose never buries code: on a how-to question the best prose chunk keeps
    its score (a recipe may lead), every other prose chunk is scaled by
    :data:`PROSE_FACTOR`; on any other question all prose is. A module
    docstring scored above its best own symbol goes just below it
    (:data:`MODULE_FACTOR` of that symbol's score): the module is context,
    the symbol is what the user calls.
``dedup``
    Near-identical chunks (the same body in sibling classes, a copied
    function, a section restating a docstring) do not fill the first page:
    among the ``DEDUP_DEPTH`` best, a copy of a better one moves below the
    last chunk kept there (``search/dedup.py``).
``workflow_keep``
    When the query has a workflow and none of the best :data:`KEEP_DEPTH`
    chunks carries it, the best-scored chunk of that workflow is lifted to
    just above the :data:`KEEP_DEPTH`-th score; likewise the best prose
    chunk that has a workflow when no such prose is left among them (both
    lifted: they take the last two places). The stages above promote code,
    which seldom carries a workflow, and must not push the workflow's own
    guidance out of the first page. It acts on scores, not on the cut at
    *k*, so a longer list starts with the shorter one.
``file_cap``
    The per-file cap counts code and prose apart: one file contributes at
    most ``per_file`` prose chunks but ``per_file +`` :data:`CODE_EXTRA`
    code chunks, since sibling functions of one module are often all
    relevant, while sections of one long document rarely are.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from pycsamt_lsp.index.snapshot import ChunkTable, Snapshot
from pycsamt_lsp.index.tokenize import tokenize
from pycsamt_lsp.search.dedup import BodyCache, demote_copies
from pycsamt_lsp.search.fields import CODE_KINDS, NameField
from pycsamt_lsp.search.fold import FOLD_WEIGHT, FoldWeights, number_variants
from pycsamt_lsp.search.head import HEAD_POOL, HEAD_WEIGHT, HeadCache, head_scores
from pycsamt_lsp.search.slotmap import LazyGroups, pack_groups, unpack_groups

__all__ = [
    "FIELD_WEIGHT",
    "FOLD_WEIGHT",
    "HEAD_POOL_WIDE",
    "INHERIT_SHARE",
    "MODULE_FACTOR",
    "MODULE_SHARE",
    "NAME_COVER_POWER",
    "OFF_BY_DEFAULT",
    "PROSE_FACTOR",
    "STAGES",
    "StageAux",
    "apply_stages",
    "diversify",
    "is_howto",
]

#: Stages after the seed's composition, in the order they run.
STAGES = (
    "symbol_specific",
    "field_bm25",
    "name_cover",
    "fold",
    "field_head",
    "head_wide",
    "inherit",
    "module_inherit",
    "code_first",
    "dedup",
    "workflow_keep",
    "file_cap",
)
#: Stages that run only when asked for: ``disable`` holding ``"+name"``
#: switches one on (the eval's ablation reports them so, as ``+name`` rows).
OFF_BY_DEFAULT: frozenset[str] = frozenset({"dedup", "fold", "head_wide", "name_cover"})
FIELD_WEIGHT = 1.0
#: name_cover: the name-field score times (covered / query words) ** this.
#: Session 6 (helper F), 3 folds x 2 corpora of suites/tuning: 0.25 / 0.5 /
#: 1.0 gave all-tuning MRR@10 0.810 / 0.810 / 0.802 on the sdist and
#: 0.819 / 0.820 / 0.816 on the checkout (default 0.809 / 0.816).
NAME_COVER_POWER = 0.5
#: head_wide: field_head's pool when the stage is on. Session 6 (helper F),
#: with +fold +name_cover, 40 / 60 / 100 gave the same held-out MRR@10 and
#: hit@10 on all six folds (wf@10 0.930 / 0.930 / 0.922 on the sdist).
HEAD_POOL_WIDE = 40
INHERIT_SHARE = 0.15
#: How many prose candidates pass their evidence on.
INHERIT_TOP = 5
MODULE_SHARE = 0.35
MODULE_FACTOR = 0.85
#: How many module docstrings (the best scored) pass evidence to their symbols.
INHERIT_MODULES = 8
#: The stages re-weigh this many of the best seed candidates (more when asked
#: for a deeper list).
STAGE_POOL = 300
#: the stages that re-weigh the pool (the others act on the seed's boost or
#: on the final scores)
_RESCORE = (
    "field_bm25",
    "name_cover",
    "fold",
    "field_head",
    "head_wide",
    "inherit",
    "module_inherit",
    "code_first",
)
#: workflow_keep: the query's workflow appears among this many best chunks.
KEEP_DEPTH = 10
PROSE_FACTOR = 0.6
#: file_cap: how many places more than ``per_file`` the code chunks of one
#: file may take (prose keeps ``per_file``). Session 5 (helper G), tuning
#: files, hit@10 with 1 / 2 / 3 / unbounded: sdist fresh_tuning 0.900 /
#: 0.917 / 0.917 / 0.917, dense_tuning 0.924 / 0.929 / 0.929 / 0.929;
#: checkout 0.881 / 0.915 / ... and 0.933 / 0.939 / ...; no question lower
#: at 2, bundled suites 1.0. A question about one module often has its
#: answer as the module's fourth function (``validate_payload`` after
#: ``TelemetryPayload``, ``schema_for``, ``parse_payload``).
CODE_EXTRA = 2
PROSE_KINDS = frozenset({"recipe", "doc_section"})
_HOWTO = re.compile(
    r"^\s*(how\b|what (are the )?steps\b|walk me through\b|steps? (to|for)\b|"
    r"guide\b|workflow\b|procedure\b|i (want|need) to\b)",
    re.I,
)
#: identifiers and dotted names in prose; possessive, so no backtracking
_NAME = re.compile(r"[A-Za-z_][\w.]*+")


_QUERY_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: an identifier typed as code: an underscore or digit anywhere, or a capital
#: after its first character (the words are ASCII, see _QUERY_IDENT)
_TYPED = re.compile(r"[_0-9]|.[A-Z]")
_CODE_CHAR = re.compile(r"[_0-9A-Z]")


def symbol_specific(
    query: str,
    matches: Sequence[tuple[str, np.ndarray]],
    boosted: np.ndarray,
    idx: np.ndarray,
    s: np.ndarray,
    boost: float,
    boosted_c: np.ndarray | None = None,
    *,
    inplace: bool = False,
) -> np.ndarray:
    """*s* with the seed's symbol boost taken back where no match is specific.

    *matches* are ``(leaf, slots)`` pairs of the boost, *boosted* its mask
    over all slots (*boosted_c*: the same at the candidates, when the caller
    has it); a leaf is specific when the query has it as a whole identifier
    that is plainly code (underscore, digit or inner capital). *inplace*:
    divide *s* itself (a caller's own array), not a copy.
    """
    specific = (
        {w.lower() for w in _QUERY_IDENT.findall(query) if _TYPED.search(w)}
        if _CODE_CHAR.search(query)
        else ()  # no underscore, digit or capital: no word is typed as code
    )
    undo = boosted[idx] if boosted_c is None else boosted_c
    kept = [slots for leaf, slots in matches if leaf in specific]
    if kept:
        keep = np.zeros(len(boosted), bool)
        keep[np.concatenate(kept)] = True
        undo = undo & ~keep[idx]
    if not undo.any():
        return s
    if inplace:  # the same division as np.where(undo, s / boost, s)
        return np.divide(s, boost, out=s, where=undo)
    return np.where(undo, s / boost, s)


def is_howto(query: str) -> bool:
    """A how-to question: a recipe may answer it first (then the code)."""
    return bool(_HOWTO.search(query))


@dataclass(eq=False)
class StageAux:
    """Per-snapshot arrays the stages need, derived from the chunk table.

    The name field comes from the table's symbol column (no chunk text is
    read, so a warm start stays as fast as before). What a prose chunk names
    needs its text: :meth:`named_by` reads it on first use and keeps it for
    the snapshot's lifetime (and, for the slots a save leaves alone, for the
    snapshots after it).

    A save updates it (:meth:`updated`) instead of rebuilding it: the masks,
    the module tree and the name field change only at the slots the update
    removed or appended, so the cost follows the saved file, not the corpus.
    """

    names: NameField
    code: np.ndarray  # bool: a code chunk (symbol / method)
    prose: np.ndarray  # bool: recipe / doc section
    module_doc: np.ndarray  # bool
    workflow: np.ndarray  # bool: the chunk has a workflow
    module_children: Mapping[int, np.ndarray]  # module_doc slot -> symbol slots
    #: the inverse: slot -> the module_doc slot it is a child of, or -1
    mod_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    #: module name -> its live module_doc slots / its live top-level symbol
    #: slots (ascending); what an update needs to redo ``module_children``
    mod_slots: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    kids: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    _names: _Resolver | None = None
    _named: dict[int, np.ndarray] = field(default_factory=dict)
    #: prose slot -> the names its text mentions (a slot's text never changes,
    #: so this is shared by the snapshots that keep the slot)
    _mentions: dict[int, frozenset[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: per-slot caches of stages field_head and dedup (carried by updates)
    heads: HeadCache = field(default_factory=HeadCache)
    bodies: BodyCache = field(default_factory=BodyCache)
    #: stage fold: query word -> its other number(s) this snapshot's
    #: vocabulary knows (never carried to an update: a save adds words)
    folds: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: stage fold: the folded words' body weights (this snapshot's idf and
    #: lengths, so never carried to an update either)
    fold_weights: FoldWeights = field(default_factory=FoldWeights)

    @classmethod
    def of(cls, snap: Snapshot, names: NameField | None = None) -> StageAux:
        """The stage arrays of *snap*: kind masks over live slots, module docs by
        module name and their code children, and the name field (*names*
        when given: the one persisted for this very snapshot; warm start).
        """
        t = snap.table
        alive = _alive(snap)
        n = len(t)
        kinds = np.array(t.kinds, object) if n else np.zeros(0, object)
        code, prose, module_doc = _kind_masks(kinds, alive)
        mod_slots: dict[str, list[int]] = {}
        for slot in np.flatnonzero(module_doc).tolist():
            if name := t.symbols[slot]:
                mod_slots.setdefault(name, []).append(slot)
        kids: dict[str, list[int]] = {}
        for slot in np.flatnonzero(code).tolist():
            sym = t.symbols[slot]
            if sym and t.kinds[slot] == "python_symbol":
                kids.setdefault(sym.rpartition(".")[0], []).append(slot)
        mods = {k: tuple(v) for k, v in mod_slots.items()}
        children = {k: tuple(v) for k, v in kids.items()}
        module_children = _children(mods, children, mods)
        mod_of = np.full(n, -1, np.int64)
        for parent, slots in module_children.items():
            mod_of[slots] = parent
        return cls(
            names=names
            if names is not None
            else NameField.build(t.symbols, t.kinds, alive),
            code=code,
            prose=prose,
            module_doc=module_doc,
            workflow=np.array([w is not None for w in t.workflows], bool) & alive,
            module_children=module_children,
            mod_of=mod_of,
            alive=alive,
            mod_slots=mods,
            kids=children,
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays :meth:`of` derives from the chunk table, flat (not the
        name field, saved on its own, nor the caches): :meth:`from_arrays`
        makes the same masks, module tree and maps again. ``ValueError``
        when a module name cannot be packed."""
        out: dict[str, np.ndarray] = {
            "code": self.code,
            "prose": self.prose,
            "module_doc": self.module_doc,
            "workflow": self.workflow,
            "mod_of": self.mod_of,
            "alive": self.alive,
        }
        out.update(pack_groups("children_", self.module_children))
        out.update(pack_groups("mods_", self.mod_slots))
        out.update(pack_groups("kids_", self.kids))
        return out

    @classmethod
    def from_arrays(
        cls, snap: Snapshot, arrays: Mapping[str, np.ndarray], names: NameField | None
    ) -> StageAux:
        """The aux :meth:`to_arrays` saved for *snap* (warm start: the same
        arrays :meth:`of` builds, without grouping the table again); *names*
        as for :meth:`of`. ``ValueError`` (or ``KeyError``) when the arrays
        do not fit *snap*."""
        t = snap.table
        n = len(t)
        alive = _alive(snap)
        masks = [arrays[k] for k in ("code", "prose", "module_doc", "workflow")]
        mod_of = arrays["mod_of"]
        if (
            any(m.dtype != np.bool_ or m.shape != (n,) for m in masks)
            or mod_of.dtype != np.int64
            or mod_of.shape != (n,)
            or not np.array_equal(arrays["alive"], alive)
        ):
            raise ValueError("stage arrays do not fit the snapshot")
        parents, groups = unpack_groups("children_", arrays, n, int_keys=True)
        flat = arrays["children_flat"]
        ptr = arrays["children_ptr"].tolist()
        raw = arrays["children_keys"]
        if len(raw) and (int(raw.min()) < 0 or int(raw.max()) >= n):
            raise ValueError("stage arrays do not fit the snapshot")
        # views of one flat array: the slot arrays _children made, same values
        children = {
            p: flat[a:b] for p, a, b in zip(parents, ptr[:-1], ptr[1:], strict=True)
        }
        del groups
        # read by a save only (:meth:`updated`): unpacked then
        mods = LazyGroups("mods_", arrays, n)
        kids = LazyGroups("kids_", arrays, n)
        code, prose, module_doc, workflow = masks
        return cls(
            names=names
            if names is not None
            else NameField.build(t.symbols, t.kinds, alive),
            code=code,
            prose=prose,
            module_doc=module_doc,
            workflow=workflow,
            module_children=children,
            mod_of=mod_of,
            alive=alive,
            mod_slots=mods,
            kids=kids,
        )

    def updated(self, snap: Snapshot) -> StageAux:
        """The stage arrays of *snap*, an update of this aux's snapshot.

        An update only appends slots and removes others (``Snapshot.updated``):
        the result equals :meth:`of` of *snap*, at the cost of the changed
        slots. The prose-name resolver, when built, is updated too, so the
        first query after a save does not rebuild it.
        """
        t = snap.table
        n, n_old = len(t), len(self.alive)
        alive = _alive(snap)
        drop = np.flatnonzero(self.alive & ~alive[:n_old])
        new = np.arange(n_old, n)
        kinds = np.array(t.kinds[n_old:], object)
        masks = _kind_masks(kinds, alive[n_old:])
        code, prose, module_doc = (
            _grown(old, add, drop)
            for old, add in zip(
                (self.code, self.prose, self.module_doc), masks, strict=True
            )
        )
        workflow = _grown(
            self.workflow,
            np.array([w is not None for w in t.workflows[n_old:]], bool)
            & alive[n_old:],
            drop,
        )
        # the module tree: only the names of removed or added slots move
        mods = dict(self.mod_slots)
        kids = dict(self.kids)
        gone = set(drop.tolist())
        moved: dict[int, dict[str, list[int]]] = {0: {}, 1: {}}  # mods, kids
        for slot in drop.tolist():
            sym = t.symbols[slot]
            if sym and self.module_doc[slot]:
                moved[0].setdefault(sym, [])
            elif sym and self.code[slot] and t.kinds[slot] == "python_symbol":
                moved[1].setdefault(sym.rpartition(".")[0], [])
        for slot in new.tolist():
            sym = t.symbols[slot]
            if sym and module_doc[slot]:
                moved[0].setdefault(sym, []).append(slot)
            elif sym and code[slot] and t.kinds[slot] == "python_symbol":
                moved[1].setdefault(sym.rpartition(".")[0], []).append(slot)
        for group, changes in ((mods, moved[0]), (kids, moved[1])):
            for key, added in changes.items():
                rest = [x for x in group.get(key, ()) if x not in gone] + added
                if rest:
                    group[key] = tuple(rest)
                else:
                    group.pop(key, None)
        touched = moved[0].keys() | moved[1].keys()
        children = dict(self.module_children)
        mod_of = np.concatenate((self.mod_of, np.full(n - n_old, -1, np.int64)))
        for name in touched:
            for slot in self.mod_slots.get(name, ()):
                children.pop(slot, None)
            mod_of[list(self.kids.get(name, ()))] = -1
        fresh = _children(mods, kids, touched)
        for parent, slots in fresh.items():
            mod_of[slots] = parent
        children.update(fresh)
        resolver = self._names
        out = StageAux(
            names=self.names.updated(t.symbols, t.kinds, drop.tolist(), n_old),
            code=code,
            prose=prose,
            module_doc=module_doc,
            workflow=workflow,
            module_children=children,
            mod_of=mod_of,
            alive=alive,
            mod_slots=mods,
            kids=kids,
            _names=None
            if resolver is None
            else resolver.updated(t, drop, new[masks[0]], self.code),
            _mentions={
                k: v for k, v in self._mentions.items() if k < n_old and alive[k]
            },
            heads=self.heads.carried(alive, n_old),
            bodies=self.bodies.carried(alive, n_old),
        )
        return out

    def named_by(self, snap: Snapshot, slot: int) -> np.ndarray:
        """The code slots prose chunk *slot* names (read once, then kept).

        Per slot and on first use: only the few prose chunks that rank near
        the top of some query are ever read, so neither a warm start nor the
        first query pays for reading every document.
        """
        got = self._named.get(slot)
        if got is None:
            if self._names is None:
                with self._lock:
                    if self._names is None:
                        self._names = _Resolver.of(snap, self.code)
            names = self._mentions.get(slot)
            if names is None:
                names = self._mentions[slot] = _mentions(snap, slot)
            got = self._names.named_in(names)
            self._named[slot] = got  # one dict store: safe for concurrent readers
        return got


def _alive(snap: Snapshot) -> np.ndarray:
    """The table's live slots (slots an update removed stay in the table and
    must name nothing)."""
    n = len(snap.table)
    alive = np.zeros(n, bool)
    alive[: len(snap.bm25.alive)] = snap.bm25.alive[:n]
    return alive


def _kind_masks(
    kinds: np.ndarray, alive: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(code, prose, module_doc)`` masks of the *kinds* (object array)."""
    if not len(kinds):
        return np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, bool)
    return (
        np.isin(kinds, list(CODE_KINDS)) & alive,
        np.isin(kinds, list(PROSE_KINDS)) & alive,
        (kinds == "module_doc") & alive,
    )


def _grown(old: np.ndarray, add: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """*old* with the *drop* slots cleared and *add* appended (a new array)."""
    out = np.concatenate((old, add))
    out[drop] = False
    return out


def _children(
    mods: Mapping[str, tuple[int, ...]],
    kids: Mapping[str, tuple[int, ...]],
    names: Iterable[str],
) -> dict[int, np.ndarray]:
    """``module_doc slot -> its symbols' slots`` for the module *names*.

    A module name with several docstring slots (two files of one module)
    is the last slot's, as a scan in slot order gives it.
    """
    out: dict[int, np.ndarray] = {}
    for name in names:
        slots, children = mods.get(name), kids.get(name)
        if slots and children:
            out[max(slots)] = np.array(children, np.int64)
    return out


def _mentions(snap: Snapshot, slot: int) -> frozenset[str]:
    """The identifiers and dotted names chunk *slot*'s text mentions."""
    try:
        text = snap.table.get(slot).text
    except (KeyError, OSError, ValueError):
        return frozenset()
    # map(str.rstrip, names, repeat(".")): the genexpr's strips, in C
    return frozenset(map(str.rstrip, _NAME.findall(text), repeat(".")))


class _Resolver:
    """Names in prose -> code slots.

    A dotted reference names the symbol it spells, or the symbol of that
    leaf whose module lies under the reference's module (a re-export such as
    ``pycsamt.emtools.plot_strike_rose``). A bare identifier names a symbol
    only when it is specific (6+ characters with an underscore or capitals)
    and no other top-level symbol has that leaf.
    """

    def __init__(
        self,
        exact: dict[str, list[int]],
        by_leaf: dict[str, list[int]],
        symbols: list,
    ) -> None:
        self.exact = exact
        self.by_leaf = by_leaf
        self.symbols = symbols
        self.resolved: dict[str, tuple[int, ...]] = {}

    @classmethod
    def of(cls, snap: Snapshot, code: np.ndarray) -> _Resolver:
        t = snap.table
        by_leaf: dict[str, list[int]] = {}
        exact: dict[str, list[int]] = {}
        for slot in np.flatnonzero(code).tolist():
            sym = t.symbols[slot]
            if sym:
                exact.setdefault(sym, []).append(slot)
                if t.kinds[slot] == "python_symbol":
                    by_leaf.setdefault(sym.rsplit(".", 1)[-1], []).append(slot)
        return cls(exact, by_leaf, t.symbols)

    def updated(
        self, t: ChunkTable, drop: np.ndarray, new: np.ndarray, code: np.ndarray
    ) -> _Resolver:
        """This resolver without the code slots of *drop* (*code* is the old
        code mask) and with the code slots *new* of table *t*: equal to
        :meth:`of` the updated snapshot, lists in slot order as there."""
        exact = dict(self.exact)
        by_leaf = dict(self.by_leaf)
        for slot in drop.tolist():
            sym = t.symbols[slot]
            if not (code[slot] and sym):
                continue
            _without(exact, sym, slot)
            if t.kinds[slot] == "python_symbol":
                _without(by_leaf, sym.rsplit(".", 1)[-1], slot)
        for slot in new.tolist():
            sym = t.symbols[slot]
            if sym:
                exact[sym] = [*exact.get(sym, ()), slot]
                if t.kinds[slot] == "python_symbol":
                    leaf = sym.rsplit(".", 1)[-1]
                    by_leaf[leaf] = [*by_leaf.get(leaf, ()), slot]
        return _Resolver(exact, by_leaf, t.symbols)

    def resolve(self, name: str) -> tuple[int, ...]:
        got = self.resolved.get(name)
        if got is not None:
            return got
        if "." not in name:
            cands = self.by_leaf.get(name)
            specific = len(name) >= 6 and ("_" in name or not name.islower())
            got = tuple(cands) if cands and len(cands) == 1 and specific else ()
        elif name in self.exact:
            got = tuple(self.exact[name])
        else:
            mod, _, leaf = name.rpartition(".")
            got = tuple(
                slot
                for slot in self.by_leaf.get(leaf, ())
                if (self.symbols[slot] + ".").startswith(mod + ".")
            )
        self.resolved[name] = got
        return got

    def named_in(self, names: Iterable[str]) -> np.ndarray:
        named: set[int] = set()
        known = self.resolved  # most names of a text resolved before (to ())
        for name in names:
            got = known.get(name)
            if got is None:
                got = self.resolve(name)
            if got:
                named.update(got)
        return np.array(sorted(named), np.int64)


def _without(group: dict[str, list[int]], key: str, slot: int) -> None:
    """*group* with *slot* taken out of ``group[key]`` (a new list; an empty
    one is removed)."""
    rest = [x for x in group.get(key, ()) if x != slot]
    if rest:
        group[key] = rest
    else:
        group.pop(key, None)


def apply_stages(
    snap: Snapshot,
    st: StageAux,
    query: str,
    idx: np.ndarray,
    base: np.ndarray,
    s: np.ndarray,
    disable: Collection[str],
    depth: int = 0,
    in_workflow: np.ndarray | None = None,
    tokens: Sequence[str] | None = None,
) -> np.ndarray:
    """The candidates' scores after every enabled stage (*s* is the seed's).

    *idx* are the candidate slots (sorted), *base* their ``L(c)`` and *s*
    their seed score; returns a new score vector aligned with *idx*. The
    stages re-weigh the best :data:`STAGE_POOL` seed candidates (at least
    *depth*); the rest keep their seed score, scaled like prose when they are
    prose, so nothing outside the pool can overtake what the stages demoted.
    *in_workflow* (aligned with *idx*) marks the chunks of the query's
    workflow, for ``workflow_keep``; *tokens* are the query's (tokenized
    again when not given).

    Per query the cost is numpy calls on the candidates (a few per stage),
    not Python work per candidate: each candidate column is gathered once.
    """
    if not len(idx):
        return s
    if OFF_BY_DEFAULT:  # "+name" in *disable* switches such a stage on
        off = OFF_BY_DEFAULT.difference(x[1:] for x in disable if x[:1] == "+")
        if off:
            disable = off.union(disable)
    on = [x for x in _RESCORE if x not in disable]
    prose = st.prose[idx]
    out = s
    if on:
        toks = tokenize(query) if tokens is None else tokens
        out = _rescore(snap, st, query, toks, idx, base, s, on, depth, prose)
    if "dedup" not in disable:
        out = demote_copies(snap, st.bodies, idx, out)
    if "workflow_keep" not in disable:
        guides = prose & st.workflow[idx]
        out = _keep_one(out, idx, snap.table.ids, in_workflow, guides)
    return out


#: :func:`kth_largest` samples first from this many values (below, the extra numpy
#: calls cost more than the partition they shorten)
_SAMPLED_FROM = 1024


def kth_largest(s: np.ndarray, n: int) -> float:
    """The *n*-th largest of *s* (``len(s) >= n``), by one partition.

    On a long *s* the partition runs on the values at or above the *n*-th
    largest of a strided sample (at least *n* values are at or above it, so
    the *n*-th largest is among them): two short partitions and a compare
    cost less than one over every candidate. The same value either way.
    """
    if n > 0 and len(s) >= max(32 * n, _SAMPLED_FROM):
        step = int((len(s) / n) ** 0.5)  # balances the two partitions
        sample = s[::step].copy()  # at least sqrt(len(s) n) >= n values
        sample.partition(len(sample) - n)
        s = s[s >= sample[len(sample) - n]]  # a new array: partitioned in place
    else:
        s = s.copy()  # (np.partition: this copy, through a Python wrapper)
    at = len(s) - n
    s.partition(at)
    return float(s[at])


def _keep_one(
    s: np.ndarray, idx: np.ndarray, ids: Sequence[str], *masks: np.ndarray | None
) -> np.ndarray:
    """*s* with the best of each mask among the :data:`KEEP_DEPTH` best.

    One partition finds the cut; a lift goes just above it (and moves it).
    With *m* lifts the lifted chunks take the page's last *m* places, in
    the order of *masks*: each goes just above the ``(KEEP_DEPTH - m +
    1)``-th best of the others. Why: lifting the second just above the new
    cut, which was the first lift's own score, pushed the first off the
    page (a code chunk of the query's workflow, then a guide: the guide
    alone stayed).
    """
    if len(s) <= KEEP_DEPTH:
        return s
    out = s
    kth = kth_largest(s, KEEP_DEPTH)
    lifted: list[int] = []
    for mine in masks:
        if mine is None or not mine.any() or out[mine].max() >= kth:
            continue
        j = _best(mine.nonzero()[0], out, idx, ids)
        if out is s:
            out = s.copy()
        lifted.append(j)
        m = len(lifted)
        if m == 1:  # the others' cut is kth itself (j is below it)
            cut = kth
        else:  # the others' cut for m places
            rest = out.copy()
            rest[lifted] = -np.inf
            cut = kth_largest(rest, KEEP_DEPTH - m + 1)
        for r, x in enumerate(lifted):  # earlier lifts higher
            out[x] = cut * (1.0 + 1e-9 * (m - r))
        kth = kth_largest(out, KEEP_DEPTH)
    return out


def _rescore(
    snap: Snapshot,
    st: StageAux,
    query: str,
    tokens: Sequence[str],
    idx: np.ndarray,
    base: np.ndarray,
    s: np.ndarray,
    on: Sequence[str],
    depth: int,
    prose: np.ndarray,
) -> np.ndarray:
    pool = max(STAGE_POOL, depth)
    pf = PROSE_FACTOR
    if len(idx) > pool:
        top = (s >= kth_largest(s, pool)).nonzero()[0]  # sorted, ties included
        out = s.copy()
        if "code_first" in on:  # s * where(prose, pf, 1.0): the same numbers
            np.multiply(out, pf, out=out, where=prose)
        out[top] = _stages(
            snap, st, query, tokens, idx[top], base[top], s[top], on, prose[top]
        )
        return out
    return _stages(snap, st, query, tokens, idx, base, s, on, prose)


def _stages(
    snap: Snapshot,
    st: StageAux,
    query: str,
    tokens: Sequence[str],
    idx: np.ndarray,
    base: np.ndarray,
    s: np.ndarray,
    on: Sequence[str],
    prose: np.ndarray,
) -> np.ndarray:
    mult = s / base  # the seed's multipliers (a candidate has L > 0)
    if "field_bm25" in on:
        if "name_cover" in on:
            names = _name_cover(snap, st, tokens, idx)
        else:
            names = st.names.scores(tokens, idx)
        if names.any():
            s = s + FIELD_WEIGHT * names * mult
    if "fold" in on:
        s = _fold(snap, st, tokens, idx, s, mult)
    if "field_head" in on:
        pool = HEAD_POOL_WIDE if "head_wide" in on else HEAD_POOL
        s = _field_head(snap, st, tokens, idx, s, mult, pool)
    # the best module docstrings and their own symbols among the candidates,
    # found once for module_inherit and code_first
    mods = (
        _module_pairs(st, idx, s)
        if "module_inherit" in on or "code_first" in on
        else None
    )
    if "inherit" in on or "module_inherit" in on:
        s = _inherit(
            snap,
            st,
            idx,
            s,
            prose if "inherit" in on else None,
            mods if "module_inherit" in on else None,
        )
    if "code_first" in on:
        s = _code_first(query, idx, s, prose, mods, snap.table.ids)
    return s


def _name_cover(
    snap: Snapshot, st: StageAux, tokens: Sequence[str], idx: np.ndarray
) -> np.ndarray:
    """The name field's scores at *idx*, each times ``(m / n) **``
    :data:`NAME_COVER_POWER` (stage ``name_cover``): *m* distinct query
    words in the chunk's name, *n* the query's distinct words the body
    index knows.

    Why: BM25 over a name of one to four words gives a full score to a
    name that holds one word of the question. On a question in plain
    words that word is often incidental (``put`` in "put my results into
    a package" meets ``MaxwellResultCache.put``); a name that spells
    several of the question's words is evidence that the chunk is what was
    asked for. A query that names the symbol (``estimate_ss_ama``) covers
    its name's words, so it keeps its full score.
    """
    names, m = st.names.scores_counts(tokens, idx)
    # "knows": a word some live chunk holds. After saves the vocabulary
    # keeps words no live chunk holds any more (df 0); counting those made
    # a saved index rank unlike a fresh build of the same files
    vocab, df = snap.bm25.vocab, snap.bm25.df
    n = sum(
        1
        for t in dict.fromkeys(tokens)
        if (i := vocab.get(t)) is not None and df[i] > 0
    )
    if n <= 1 or not names.any():
        return names
    # m == 0 where names == 0: the factor does not matter there. The
    # square root is power(x, 0.5) to the bit on every m / n with n up to
    # 2,000 (all 6M cases compared; numpy 2.4) at half the cost; both in
    # place on arrays of the stage's own
    f = np.divide(m, n, out=m)
    if NAME_COVER_POWER == 0.5:
        np.sqrt(f, out=f)
    else:
        np.power(f, NAME_COVER_POWER, out=f)
    return np.multiply(names, f, out=names)


#: At most this many query words' folds are kept per snapshot (then anew).
_FOLDS_MAX = 65536


def _fold(
    snap: Snapshot,
    st: StageAux,
    tokens: Sequence[str],
    idx: np.ndarray,
    s: np.ndarray,
    mult: np.ndarray,
) -> np.ndarray:
    """*s* plus the body and name-field BM25 of the query words' other
    number (``points`` -> ``point``, ``station`` -> ``stations``) that the
    index knows and the query does not hold, with weight
    :data:`FOLD_WEIGHT`, under the candidates' seed multipliers."""
    have = set(tokens)
    known = st.folds
    extra: list[str] = []
    for t in dict.fromkeys(tokens):
        got = known.get(t)
        if got is None:
            if len(known) >= _FOLDS_MAX:
                known.clear()
            vocab = snap.bm25.vocab
            got = known[t] = tuple(
                v for v in number_variants(t) if vocab.get(v) is not None
            )
        extra += [v for v in got if v not in have]
    if not extra:
        return s
    # bm25.scores(extra), the same bits, from the stage's own weights: the
    # folded words do not push the query's words out of the body's cache
    body = st.fold_weights.scores(snap.bm25, extra)[idx]
    names = st.names.scores(extra, idx)  # a new array: scaled in place
    body += np.multiply(names, FIELD_WEIGHT, out=names)
    if not body.any():
        return s
    # s + FOLD_WEIGHT * body * mult, in place on body (its own array): the
    # same products in the same order, and x + s is s + x to the bit
    body *= FOLD_WEIGHT
    body *= mult
    body += s
    return body


def _field_head(
    snap: Snapshot,
    st: StageAux,
    tokens: Sequence[str],
    idx: np.ndarray,
    s: np.ndarray,
    mult: np.ndarray,
    pool: int = HEAD_POOL,
) -> np.ndarray:
    """*s* plus the head field's BM25 of the best *pool* code candidates
    (ties included; :data:`HEAD_POOL`, or :data:`HEAD_POOL_WIDE` with
    stage ``head_wide``), under their seed multipliers."""
    code = st.code[idx].nonzero()[0]
    if not len(code):
        return s
    js = _top(code, s, pool)
    head = head_scores(snap, st.heads, tokens, idx[js].tolist())
    if not head.any():
        return s
    out = s.copy()
    out[js] += HEAD_WEIGHT * head * mult[js]
    return out


def _module_pairs(
    st: StageAux, idx: np.ndarray, s: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(module position, symbol position)`` pairs of the best modules.

    Through ``mod_of`` (each symbol's module docstring slot): one gather and
    one lookup for all candidates, no loop over the modules' symbols.
    """
    mods = st.module_doc[idx].nonzero()[0]
    if not len(mods):
        return None
    chosen = idx[_top(mods, s, INHERIT_MODULES)]  # sorted, like idx
    parent = st.mod_of[idx]  # -1: no module, never chosen
    at = chosen.searchsorted(parent)
    np.minimum(at, len(chosen) - 1, out=at)
    pos = (chosen[at] == parent).nonzero()[0]
    if not len(pos):
        return None
    return np.searchsorted(idx, parent[pos]), pos


def _top(js: np.ndarray, s: np.ndarray, n: int) -> np.ndarray:
    """The *n* best scored of candidate positions *js*, and any tied with
    the *n*-th: slot numbers differ between an incremental update and a full
    build of the same files, so a cut must never depend on them."""
    if len(js) <= n:
        return js
    v = s[js]
    return js[v >= kth_largest(v, n)]


def _best(js: np.ndarray, s: np.ndarray, idx: np.ndarray, ids: Sequence[str]) -> int:
    """The position of *js* with the highest score; a tie goes to the
    smallest chunk id (not to the lowest slot, see :func:`_top`)."""
    v = s[js]
    tied = js[v == v.max()]
    if len(tied) == 1:
        return int(tied[0])
    return min(tied.tolist(), key=lambda j: ids[int(idx[j])])


def _spread(
    idx: np.ndarray, owners: list[int], groups: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, candidate)`` per grouped slot that is a candidate.

    *idx* is sorted; one ``searchsorted`` serves all groups (per-group numpy
    calls cost more than the work at these sizes).
    """
    slots = np.concatenate(groups)
    own = np.array(owners, np.int64).repeat([len(g) for g in groups])
    pos = idx.searchsorted(slots)
    np.minimum(pos, len(idx) - 1, out=pos)  # past the end: not a candidate
    ok = idx[pos] == slots
    return own[ok], pos[ok]


def _inherit(
    snap: Snapshot,
    st: StageAux,
    idx: np.ndarray,
    s: np.ndarray,
    prose: np.ndarray | None,
    mods: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """*s* plus the largest share any prose (*prose*: its mask, or None when
    ``inherit`` is off) or module docstring (*mods*) passes to a candidate."""
    owners: list[int] = []
    groups: list[np.ndarray] = []
    js = prose.nonzero()[0] if prose is not None else np.zeros(0, np.intp)
    if len(js):
        for j in _top(js, s, INHERIT_TOP).tolist():
            named = st.named_by(snap, int(idx[j]))
            if len(named):
                owners.append(j)
                groups.append(named)
    pos: list[np.ndarray] = []
    val: list[np.ndarray] = []
    # only candidates get evidence: a chunk must match the query itself
    if groups:
        own, at = _spread(idx, owners, groups)
        pos.append(at)
        val.append(INHERIT_SHARE * s[own])
    if mods is not None:
        pos.append(mods[1])
        val.append(MODULE_SHARE * s[mods[0]])
    if not pos:
        return s
    bonus = np.zeros(len(idx))
    np.maximum.at(bonus, np.concatenate(pos), np.concatenate(val))
    return s + bonus


def _code_first(
    query: str,
    idx: np.ndarray,
    s: np.ndarray,
    prose: np.ndarray,
    mods: tuple[np.ndarray, np.ndarray] | None,
    ids: Sequence[str],
) -> np.ndarray:
    out = s.copy()  # s * where(prose, PROSE_FACTOR, 1.0): the same numbers
    np.multiply(out, PROSE_FACTOR, out=out, where=prose)
    if is_howto(query) and prose.any():
        lead = _best(prose.nonzero()[0], s, idx, ids)
        out[lead] = s[lead]
    if mods is not None:
        own, pos = mods
        best = np.zeros(len(idx))
        np.maximum.at(best, own, out[pos])
        # a module docstring scored above its best own symbol goes below it
        # (only positions with a symbol have a cap: min(x, inf) is x)
        capped = (best > 0).nonzero()[0]
        out[capped] = np.minimum(out[capped], best[capped] * MODULE_FACTOR)
    return out


def diversify(
    order: Sequence[int],
    paths: Iterable[str],
    prose: Sequence[bool],
    per_file: int,
    k: int,
    *,
    split: bool,
) -> list[int]:
    """At most *per_file* results from one file, unless too few files match.

    With *split* (stage ``file_cap``) code chunks of one file may take
    :data:`CODE_EXTRA` more places than prose chunks of it. Scores are untouched; only the
    selection changes, so one long document cannot fill the whole list.
    """
    taken: list[int] = []
    spill: list[int] = []
    count: dict[tuple[str, bool], int] = {}
    for j, path, is_prose in zip(order, paths, prose, strict=True):
        key = (path, bool(is_prose) if split else False)
        cap = per_file + CODE_EXTRA if split and not is_prose else per_file
        if count.get(key, 0) < cap:
            count[key] = count.get(key, 0) + 1
            taken.append(j)
            if len(taken) == k:
                return taken
        else:
            spill.append(j)
    return taken + spill[: k - len(taken)]
