"""Score composition (DESIGN 5), exactly the seed's model.

``L(c) = BM25(c, q) + 0.35 * BM25(c, e(q))``; chunks with ``L = 0`` drop out;
``s(c) = L(c) * [1 + 0.12 (priority - 1)] * b_wf * b_recipe * b_sym * b_fb``
with ``b_wf = 1.6`` when the chunk's workflow is the query's, ``b_recipe =
1.25`` for recipes, ``b_sym = 1.5`` when the query text contains the chunk's
leaf symbol (3+ characters) and ``b_fb`` the per-symbol feedback factor
floored at 0.15. Every multiplier is a vector over the candidate slots; no
Python loop runs over documents.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.errors import QueryError
from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.index.tokenize import tokenize
from pycsamt_lsp.search.fields import NameField, merge_groups
from pycsamt_lsp.search.slotmap import (
    SlotMap,
    pack_groups,
    unpack_groups,
    unpack_slotmap,
)
from pycsamt_lsp.search.stages import (
    OFF_BY_DEFAULT,
    STAGES,
    StageAux,
    apply_stages,
    diversify,
    kth_largest,
    symbol_specific,
)

__all__ = [
    "COMPONENTS",
    "EXPANSION_WEIGHT",
    "Hit",
    "RankAux",
    "check_disable",
    "load_feedback",
    "search",
    "snippet_of",
]

log = logging.getLogger(__name__)

EXPANSION_WEIGHT = 0.35
PRIORITY_STEP = 0.12
WORKFLOW_BOOST = 1.6
RECIPE_BOOST = 1.25
SYMBOL_BOOST = 1.5
FEEDBACK_FLOOR = 0.15
#: How many slots' ``(label, snippet)`` a :class:`RankAux` keeps (~1 MB).
SHOWN_MAX = 4096
#: Components that ablation can switch off one at a time.
#: The seed's own components, then the stages after its composition.
SEED_COMPONENTS = (
    "expansion",
    "workflow_boost",
    "priority",
    "recipe_boost",
    "symbol_boost",
)
COMPONENTS = SEED_COMPONENTS + STAGES
#: every name :func:`search` accepts in *disable*
_NAMES = frozenset(COMPONENTS).union("+" + x for x in COMPONENTS)


def check_disable(
    disable: Collection[str],
    *,
    more: Sequence[str] = (),
    more_off: Collection[str] = (),
    what: str = "ranking",
) -> None:
    """Refuse a *disable* naming anything but a component (:data:`COMPONENTS`,
    plus *more*: the dense fusion's stages) or ``+`` and one (switched on).

    Why: the ranking reads *disable* by membership only, so a misspelt name
    (``feild_head``) used to give the full ranking without a word, and an
    ablation or a benchmark then measured nothing. The message names every
    known stage, and ``+name`` for those off by default (*more_off* too).
    A string is refused too (its letters would be the names)."""
    if isinstance(disable, str):
        raise QueryError(
            f"'disable' must be a list of {what} stage names, not the string {disable!r}"
        )
    if not more and _NAMES.issuperset(disable):
        return  # a query's usual case, without building the sets
    known = (*COMPONENTS, *more)
    names = set(known)
    bad = [
        d
        for d in disable
        if not isinstance(d, str)
        or not (d in names or (d[:1] == "+" and d[1:] in names))
    ]
    if not bad:
        return
    import difflib

    off = [x for x in known if x in OFF_BY_DEFAULT or x in more_off]
    first = str(bad[0]).lstrip("+")
    near = difflib.get_close_matches(first, known, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    shown = ", ".join(repr(str(b)[:40]) for b in bad[:3]) + (", ..." if bad[3:] else "")
    raise QueryError(
        f"unknown {what} stage{'s' if len(bad) > 1 else ''} {shown}{hint}; "
        f"known: {', '.join(known)}, and {', '.join('+' + x for x in off)} "
        "(off by default: '+' switches a stage on)"
    )


_IDENT_RUN = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True, eq=False)
class RankAux:
    """Per-snapshot vectors for the boosts, derived once from the chunk table."""

    prio_factor: np.ndarray
    recipe: np.ndarray  # bool
    wf_code: np.ndarray  # int16, -1 for none
    wf_ids: Mapping[str, int]
    kind_code: np.ndarray  # int8
    kind_ids: Mapping[str, int]
    leaf_slots: Mapping[str, np.ndarray]
    symbol_slots: Mapping[str, np.ndarray]
    #: arrays of the ranking stages after the seed's composition (stages.py)
    stages: StageAux
    #: the first 3 characters of every leaf -> the lengths of the leaves
    #: starting so (ascending): a query substring can only be a leaf when it
    #: starts like one and has the length of one of those
    leaf_heads: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: what a query result shows of a slot, ``(label, snippet)``, and the
    #: ``file://`` URI of a path, kept once computed (``Workspace.pool``): a
    #: slot's chunk and a path's file are the same for this aux's snapshot
    #: (a refresh publishes a new aux). At most :data:`SHOWN_MAX` slots.
    shown: dict[int, tuple[str, str]] = field(default_factory=dict, repr=False)
    uris: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, snap: Snapshot, names: NameField | None = None) -> RankAux:
        """The boost vectors of *snap*'s chunk table, from one pass over its
        columns (no chunk text is read); *names*: see :meth:`StageAux.of`.
        """
        t = snap.table
        wf_ids: dict[str, int] = {}
        kind_ids: dict[str, int] = {}
        wf_code = np.fromiter(
            (
                -1 if w is None else wf_ids.setdefault(w, len(wf_ids))
                for w in t.workflows
            ),
            np.int16,
            len(t),
        )
        kind_code = np.fromiter(
            (kind_ids.setdefault(k, len(kind_ids)) for k in t.kinds), np.int8, len(t)
        )
        leaves: dict[str, list[int]] = {}
        symbols: dict[str, list[int]] = {}
        for slot, sym in enumerate(t.symbols):
            if sym:
                symbols.setdefault(sym, []).append(slot)
                leaf = sym.rsplit(".", 1)[-1].lower()
                if len(leaf) >= 3:
                    leaves.setdefault(leaf, []).append(slot)
        return cls(
            prio_factor=1.0 + PRIORITY_STEP * (t.priority.astype(np.float64) - 1.0),
            recipe=kind_code == kind_ids.get("recipe", -1),
            wf_code=wf_code,
            wf_ids=wf_ids,
            kind_code=kind_code,
            kind_ids=kind_ids,
            # arrays made on first read (search.slotmap: a warm start read few)
            leaf_slots=SlotMap(leaves),
            symbol_slots=SlotMap(symbols),
            stages=StageAux.of(snap, names),
            leaf_heads=_heads({}, leaves),
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        """What :meth:`of` derives from the chunk table by grouping it, as
        flat arrays (the stage arrays prefixed ``stage_``; not the name field,
        saved on its own). :meth:`from_arrays` makes the same aux again.
        Why: a warm start then reads ~1 MB instead of spending ~10 ms of CPU
        grouping ~8,000 rows (issue 18; ``workspace.warm``). ``ValueError``
        when a name cannot be packed."""
        out: dict[str, np.ndarray] = {
            "wf_code": self.wf_code,
            "kind_code": self.kind_code,
        }
        out.update(pack_groups("wf_ids_", {k: (v,) for k, v in self.wf_ids.items()}))
        out.update(
            pack_groups("kind_ids_", {k: (v,) for k, v in self.kind_ids.items()})
        )
        for name, slots in (("leaf_", self.leaf_slots), ("symbol_", self.symbol_slots)):
            out.update(
                pack_groups(
                    name, slots.groups() if isinstance(slots, SlotMap) else slots
                )
            )
        # the symbols are the table's own (from_arrays): no need to save them
        del out["symbol_keys"]
        out.update(pack_groups("heads_", self.leaf_heads))
        out.update({"stage_" + k: v for k, v in self.stages.to_arrays().items()})
        return out

    @classmethod
    def from_arrays(
        cls,
        snap: Snapshot,
        arrays: Mapping[str, np.ndarray],
        names: NameField | None = None,
    ) -> RankAux:
        """The aux :meth:`to_arrays` saved for *snap*: equal to :meth:`of`
        of *snap*, array for array. ``ValueError`` (or ``KeyError``) when
        the arrays do not fit *snap*."""
        t = snap.table
        n = len(t)
        wf_code, kind_code = arrays["wf_code"], arrays["kind_code"]
        if (
            wf_code.dtype != np.int16
            or kind_code.dtype != np.int8
            or wf_code.shape != (n,)
            or kind_code.shape != (n,)
        ):
            raise ValueError("rank arrays do not fit the snapshot")
        wf, wf_v = unpack_groups("wf_ids_", arrays, 1 << 15, int_keys=False)
        kd, kd_v = unpack_groups("kind_ids_", arrays, 1 << 7, int_keys=False)
        if any(len(v) != 1 for v in wf_v + kd_v):
            raise ValueError("rank arrays do not fit the snapshot")
        wf_ids = {k: v[0] for k, v in zip(wf, wf_v, strict=True)}
        kind_ids = {k: v[0] for k, v in zip(kd, kd_v, strict=True)}
        heads, lengths = unpack_groups("heads_", arrays, 1 << 62, int_keys=False)
        stage_arrays = {k[6:]: v for k, v in arrays.items() if k.startswith("stage_")}
        return cls(
            prio_factor=1.0 + PRIORITY_STEP * (t.priority.astype(np.float64) - 1.0),
            recipe=kind_code == kind_ids.get("recipe", -1),
            wf_code=wf_code,
            wf_ids=wf_ids,
            kind_code=kind_code,
            kind_ids=kind_ids,
            leaf_slots=unpack_slotmap("leaf_", arrays, n),
            symbol_slots=unpack_slotmap("symbol_", arrays, n, _symbol_keys(t.symbols)),
            stages=StageAux.from_arrays(snap, stage_arrays, names),
            leaf_heads=dict(zip(heads, map(tuple, lengths), strict=True)),
        )

    def extended(self, snap: Snapshot, start: int) -> RankAux:
        """This aux plus the slots ``start..`` of *snap* (appended by an update).

        Slots removed by the update keep their entries: their BM25 score is
        zero, so no boost can reach them. Costs the new slots, not the corpus.
        """
        t = snap.table
        wf_ids = dict(self.wf_ids)
        kind_ids = dict(self.kind_ids)
        new = range(start, len(t))
        wf_code = np.concatenate(
            (
                self.wf_code,
                np.array(
                    [
                        -1
                        if (w := t.workflows[i]) is None
                        else wf_ids.setdefault(w, len(wf_ids))
                        for i in new
                    ],
                    np.int16,
                ),
            )
        )
        kind_code = np.concatenate(
            (
                self.kind_code,
                np.array(
                    [kind_ids.setdefault(t.kinds[i], len(kind_ids)) for i in new],
                    np.int8,
                ),
            )
        )
        # a loaded aux's SlotMaps copied as dicts (Published.prepare made them
        # whole): dict() of a Mapping reads every key through Python
        leaves = dict(_whole(self.leaf_slots))
        symbols = dict(_whole(self.symbol_slots))
        keys: list[str] = []
        leaf_keys: list[str] = []
        slots: list[int] = []
        leaf_slots: list[int] = []
        for slot in new:
            sym = t.symbols[slot]
            if not sym:
                continue
            keys.append(sym)
            slots.append(slot)
            leaf = sym.rsplit(".", 1)[-1].lower()
            if len(leaf) >= 3:
                leaf_keys.append(leaf)
                leaf_slots.append(slot)
        for group, ks, ss in ((symbols, keys, slots), (leaves, leaf_keys, leaf_slots)):
            # all keys at once (merge_groups): per-key numpy calls cost more
            sub = {k: (group[k],) for k in ks if k in group}
            merge_groups(sub, (), None, ks, (np.array(ss, np.int64),))
            group.update((k, v[0]) for k, v in sub.items())
        return RankAux(
            prio_factor=1.0 + PRIORITY_STEP * (t.priority.astype(np.float64) - 1.0),
            recipe=kind_code == kind_ids.get("recipe", -1),
            wf_code=wf_code,
            wf_ids=wf_ids,
            kind_code=kind_code,
            kind_ids=kind_ids,
            leaf_slots=leaves,
            symbol_slots=symbols,
            stages=self.stages.updated(snap),
            leaf_heads=_heads(dict(self.leaf_heads), leaf_keys),
        )

    def leaves_in(self, query_lower: str) -> list[np.ndarray]:
        """Slots whose leaf symbol occurs in the query text.

        A leaf is an identifier, so it can only occur inside a run of
        identifier characters of the query; enumerating the substrings of
        those runs is far cheaper than testing every leaf.
        """
        return [hit for _, hit in self.leaf_matches(query_lower)]

    def leaf_matches(self, query_lower: str) -> list[tuple[str, np.ndarray]]:
        """:meth:`leaves_in` with the leaf that matched, per group of slots.

        In the order of the substrings (run, start, end), each leaf once; a
        start whose first 3 characters begin no leaf is skipped whole, and
        only the lengths of leaves that start like it are tried.
        """
        found: list[tuple[str, np.ndarray]] = []
        seen: set[str] = set()
        heads, slots = self.leaf_heads, self.leaf_slots
        for run in _IDENT_RUN.findall(query_lower):
            n = len(run)
            for i in range(n - 2):
                lengths = heads.get(run[i : i + 3])
                if lengths is None:
                    continue
                for m in lengths:
                    if i + m > n:
                        break
                    hit = slots.get(sub := run[i : i + m])
                    if hit is not None and sub not in seen:
                        seen.add(sub)
                        found.append((sub, hit))
        return found


def _symbol_keys(symbols: Sequence[str | None]) -> list[str]:
    """The keys of :meth:`RankAux.of`'s ``symbol_slots``: the table's
    non-empty symbols, each once, in the order of their first slot (what
    its ``setdefault`` loop gives), in C and on the table's own strings
    (their hashes already made)."""
    keys = dict.fromkeys(symbols)
    keys.pop(None, None)
    keys.pop("", None)
    return list(keys)  # type: ignore[arg-type]


def _whole(slots: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
    """*slots* as a plain dict when it is a :class:`SlotMap`."""
    return slots.materialized() if isinstance(slots, SlotMap) else slots


def _heads(
    heads: dict[str, tuple[int, ...]], leaves: Iterable[str]
) -> dict[str, tuple[int, ...]]:
    """*heads* (``first 3 characters -> leaf lengths, ascending``) with
    *leaves* added."""
    grown: dict[str, set[int]] = {}
    for leaf in leaves:
        grown.setdefault(leaf[:3], set()).add(len(leaf))
    for h, lengths in grown.items():
        heads[h] = tuple(sorted(lengths.union(heads.get(h, ()))))
    return heads


class Hit(NamedTuple):
    """One ranked chunk: its slot and final score (a tuple: made 10 times a
    query, a frozen dataclass's ``__init__`` cost more)."""

    slot: int
    score: float


def load_feedback(path: Path | None) -> dict[str, float]:
    """``symbol or chunk id -> delta`` from a JSON file the user can edit.

    A delta of ``-0.5`` halves a symbol's score, ``+0.3`` raises it by 30 %;
    the factor ``1 + delta`` is floored at 0.15 so a hard negative demotes
    but never hides. A missing file is no feedback; a malformed one is
    logged and ignored.
    """
    if path is None or not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in raw.items()}
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        log.warning("ignoring malformed feedback file %s: %s", path, exc)
        return {}


def search(
    snap: Snapshot,
    aux: RankAux,
    profile: Profile,
    query: str,
    *,
    k: int = 10,
    workflow: str | None = None,
    kinds: Collection[str] | None = None,
    feedback: Mapping[str, float] | None = None,
    disable: Collection[str] = (),
    per_file: int | None = None,
) -> tuple[list[Hit], dict]:
    """Rank chunks for *query*; returns hits and facts about the ranking.

    *per_file* caps how many results one source file contributes (the
    ranking and the scores are the seed's; only the selection is diversified).
    *disable*: components switched off by name, ``+name`` switched on
    (:func:`check_disable`: any other name is a :class:`QueryError`).
    """
    if disable:
        check_disable(disable)
    bm25 = snap.bm25
    tokens = tokenize(query)
    base = bm25.scores(tokens)
    exp_terms = [] if "expansion" in disable else profile.expand(query)
    if exp_terms:
        # base + 0.35 * e, in place (both are new arrays): the same numbers
        e = bm25.scores(exp_terms)
        base += np.multiply(e, EXPANSION_WEIGHT, out=e)
    wf: str | None
    if workflow:
        wf = workflow
    elif "expansion" in disable:
        wf = profile.infer_workflow(query)
    else:
        wf = profile.query_workflow(query, exp_terms)
    info = {"workflow": wf, "expansion": exp_terms, "top_score": 0.0, "n_candidates": 0}
    # the method, not np.flatnonzero (a Python wrapper over ravel and it:
    # ~2 us a call, same array)
    idx = (base > 0.0).nonzero()[0]
    if kinds:
        codes = [aux.kind_ids[x] for x in kinds if x in aux.kind_ids]
        idx = idx[np.isin(aux.kind_code[idx], codes)]
    if len(idx) == 0:
        return [], info
    base_c = base[idx]  # L(c) of the candidates (never written to)
    # the candidates of the query's workflow: the boost and workflow_keep
    mine = (
        aux.wf_code[idx] == aux.wf_ids[wf]
        if wf is not None and wf in aux.wf_ids
        else None
    )
    # each boost multiplies s in place where it applies (s is a new array):
    # the same product per chunk as np.where(mask, s * boost, s)
    s = base_c * aux.prio_factor[idx] if "priority" not in disable else base_c.copy()
    if wf and "workflow_boost" not in disable and mine is not None:
        np.multiply(s, WORKFLOW_BOOST, out=s, where=mine)
    if "recipe_boost" not in disable:
        np.multiply(s, RECIPE_BOOST, out=s, where=aux.recipe[idx])
    if "symbol_boost" not in disable:
        matches = aux.leaf_matches(query.lower())
        if matches:
            mask = np.zeros(len(aux.recipe), bool)
            mask[np.concatenate([h for _, h in matches])] = True
            at = mask[idx]
            np.multiply(s, SYMBOL_BOOST, out=s, where=at)
            if "symbol_specific" not in disable:
                s = symbol_specific(
                    query, matches, mask, idx, s, SYMBOL_BOOST, at, inplace=True
                )
    if feedback:
        factor = np.ones(len(aux.recipe))
        table = snap.table
        for key, delta in feedback.items():
            slots = aux.symbol_slots.get(key)
            if slots is None:  # a chunk id: only its live slot counts
                entry = snap.files.get(key.split(":", 1)[0])
                live = [x for x in (entry[1] if entry else ()) if table.ids[x] == key]
                if not live:
                    continue
                slots = np.array(live, np.int64)
            factor[slots] = max(FEEDBACK_FLOOR, 1.0 + delta)
        s = s * factor[idx]
    k = max(int(k), 0)
    # with a per-file cap some of the best may be passed over: look deeper
    depth = k if not per_file else min(len(s), k * 4 + 50)
    # confidence (DESIGN 5) reads the seed's s_max, not the stages' scores
    info["top_score"] = float(s.max())
    s = apply_stages(
        snap, aux.stages, query, idx, base_c, s, disable, depth, mine, tokens
    )
    info["n_candidates"] = len(idx)
    if depth < len(s):
        # the depth-th best score; ties at the boundary stay in the race
        # (the stages' partition: on a sample first when s is long)
        kth = kth_largest(s, depth) if depth else np.inf
        keep = (s >= kth).nonzero()[0]
    else:
        keep = np.arange(len(s))
    # positions, best first, and their scores
    order, val = _ranked_values(keep, s, idx, snap.table.ids)
    slots = idx[order]
    got = slots.tolist()
    picked: Sequence[int] = range(min(k, len(got)))
    if per_file:
        paths = snap.table.paths
        picked = diversify(
            range(len(got)),
            # lazily: the cap usually fills k from the first few places
            (paths[x] for x in got),
            aux.stages.prose[slots].tolist(),
            per_file,
            k,
            split="file_cap" not in disable,
        )
    return [Hit(got[i], val[i]) for i in picked[:k]], info


def _ranked(
    keep: np.ndarray, s: np.ndarray, idx: np.ndarray, ids: Sequence[str]
) -> np.ndarray:
    """Positions *keep* by descending score *s*, ties by ascending chunk id.

    One stable argsort; only runs of equal scores (duplicated chunks) are
    re-sorted by id in Python.
    """
    return _ranked_values(keep, s, idx, ids)[0]


def _ranked_values(
    keep: np.ndarray, s: np.ndarray, idx: np.ndarray, ids: Sequence[str]
) -> tuple[np.ndarray, list[float]]:
    """:func:`_ranked` and the scores in that order (``s[order]``: a tie
    re-sort permutes equal scores only, so the sorted scores are they)."""
    vals = s[keep]
    o = np.argsort(-vals, kind="stable")
    order = keep[o]
    sv = vals[o]
    v = sv.tolist()
    # most rankings have no tie: one comparison of the sorted neighbours
    # costs less than the Python scan over ~90 scores below
    if len(v) < 2 or not (sv[1:] == sv[:-1]).any():
        return order, v
    out: list[int] | None = None
    n, a = len(v), 0
    while a < n - 1:
        if v[a] != v[a + 1]:
            a += 1
            continue
        b = a + 2
        while b < n and v[b] == v[a]:
            b += 1
        if out is None:
            out = order.tolist()
            slots = idx[order].tolist()
        seg = sorted(range(a, b), key=lambda x: ids[slots[x]])
        out[a:b] = [out[x] for x in seg]
        a = b
    return (order if out is None else np.array(out, np.int64)), v


_SNIPPET_SKIP = (
    "Symbol:",
    "Signature:",
    "File:",
    "Docstring:",
    "Code:",
    "Module:",
    "Document:",
)


def _snippet_body(lines: Iterable[str], limit: int) -> str:
    """The stripped body lines joined by spaces, stopping once the join is
    longer than *limit* (then only its first ``limit - 1`` characters are
    ever shown, and those are already there)."""
    out: list[str] = []
    n = -1  # the length of " ".join(out)
    for line in lines:
        ln = line.strip()
        if ln and not ln.startswith(_SNIPPET_SKIP):
            out.append(ln)
            n += len(ln) + 1
            if n > limit:
                break
    return " ".join(out)


def snippet_of(text: str, limit: int = 240) -> str:
    """A short readable excerpt: docstring or body lines, not the header.

    Reads only a prefix of a long chunk when its complete lines already give
    more than *limit* characters (the lines of a prefix, all but its last,
    are the text's first lines), so a 2,000-line module is not split whole
    for 240 characters, and strips lines only until it has more than
    *limit*; the result is the same as from the whole text.
    """
    if len(text) > 16 * limit:
        head = text[: 16 * limit].splitlines()[:-1]
        out = _snippet_body(head, limit)
        if len(out) > limit:
            return out[: limit - 1].rstrip() + "…"
    out = _snippet_body(text.splitlines(), limit)
    return out if len(out) <= limit else out[: limit - 1].rstrip() + "…"
