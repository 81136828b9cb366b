"""Python code in a model's answer, checked by the import validator.

Each fenced Python block (``python``/``py`` or an unlabelled block that
looks like code) goes through :meth:`Workspace.validate`; the findings are
attached to the result and summarised under the answer.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.text.markup import FENCED_BLOCK

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = ["extract_code_blocks", "validate_answer_code", "validation_note"]


def extract_code_blocks(markdown: str) -> list[str]:
    """Python code blocks of a Markdown answer (``python``/``py`` or unlabelled)."""
    out = []
    for lang, body in FENCED_BLOCK.findall(markdown or ""):
        if lang.lower() in ("python", "py", "python3", ""):
            if lang == "" and not re.search(r"^\s*(import|from)\s|\(", body, re.M):
                continue
            out.append(body)
    return out


def validate_answer_code(ws: Workspace, markdown: str) -> dict[str, Any] | None:
    """Run each code block through the import validator; None without code."""
    blocks = extract_code_blocks(markdown)
    if not blocks:
        return None
    reports = []
    errors: list[str] = []
    warnings: list[str] = []
    checked: list[str] = []
    for i, code in enumerate(blocks):
        rep = ws.validate(code)
        reports.append({"index": i, **rep})
        errors += [e for e in rep.get("errors", []) if e not in errors]
        warnings += [w for w in rep.get("warnings", []) if w not in warnings]
        checked += [c for c in rep.get("checked", []) if c not in checked]
    return {
        "ok": all(r.get("ok") for r in reports),
        "syntax_ok": all(r.get("syntax_ok") for r in reports),
        "errors": errors,
        "warnings": warnings,
        "checked": checked,
        "blocks": reports,
    }


def validation_note(v: dict[str, Any]) -> str:
    """The Markdown note on the validator's findings put under an answer."""
    lines = ["> **Import check of the generated code:**"]
    lines += [f"> - error: {e}" for e in v["errors"]]
    lines += [f"> - warning: {w}" for w in v["warnings"]]
    if not v["syntax_ok"]:
        lines.append("> - a code block is not valid Python")
    return "\n".join(lines)
