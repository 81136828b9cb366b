"""The one immutable state a :class:`~pycsamt_lsp.workspace.facade.Workspace` publishes.

A reader on another thread (hover, a query in the server's pool) must never
see a new snapshot with the ranking arrays of an old one, or the reverse.
Both live in one frozen :class:`Published`, and the workspace swaps that
object with one attribute assignment (atomic under the GIL): a reader takes
``ws.published`` once and works on a consistent pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.index.terms import TermIds
from pycsamt_lsp.search.fields import NameField, PackedPostings
from pycsamt_lsp.search.retrieval import RankAux
from pycsamt_lsp.search.slotmap import SlotMap

__all__ = ["Published"]


@dataclass(frozen=True, slots=True, eq=False)
class Published:
    """A snapshot and the ranking arrays built for exactly that snapshot."""

    snapshot: Snapshot
    aux: RankAux

    @classmethod
    def of(
        cls,
        snapshot: Snapshot,
        names: NameField | None = None,
        aux: RankAux | None = None,
    ) -> Published:
        """The state for *snapshot*, ranking arrays computed from scratch
        (but for *names*, the name field persisted for this snapshot), or
        *aux* when given: the arrays persisted for it (warm start)."""
        return cls(snapshot, aux if aux is not None else RankAux.of(snapshot, names))

    def prepare(self) -> None:
        """Do now what the first update of a loaded state would otherwise
        do: slice the persisted name field's postings, make the symbol and
        leaf slot arrays and the vocabulary's dict (a server calls this
        after its first answer, so a first save does not pay for it)."""
        postings = self.aux.stages.names.postings
        if isinstance(postings, PackedPostings):
            postings.materialized()
        for slots in (self.aux.leaf_slots, self.aux.symbol_slots):
            if isinstance(slots, SlotMap):
                slots.materialized()
        vocab = self.snapshot.bm25.vocab
        if isinstance(vocab, TermIds):
            vocab.materialized()

    def extended(self, snapshot: Snapshot) -> Published:
        """The state for *snapshot*, an update of this one (it only appends
        slots, so the ranking arrays are extended, not recomputed)."""
        return Published(
            snapshot, self.aux.extended(snapshot, len(self.snapshot.table))
        )
