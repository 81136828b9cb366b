"""The answers a routed request needs besides prose: plans, scripts, capabilities.

After :mod:`pycsamt_lsp.answer.route` has decided what a request is, this
module builds what that intent answers with, always from the corpus and
never from hard-coded prose:

- :func:`workflow_plan` (``workflow`` and ``plot``): which agent and which
  functions, in which order, for which survey line and with which defaults.
  The steps come from the profile's workflows, the workflow's recipe in the
  index (the package names it cites, in the recipe's order, kept only when
  the package model says they exist) and the index's agent classes tagged
  with the workflow; the line's EDI folder and defaults from the registry;
  the parameters' defaults from the API cards.
- :func:`code_script` (``code``): a script written from API cards (real
  import paths and signatures, the line's EDI folder), run through the
  import validator before it is shown; a name the validator rejects is
  dropped from the script and the answer says so.
- :func:`capabilities` (``meta``): intents, the profile's workflows with
  their chunk counts and recipes, the registry's lines, the index's size.
- :func:`developer_answer` (developer scope): the live source search, with
  paths, line numbers and file hashes; tests only when asked for, labelled
  as expected-behaviour examples; a stated limitation when nothing is found.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pycsamt_lsp.answer.prose import human
from pycsamt_lsp.cards.card import card_for
from pycsamt_lsp.devsearch.search import MAX_QUERY_CHARS as MAX_DEV_QUERY
from pycsamt_lsp.devsearch.search import search_source
from pycsamt_lsp.errors import DevSearchError
from pycsamt_lsp.routing import INTENTS, LineRegistry, RouteDecision

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "capabilities",
    "capabilities_markdown",
    "code_script",
    "developer_answer",
    "plan_markdown",
    "workflow_plan",
]

log = logging.getLogger(__name__)

#: Functions and agents listed per step (the recipe's first ones).
MAX_FUNCTIONS = 6
#: Keyword defaults written out per call in a generated script.
MAX_KWARGS = 6
#: Parameter names that take the survey data (the line's EDI folder).
_DATA_PARAMS = frozenset(
    [
        "sites",
        "data",
        "edi",
        "edis",
        "edi_dir",
        "edi_path",
        "edi_paths",
        "path",
        "paths",
        "survey",
        "line",
        "source",
        "src",
        "folder",
        "directory",
        "files",
        "collection",
    ]
)


# -- the index's view of one workflow -------------------------------------------------


@dataclass
class _WorkflowIndex:
    """Recipes and agent classes of each workflow, from one pass over the snapshot."""

    recipes: dict[str, list[Any]] = field(default_factory=dict)  # wf -> recipe chunks
    agents: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)


def _workflow_index(ws: Workspace) -> _WorkflowIndex:
    snap = ws.require_published().snapshot
    t = snap.table
    out = _WorkflowIndex()
    for slot in snap.alive_slots():
        wf = t.workflows[slot]
        if not wf:
            continue
        kind = t.kinds[slot]
        if kind == "recipe":
            out.recipes.setdefault(wf, []).append(t.get(slot))
        elif kind == "python_symbol":
            sym = t.symbols[slot] or ""
            leaf = sym.rsplit(".", 1)[-1]
            if leaf.endswith("Agent") and not leaf.startswith("_") and leaf != "Agent":
                prio = int(getattr(t.get(slot), "priority", 1) or 1)
                out.agents.setdefault(wf, []).append((prio, sym, t.paths[slot]))
    for chunks in out.recipes.values():
        chunks.sort(key=lambda c: (c.source_path, c.line_start or 0))
    return out


def _main_recipe(chunks: Sequence[Any]) -> list[Any]:
    """The chunks of the recipe file most about the workflow (most tagged
    sections; ties: the shorter path), in file order."""
    by_file: dict[str, list[Any]] = {}
    for c in chunks:
        by_file.setdefault(c.source_path, []).append(c)
    if not by_file:
        return []
    best = min(by_file, key=lambda p: (-len(by_file[p]), len(p), p))
    return by_file[best]


def _cited_names(ws: Workspace, chunks: Sequence[Any]) -> list[str]:
    """Package names a recipe cites in backticks, in order, that exist."""
    pkg = re.escape(ws.profile.package)
    pat = re.compile(rf"`({pkg}(?:\.[A-Za-z_]\w*)+)`")
    out: list[str] = []
    model = ws.model
    for c in chunks:
        for name in pat.findall(c.text or ""):
            if name in out:
                continue
            try:
                if model.resolve(name).exists:
                    out.append(name)
            except Exception as exc:  # noqa: BLE001 - a plan never fails on one name
                log.debug("resolve(%s): %s", name, exc)
    return out


def _card(ws: Workspace, name: str) -> dict[str, Any] | None:
    try:
        card = card_for(ws, name)
    except Exception as exc:  # noqa: BLE001 - a card never breaks a plan
        log.debug("card_for(%s): %s", name, exc)
        return None
    if card is None:
        return None
    d = card.to_dict()
    return {
        "name": name,
        "qualname": d.get("qualname"),
        "kind": d.get("kind"),
        "signature": d.get("signature"),
        "summary": d.get("summary"),
        "path": d.get("path"),
        "line": d.get("line"),
        "uri": d.get("link") or d.get("uri"),
        "params": [
            {"name": p["name"], "kind": p["kind"], "default": p.get("default")}
            for p in d.get("params", [])
        ],
        "methods": list(d.get("methods") or []),
    }


def _line_facts(
    decision: RouteDecision, registry: LineRegistry | None
) -> dict[str, Any] | None:
    if not decision.line or registry is None:
        return None
    try:
        return registry.resolve(decision.line)
    except KeyError:
        return None


def _plan_workflows(decision: RouteDecision) -> tuple[list[str], str]:
    """The workflows of a plan and where their order comes from."""
    if decision.workflows:
        return list(decision.workflows), "the request"
    if decision.workflow:
        return [decision.workflow], "the request"
    if decision.line_workflows:
        return list(
            decision.line_workflows
        ), f"the registry's defaults of {decision.line}"
    return [], ""


def workflow_plan(
    ws: Workspace,
    decision: RouteDecision,
    registry: LineRegistry | None,
    *,
    plot: bool = False,
) -> dict[str, Any]:
    """The plan of a ``workflow`` (or ``plot``) request; see the module doc."""
    wfs, order_from = _plan_workflows(decision)
    known = set(ws.profile.workflow_names)
    idx = _workflow_index(ws)
    line = _line_facts(decision, registry)
    steps: list[dict[str, Any]] = []
    limitations: list[str] = []
    for wf in wfs:
        if wf not in known:
            limitations.append(f"`{wf}` is not a workflow of profile {ws.profile.name}")
            continue
        recipe = _main_recipe(idx.recipes.get(wf, []))
        names = _cited_names(ws, recipe)
        home = tuple(frag for frag, w in ws.profile.workflow_paths if w == wf)

        def at_home(dotted: str, home: tuple[str, ...] = home) -> bool:
            path = dotted.replace(".", "/")
            return any(frag in path for frag in home)

        agents = [n for n in names if n.rsplit(".", 1)[-1].endswith("Agent")]
        indexed = sorted(idx.agents.get(wf, []), key=lambda a: (-a[0], len(a[1]), a[1]))
        agent_names = [n for n in agents if at_home(n)]
        agent_names += [
            a[1] for a in indexed if at_home(a[1]) and a[1] not in agent_names
        ]
        agent_names += [n for n in agents if n not in agent_names]
        if not agent_names and indexed:
            agent_names = [indexed[0][1]]
        funcs = [n for n in names if n not in agents]
        if plot:
            plots = [n for n in funcs if "plot" in n.rsplit(".", 1)[-1].lower()]
            funcs = plots or funcs
        agent = _card(ws, agent_names[0]) if agent_names else None
        fcards: list[dict[str, Any]] = []
        for n in funcs:
            c = _card(ws, n)
            if (
                c
                and c["kind"] in ("function", "class")
                and c["qualname"] not in {f["qualname"] for f in fcards}
            ):
                fcards.append(c)
            if len(fcards) >= MAX_FUNCTIONS:
                break
        defaults: dict[str, Any] = {}
        if line:
            defaults = {
                "edi_dir": line["edi_dir"],
                "sort_by": line["sort_by"],
                "station_pattern": line["station_pattern"],
                "output_root": line["output_root"],
            }
            if wf == "static_shift" and line.get("static_shift"):
                defaults["static_shift"] = line["static_shift"]
            if plot and line.get("plot"):
                defaults["plot"] = line["plot"]
        step = {
            "n": len(steps) + 1,
            "workflow": wf,
            "label": human(wf),
            "agent": agent,
            "functions": fcards,
            "recipe": (
                {
                    "path": recipe[0].source_path,
                    "line_start": recipe[0].line_start,
                    "uri": ws.uri_of(recipe[0].source_path),
                }
                if recipe
                else None
            ),
            "defaults": defaults,
        }
        if agent is None and not fcards:
            step["limitation"] = (
                f"no agent class or recipe for `{wf}` in the index; "
                "search the source before relying on a name"
            )
        steps.append(step)
    if not wfs:
        limitations.append(
            "the request names no workflow"
            + (
                f" and line {decision.line} has no default workflows"
                if decision.line
                else ""
            )
        )
    if decision.line and line is None:
        limitations.append(
            f"line {decision.line} could not be resolved in the registry"
        )
    return {
        "kind": "plot" if plot else "workflow",
        "line": line,
        "order_from": order_from,
        "steps": steps,
        "limitations": limitations,
        "source": "profile workflows, recipes and agent classes of the index, "
        "API cards, survey-line registry",
    }


def _sig_line(card: dict[str, Any]) -> str:
    sig = card.get("signature") or card.get("qualname") or card["name"]
    return f"`{sig}`" + (
        f" ({card['path']}:{card['line']})" if card.get("path") else ""
    )


def plan_markdown(plan: dict[str, Any], decision: RouteDecision) -> str:
    """The plan as the answer text: numbered steps, each with its calls and defaults."""
    what = "Plot plan" if plan["kind"] == "plot" else "Workflow plan"
    line = plan["line"]
    head = f"**{what}**"
    if line:
        head += (
            f" for survey line **{line['line']}**"
            + (f" ({line['project']})" if line.get("project") else "")
            + f": EDI folder `{line['edi_dir']}`"
            + (
                f" ({line['n_edi_files']} EDI file(s))"
                if line["exists"]
                else " (folder not found)"
            )
        )
    out = [head]
    if plan["order_from"]:
        out.append(f"_Steps in the order of {plan['order_from']}._")
    out.append("")
    for s in plan["steps"]:
        out.append(f"{s['n']}. **{s['label']}** (`{s['workflow']}`)")
        if s["agent"]:
            out.append(f"   - agent: {_sig_line(s['agent'])}")
        for f in s["functions"]:
            out.append(f"   - {_sig_line(f)}")
        d = s["defaults"]
        if d:
            parts = [f"sort_by={d['sort_by']!r}", f"output_root={d['output_root']!r}"]
            if d.get("station_pattern"):
                parts.append(f"station_pattern={d['station_pattern']!r}")
            out.append("   - line defaults: " + ", ".join(parts))
            for key in ("static_shift", "plot"):
                if d.get(key):
                    kv = ", ".join(f"{k}={v!r}" for k, v in d[key].items())
                    out.append(f"   - registry {key} defaults: {kv}")
        if s["recipe"]:
            out.append(f"   - recipe: {s['recipe']['path']}")
        if s.get("limitation"):
            out.append(f"   - limitation: {s['limitation']}")
    for lim in plan["limitations"]:
        out.append(f"> Limitation: {lim}.")
    if decision.clarify_question:
        out += ["", f"? {decision.clarify_question}"]
    return "\n".join(out).rstrip()


# -- code -----------------------------------------------------------------------------


def _ident(name: str) -> str:
    s = re.sub(r"\W+", "_", name).strip("_").lower()
    return s if s.isidentifier() else f"v_{s}"


def _call(card: dict[str, Any], data_var: str | None, required: list[str]) -> str:
    """``leaf(data, x=default, ...)`` from a card's parameters."""
    args: list[str] = []
    kwargs = 0
    for p in card["params"]:
        if p["kind"] in ("var_positional", "var_keyword") or p["name"] in (
            "self",
            "cls",
        ):
            continue
        if p["default"] is None:
            if data_var and p["name"] in _DATA_PARAMS:
                val = data_var
            else:
                val = p["name"]
                if val not in required:
                    required.append(val)
            args.append(val if p["kind"] != "keyword_only" else f"{p['name']}={val}")
        elif kwargs < MAX_KWARGS:
            args.append(f"{p['name']}={p['default']}")
            kwargs += 1
    return f"{card['qualname'].rsplit('.', 1)[-1]}({', '.join(args)})"


