"""Cited context assembly, the confidence gate, and answers (``pycsamt.ask``).

One question goes through these steps:

1. **Catalog routing.** A question about the corpus as a whole ("what
   workflows does the package cover?", "what is in the index?") is answered
   from the index catalog (counts by kind and workflow, recipes, areas,
   papers, manifest), not from a retrieval subset, and the answer says so.
2. **Assembled context.** Ranked chunks (BM25, or BM25 fused with dense
   vectors when asked for), plus the best prose chunks of the papers side
   index, become numbered evidence with citations (path, line span or page,
   label, score, a snippet of at most 280 characters, ``file://`` URI);
   project context from the survey-line registry
   (``.pycsamt/projects.toml``); related symbols; API cards of the
   retrieved code.
3. **Confidence gate.** ``confident <=> project context resolved or
   s_max >= 25.0`` (``s_max`` the top BM25 score of the main index).
   Below it the result carries a clarifying question built from what was
   retrieved (which of the top workflows, which symbol, which line) and a
   list of the closest matches, not an answer.
4. **Answer.** Without an OpenAI key: a deterministic answer composed from
   the top chunks with numbered citations ``[n]``. With a key (setting or
   ``OPENAI_API_KEY``): the ``openai`` package, the excerpts as labelled
   context and grounding rules; Python code in the reply goes through the
   import validator and its findings are attached. Timeouts and API errors
   fall back to the offline answer with the reason shown. The key is never
   logged, echoed or put in a result.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
import tomllib
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.errors import AnswerError, QueryError, RegistryError

__all__ = [
    "CONFIDENCE_FLOOR",
    "SNIPPET_LIMIT",
    "AnswerError",
    "AskSettings",
    "AssembledContext",
    "ProjectRegistry",
    "RegistryError",
    "answer_question",
    "assemble",
    "catalog_answer",
    "clarifying_question",
    "configure",
    "extract_code_blocks",
    "is_catalog_question",
    "load_registry",
    "offline_answer",
    "openai_answer",
    "settings_for",
    "validate_answer_code",
]

log = logging.getLogger(__name__)

#: The seed's calibrated floor: on-topic queries score ~30-80 on pyCSAMT,
#: contentless ones below 20.
CONFIDENCE_FLOOR = 25.0
SNIPPET_LIMIT = 280
CODE_KINDS = ("python_symbol", "python_method", "module_doc")
REGISTRY_RELPATH = ".pycsamt/projects.toml"
DEFAULT_MODEL = "gpt-4o-mini"
#: Characters of one excerpt and of all excerpts sent to the model.
EXCERPT_CHARS = 1800
CONTEXT_CHARS = 12000


# -- settings -------------------------------------------------------------------


@dataclass(frozen=True)
class AskSettings:
    """How ``ask`` answers; ``api_key``/``base_url`` fall back to the environment.

    The key is excluded from ``repr`` and never copied into results or logs.
    """

    model: str = DEFAULT_MODEL
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    timeout: float = 30.0
    dense: bool = False
    use_openai: bool = True  # False: always the offline answer
    registry: str | None = None  # explicit registry file
    workspace_root: str | None = None  # the editor's folder, when not the corpus
    papers: bool = True
    papers_dir: str | None = None  # default: the profile's papers_dir

    def key(self) -> str | None:
        """The OpenAI key from the setting or ``OPENAI_API_KEY`` (None when unset)."""
        return self.api_key or os.environ.get("OPENAI_API_KEY") or None

    def url(self) -> str | None:
        """The API base URL from the setting or ``OPENAI_BASE_URL``."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None


_SETTINGS: weakref.WeakKeyDictionary[Any, AskSettings] = weakref.WeakKeyDictionary()
_SETTINGS_LOCK = threading.Lock()


def configure(ws: Any, **changes: Any) -> AskSettings:
    """Update the ask settings of a workspace (the server calls this on config changes).

    ``configure(ws, model="gpt-4o-mini", dense=True, workspace_root="/proj")``;
    unknown names raise ``TypeError``.
    """
    with _SETTINGS_LOCK:
        cur = _SETTINGS.get(ws, AskSettings())
        new = dataclasses.replace(cur, **changes)
        _SETTINGS[ws] = new
        return new


def settings_for(ws: Any) -> AskSettings:
    """The ask settings of a workspace (defaults when never configured)."""
    return _SETTINGS.get(ws) or AskSettings()


def _scrub(text: str, secret: str | None) -> str:
    if secret:
        text = text.replace(secret, "***")
    text = re.sub(r"sk-[A-Za-z0-9_\-]{8,}", "sk-***", text)
    return text if len(text) <= 300 else text[:299] + "…"


# -- project registry -----------------------------------------------------------


_LINE_TOKEN = re.compile(r"\b([A-Za-z]{1,3}\d{1,4}[A-Za-z]{0,4})\b")


def _norm_line(name: str) -> str:
    s = (name or "").strip().lower()
    s = re.sub(r"^(survey\s+)?line\s+", "", s)
    return re.sub(r"[^a-z0-9]", "", s).upper()


