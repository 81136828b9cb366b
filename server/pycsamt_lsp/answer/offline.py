"""What is shown without a model: offline answers and the gate's other side.

Above the confidence gate, :func:`offline_answer` composes a deterministic
answer from the top evidence with ``[n]`` citations; below it,
:func:`clarifying_question` asks which workflow, symbol or survey line was
meant, built from what was retrieved, and :func:`low_confidence_answer`
lists the closest matches instead of an answer.
"""

from __future__ import annotations

from typing import Any

from pycsamt_lsp.answer.evidence import CONFIDENCE_FLOOR, AssembledContext
from pycsamt_lsp.answer.prose import (
    LIST_ITEM,
    clip,
    first_sentence,
    human,
    label_of,
    prose_of,
)
from pycsamt_lsp.search.phrasings import is_phrasing_list

__all__ = ["clarifying_question", "low_confidence_answer", "offline_answer"]


def clarifying_question(
    ctx: AssembledContext, workflow_names: tuple[str, ...] = ()
) -> str:
    """A question built from what was retrieved: which workflow, symbol or line."""
    weight: dict[str, float] = {}
    for e in ctx.evidence:
        wf = e.chunk.workflow
        if wf:
            weight[wf] = weight.get(wf, 0.0) + max(e.score, 1e-9)
    wfs = sorted(weight, key=lambda w: (-weight[w], w))[:3]
    syms: list[str] = []
    for e in ctx.evidence:
        c = e.chunk
        if c.symbol and c.kind in ("python_symbol", "python_method"):
            parts = c.symbol.split(".")
            name = ".".join(parts[-2:]) if c.kind == "python_method" else parts[-1]
            if name not in syms and not parts[-1].startswith("_"):
                syms.append(name)
        if len(syms) >= 2:
            break
    if not ctx.evidence:
        names = [human(w) for w in workflow_names[:4]]
        ask = "I found nothing in the index for that."
        if names:
            ask += f" Which workflow do you mean ({', '.join(names)}, ...)"
        else:
            ask += " Which workflow do you mean"
        ask += ", or which class or function?"
    elif len(wfs) >= 2:
        opts = [f"**{human(w)}**" for w in wfs]
        ask = f"Do you mean the {', '.join(opts[:-1])} or the {opts[-1]} workflow?"
    elif wfs:
        others = [human(w) for w in workflow_names if w != wfs[0]][:3]
        ask = f"Is this about the **{human(wfs[0])}** workflow"
        ask += f" or another one ({', '.join(others)}, ...)?" if others else "?"
    else:
        labels = [label_of(e.chunk) for e in ctx.evidence[:2]]
        ask = "Do you mean " + " or ".join(f"`{x}`" for x in labels) + "?"
    if syms and ctx.evidence:
        ask += (
            " Naming a class or function (e.g. "
            + ", ".join(f"`{s}`" for s in syms)
            + ") would help."
        )
    if ctx.registry_lines and not ctx.project_context:
        shown = ", ".join(ctx.registry_lines[:4])
        ask += f" If it concerns a survey line, say which one ({shown})."
    return ask


# -- offline answers ------------------------------------------------------------


def _project_paragraph(pc: dict[str, Any]) -> str:
    head = (
        f"**Survey line {pc.get('line')}**"
        + (f" ({pc['project']})" if pc.get("project") else "")
        + f": {pc.get('n_edi_files', 0)} EDI file(s) at `{pc.get('edi_dir')}`"
        + ("" if pc.get("exists") else " (folder not found)")
        + "."
    )
    extra = []
    if pc.get("default_workflows"):
        extra.append(
            "default workflows: " + ", ".join(f"`{w}`" for w in pc["default_workflows"])
        )
    if pc.get("static_shift"):
        extra.append(
            "static shift defaults: "
            + ", ".join(f"`{k}={v!r}`" for k, v in sorted(pc["static_shift"].items()))
        )
    if pc.get("output_root"):
        extra.append(f"output root: `{pc['output_root']}`")
    return head + ("\n" + "; ".join(extra) + "." if extra else "")


def offline_answer(ctx: AssembledContext, top: int = 4) -> str:
    """A deterministic answer from the top evidence, with ``[n]`` citations."""
    parts: list[str] = []
    if ctx.project_context:
        parts.append(_project_paragraph(ctx.project_context))
    if not ctx.evidence:
        parts.append(
            "The index holds nothing that matches this question. Try naming a "
            "class, function or workflow."
        )
        return "\n\n".join(parts)
    lead = ctx.lead()
    if lead is None:  # only lists of ways to ask: nothing to answer with
        parts.append(
            "The index holds only example phrasings for this question, no "
            "guidance or code. Try naming a class, function or workflow."
        )
        return "\n\n".join(parts)
    seen = {lead.n}
    body = clip(prose_of(lead.chunk), 600)
    label = label_of(lead.chunk)
    if body.lstrip().startswith(("-", "*", "1.")):
        opening = f"**`{label}`** [{lead.n}]\n\n{body}"
    else:
        first, rest = first_sentence(body)
        opening = f"**`{label}`**" + (f" — {first}" if first else "") + f" [{lead.n}]"
        if rest:
            opening += f"\n\n{rest}"
    sig = lead.chunk.metadata.get("signature")
    if sig and lead.chunk.kind in ("python_symbol", "python_method"):
        opening += f"\n\n```\n{sig}\n```"
    parts.append(opening)
    bullets: list[str] = []
    for e in ctx.evidence:
        if len(bullets) >= top - 1:
            break
        if e.n in seen or is_phrasing_list(
            e.chunk.text, e.chunk.metadata.get("heading")
        ):
            continue
        prose = prose_of(e.chunk)
        m = LIST_ITEM.match(prose)
        if m:  # a list: its first item, not the whole list on one line
            prose = m.group(1)
        first, _ = first_sentence(prose, 220)
        if not first:
            continue
        if first.endswith(":"):
            first = first[:-1].rstrip() + "."
        seen.add(e.n)
        bullets.append(f"- **`{label_of(e.chunk)}`** — {first} [{e.n}]")
    if bullets:
        parts.append("Also relevant:\n" + "\n".join(bullets))
    if ctx.related_symbols:
        parts.append(
            "See also: " + ", ".join(f"`{s}`" for s in ctx.related_symbols[:4])
        )
    parts.append(
        f"_Composed offline from the top {len(seen)} of {len(ctx.evidence)} retrieved "
        "chunks; the numbers refer to the sources._"
    )
    return "\n\n".join(parts)


def low_confidence_answer(ctx: AssembledContext) -> str:
    """What is shown instead of an answer below the gate."""
    if not ctx.evidence:
        return "No answer: the index holds nothing that matches this question."
    lines = [
        f"No answer yet: the evidence is weak (top score {ctx.top_score:.1f} < "
        f"{CONFIDENCE_FLOOR:g}). The closest matches were:"
    ]
    for e in ctx.evidence[:5]:
        wf = f" ({human(e.chunk.workflow)})" if e.chunk.workflow else ""
        lines.append(f"- **`{label_of(e.chunk)}`**{wf} [{e.n}]")
    return "\n".join(lines)
