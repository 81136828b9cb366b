"""One identifier splitter and one stopword list, in parity with the four
splitters it replaced (index tokenizer, developer search, symbol cards,
package-model suggestions)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from pycsamt_lsp.index.tokenize import STOPWORDS as TOKENIZE_STOPWORDS
from pycsamt_lsp.index.tokenize import word_tokens
from pycsamt_lsp.model.package import identifier_tokens
from pycsamt_lsp.text.identifiers import (
    GRAMMAR_WORDS,
    STOPWORDS,
    identifier_parts,
    is_code_identifier,
    split_identifier,
)

# -- the replaced implementations, verbatim ---------------------------------
OLD_TOKENIZE_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
OLD_DEVSEARCH = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
OLD_CARDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
OLD_MODEL = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def old_model_tokens(name: str) -> list[str]:
    out: list[str] = []
    for chunk in name.split("_"):
        if chunk:
            out.extend(t.lower() for t in OLD_MODEL.findall(chunk))
    return out


def _identifiers() -> list[str]:
    """Every identifier of this project's own source, plus random ones."""
    pkg = Path(__file__).resolve().parents[1] / "server" / "pycsamt_lsp"
    names = set()
    for path in pkg.rglob("*.py"):
        names.update(
            re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(encoding="utf-8"))
        )
    rnd = random.Random(13)
    alphabet = "aAbBzZ09_xXyY"
    for _ in range(20_000):
        names.add("".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 12))))
    names.update(["HTTPServer", "EDIFile", "ABC1x", "estimate_ss_ama", "getX2Y", "_"])
    return sorted(names)


IDENTS = _identifiers()


def test_parity_with_the_tokenizer_devsearch_and_cards():
    assert len(IDENTS) > 5000
    for name in IDENTS:
        want = OLD_TOKENIZE_PART.findall(name)
        assert identifier_parts(name) == want, name
        assert [p.lower() for p in OLD_DEVSEARCH.findall(name)] == split_identifier(
            name
        )
        assert OLD_CARDS.findall(name) == want, name


def test_parity_with_the_package_model_rule():
    for name in IDENTS:
        assert identifier_tokens(name) == old_model_tokens(name), name
        assert split_identifier(name, acronym_before_digit=True) == old_model_tokens(
            name
        )


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("StaticShiftAgent", ["static", "shift", "agent"]),
        ("estimate_ss_ama", ["estimate", "ss", "ama"]),
        ("HTTPServer", ["http", "server"]),
        ("EDIFile", ["edi", "file"]),
        ("utm2latlon", ["utm", "2", "latlon"]),
    ],
)
def test_split_identifier_examples(name, parts):
    assert split_identifier(name) == parts


def test_the_two_rules_differ_only_before_a_digit():
    assert split_identifier("ABC1") == ["abc", "1"]
    assert split_identifier("ABC1", acronym_before_digit=True) == ["ab", "c", "1"]


def test_word_tokens_are_unchanged():
    assert word_tokens("StaticShiftAgent") == (
        "staticshiftagent",
        "static",
        "shift",
        "agent",
    )
    assert word_tokens("the") == ()


def test_stopwords_are_the_tokenizers_and_grammar_is_a_subset_of_words():
    assert TOKENIZE_STOPWORDS is STOPWORDS
    assert {"the", "how", "code", "function"} <= STOPWORDS
    assert {"the", "where", "your"} <= GRAMMAR_WORDS
    assert "implemented" not in GRAMMAR_WORDS and "code" not in GRAMMAR_WORDS


@pytest.mark.parametrize(
    ("tok", "yes"),
    [("estimate_ss", True), ("_private", True), ("staticShift", True), ("ss", False)],
)
def test_is_code_identifier(tok, yes):
    assert is_code_identifier(tok) is yes


# the tokenizer's list before it moved here (2b2c04a:index/tokenize.py)
OLD_TOKENIZE_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "for",
        "and",
        "or",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "is",
        "are",
        "be",
        "do",
        "does",
        "did",
        "how",
        "what",
        "which",
        "when",
        "where",
        "why",
        "can",
        "could",
        "would",
        "should",
        "i",
        "you",
        "we",
        "my",
        "our",
        "me",
        "it",
        "this",
        "that",
        "these",
        "those",
        "use",
        "using",
        "used",
        "run",
        "write",
        "get",
        "make",
        "show",
        "please",
        "code",
        "script",
        "function",
        "class",
        "method",
    ]
)
# developer search's grammar words before they moved here (devsearch.py _GRAMMAR)
OLD_DEVSEARCH_GRAMMAR = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "does",
        "did",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "should",
        "tell",
        "the",
        "their",
        "there",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def test_stopword_lists_equal_the_ones_they_replace():
    assert STOPWORDS == OLD_TOKENIZE_STOPWORDS
    assert GRAMMAR_WORDS == OLD_DEVSEARCH_GRAMMAR
