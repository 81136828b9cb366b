"""The argument dataclasses of every command.

One dataclass per command (or shared by several): its fields are the JSON
object a client sends to ``workspace/executeCommand``, the options of the
matching ``pycsamt-lsp`` subcommand, and the fields in the generated client
description. ``metadata["help"]`` is the CLI help and the client's field
doc; ``metadata["flag"]`` a short CLI flag. ``check()`` validates values
beyond their types and raises :class:`~pycsamt_lsp.errors.ArgumentError`.

LSP arguments are camelCase (``includeTests``); the CLI spells them
``--include-tests``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pycsamt_lsp.errors import ArgumentError

__all__ = [
    "AskArgs",
    "EvalArgs",
    "InspectSymbolArgs",
    "NoArgs",
    "QueryArgs",
    "ReadSourceArgs",
    "SearchSourceArgs",
    "ValidateArgs",
]


def _help(text: str, flag: str | None = None) -> dict[str, str]:
    return {"help": text, **({"flag": flag} if flag else {})}


@dataclass
class NoArgs:
    """Commands that take no fields."""


@dataclass
class QueryArgs:
    """``pycsamt.query``: ranked chunks for a question."""

    query: str = field(metadata=_help("the question or keywords"))
    k: int = field(default=10, metadata=_help("how many results (1-200)", "-k"))
    workflow: str | None = field(
        default=None, metadata=_help("restrict to one workflow")
    )
    kinds: list[str] | None = field(
        default=None, metadata=_help("restrict to these chunk kinds")
    )
    dense: bool = field(
        default=False, metadata=_help("fuse dense retrieval (needs build --embed)")
    )
    disable: list[str] | None = field(
        default=None,
        metadata=_help(
            "ranking stages to switch off, +name to switch one on (docs/ranking.md)"
        ),
    )

    def check(self) -> None:
        """Refuse an empty query, an out-of-range ``k`` and an unknown stage."""
        if not self.query.strip():
            raise ArgumentError("field 'query' must not be empty")
        if not 1 <= self.k <= 200:
            raise ArgumentError("field 'k' must be from 1 to 200")
        if self.disable:
            _check_disable(self.disable, dense=self.dense)


def _check_disable(disable: list[str], *, dense: bool = False) -> None:
    """Unknown stage names in *disable* are an error naming the known ones
    (with ``dense``, the fusion's stages are known too); loaded on use."""
    from pycsamt_lsp.search.retrieval import check_disable

    if dense:
        from pycsamt_lsp.search.dense.fusion import (
            FUSION_OFF_BY_DEFAULT,
            FUSION_STAGES,
        )

        check_disable(
            disable,
            more=FUSION_STAGES,
            more_off=FUSION_OFF_BY_DEFAULT,
            what="ranking or fusion",
        )
    else:
        check_disable(disable)


@dataclass
class AskArgs:
    """``pycsamt.ask``: a grounded answer with cited sources."""

    question: str = field(metadata=_help("the question"))
    k: int = field(default=6, metadata=_help("evidence chunks (1-50, default 6)", "-k"))
    dense: bool | None = field(
        default=None, metadata=_help("fuse dense vectors (needs `build --embed`)")
    )

    def check(self) -> None:
        """Refuse an empty question and an out-of-range ``k``."""
        if not self.question.strip():
            raise ArgumentError("field 'question' must not be empty")
        if not 1 <= self.k <= 50:
            raise ArgumentError("field 'k' must be from 1 to 50")


@dataclass
class ValidateArgs:
    """``pycsamt.validate``: check a code snippet's package imports."""

    code: str = field(metadata=_help("Python source to check"))


@dataclass
class SearchSourceArgs:
    """``pycsamt.searchSource``: live developer search over the source."""

    query: str = field(metadata=_help("words, a symbol, or a quoted phrase"))
    includeTests: bool = field(  # noqa: N815 - LSP arguments are camelCase
        default=False, metadata=_help("also search unit tests")
    )
    limit: int = field(default=6, metadata=_help("how many results (at most 6)"))


@dataclass
class InspectSymbolArgs:
    """``pycsamt.inspectSymbol``: signature, docstring and lines of a symbol."""

    path: str = field(metadata=_help("corpus-relative path"))
    symbol: str = field(metadata=_help("e.g. func or Class.method"))


@dataclass
class ReadSourceArgs:
    """``pycsamt.readSource``: at most 80 lines of a corpus file."""

    path: str = field(metadata=_help("corpus-relative path"))
    start: int = field(default=1, metadata=_help("first line (1-based)"))
    lines: int = field(default=80, metadata=_help("how many lines (at most 80)"))


@dataclass
class EvalArgs:
    """``pycsamt.eval``: retrieval metrics on the JSONL suites."""

    suiteDir: str | None = field(  # noqa: N815 - LSP arguments are camelCase
        default=None,
        metadata=_help("folder of *.jsonl suites (default: bundled + project suites)"),
    )
    k: int = field(default=10, metadata=_help("cut-off of the metrics", "-k"))
    ablate: bool = field(
        default=False, metadata=_help("switch each ranking component off in turn")
    )
    disable: list[str] | None = field(
        default=None,
        metadata=_help(
            "ranking stages off in every run, +name on (with --ablate: under each row)"
        ),
    )

    def check(self) -> None:
        """Refuse an unknown stage before any suite runs (a retrieval that
        raises is only counted as an error of its record)."""
        if self.disable:
            _check_disable(self.disable)
