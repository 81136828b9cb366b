"""No eval query (or near-copy) in indexed content (issue 14).

Recipes and expansion rules are indexed or applied to every query, so a
recipe line that repeats an eval question, or an expansion trigger copied
from one, scores the suite instead of the product. This gate compares every
recipe line (each line, each bullet item joined across its wrapped lines,
each sentence of a paragraph) and every expansion trigger with every eval
query the project ships or reads: ``suites/**/*.jsonl``, the sdist's bundled
``pycsamt/assistant/evals/suites/*.jsonl`` and the maintainer checkout's
suites. A difflib ``SequenceMatcher`` ratio of 0.7 or more is a leak. A recipe unit
of fewer than four words (a bare symbol name, a two-word heading) counts
only when it is nearly the whole query (ratio >= 0.9): a line naming
`MTLoaderAgent` is not a copy of the question "loader agent", but a line
that repeats a three-word query is. Expansion triggers follow the same rule:
the trigger "2-d inversion" is no copy of the query "do the inversion"
(ratio 0.76), while a trigger that is the whole of a short query is.

Bundled recipes must be clean. The corpus's own ``assistant_recipes/`` are
indexed too but are not ours to edit: their leaks are reported as a warning
(``CorpusRecipeLeak``) so a measurement on that corpus can say so.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterable
from pathlib import Path

import pytest

from nearcopy import close_pairs
from pycsamt_lsp.corpus.profile import load_profile

REPO = Path(__file__).resolve().parents[1]
BUNDLED = sorted((REPO / "assistant_recipes").glob("*.md"))
PROFILE_TOML = REPO / "server" / "pycsamt_lsp" / "profiles" / "pycsamt.toml"
NEAR = 0.7
#: recipe units shorter than this many words must be near-identical to leak
SHORT_WORDS, SHORT_NEAR = 4, 0.9
CHECKOUT = Path(
    os.environ.get(
        "PYCSAMT_CHECKOUT",
        Path.home() / ".cache" / "pycsamt-lsp" / "checkout" / "pycsamt-checkout",
    )
)
SUITE_GLOB = "pycsamt/assistant/evals/suites/*.jsonl"


class CorpusRecipeLeak(UserWarning):
    """A recipe of the corpus itself (not ours) repeats an eval query."""


# ── the detector ────────────────────────────────────────────────────────────

_MARK = re.compile(r"^\s*(?:#+|[-*+>]|\d+[.)])\s*")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENT = re.compile(r"(?<=[.!?;:])\s+")


def _clean(s: str) -> str:
    """Lowercase, markdown markers, quotes and backticks off, spaces collapsed."""
    s = _MARK.sub("", s)
    s = s.replace("`", "").replace('"', "").replace("\u201c", "").replace("\u201d", "")
    return " ".join(s.lower().strip(" '.,;:!?()").split())


def recipe_units(text: str) -> list[tuple[int, str]]:
    """The pieces of a recipe a near-copy could hide in, with their line.

    Every line; every bullet item with its wrapped continuation lines; every
    sentence of a paragraph (lines joined up to a blank line or bullet).
    Fenced code is included: a query pasted into a comment is still indexed.
    """
    units: list[tuple[int, str]] = []
    block: list[str] = []
    start = 0

    def flush() -> None:
        if block:
            joined = " ".join(block)
            units.append((start, joined))
            units.extend((start, s) for s in _SENT.split(joined))
            block.clear()

    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        units.append((n, line))
        if not line or line.startswith(("#", "```")):
            flush()
            continue
        if _BULLET.match(raw):
            flush()
            start = n
        elif not block:
            start = n
        block.append(line)
    flush()
    out, seen = [], set()
    for n, u in units:
        c = _clean(u)
        if len(c) >= 8 and (n, c) not in seen:
            seen.add((n, c))
            out.append((n, c))
    return out


def near_copies(
    units: Iterable[tuple[int, str]],
    queries: Iterable[str],
    threshold: float = NEAR,
    *,
    short_rule: bool = True,
) -> list[tuple[int, str, str, float]]:
    """``(line, unit, query, ratio)`` for every pair at or above the threshold
    (*threshold*, or ``SHORT_NEAR`` for a short unit when *short_rule*)."""
    qs = sorted({_clean(q) for q in queries})
    units = list(units)
    limits = [
        max(threshold, SHORT_NEAR)
        if short_rule and len(u.split()) < SHORT_WORDS
        else threshold
        for _, u in units
    ]
    found = close_pairs([u for _, u in units], qs, limits)
    return [(units[i][0], units[i][1], qs[j], round(r, 3)) for i, j, r in found]


def _suite_queries(paths: Iterable[Path]) -> list[str]:
    out = []
    for p in paths:
        for line in p.read_text(encoding="utf-8").splitlines():
            s = line.strip()
            if s and not s.startswith("#"):
                out.append(json.loads(s)["query"])
    return out


def eval_queries(corpus: Path | None) -> list[str]:
    """Every eval query the project ships or reads."""
    paths = sorted((REPO / "suites").rglob("*.jsonl"))
    for root in (corpus, CHECKOUT):
        if root is not None and (root / "pycsamt").is_dir():
            paths += sorted(root.glob(SUITE_GLOB))
    return _suite_queries(paths)


def recipe_leaks(paths: Iterable[Path], queries: list[str]) -> dict[str, list]:
    out = {}
    for p in paths:
        hits = near_copies(recipe_units(p.read_text(encoding="utf-8")), queries)
        if hits:
            out[p.name] = hits
    return out


@pytest.fixture(scope="module")
def queries(real_corpus) -> list[str]:
    qs = eval_queries(real_corpus)
    assert len(qs) > 250  # project splits + bundled suites
    return qs


# ── the gates ───────────────────────────────────────────────────────────────


def test_both_frozen_splits_are_among_the_scanned_queries():
    """The gate reads every split under suites/, the second frozen one too."""
    scanned = set(eval_queries(None))
    for name in (
        "frozen_test.jsonl",
        "frozen_test_2.jsonl",
        "frozen_test_3.jsonl",
        "frozen_test_4.jsonl",
        "frozen_test_5.jsonl",
        "frozen_test_6.jsonl",
        "frozen_test_7.jsonl",
        "frozen_test_8.jsonl",
        "../tuning/no_vocab_tuning.jsonl",
        "../tuning/howto_tuning.jsonl",
    ):
        qs = _suite_queries([REPO / "suites" / "test" / name])
        assert qs and set(qs) <= scanned, name


@pytest.mark.corpus
def test_bundled_recipes_do_not_quote_eval_queries(queries):
    assert len(BUNDLED) >= 10
    leaks = recipe_leaks(BUNDLED, queries)
    assert not leaks, json.dumps(leaks, indent=1)


def test_bundled_recipes_have_no_phrasing_sections():
    """A list of ways to phrase a request is not guidance (issue 14)."""
    for p in BUNDLED:
        text = p.read_text(encoding="utf-8").lower()
        assert "how users ask" not in text, p.name
        assert "intent phrases" not in text, p.name


@pytest.mark.corpus
def test_corpus_recipes_are_scanned_and_leaks_reported(queries):
    corpus_recipes = sorted((CHECKOUT / "assistant_recipes").glob("*.md"))
    if not corpus_recipes:
        pytest.skip(f"no corpus recipes at {CHECKOUT}/assistant_recipes")
    units = [u for p in corpus_recipes for u in recipe_units(p.read_text("utf-8"))]
    assert len(units) > 50  # the scan really read them
    leaks = recipe_leaks(corpus_recipes, queries)
    for name, hits in leaks.items():
        warnings.warn(
            CorpusRecipeLeak(f"checkout assistant_recipes/{name}: {hits}"), stacklevel=1
        )


@pytest.mark.corpus
def test_expansion_triggers_are_not_near_copies_of_eval_queries(queries):
    triggers = [t for t, _ in load_profile().expansions]
    assert len(triggers) > 20
    units = ((i, _clean(t)) for i, t in enumerate(triggers))
    hits = near_copies(units, queries)
    assert not hits, hits


# ── the gate can fail ───────────────────────────────────────────────────────


def _a_query() -> str:
    qs = _suite_queries([REPO / "suites" / "test" / "frozen_test.jsonl"])
    return qs[11]


def test_detector_flags_a_planted_near_copy_in_a_recipe(tmp_path):
    q = _a_query()
    words = q.split()
    # reworded and wrapped across two lines inside a bullet, as a recipe would
    planted = (
        "# A recipe\n\nSome real guidance first.\n\n"
        f'- "{" ".join(words[: len(words) // 2])}\n'
        f'  {" ".join(words[len(words) // 2 :])}, please"\n'
    )
    recipe = tmp_path / "planted.md"
    recipe.write_text(planted, encoding="utf-8")
    leaks = recipe_leaks([recipe], [q, "an unrelated question about boreholes"])
    assert leaks and any(h[0] == 5 and h[3] > 0.9 for h in leaks["planted.md"]), leaks
    # ... and a recipe without it passes
    clean = tmp_path / "clean.md"
    clean.write_text("# A recipe\n\nCall `estimate_ss_ama` first.\n", encoding="utf-8")
    assert not recipe_leaks([clean], [q])


def test_detector_flags_a_sentence_inside_a_paragraph():
    q = _a_query()
    text = f"Intro line here.\nWe often hear: {q}. Then we answer it.\n"
    assert near_copies(recipe_units(text), [q])


def test_detector_flags_a_planted_expansion_trigger(tmp_path):
    q = _a_query()
    toml = PROFILE_TOML.read_text(encoding="utf-8")
    planted = toml.replace(
        "expansions = [\n", f'expansions = [\n  ["{q.lower()}", ["qc"]],\n', 1
    )
    assert planted != toml
    path = tmp_path / "planted.toml"
    path.write_text(planted, encoding="utf-8")
    triggers = [t for t, _ in load_profile(str(path)).expansions]
    units = [(i, _clean(t)) for i, t in enumerate(triggers)]
    assert near_copies(units, [q])
    assert not near_copies(units[1:], [q])  # only the plant


def test_short_units_leak_only_when_nearly_the_whole_query():
    assert not near_copies([(1, "mtloaderagent")], ["loader agent"])
    assert near_copies([(1, "run tipper analysis")], ["run tipper analysis"])
    assert near_copies([(1, "run tipper analysis")], ["loader agent"]) == []