def _script(
    question: str, cards: list[dict[str, Any]], line: dict[str, Any] | None
) -> str:
    imports: dict[str, list[str]] = {}
    for c in cards:
        mod, _, leaf = c["qualname"].rpartition(".")
        imports.setdefault(mod, [])
        if leaf not in imports[mod]:
            imports[mod].append(leaf)
    out = [f'"""{question.strip()}', "", "Written from the API cards of the index."]
    out += ['"""', ""]
    out += [
        f"from {m} import {', '.join(sorted(ns))}" for m, ns in sorted(imports.items())
    ]
    out.append("")
    data_var = None
    if line:
        data_var = "edi_dir"
        out.append(f"edi_dir = {line['edi_dir']!r}  # line {line['line']} (registry)")
    required: list[str] = []
    body: list[str] = []
    for i, c in enumerate(cards):
        var = _ident(c["qualname"].rsplit(".", 1)[-1])
        if c["kind"] == "class":
            body.append(f"{var} = {_call(c, data_var, required)}")
            if c.get("run"):
                body.append(
                    f"result_{i + 1} = {var}.{_call(c['run'], data_var, required)}"
                )
        else:
            body.append(f"result_{i + 1} = {_call(c, data_var, required)}")
    for r in required:
        out.append(f"{r} = None  # required: set it before running")
    out += body
    return "\n".join(out).rstrip() + "\n"


