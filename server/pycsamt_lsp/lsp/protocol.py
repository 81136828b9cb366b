"""JSON-RPC hardening: every request gets an answer, no message a traceback.

pygls structures messages inside ``json.loads``' ``object_hook`` (once per
JSON object, innermost first). When a request's params do not fit its type
(``workspace/executeCommand`` with a list as params, ``textDocument/hover``
without params, a position that is a string), the error escapes the reader
loop: pygls logs a traceback and the client never gets a response, so it
waits forever. JSON-RPC requires an error response to every request.

:class:`PycsamtProtocol` therefore structures a message once, at the top,
in :meth:`handle_message`: a request that does not fit gets
``InvalidParams`` naming the field (a notification that does not fit is
dropped), anything else that is not a request object gets
``InvalidRequest``, and failures are logged as one line. Positions of the
position-taking requests are clamped into LSP's unsigned range first, so a
negative or huge line is answered (clamped to the document later) instead
of refused. Text that is not JSON gets ``ParseError`` (see
:func:`one_line_errors`, which also keeps pygls' own tracebacks off stderr).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import cattrs
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol

from pycsamt_lsp.errors import is_argument_error

__all__ = [
    "MAX_UINT",
    "OneLineFormatter",
    "PycsamtProtocol",
    "clamp_positions",
    "describe_error",
]

log = logging.getLogger("pycsamt_lsp")

MAX_UINT = 2**31 - 1
_POSITIONED = frozenset(
    {
        types.TEXT_DOCUMENT_HOVER,
        types.TEXT_DOCUMENT_DEFINITION,
        types.TEXT_DOCUMENT_COMPLETION,
        types.TEXT_DOCUMENT_CODE_ACTION,
    }
)


def _clamp(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, 0), MAX_UINT)
    return value


def _clamp_position(pos: Any) -> None:
    if isinstance(pos, dict):
        for key in ("line", "character"):
            if key in pos:
                pos[key] = _clamp(pos[key])


def _clamp_range(rng: Any) -> None:
    if isinstance(rng, dict):
        _clamp_position(rng.get("start"))
        _clamp_position(rng.get("end"))


def clamp_positions(method: str, params: Any) -> None:
    """Clamp the ``position`` / ``range`` integers of a message in place
    (requests that take a position, and the ranges of incremental edits)."""
    if not isinstance(params, dict):
        return
    if method == types.TEXT_DOCUMENT_DID_CHANGE:
        changes = params.get("contentChanges")
        for change in changes if isinstance(changes, list) else ():
            if isinstance(change, dict):
                _clamp_range(change.get("range"))
        return
    if method not in _POSITIONED:
        return
    _clamp_position(params.get("position"))
    _clamp_range(params.get("range"))


def _reason(exc: BaseException) -> str:
    """One readable line for a structuring failure (fields named)."""
    cause = exc.__cause__ or exc
    if isinstance(cause, cattrs.ClassValidationError):
        try:
            return "; ".join(cattrs.transform_error(cause, path="params")[:3])
        except Exception:  # noqa: BLE001 - fall back to the plain message
            pass
    text = str(cause) or type(cause).__name__
    return text.splitlines()[0][:200]


def describe_error(exc: BaseException) -> str:
    """One non-empty line for an exception: ``MemoryError()`` says nothing,
    and an error response or log line must say what went wrong."""
    if isinstance(exc, (MemoryError, RecursionError)):
        return (
            f"the input is too large or too deeply nested to analyse "
            f"({type(exc).__name__})"
        )
    text = str(exc).strip()
    # 500: room for an unknown stage's list of the known ones (issue 14's
    # ranking and fusion stages, ~330 characters), still one bounded line
    first = text.splitlines()[0][:500] if text else ""
    if not first:
        return type(exc).__name__
    return first if is_argument_error(exc) else f"{type(exc).__name__}: {first}"


class PycsamtProtocol(LanguageServerProtocol):
    """pygls' protocol, answering every request (see the module docstring)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Leave objects as parsed; :meth:`handle_message` structures once."""
        return data

    def handle_message(self, message: Any) -> None:
        """Structure and dispatch one parsed JSON-RPC message (the one place it
        is structured, see the module docstring): whatever is wrong with it is
        answered with an error response or logged, never a traceback.
        """
        if not isinstance(message, dict):
            log.warning(
                "refused a JSON-RPC message that is not an object (%s)",
                type(message).__name__,
            )
            self._error(None, types.ErrorCodes.InvalidRequest, "not a JSON object")
            return
        method = message.get("method")
        is_request = "id" in message and method is not None
        msg_id = message.get("id")
        if msg_id is not None and not isinstance(msg_id, (int, str)):
            msg_id = None
        if message.get("jsonrpc") != "2.0" or (
            method is not None and not isinstance(method, str)
        ):
            log.warning("refused a malformed JSON-RPC message (no jsonrpc 2.0/method)")
            if "id" in message:
                self._error(
                    msg_id,
                    types.ErrorCodes.InvalidRequest,
                    "not a JSON-RPC 2.0 message",
                )
            return
        if isinstance(method, str):
            clamp_positions(method, message.get("params"))
        try:
            structured = super().structure_message(message)
        except Exception as exc:  # noqa: BLE001 - answered, never raised
            why = _reason(exc)
            if is_request:
                log.warning("%s: invalid params: %s", method, why)
                self._error(
                    msg_id,
                    types.ErrorCodes.InvalidParams,
                    f"{method}: invalid params: {why}",
                )
            else:
                log.warning("dropped %s: invalid params: %s", method or "message", why)
            return
        try:
            super().handle_message(structured)
        except Exception as exc:  # noqa: BLE001 - answered, never raised
            log.warning("%s failed: %s", method or "message", _reason(exc))
            if is_request:
                self._error(
                    msg_id, types.ErrorCodes.InternalError, f"{method} failed: {exc}"
                )

    def _error(self, msg_id: Any, code: int, message: str) -> None:
        self._send_data(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": int(code), "message": message},
            }
        )

    def parse_error(self, exc: BaseException) -> None:
        """The body was not JSON: ``ParseError`` with a null id (JSON-RPC)."""
        log.warning("refused a message that is not JSON: %s", _reason(exc))
        self._error(None, types.ErrorCodes.ParseError, f"parse error: {_reason(exc)}")


class OneLineFormatter(logging.Formatter):
    """pygls logs every failed request with its traceback (as ``exc_info`` or
    inside the message); for a client that sends malformed requests that
    floods stderr. pygls' records become one line (the message's first line,
    the exception's type and message); the package's own keep theirs."""

    def format(self, record: logging.LogRecord) -> str:
        """One line per record: pygls' multi-line messages and tracebacks are cut
        to their first line plus the exception, so a log stays greppable.
        """
        if record.name.startswith("pygls"):
            text = record.getMessage()
            line = (text.splitlines() or [""])[0][:300]
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                line = f"{line}: {type(exc).__name__}: {_first(exc)}"
            elif "\n" in text:
                line += " (details cut)"
            record = logging.makeLogRecord(record.__dict__)
            record.msg, record.args = line, None
            record.exc_info = record.exc_text = None
        return super().format(record)


def _first(exc: BaseException | None) -> str:
    text = str(exc) if exc is not None else ""
    return (text.splitlines() or [""])[0][:200]


def is_parse_error(exc: BaseException) -> bool:
    """A reader-loop failure that means the body was not JSON."""
    return isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError))