class ProjectRegistry:
    """Survey lines of a project: ``.pycsamt/projects.toml``.

    ::

        [project]
        name = "Willy survey"
        default_output_root = "results"

        [lines.L18PLT]
        edi_dir = "data/L18PLT"        # relative to the folder holding .pycsamt/
        sort_by = "lon"
        default_workflows = ["qc", "static_shift"]

        [aliases]
        "line 18" = "L18PLT"

        [static_shift_defaults]
        method = "ama"
    """

    def __init__(self, path: Path, data: dict[str, Any], base: Path) -> None:
        self.path = path
        self.base = base
        self.data = data
        self.lines_data: dict[str, dict[str, Any]] = data.get("lines", {})
        self._index = {_norm_line(k): k for k in self.lines_data}
        for alias, target in (data.get("aliases") or {}).items():
            if target in self.lines_data:
                self._index[_norm_line(alias)] = target

    @classmethod
    def load(cls, path: Path) -> ProjectRegistry:
        """Read and check a registry file; :class:`RegistryError` when malformed."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise RegistryError(f"{path}: unreadable: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise RegistryError(f"{path}: not valid TOML: {exc}") from None
        lines = data.get("lines")
        if not isinstance(lines, dict) or not lines:
            raise RegistryError(f"{path}: needs a [lines.<NAME>] table per survey line")
        for name, entry in lines.items():
            if not isinstance(entry, dict):
                raise RegistryError(f"{path}: lines.{name} must be a table")
            if not isinstance(entry.get("edi_dir"), str) or not entry["edi_dir"]:
                raise RegistryError(
                    f"{path}: lines.{name}.edi_dir must be a path string"
                )
            wf = entry.get("default_workflows", [])
            if not isinstance(wf, list) or not all(isinstance(w, str) for w in wf):
                raise RegistryError(
                    f"{path}: lines.{name}.default_workflows must be a list of strings"
                )
        for key in ("project", "aliases", "static_shift_defaults", "plot_defaults"):
            if key in data and not isinstance(data[key], dict):
                raise RegistryError(f"{path}: [{key}] must be a table")
        base = path.parent.parent if path.parent.name == ".pycsamt" else path.parent
        return cls(path, data, base)

    def lines(self) -> list[str]:
        return sorted(self.lines_data)

    def canonical(self, name: str) -> str | None:
        return self._index.get(_norm_line(name))

    def find_line_in_text(self, text: str) -> str | None:
        """The first registry line named in *text* (case, ``line``, aliases)."""
        for tok in _LINE_TOKEN.findall(text or ""):
            canon = self.canonical(tok)
            if canon:
                return canon
        blob = " " + re.sub(r"[^a-z0-9]+", " ", (text or "").lower()) + " "
        for alias in sorted((self.data.get("aliases") or {}), key=len, reverse=True):
            words = re.sub(r"[^a-z0-9]+", " ", alias.lower()).strip()
            if words and f" {words} " in blob:
                return self.canonical(alias)
        return None

    def resolve_line(self, name: str) -> dict[str, Any]:
        """Paths and defaults of a line; ``KeyError`` naming the known lines."""
        canon = self.canonical(name)
        if canon is None:
            raise KeyError(
                f"unknown survey line {name!r}; known: {', '.join(self.lines()) or '(none)'}"
            )
        line = self.lines_data[canon]
        project = self.data.get("project") or {}
        raw = line["edi_dir"]
        edi = Path(raw).expanduser()
        if not edi.is_absolute():
            edi = (self.base / edi).resolve()
        exists = edi.is_dir()
        n_edi = sum(1 for _ in edi.glob("*.edi")) if exists else 0
        out_root = project.get("default_output_root", "results")
        return {
            "project": project.get("name"),
            "line": canon,
            "edi_dir": str(edi),
            "edi_dir_raw": raw,
            "exists": exists,
            "n_edi_files": n_edi,
            "station_pattern": line.get("station_pattern"),
            "sort_by": line.get("sort_by", "lon"),
            "output_root": line.get("output_root", f"{out_root}/{canon}"),
            "default_workflows": list(line.get("default_workflows", [])),
            "static_shift": dict(self.data.get("static_shift_defaults") or {}),
            "plot": dict(self.data.get("plot_defaults") or {}),
            "registry": str(self.path),
        }


_REGISTRY_CACHE: dict[str, tuple[tuple[int, int], ProjectRegistry | None]] = {}
_WARNED: set[str] = set()


def _warn_once(key: str, msg: str, *args: Any) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        log.warning(msg, *args)


def registry_candidates(ws: Any, settings: AskSettings) -> list[Path]:
    """Where a registry is looked for, in order."""
    if settings.registry:
        return [Path(settings.registry).expanduser()]
    out: list[Path] = []
    for base in (settings.workspace_root, getattr(ws, "root", None)):
        if base:
            p = Path(base) / REGISTRY_RELPATH
            if p not in out:
                out.append(p)
    return out


def load_registry(
    ws: Any, settings: AskSettings | None = None
) -> ProjectRegistry | None:
    """The project registry, or None (missing or malformed: a logged warning)."""
    settings = settings or settings_for(ws)
    cands = registry_candidates(ws, settings)
    for path in cands:
        try:
            st = path.stat()
        except OSError:
            continue
        sig = (st.st_mtime_ns, st.st_size)
        hit = _REGISTRY_CACHE.get(str(path))
        if hit is not None and hit[0] == sig:
            return hit[1]
        try:
            reg: ProjectRegistry | None = ProjectRegistry.load(path)
        except RegistryError as exc:
            log.warning("ignoring the project registry: %s", exc)
            reg = None
        _REGISTRY_CACHE[str(path)] = (sig, reg)
        return reg
    where = ", ".join(str(p) for p in cands) or "(no folder)"
    _warn_once(
        "missing:" + where,
        "no project registry (looked for %s): questions get no project context",
        where,
    )
    return None


# -- assembled context ----------------------------------------------------------

_NUMPYDOC_SECTION = re.compile(
    r"\n\s*(Parameters|Returns|Yields|Raises|See Also|Notes|Examples|Attributes"
    r"|References|Warnings)\s*\n\s*-{3,}"
)
_ADORNMENT = re.compile(r"^\s*([=\-~^*+#`'\".:_])\1{2,}\s*$")
_HEADER_LINE = re.compile(
    r"\s*(Module|File|Class|Function|Method|Signature|Symbol|Paper|Document)\s*:\s"
)


def prose_of(chunk: Chunk) -> str:
    """The most readable slice of a chunk: docstring prose or section body."""
    text = chunk.text or ""
    if chunk.kind == "pdf_page":
        text = text.split("\n", 1)[-1]
    elif "Docstring:" in text:
        body = text.split("Docstring:", 1)[1].split("\nCode:", 1)[0]
        body = _NUMPYDOC_SECTION.split(body, 1)[0]
        text = body  # no docstring: no prose (the snippet falls back to the code)
    elif chunk.kind == "module_doc":
        text = text.split("\n\n", 1)[-1] if "\n\n" in text else text
    elif text.startswith("Document:"):
        text = text.split("\n", 1)[-1]
        heading = (chunk.metadata.get("heading") or "").strip()
        lines = text.splitlines()
        if lines and heading and lines[0].strip().lstrip("#").strip() == heading:
            lines = lines[1:]
        text = "\n".join(lines)
        text = re.sub(r"```.*?```", "", text, flags=re.S)
    lines = [ln for ln in text.splitlines() if not _HEADER_LINE.match(ln)]
    if chunk.symbol:  # a reST title repeating the module name, and its adornment
        while lines and (
            not lines[0].strip()
            or lines[0].strip() == chunk.symbol
            or _ADORNMENT.match(lines[0])
        ):
            lines = lines[1:]
    text = "\n".join(ln for ln in lines if not _ADORNMENT.match(ln))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def snippet(chunk: Chunk, limit: int = SNIPPET_LIMIT) -> str:
    """At most *limit* characters of prose, whitespace collapsed."""
    text = " ".join(prose_of(chunk).split()) or " ".join((chunk.text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def label_of(chunk: Chunk) -> str:
    """Symbol for code, ``file: Section`` for docs, ``file, p. N`` for papers."""
    if chunk.symbol:
        return chunk.symbol
    src = chunk.source_path.rsplit("/", 1)[-1]
    if chunk.kind == "pdf_page":
        return f"{src}, p. {chunk.metadata.get('page')}"
    stem = src.rsplit(".", 1)[0]
    title = (chunk.metadata.get("heading") or "").strip()
    if title and title.lower() != stem.lower():
        return f"{stem}: {title}"
    return title or chunk.source_path


_LIST_ITEM = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])\s+(.*?)(?=\n\s*(?:[-*+]|\d+[.)])\s|\Z)", re.S
)


def _clip(text: str, limit: int) -> str:
    """*text* cut to *limit* characters at a line or sentence end when possible."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(head.rfind("\n"), head.rfind(". ") + 1)
    if cut < limit // 2:
        cut = head.rfind(" ")
    return head[: max(cut, 1)].rstrip() + " …"


