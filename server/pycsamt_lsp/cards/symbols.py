"""Symbol search over the index's code symbols (``workspace/symbol``).

Matching is by name: exact, prefix, camel-case/underscore word prefixes
(``ssa`` finds ``StaticShiftAgent``), substring, then subsequence. The
table of one snapshot's symbols is built once and kept by the workspace's
:class:`~pycsamt_lsp.cards.service.CardService`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from pycsamt_lsp.cards.lineage import extends
from pycsamt_lsp.index.snapshot import ChunkTable, Snapshot
from pycsamt_lsp.text.identifiers import split_identifier

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["SymbolTable", "search_symbols"]

_SYMBOL_KINDS = ("python_symbol", "python_method", "module_doc")


class _Entry(NamedTuple):
    """One symbol of the table (a tuple: ~100 bytes against a dataclass's
    ~250, and quicker to make)."""

    symbol: str
    leaf: str
    lower: str
    words: tuple[str, ...]
    chunk_kind: str
    priority: int
    slot: int


def _entries_of(
    t: ChunkTable, slots: tuple[int, ...], named: dict[str, _Entry] | None = None
) -> tuple[_Entry, ...]:
    """The entries of one file's *slots*: the first chunk of each symbol of
    a code kind. *named*: entries of an older table by symbol, whose name
    parts (leaf, lower case, words: functions of the symbol alone) are
    reused instead of split again."""
    seen: set[str] = set()
    out: list[_Entry] = []
    symbols, kinds, priority = t.symbols, t.kinds, t.priority
    for s in slots:
        sym, kind = symbols[s], kinds[s]
        if not sym or kind not in _SYMBOL_KINDS or sym in seen:
            continue
        seen.add(sym)
        was = named.get(sym) if named is not None else None
        if was is not None:
            leaf, lower, words = was.leaf, was.lower, was.words
        else:
            leaf = sym.rsplit(".", 1)[-1]
            lower, words = leaf.lower(), tuple(split_identifier(leaf))
        out.append(_Entry(sym, leaf, lower, words, kind, int(priority[s]), s))
    return tuple(out)


class SymbolTable:
    """The index's code symbols of one snapshot, for name matching: files in
    path order, the first chunk of each symbol (of a code kind)."""

    def __init__(
        self,
        snap: Snapshot,
        by_file: dict[str, tuple[_Entry, ...]] | None = None,
    ) -> None:
        """*by_file*: the entries of each file of *snap*, when known
        (:meth:`following`); else read from the snapshot's table."""
        t = snap.table
        if by_file is None:
            by_file = {
                rel: _entries_of(t, slots) for rel, (_sha, slots) in snap.files.items()
            }
        #: each file's entries (before the files' symbols are deduplicated),
        #: what the next snapshot's table is made from
        self.by_file = by_file
        self._entries: list[_Entry] | None = None

    @property
    def entries(self) -> list[_Entry]:
        """The entries, files in path order, each symbol once (its first
        file's entry). Merged on first use: a save's warm-up derives the next
        table (:meth:`following`) without paying for a symbol search that
        may never come (two threads merging at once get equal lists)."""
        got = self._entries
        if got is None:
            seen: set[str] = set()
            got = []
            for rel in sorted(self.by_file):
                for e in self.by_file[rel]:
                    if e.symbol not in seen:
                        seen.add(e.symbol)
                        got.append(e)
            self._entries = got
        return got

    @classmethod
    def following(cls, prev: SymbolTable, old: Snapshot, snap: Snapshot) -> SymbolTable:
        """The table of *snap*, made from *prev* (the table of *old*): a file
        whose slots hold what they held in *old* keeps its entries (after a
        save, every file but the saved ones); the others are read from
        *snap*'s table, reusing *prev*'s name parts. The same table as
        ``SymbolTable(snap)``."""
        t = snap.table
        same = extends(t, old.table)
        of, before = old.files, prev.by_file
        by_file: dict[str, tuple[_Entry, ...]] = {}
        for rel, (_sha, slots) in snap.files.items():
            was = of.get(rel)
            got = before.get(rel)
            if (
                not same
                or got is None
                or was is None
                or (was[1] is not slots and was[1] != slots)
            ):
                got = _entries_of(t, slots, {e.symbol: e for e in got or ()})
            by_file[rel] = got
        return cls(snap, by_file)


