"""Which workflow of the profile a request is about, without needing its keyword.

Evidence is data from the profile: the workflow's own keywords (``[workflows]``,
the same ones that tag chunks) and its descriptors (``[workflow_descriptors]``:
what a request about it sounds like, "spikes", "induction arrows", "how deep").
Each matched phrase scores its number of words, so "signal to noise" (qc)
outweighs the "noise" inside it (denoise); the best total wins and ties go to
the workflow declared first. No phrase matched: no workflow (never a default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pycsamt_lsp.routing.text import Cue, CueIndex, compile_cues, normalise

__all__ = ["KEYWORD_BONUS", "WorkflowClassifier"]

# Extra score of a match on one of the workflow's own [workflows] keywords.
KEYWORD_BONUS = 1.0


@dataclass(frozen=True)
class WorkflowClassifier:
    """Scores every workflow of a profile on a request (see the module doc)."""

    table: tuple[tuple[str, tuple[Cue, ...]], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", CueIndex(self.items()))
        object.__setattr__(
            self, "_order", {wf: i for i, (wf, _) in enumerate(self.table)}
        )

    @classmethod
    def from_profile(
        cls, profile: Any, *, descriptors: bool = True
    ) -> WorkflowClassifier:
        """Build from ``profile.workflows`` (+ ``workflow_descriptors`` if *descriptors*)."""
        desc = dict(getattr(profile, "workflow_descriptors", ()) if descriptors else ())
        names = [wf for wf, _ in profile.workflows]
        names += [wf for wf in desc if wf not in names]
        kw = dict(profile.workflows)
        table = []
        for wf in names:
            # the workflow's own keywords (its name, its API) outweigh descriptors:
            # "ModEM data file" is about ModEM, whatever "data file" suggests
            own = [
                Cue(c.raw, c.parts, c.weight + KEYWORD_BONUS)
                for c in compile_cues(kw.get(wf, ()))
            ]
            known = {c.raw for c in own}
            extra = [c for c in compile_cues(desc.get(wf, ())) if c.raw not in known]
            table.append((wf, tuple(own + extra)))
        return cls(tuple(table))

    def items(self) -> list[tuple[Cue, tuple[str, str]]]:
        """Every cue labelled ``("wf", workflow)``, for a shared :class:`CueIndex`."""
        return [(cue, ("wf", wf)) for wf, cues in self.table for cue in cues]

    def scores(self, norm: str, hits: dict | None = None) -> dict[str, float]:
        """Score per workflow with any evidence, for the normalised text *norm*.

        *hits* is a :meth:`CueIndex.scan` result that already holds this
        classifier's cues (the router scans once for every rule).
        """
        if hits is None:
            hits = self._index.scan(norm)  # type: ignore[attr-defined]
        out: dict[str, float] = {}
        for label, found in hits.items():
            if isinstance(label, tuple) and label[0] == "wf":
                out[label[1]] = sum(c.weight for c, _ in found)
        return out

    def mentioned(self, norm: str, hits: dict | None = None) -> tuple[str, ...]:
        """Every workflow with evidence, in the order the request first mentions it.

        "run qc, remove the spikes and draw the arrows" -> (qc, denoise, tipper):
        the order a multi-step plan runs in.
        """
        if hits is None:
            hits = self._index.scan(norm)  # type: ignore[attr-defined]
        first = {
            label[1]: min(pos for _, pos in found)
            for label, found in hits.items()
            if isinstance(label, tuple) and label[0] == "wf"
        }
        return tuple(sorted(first, key=lambda wf: first[wf]))

    def classify(
        self, text: str, *, normalised: bool = False, hits: dict | None = None
    ) -> tuple[str | None, float]:
        """``(workflow, margin)``: the best workflow and its lead over the runner-up."""
        norm = text if normalised else normalise(text)
        sc = self.scores(norm, hits)
        if not sc:
            return None, 0.0
        order = self._order  # type: ignore[attr-defined]
        ranked = sorted(sc.items(), key=lambda kv: (-kv[1], order[kv[0]]))
        best, top = ranked[0]
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        return best, top - second