def code_script(
    ws: Workspace,
    question: str,
    ctx_cards: list[dict[str, Any]],
    decision: RouteDecision,
    registry: LineRegistry | None,
) -> dict[str, Any]:
    """The script of a ``code`` request and its validation (see the module doc).

    The cards are those the workflow's plan names first (agent, then its
    recipe's functions), then the retrieved ones; at most three callables.
    """
    line = _line_facts(decision, registry)
    names: list[str] = []
    if decision.workflow:
        plan = workflow_plan(ws, decision, registry)
        for s in plan["steps"][:1]:
            if s["agent"]:
                names.append(s["agent"]["name"])
            names += [f["name"] for f in s["functions"][:2]]
    for c in ctx_cards:
        q = c.get("qualname") or c.get("symbol")
        if q and q not in names and c.get("kind") in ("class", "function"):
            names.append(q)
    cards: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n in names:
        card = _card(ws, n)
        if (
            card
            and card["qualname"] not in seen
            and card["kind"] in ("class", "function")
        ):
            leaf = card["qualname"].rsplit(".", 1)[-1]
            if leaf.startswith("_"):
                continue
            seen.add(card["qualname"])
            if card["kind"] == "class" and "run" in card["methods"]:
                card["run"] = _card(ws, f"{card['qualname']}.run")
            cards.append(card)
        if len(cards) >= 3:
            break
    if not cards:
        return {"script": None, "validation": None, "cards": [], "dropped": []}
    script = _script(question, cards, line)
    validation = ws.validate(script)
    dropped: list[str] = []
    if validation.get("errors"):
        # fix: keep only the cards whose import the validator accepts
        bad = " ".join(validation["errors"])
        keep = [c for c in cards if c["qualname"].rsplit(".", 1)[-1] not in bad]
        dropped = [c["qualname"] for c in cards if c not in keep]
        if keep and dropped:
            script = _script(question, keep, line)
            validation = ws.validate(script)
            cards = keep
    return {
        "script": script,
        "validation": validation,
        "cards": cards,
        "dropped": dropped,
    }