def _first_sentence(text: str, max_len: int = 200) -> tuple[str, str]:
    text = (text or "").strip()
    if not text:
        return "", ""
    para = " ".join(text.split("\n\n", 1)[0].split())
    m = re.search(r"(?<=[.!?])\s", para)
    first = para[: m.start()] if m else para
    if len(first) > max_len:
        first = first[: max_len - 1].rstrip() + "…"
    rest = text.split("\n\n", 1)[1].strip() if "\n\n" in text else ""
    if m and not rest:
        rest = para[m.end() :].strip()
    return first, rest


@dataclass
class Evidence:
    """One numbered piece of evidence."""

    n: int
    chunk: Chunk
    score: float
    uri: str

    def citation(self) -> dict[str, Any]:
        c = self.chunk
        page = c.metadata.get("page")
        return {
            "n": self.n,
            "id": c.id,
            "source_path": c.source_path,
            "line_start": c.line_start,
            "line_end": c.line_end,
            "page": page,
            "label": label_of(c),
            "kind": c.kind,
            "symbol": c.symbol,
            "workflow": c.workflow,
            "score": round(float(self.score), 4),
            "snippet": snippet(c),
            "uri": self.uri,
        }

    def where(self) -> str:
        c = self.chunk
        if c.metadata.get("page"):
            return f"{c.source_path}, page {c.metadata['page']}"
        if c.line_start:
            return f"{c.source_path}:{c.line_start}-{c.line_end or c.line_start}"
        return c.source_path


