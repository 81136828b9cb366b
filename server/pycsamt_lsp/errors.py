"""Every exception the package raises on purpose, in one module.

Why one module: the front ends (the CLI and the language server) decide how
to report a failure from its *type*, so the types must not depend on which
feature raised them, and importing them must not import the feature (this
module imports nothing from the package, so any module may use it without a
cycle).

The one distinction the front ends need is :class:`ArgumentError`: the
caller sent something wrong (a bad field, an empty query, a refused path, a
missing suite folder). Over LSP only those become ``InvalidParams``; every
other exception, including the other classes here, is an internal failure
and is reported as one. The CLI prints any :class:`PycsamtError` as one line
and exits 2.

The historical bases (``ValueError`` / ``RuntimeError``) are kept so code
and tests that catch the builtin keep working.
"""

from __future__ import annotations

__all__ = [
    "AnswerError",
    "ArgumentError",
    "BuildCancelled",
    "CliError",
    "CorpusError",
    "DevSearchError",
    "EmbeddingError",
    "IndexLoadError",
    "ProfileError",
    "PycsamtError",
    "QueryError",
    "RegistryError",
    "RegistryFileError",
    "SuiteError",
    "is_argument_error",
]


class PycsamtError(Exception):
    """Base of every deliberate failure; its message is one readable line."""


# -- the caller's fault: LSP InvalidParams, CLI exit 2 ------------------------


class ArgumentError(PycsamtError, ValueError):
    """A command's arguments are malformed or refused (the message says how)."""


class QueryError(ArgumentError):
    """A request's arguments are invalid, or it cannot run in this state."""


class DevSearchError(ArgumentError):
    """Developer search refused a path or an argument; one clear line."""


class SuiteError(ArgumentError):
    """A suite file is missing or has a malformed line (message says where)."""


# -- everything else: internal failures ---------------------------------------


class CliError(PycsamtError):
    """A user-facing CLI failure (e.g. an unreadable input file): exit code 2."""


class BuildCancelled(PycsamtError, RuntimeError):
    """The build was stopped (the server is shutting down)."""


class CorpusError(PycsamtError, RuntimeError):
    """The corpus root is missing, unreadable, or could not be fetched."""


class ProfileError(PycsamtError, ValueError):
    """A profile file is missing or malformed (the message says which)."""


class RegistryFileError(PycsamtError, ValueError):
    """A survey-line registry file is unreadable or malformed (names the file)."""


class RegistryError(PycsamtError, ValueError):
    """The project registry file is malformed (the message says where)."""


class IndexLoadError(PycsamtError, RuntimeError):
    """The persisted index is missing, corrupt or foreign; the message says why."""


class EmbeddingError(PycsamtError, RuntimeError):
    """An embedding backend is unavailable or failed (message has no secrets)."""


class AnswerError(PycsamtError, RuntimeError):
    """The model could not answer (timeout, API error); the message is shown."""


def is_argument_error(exc: BaseException) -> bool:
    """True when *exc* is the caller's fault (LSP ``InvalidParams``).

    The single rule both front ends share; anything else is internal.
    """
    return isinstance(exc, ArgumentError)
