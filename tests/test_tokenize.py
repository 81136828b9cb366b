"""The identifier-aware tokenizer (DESIGN 5) shared by indexing and queries."""

from __future__ import annotations

from collections import Counter

import pytest

from pycsamt_lsp.index.tokenize import STOPWORDS, term_counts, tokenize, word_tokens


def test_camel_case_identifier_gives_whole_and_parts():
    assert tokenize("StaticShiftAgent") == [
        "staticshiftagent",
        "static",
        "shift",
        "agent",
    ]


def test_snake_case_identifier_gives_whole_and_parts():
    assert tokenize("estimate_ss_ama") == ["estimate_ss_ama", "estimate", "ss", "ama"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("phase_tensor2d", ["phase_tensor2d", "phase", "tensor"]),
        ("PhaseAnalysisAgent", ["phaseanalysisagent", "phase", "analysis", "agent"]),
        ("plain", ["plain"]),
        ("UPPER", ["upper"]),
        ("2004", ["2004"]),
    ],
)
def test_identifier_splits(raw, expected):
    assert tokenize(raw) == expected


def test_lowercases_everything():
    toks = tokenize("Static SHIFT Agent")
    assert toks == ["static", "shift", "agent"]
    assert all(t == t.lower() for t in tokenize("EMInverter2D ModEM OccamTwoD"))


def test_stopwords_are_dropped_from_text_and_from_parts():
    assert tokenize("how do I use the agent for a static shift") == [
        "agent",
        "static",
        "shift",
    ]
    # a stopword inside an identifier is dropped as a part, the whole stays
    assert tokenize("get_data") == ["get_data", "data"]
    assert {"the", "how", "use", "of", "for"} <= STOPWORDS
    assert not set(tokenize(" ".join(sorted(STOPWORDS)))) & STOPWORDS


def test_single_characters_are_dropped_but_two_letter_parts_kept():
    assert tokenize("x y z") == []
    assert "ss" in tokenize("estimate_ss_ama")
    assert tokenize("ss") == ["ss"]


def test_punctuation_and_dotted_paths_split_into_identifiers():
    toks = tokenize("pycsamt.agents.static_shift.StaticShiftAgent(data=1)")
    assert toks[:2] == ["pycsamt", "agents"]
    assert "static_shift" in toks and "staticshiftagent" in toks
    assert "data" in toks


def test_query_and_document_tokenize_alike():
    doc = "class StaticShiftAgent:\n    def estimate_ss_ama(self): ..."
    q = "StaticShiftAgent estimate_ss_ama"
    assert set(tokenize(q)) <= set(tokenize(doc))


def test_term_counts_equals_counter_of_tokenize():
    text = (
        "StaticShiftAgent corrects static shift; estimate_ss_ama estimates "
        "the static shift factors. StaticShiftAgent again, and 2004 Caldwell."
    )
    assert term_counts(text) == Counter(tokenize(text))
    assert term_counts(text)["static"] == 4  # 2 plain words + 2 from the class


def test_empty_and_none_inputs():
    assert tokenize("") == []
    assert tokenize(None) == []  # type: ignore[arg-type]
    assert term_counts("") == Counter()
    assert word_tokens("") == ()