def _names(question: str, symbol: str) -> bool:
    """True when *question* names *symbol* as an identifier.

    A plain English leaf (``correct``, ``run``) only counts in backticks or
    as a call; ``estimate_ss_ama`` or ``StaticShiftAgent`` count anywhere
    (case-insensitive), as does a dotted path ending in the leaf.
    """
    leaf = symbol.rsplit(".", 1)[-1]
    if len(leaf) < 3:
        return False
    esc = re.escape(leaf)
    if re.search(rf"(`[\w.]*{esc}`|\b{esc}\(|\.{esc}\b)", question):
        return True
    identifier_like = "_" in leaf.strip("_") or leaf[1:] != leaf[1:].lower()
    return identifier_like and re.search(rf"\b{esc}\b", question, re.I) is not None


@dataclass
class AssembledContext:
    """Everything an answer is built from (seed 2.9)."""

    question: str
    evidence: list[Evidence] = field(default_factory=list)
    top_score: float = 0.0
    workflow: str | None = None
    retrieval: str = "bm25"
    dense_error: str | None = None
    project_context: dict[str, Any] | None = None
    related_symbols: list[str] = field(default_factory=list)
    api_cards: list[dict[str, Any]] = field(default_factory=list)
    registry_lines: list[str] = field(default_factory=list)
    package: str = "pycsamt"

    @property
    def confident(self) -> bool:
        return bool(self.project_context) or self.top_score >= CONFIDENCE_FLOOR

    @property
    def citations(self) -> list[dict[str, Any]]:
        return [e.citation() for e in self.evidence]

    def lead(self) -> Evidence | None:
        """The code chunk the question names, else the top-ranked evidence."""
        for e in self.evidence:
            c = e.chunk
            if c.symbol and c.kind in CODE_KINDS and _names(self.question, c.symbol):
                return e
        return self.evidence[0] if self.evidence else None

    def context_text(self, max_chars: int = CONTEXT_CHARS) -> str:
        """The labelled excerpts handed to a model."""
        blocks: list[str] = []
        if self.project_context:
            pc = self.project_context
            blocks.append(
                "Project context (from the survey-line registry):\n"
                f"  line: {pc.get('line')}  project: {pc.get('project')}\n"
                f"  edi_dir: {pc.get('edi_dir')} (exists={pc.get('exists')}, n_edi={pc.get('n_edi_files')})\n"
                f"  sort_by: {pc.get('sort_by')}  output_root: {pc.get('output_root')}\n"
                f"  default_workflows: {pc.get('default_workflows')}\n"
                f"  static_shift_defaults: {pc.get('static_shift')}"
            )
        if self.api_cards:
            blocks.append(
                "API cards (real signatures):\n"
                + "\n".join(_card_lines(self.api_cards))
            )
        used = sum(len(b) for b in blocks)
        for e in self.evidence:
            c = e.chunk
            body = (c.text or "").strip()
            if len(body) > EXCERPT_CHARS:
                body = body[:EXCERPT_CHARS].rstrip() + "\n…"
            block = f"[{e.n}] {label_of(c)} ({c.kind}; {e.where()})\n{body}"
            if used + len(block) > max_chars and e.n > 1:
                break
            blocks.append(block)
            used += len(block)
        return "\n\n".join(blocks)


def _card_lines(cards: list[dict[str, Any]]) -> list[str]:
    out = []
    for card in cards:
        out.append(f"- {card.get('symbol')}: {card.get('signature') or ''}".rstrip())
        if card.get("returns"):
            out.append(f"    returns {card['returns']}")
    return out


def _card_from_chunk(chunk: Chunk) -> dict[str, Any] | None:
    md = chunk.metadata
    if not md.get("signature") and not md.get("params"):
        return None
    doc = (md.get("docstring") or "").strip()
    summary = (
        _first_sentence(_NUMPYDOC_SECTION.split("\n" + doc, 1)[0])[0] if doc else ""
    )
    return {
        "symbol": chunk.symbol,
        "kind": chunk.kind,
        "signature": md.get("signature"),
        "params": md.get("params") or [],
        "returns": md.get("returns"),
        "summary": summary,
        "source_path": chunk.source_path,
        "line_start": chunk.line_start,
    }