# -- meta -----------------------------------------------------------------------------


def _home_agents(ws: Workspace, wf: str, idx: _WorkflowIndex) -> list[str]:
    """The workflow's agent classes that live where the profile maps the
    workflow (``workflow_paths``), else every agent tagged with it."""
    home = [frag for frag, w in ws.profile.workflow_paths if w == wf]
    names = sorted({a[1] for a in idx.agents.get(wf, [])})
    at_home = [n for n in names if any(f in n.replace(".", "/") for f in home)]
    return at_home or names


def capabilities(ws: Workspace, registry: LineRegistry | None) -> dict[str, Any]:
    """What the assistant can do here, from the profile, the index and the registry."""
    stats = ws.stats()
    by_wf = stats.get("by_workflow") or {}
    idx = _workflow_index(ws)
    workflows = [
        {
            "workflow": wf,
            "label": human(wf),
            "chunks": by_wf.get(wf, 0),
            "recipe": (
                _main_recipe(idx.recipes[wf])[0].source_path
                if idx.recipes.get(wf)
                else None
            ),
            "agents": _home_agents(ws, wf, idx)[:3],
        }
        for wf in ws.profile.workflow_names
    ]
    return {
        "package": ws.profile.package,
        "profile": ws.profile.name,
        "intents": list(INTENTS),
        "workflows": workflows,
        "lines": registry.names() if registry else [],
        "registry_files": list(registry.files) if registry else [],
        "n_chunks": stats.get("n_chunks"),
        "n_files": stats.get("n_files"),
        "by_kind": stats.get("by_kind") or {},
    }


