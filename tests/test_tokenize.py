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
    assert term_counts(None) == Counter()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "__init__ _private a__b __ _ ___x___ x_ _1 1_2 a_b_c__d",
        "naïve café_au_lait ΣΑΣ straße Ｆｕｌｌ ﬁle µ_scale Kelvin\u212a",
        "tab\there\r\nline\x0bvt\x0cff\x1cfs\x1dgs\x85nel\u2028ls end",
        "def f(x: int = 1) -> dict[str, 'Any']:\n    return {'k': x}  # note",
        "HTTPServer2D ABC1def x86_64 UTF8Decoder snake_Case_Mixed 0x1F ee",
        "surrogate \udcff here and 😀emoji😀 next_to_words",
    ],
)
def test_term_counts_is_counter_of_tokenize_in_first_seen_order(text):
    """The byte-run scan of term_counts gives tokenize's regex words exactly:
    same tokens, counts and first-seen order (the order term ids follow)."""
    got = term_counts(text)
    want = Counter(tokenize(text))
    assert got == want
    assert list(got) == list(want)


def test_term_counts_matches_tokenize_on_random_text():
    import random

    rng = random.Random(18)
    alphabet = "aZ09_ _-.é\nΣ\t(x)AbC__"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        got, want = term_counts(text), Counter(tokenize(text))
        assert list(got.items()) == list(want.items()), text