def api_cards_for(
    ws: Any, evidence: list[Evidence], limit: int = 5
) -> list[dict[str, Any]]:
    """API cards of the retrieved code symbols (``cards.card_for`` when present)."""
    try:
        from pycsamt_lsp.cards.card import card_for  # written alongside; optional here
    except Exception:  # noqa: BLE001 - not there yet, or broken: metadata cards
        card_for = None
    cards: list[dict[str, Any]] = []
    seen: set[str] = set()
    for e in evidence:
        c = e.chunk
        if (
            not c.symbol
            or c.kind not in ("python_symbol", "python_method")
            or c.symbol in seen
        ):
            continue
        seen.add(c.symbol)
        card = None
        if card_for is not None:
            try:
                card = card_for(ws, c.symbol)
            except Exception as exc:  # noqa: BLE001 - a card never breaks an answer
                log.debug("card_for(%s) failed: %s", c.symbol, exc)
        if card is not None and hasattr(card, "to_dict"):
            card = card.to_dict()
        if isinstance(card, dict):
            card = {"symbol": c.symbol, **card}
        else:
            card = _card_from_chunk(c)
        if card:
            cards.append(card)
        if len(cards) >= limit:
            break
    return cards


_CALLED = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def related_symbols_for(ws: Any, evidence: list[Evidence], limit: int = 8) -> list[str]:
    """What the lead code symbol calls (resolved in the package model), then
    the other retrieved code symbols; no tests, no private names."""
    out: list[str] = []
    code = [e.chunk for e in evidence if e.chunk.symbol and e.chunk.kind in CODE_KINDS]
    shown = {c.symbol for c in code[:1]}
    if code:
        top = code[0]
        body = (top.text or "").split("\nCode:", 1)
        calls = _CALLED.findall(body[1]) if len(body) == 2 else []
        try:
            from pycsamt_lsp.chunking.python import module_name

            module = module_name(top.source_path)
            model = ws.model
            for name in dict.fromkeys(calls):
                if name.startswith("_") or name in ("self", "cls", "super"):
                    continue
                res = model.resolve(f"{module}.{name}")
                if res.exists and res.kind in ("class", "function", "method"):
                    target = res.target or f"{module}.{name}"
                    if target not in shown and target not in out:
                        out.append(target)
        except Exception as exc:  # noqa: BLE001 - best-effort cross references
            log.debug("related symbols: %s", exc)
    for c in code[1:]:
        sym = c.symbol or ""
        leaf = sym.rsplit(".", 1)[-1]
        if sym in out or sym in shown or leaf.startswith("_") or ".tests." in sym:
            continue
        out.append(sym)
    return out[:limit]


def _merge(
    main: list[tuple[float, Chunk, float, str]],
    papers: list[tuple[float, Chunk, float, str]],
    k: int,
) -> list[tuple[Chunk, float, str]]:
    """Stable merge: main order kept, a paper chunk goes before the first
    main item it outscores (BM25 units on both sides)."""
    out: list[tuple[Chunk, float, str]] = []
    i = j = 0
    while len(out) < k and (i < len(main) or j < len(papers)):
        if j < len(papers) and (i >= len(main) or papers[j][0] > main[i][0]):
            out.append(papers[j][1:])
            j += 1
        else:
            out.append(main[i][1:])
            i += 1
    return out


def assemble(
    ws: Any,
    question: str,
    *,
    k: int = 6,
    dense: bool | None = None,
    settings: AskSettings | None = None,
) -> AssembledContext:
    """Retrieve, number and decorate the evidence for *question*."""
    settings = settings or settings_for(ws)
    use_dense = settings.dense if dense is None else dense
    retrieval, dense_error = "bm25", None
    if use_dense:
        from pycsamt_lsp.search.dense import dense_query

        res = dense_query(
            ws,
            question,
            k,
            api_key=settings.key(),
            base_url=settings.url(),
            timeout=settings.timeout,
        )
        retrieval = res.get("retrieval", "bm25")
        dense_error = res.get("dense_error")
    else:
        res = ws.query(question, k)
    main: list[tuple[float, Chunk, float, str]] = []
    for r in res["results"]:
        chunk = ws.chunk(r["id"])
        if chunk is None:
            continue
        merge_key = r.get("bm25_score") if retrieval != "bm25" else r["score"]
        main.append((float(merge_key or 0.0), chunk, float(r["score"]), r["uri"]))
    papers: list[tuple[float, Chunk, float, str]] = []
    if settings.papers:
        try:
            from pycsamt_lsp.chunking.pdf import paper_index

            pidx = paper_index(ws, settings.papers_dir)
            if pidx is not None:
                for chunk, score in pidx.search(question, k, ws.profile):
                    s = score * (1.0 + 0.12 * (chunk.priority - 1))
                    papers.append((s, chunk, s, ws.uri_of(chunk.source_path)))
        except Exception as exc:  # noqa: BLE001 - papers are optional evidence
            log.info("papers unavailable: %s", exc)
    evidence = [
        Evidence(n, chunk, score, uri)
        for n, (chunk, score, uri) in enumerate(_merge(main, papers, k), 1)
    ]
    ctx = AssembledContext(
        question=question,
        evidence=evidence,
        top_score=float(res.get("top_score") or 0.0),
        workflow=res.get("workflow"),
        retrieval=retrieval,
        dense_error=dense_error,
        package=getattr(ws.profile, "package", "pycsamt"),
    )
    registry = load_registry(ws, settings)
    if registry is not None:
        ctx.registry_lines = registry.lines()
        line = registry.find_line_in_text(question)
        if line:
            try:
                ctx.project_context = registry.resolve_line(line)
            except KeyError:
                ctx.project_context = None
    ctx.api_cards = api_cards_for(ws, evidence)
    ctx.related_symbols = related_symbols_for(ws, evidence)
    return ctx


