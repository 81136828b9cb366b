"""rank_identity compares only the configurations both revisions know
(session 6: ``--against`` a revision without a new stage stopped at it)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from pycsamt_lsp.search import retrieval
from rank_identity import OPT_IN, accepts, configs


def _old_revision(stages: tuple[str, ...]) -> ModuleType:
    """A retrieval module of a revision whose stages are *stages* (the
    seed's components as today), with its own ``check_disable``."""
    mod = ModuleType("old_retrieval")
    components = (*retrieval.SEED_COMPONENTS, *stages)
    names = set(components)

    def check_disable(disable: list[str]) -> None:
        bad = [d for d in disable if d.lstrip("+") not in names]
        if bad:
            raise ValueError(f"unknown ranking stage {bad[0]!r}")

    mod.COMPONENTS, mod.STAGES, mod.check_disable = components, stages, check_disable
    return mod


def test_against_itself_every_configuration_runs_with_the_opt_in_ones():
    cfgs, skipped = configs(retrieval, retrieval)
    assert skipped == []
    labels = [c[0] for c in cfgs]
    assert labels[0] == "full" and "seed" in labels
    assert {f"-{c}" for c in retrieval.COMPONENTS} <= set(labels)
    assert "+fold,+name_cover,+head_wide" in labels
    [(_, kw_a, kw_b)] = [c for c in cfgs if c[0] == "+fold,+name_cover,+head_wide"]
    assert kw_a == kw_b == {"k": 10, "per_file": 2, "disable": OPT_IN[0]}


def test_a_stage_the_old_revision_lacks_is_skipped_and_named():
    gone = ("name_cover", "head_wide")
    old = _old_revision(tuple(s for s in retrieval.STAGES if s not in gone))
    assert not accepts(old, ("+name_cover",)) and accepts(old, ("fold",))
    cfgs, skipped = configs(old, retrieval)
    assert skipped == ["-name_cover", "-head_wide", "+fold,+name_cover,+head_wide"]
    labels = [c[0] for c in cfgs]
    assert "-fold" in labels and "-name_cover" not in labels
    # every configuration kept runs on both sides without an unknown name
    for _, kw_a, kw_b in cfgs:
        assert accepts(old, tuple(kw_a.get("disable", ())))
        assert accepts(retrieval, tuple(kw_b.get("disable", ())))
    # the seed is each side's own stages off
    [(_, seed_a, seed_b)] = [c for c in cfgs if c[0] == "seed"]
    assert seed_a["disable"] == old.STAGES
    assert seed_b["disable"] == retrieval.STAGES


def test_a_stage_only_the_old_revision_has_is_skipped_too():
    old = _old_revision((*retrieval.STAGES, "retired_stage"))
    _, skipped = configs(old, retrieval)
    assert skipped == ["-retired_stage"]


def test_a_revision_without_check_disable_is_read_from_its_components():
    old = ModuleType("older")
    old.COMPONENTS = ("expansion", "fold")
    assert accepts(old, ("fold",)) and not accepts(old, ("+fold",))