def capabilities_markdown(cap: dict[str, Any]) -> str:
    """The ``meta`` answer text."""
    out = [
        f"I answer questions about `{cap['package']}` from its indexed source, docs "
        f"and recipes ({cap['n_chunks']} chunks from {cap['n_files']} files, "
        f"profile `{cap['profile']}`), with cited sources.",
        "",
        "**Requests I route:** "
        + ", ".join(f"`{i}`" for i in cap["intents"])
        + ", and developer questions (live source search with paths, lines and hashes).",
        "",
        "**Workflows I can plan** (agent, functions and order from the index):",
    ]
    for w in cap["workflows"]:
        extra = []
        if w["agents"]:
            extra.append("agent " + ", ".join(f"`{a}`" for a in w["agents"]))
        if w["recipe"]:
            extra.append(f"recipe {w['recipe']}")
        out.append(
            f"- {w['label']} (`{w['workflow']}`): {w['chunks']} chunks"
            + (f"; {'; '.join(extra)}" if extra else "")
        )
    out.append("")
    if cap["lines"]:
        out.append("**Survey lines in the registry:** " + ", ".join(cap["lines"]))
    else:
        out.append(
            "**Survey lines:** no registry found (`.pycsamt/projects.toml` or "
            "`projects/*registry*.yml`)."
        )
    return "\n".join(out)


# -- developer questions ---------------------------------------------------------------


def developer_answer(ws: Workspace, question: str, scope: str) -> dict[str, Any]:
    """The live source search for a developer question, as answer text + citations."""
    include_tests = scope == "developer_tests"
    try:
        res = search_source(
            ws.root,
            question[:MAX_DEV_QUERY],
            profile=ws.profile,
            include_tests=include_tests,
        )
    except DevSearchError as exc:  # a refused query is a stated limitation
        res = {
            "results": [],
            "terms": {},
            "limitation": f"source search refused: {exc}",
        }
    citations: list[dict[str, Any]] = []
    lines = [
        f"_Live source search of the checkout at {ws.root}"
        + (" (unit tests included, as asked)" if include_tests else "")
        + "._",
    ]
    terms = res.get("terms") or {}
    asked = [f"`{t}`" for t in terms.get("identifiers") or []] + list(
        terms.get("words") or []
    )
    if asked:
        lines.append("Searched for: " + ", ".join(asked) + ".")
    lines.append("")
    for r in res.get("results", []):
        ev = r.get("evidence") or {}
        sha = ev.get("sha256") or ""
        is_test = "test" in (r.get("role") or "")
        sym = r.get("symbol")
        sym = sym.get("name") if isinstance(sym, dict) else sym
        label = sym or r["path"]
        role = " — test (expected-behaviour example)" if is_test else ""
        lines.append(
            f"[{r['rank']}] `{label}` — {r['path']}:{r['line_start']}-{r['line_end']}"
            f" (sha256 {sha[:12]}){role}"
        )
        citations.append(
            {
                "n": r["rank"],
                "id": None,
                "source_path": r["path"],
                "line_start": r["line_start"],
                "line_end": r["line_end"],
                "page": None,
                "label": label,
                "kind": "test" if is_test else "source",
                "symbol": sym,
                "workflow": None,
                "score": r.get("score"),
                "snippet": (r.get("excerpt") or "")[:280],
                "uri": (ws.root / r["path"]).as_uri(),
                "sha256": sha,
                "role": r.get("role"),
            }
        )
    if res.get("limitation"):
        lines += ["", f"> Limitation: {res['limitation']}."]
    if not citations:
        lines += [
            "",
            "No implementation evidence was found, so no API is named here.",
        ]
    return {"answer": "\n".join(lines), "citations": citations, "search": res}