# -- the gate's other side: a clarifying question --------------------------------


def _human(workflow: str) -> str:
    return workflow.replace("_", " ")


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
        names = [_human(w) for w in workflow_names[:4]]
        ask = "I found nothing in the index for that."
        if names:
            ask += f" Which workflow do you mean ({', '.join(names)}, ...)"
        else:
            ask += " Which workflow do you mean"
        ask += ", or which class or function?"
    elif len(wfs) >= 2:
        opts = [f"**{_human(w)}**" for w in wfs]
        ask = f"Do you mean the {', '.join(opts[:-1])} or the {opts[-1]} workflow?"
    elif wfs:
        others = [_human(w) for w in workflow_names if w != wfs[0]][:3]
        ask = f"Is this about the **{_human(wfs[0])}** workflow"
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
    assert lead is not None
    seen = {lead.n}
    body = _clip(prose_of(lead.chunk), 600)
    label = label_of(lead.chunk)
    if body.lstrip().startswith(("-", "*", "1.")):
        opening = f"**`{label}`** [{lead.n}]\n\n{body}"
    else:
        first, rest = _first_sentence(body)
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
        if e.n in seen:
            continue
        prose = prose_of(e.chunk)
        m = _LIST_ITEM.match(prose)
        if m:  # a list: its first item, not the whole list on one line
            prose = m.group(1)
        first, _ = _first_sentence(prose, 220)
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
        wf = f" ({_human(e.chunk.workflow)})" if e.chunk.workflow else ""
        lines.append(f"- **`{label_of(e.chunk)}`**{wf} [{e.n}]")
    return "\n".join(lines)


# -- catalog routing -------------------------------------------------------------

_CATALOG_PATTERNS = [
    re.compile(p, re.I)
    for p in (
        r"\b(what|which)\b[^?]{0,40}\bworkflows\b[^?]{0,30}\b(cover(s|ed)?|support(s|ed)?|available|offer(s|ed)?|exist|are there|provide[sd]?|include[sd]?|handle[sd]?)\b",
        r"\bworkflows\b[^?]{0,30}\b(does|do|can)\b[^?]{0,20}\b(package|library|pycsamt|index|corpus)\b",
        r"^\s*(list|show|name)\b[^?]{0,15}\b(workflows|recipes|papers|kinds)\b",
        r"\bwhat('s| is| are)\b[^?]{0,15}\bin\b[^?]{0,10}\b(the |this |your )?(index|corpus|knowledge base)\b",
        r"\bwhat does (the |this |your )?(index|corpus|knowledge base|package) (contain|cover|include|hold|index)\b",
        r"\bhow many\b[^?]{0,30}\b(chunks|files|recipes|modules|workflows|symbols|papers|documents)\b",
        r"\b(overview|summary|table of contents)\b[^?]{0,30}\b(index|corpus|knowledge base|package)\b",
        r"\b(what|which) (recipes|papers)\b",
    )
]


def is_catalog_question(question: str) -> bool:
    """True for questions about the corpus as a whole, not about one topic."""
    return any(p.search(question or "") for p in _CATALOG_PATTERNS)