def _word_prefixes(q: str, words: tuple[str, ...]) -> bool:
    """Can *q* be cut into pieces, each a prefix of a later word, in order?
    (``ssa`` -> Static Shift Agent, ``estss`` -> estimate ss ama)."""
    memo: dict[tuple[int, int], bool] = {}

    def go(qi: int, wi: int) -> bool:
        if qi == len(q):
            return True
        key = (qi, wi)
        if key in memo:
            return memo[key]
        ok = False
        for w in range(wi, len(words)):
            word = words[w]
            n = 0
            while n < len(word) and qi + n < len(q) and word[n] == q[qi + n]:
                n += 1
                if go(qi + n, w + 1):
                    ok = True
                    break
            if ok:
                break
        memo[key] = ok
        return ok

    return go(0, 0)


def _subsequence(q: str, s: str) -> bool:
    it = iter(s)
    return all(ch in it for ch in q)


def _tier(q: str, qwords: str, e: _Entry) -> int | None:
    """Lower is better; None: no match."""
    if e.lower == q:
        return 0
    if e.lower.startswith(q):
        return 1
    if (
        e.words
        and qwords
        and qwords[0] == e.words[0][0]
        and _word_prefixes(qwords, e.words)
    ):
        return 2
    if q in e.lower:
        return 3
    if qwords and _word_prefixes(qwords, e.words):
        return 4
    if len(q) >= 3 and _subsequence(q, e.lower):
        return 5
    return None


def search_symbols(ws: Workspace, query: str, limit: int = 100) -> list[dict[str, Any]]:
    """Code symbols of the index whose name matches *query*, best first.

    Matching is by name: exact, prefix, camel-case/underscore word prefixes
    (``ssa`` finds ``StaticShiftAgent``), substring, then subsequence; a
    dotted query (``ShiftAgent.run``) matches its last part by name and the
    rest within the qualified name. Ties go to the profile's higher priority
    areas, then shorter names.
    """
    snap = ws.snapshot
    if snap is None:
        return []
    table = ws.cards.symbol_table(snap)
    q = query.strip()
    head = ""
    if "." in q:
        head, _, q = q.rpartition(".")
        head = head.lower()
    ql = q.lower()
    qwords = ql.replace("_", "")
    scored: list[tuple[tuple[Any, ...], _Entry]] = []
    for e in table.entries:
        if head and head not in e.symbol[: -len(e.leaf)].lower():
            continue
        tier: float
        if ql:
            got = _tier(ql, qwords, e)
            if got is None:
                continue
            tier = 0.5 if got == 0 and e.leaf != q else got
        else:
            tier = 0 if e.chunk_kind != "python_method" else 1
        key = (tier, -e.priority, len(e.leaf), len(e.symbol), e.symbol)
        scored.append((key, e))
    scored.sort(key=lambda kv: kv[0])
    t = snap.table
    model = ws.model
    out: list[dict[str, Any]] = []
    for key, e in scored[:limit]:
        if e.chunk_kind == "module_doc":
            kind = "module"
        elif e.chunk_kind == "python_method":
            kind = "method"
        else:
            res = model.resolve(e.symbol)
            kind = res.kind if res.exists and res.kind else "function"
        path = t.paths[e.slot]
        out.append(
            {
                "symbol": e.symbol,
                "name": e.leaf,
                "container": e.symbol[: -len(e.leaf) - 1] or None,
                "kind": kind,
                "path": path,
                "line_start": int(t.line_start[e.slot]) or 1,
                "line_end": int(t.line_end[e.slot]) or int(t.line_start[e.slot]) or 1,
                "uri": ws.uri_of(path),
                "workflow": t.workflows[e.slot],
                "tier": key[0],
            }
        )
    return out