def _catalog(ws: Any, settings: AskSettings) -> dict[str, Any]:
    snap = ws.snapshot
    t = snap.table
    by_kind: dict[str, int] = {}
    by_wf: dict[str, int] = {}
    recipes: dict[str, dict[str, Any]] = {}
    areas: dict[str, set[str]] = {}
    for slot in snap.alive_slots():
        kind, wf, rel = t.kinds[slot], t.workflows[slot], t.paths[slot]
        by_kind[kind] = by_kind.get(kind, 0) + 1
        key = wf or "none"
        by_wf[key] = by_wf.get(key, 0) + 1
        if kind == "recipe":
            r = recipes.setdefault(rel, {"path": rel, "workflows": set(), "slot": slot})
            if wf:
                r["workflows"].add(wf)
            if int(t.line_start[slot]) < int(t.line_start[r["slot"]]):
                r["slot"] = slot
    for rel in snap.files:
        parts = rel.split("/")
        area = (
            "/".join(parts[:2])
            if len(parts) > 2
            else (parts[0] if len(parts) > 1 else ".")
        )
        areas.setdefault(area, set()).add(rel)
    recipe_list = []
    for rel in sorted(recipes):
        r = recipes[rel]
        chunk = t.get(r["slot"])
        title = (chunk.metadata.get("heading") or "").strip() or rel.rsplit("/", 1)[-1]
        recipe_list.append(
            {
                "path": rel,
                "title": title,
                "workflows": sorted(r["workflows"]),
                "uri": ws.uri_of(rel),
                "line_start": chunk.line_start,
                "line_end": chunk.line_end,
            }
        )
    papers = None
    if settings.papers:
        try:
            from pycsamt_lsp.chunking.pdf import paper_index

            pidx = paper_index(ws, settings.papers_dir)
            if pidx is not None:
                papers = {
                    "files": sorted(pidx.files),
                    "n_chunks": len(pidx),
                    "dropped_pages": sum(len(v) for v in pidx.dropped.values()),
                }
        except Exception as exc:  # noqa: BLE001
            log.info("papers unavailable: %s", exc)
    manifest = ws.manifest
    return {
        "n_chunks": snap.n_chunks,
        "n_files": len(snap.files),
        "by_kind": dict(sorted(by_kind.items())),
        "by_workflow": dict(sorted(by_wf.items(), key=lambda kv: (-kv[1], kv[0]))),
        "workflows": list(ws.profile.workflow_names),
        "recipes": recipe_list,
        "areas": {
            a: len(fs)
            for a, fs in sorted(areas.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        },
        "papers": papers,
        "fingerprint": snap.fingerprint,
        "created": manifest.get("created"),
        "embedded": manifest.get("embedded", False),
        "embed_model": manifest.get("embed_model"),
        "profile": ws.profile.name,
    }


def catalog_answer(
    ws: Any, question: str, settings: AskSettings | None = None
) -> dict[str, Any]:
    """Answer a question about the whole corpus from the catalog."""
    settings = settings or settings_for(ws)
    cat = _catalog(ws, settings)
    citations = []
    recipe_of: dict[str, list[int]] = {}
    for n, r in enumerate(cat["recipes"], 1):
        citations.append(
            {
                "n": n,
                "id": None,
                "source_path": r["path"],
                "line_start": r["line_start"],
                "line_end": r["line_end"],
                "page": None,
                "label": r["title"],
                "kind": "recipe",
                "symbol": None,
                "workflow": (r["workflows"] or [None])[0],
                "score": None,
                "snippet": f"Recipe for {', '.join(r['workflows']) or 'general use'}.",
                "uri": r["uri"],
            }
        )
        for wf in r["workflows"]:
            recipe_of.setdefault(wf, []).append(n)
    lines = [
        f"_Answered from the index catalog (all {cat['n_chunks']} chunks from "
        f"{cat['n_files']} files, profile `{cat['profile']}`), not from a "
        "retrieval subset._",
        "",
        "**Workflows** (chunks tagged with each; recipes cited):",
    ]
    for wf in cat["workflows"]:
        cites = "".join(f"[{n}]" for n in recipe_of.get(wf, []))
        lines.append(
            f"- {_human(wf)} (`{wf}`): {cat['by_workflow'].get(wf, 0)} chunks"
            + (f", recipe {cites}" if cites else "")
        )
    untagged = cat["by_workflow"].get("none", 0)
    if untagged:
        lines.append(f"- no workflow: {untagged} chunks")
    lines += [
        "",
        "**By kind:** " + ", ".join(f"{k} {v}" for k, v in cat["by_kind"].items()),
    ]
    if cat["recipes"]:
        lines += ["", "**Recipes:**"]
        lines += [f"- {r['title']} [{n}]" for n, r in enumerate(cat["recipes"], 1)]
    top_areas = list(cat["areas"].items())[:8]
    if top_areas:
        lines += [
            "",
            "**Largest areas (files):** "
            + ", ".join(f"`{a}` {n}" for a, n in top_areas),
        ]
    if cat["papers"]:
        p = cat["papers"]
        lines += [
            "",
            f"**Papers:** {len(p['files'])} PDF(s), {p['n_chunks']} prose chunks "
            f"({p['dropped_pages']} non-prose pages dropped).",
        ]
    idx = f"fingerprint `{cat['fingerprint'][:12]}`"
    if cat["created"]:
        idx += f", built {cat['created']}"
    idx += f", dense vectors: {cat['embed_model'] or 'none'}"
    lines += ["", f"**Index:** {idx}."]
    return {
        "question": question,
        "answer": "\n".join(lines),
        "confident": True,
        "clarifying_question": None,
        "citations": citations,
        "path": "catalog",
        "retrieval": "none",
        "project_context": None,
        "related_symbols": [],
        "api_cards": [],
        "catalog": cat,
        "top_score": None,
    }


# -- OpenAI answers ------------------------------------------------------------------


SYSTEM_PROMPT = """You answer questions about the Python package `{package}` for a geophysicist, \
using ONLY the numbered excerpts from the package's source, docs, recipes and papers given below.

Grounding rules:
1. Use only facts stated in the excerpts, the API cards and the project context. Do not rely on \
memory of the package: names, parameters and defaults must come from the excerpts.
2. Cite every excerpt you use with its number in square brackets, e.g. [1] or [2][3].
3. If the excerpts do not cover the question, say so plainly and say what is missing; never \
invent a class, function, module or parameter.
4. In code, import and call only names shown in the excerpts or API cards, with the parameters \
shown there, and put code in ```python fences.
5. Be concise; answer in Markdown."""


def openai_answer(ctx: AssembledContext, settings: AskSettings) -> str:
    """The model's grounded answer; :class:`AnswerError` with a safe reason on failure."""
    key = settings.key()
    if not key:
        raise AnswerError("no OpenAI API key")
    try:
        import openai
    except ImportError:
        raise AnswerError(
            "the `openai` package is not installed (extra `openai`)"
        ) from None
    user = (
        f"Question: {ctx.question}\n\n"
        + ctx.context_text()
        + "\n\nAnswer the question from these excerpts only, citing them as [n]."
    )
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT.format(package=ctx.package)},
        {"role": "user", "content": user},
    ]
    client = None
    try:
        client = openai.OpenAI(
            api_key=key,
            base_url=settings.url(),
            timeout=settings.timeout,
            max_retries=0,
        )
        resp = client.chat.completions.create(
            model=settings.model, messages=messages, temperature=0
        )
        text = (resp.choices[0].message.content or "").strip() if resp.choices else ""
    except openai.APITimeoutError:
        raise AnswerError(
            f"the OpenAI request timed out after {settings.timeout:g} s"
        ) from None
    except openai.APIStatusError as exc:
        detail = ""
        try:
            body = exc.response.json()
            detail = (body.get("error") or {}).get("message") or ""
        except Exception:  # noqa: BLE001 - the body is optional
            detail = ""
        raise AnswerError(
            _scrub(
                f"the OpenAI API returned HTTP {exc.status_code}"
                + (f": {detail}" if detail else ""),
                key,
            )
        ) from None
    except openai.APIConnectionError as exc:
        raise AnswerError(
            _scrub(f"could not reach the OpenAI API: {exc}", key)
        ) from None
    except Exception as exc:  # noqa: BLE001 - anything else: fall back, say why
        raise AnswerError(
            _scrub(f"OpenAI call failed: {type(exc).__name__}: {exc}", key)
        ) from None
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001
                pass
    if not text:
        raise AnswerError("the model returned an empty answer")
    return text


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


def extract_code_blocks(markdown: str) -> list[str]:
    """Python code blocks of a Markdown answer (``python``/``py`` or unlabelled)."""
    out = []
    for lang, body in _FENCE.findall(markdown or ""):
        if lang.lower() in ("python", "py", "python3", ""):
            if lang == "" and not re.search(r"^\s*(import|from)\s|\(", body, re.M):
                continue
            out.append(body)
    return out


def validate_answer_code(ws: Any, markdown: str) -> dict[str, Any] | None:
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


def _validation_note(v: dict[str, Any]) -> str:
    lines = ["> **Import check of the generated code:**"]
    lines += [f"> - error: {e}" for e in v["errors"]]
    lines += [f"> - warning: {w}" for w in v["warnings"]]
    if not v["syntax_ok"]:
        lines.append("> - a code block is not valid Python")
    return "\n".join(lines)


# -- the whole question -------------------------------------------------------------


def answer_question(
    ws: Any,
    question: str,
    *,
    k: int = 6,
    dense: bool | None = None,
    settings: AskSettings | None = None,
) -> dict[str, Any]:
    """The ``pycsamt.ask`` result for *question* (see the module docstring)."""
    settings = settings or settings_for(ws)
    if ws.snapshot is None:
        raise QueryError("the index is not built yet")
    if is_catalog_question(question):
        return catalog_answer(ws, question, settings)
    ctx = assemble(ws, question, k=k, dense=dense, settings=settings)
    result: dict[str, Any] = {
        "question": question,
        "answer": "",
        "confident": ctx.confident,
        "clarifying_question": None,
        "citations": ctx.citations,
        "path": "offline",
        "retrieval": ctx.retrieval,
        "project_context": ctx.project_context,
        "related_symbols": ctx.related_symbols,
        "api_cards": ctx.api_cards,
        "top_score": round(ctx.top_score, 4),
        "confidence_floor": CONFIDENCE_FLOOR,
        "workflow": ctx.workflow,
    }
    if ctx.dense_error:
        result["dense_error"] = ctx.dense_error
    if not ctx.confident:
        result["clarifying_question"] = clarifying_question(
            ctx, tuple(getattr(ws.profile, "workflow_names", ()))
        )
        result["answer"] = low_confidence_answer(ctx)
        return result
    key = settings.key()
    if key and settings.use_openai:
        try:
            text = openai_answer(ctx, settings)
        except AnswerError as exc:
            reason = _scrub(str(exc), key)
            log.warning("OpenAI answer unavailable, answering offline: %s", reason)
            result["fallback_reason"] = reason
            result["answer"] = (
                f"> OpenAI answer unavailable ({reason}); offline answer below.\n\n"
                + offline_answer(ctx)
            )
            return result
        result["path"] = "openai"
        result["model"] = settings.model
        validation = validate_answer_code(ws, text)
        if validation is not None:
            result["validation"] = validation
            if (
                validation["errors"]
                or validation["warnings"]
                or not validation["syntax_ok"]
            ):
                text += "\n\n" + _validation_note(validation)
        result["answer"] = text
        return result
    result["answer"] = offline_answer(ctx)
    return result
