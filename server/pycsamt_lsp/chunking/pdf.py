"""Papers: PDFs read page by page with pypdf (optional extra ``pdf``).

PDFs under the profile's ``papers_dir`` (``docs/papers`` by default,
configurable in the profile) are read one page at a time. A page is kept
only when its text passes a prose filter: long enough, mostly real words,
no ``/uni00..`` glyph names (a broken text layer), and few odd-symbol or
glued-identifier tokens (equations, tables, lost spaces). Kept pages are cut
into overlapping windows, each a ``pdf_page`` chunk cited by file and page.

Papers live in a small side index (:class:`PaperIndex`, BM25 with the
project's tokenizer and expansion) next to the main one, so a corpus gains
papers without changing how source files are scanned. Retrieval overfetches
3x and keeps the top k chunks that still pass the prose filter on their own
(a page that passed may carry a reference list or a table in one window).
Extracted page texts are cached in the index folder by file hash, so pypdf
runs once per PDF version.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import logging
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pycsamt_lsp.chunking.chunk import Chunk, FileChunks
from pycsamt_lsp.corpus.profile import Profile
from pycsamt_lsp.index.bm25 import BM25Index
from pycsamt_lsp.index.tokenize import term_counts, tokenize
from pycsamt_lsp.search.retrieval import EXPANSION_WEIGHT
from pycsamt_lsp.storage.atomic import atomic_write_text

if TYPE_CHECKING:
    from pycsamt_lsp.workspace.facade import Workspace

__all__ = [
    "PaperIndex",
    "PaperService",
    "build_paper_index",
    "chunk_pages",
    "chunk_pdf",
    "extract_pages",
    "paper_index",
    "pdf_available",
    "prose_check",
]

log = logging.getLogger(__name__)

#: Window size and overlap of a chunk, in characters.
CHUNK_CHARS = 1200
OVERLAP_CHARS = 200
#: Prose filter thresholds.
MIN_PROSE_CHARS = 200
MIN_WORDS = 30
MIN_REAL_WORD_RATIO = 0.6
MAX_ODD_RATIO = 0.15
MAX_GLUED_RATIO = 0.08
OVERFETCH = 3
CACHE_FILE = "papers_cache.json"

_TOKEN = re.compile(r"\S+")
_REAL_WORD = re.compile(
    r"^[(\"'\[]*(?:[A-Za-z][a-z]*|[A-Z]{2,}[a-z]?)(?:[-'][A-Za-z]+)*[)\"'\].,;:!?]*$"
)
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_ODD = re.compile(r"[^\w\s.,;:!?()\[\]'\"%/+=<>*&-]")
_GLUED_CAMEL = re.compile(r"[a-z]{3,}[A-Z][a-z]{2,}[A-Z]?")


def pdf_available() -> bool:
    """True when pypdf is installed (the ``pdf`` extra)."""
    return importlib.util.find_spec("pypdf") is not None


def extract_pages(data: bytes) -> list[str]:
    """Text of each page (``""`` for a page pypdf cannot read)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data), strict=False)
    pages: list[str] = []
    for page in reader.pages:
        try:
            pages.append(page.extract_text() or "")
        except Exception as exc:  # noqa: BLE001 - one bad page never stops a paper
            log.info("unreadable PDF page: %s", exc)
            pages.append("")
    return pages


def prose_check(text: str) -> tuple[bool, str]:
    """``(is prose, why not)`` for a page or chunk of extracted text."""
    body = (text or "").strip()
    if "/uni00" in body or "/uni0" in body.lower():
        return False, "glyph names (/uni00..) instead of text"
    if len(body) < MIN_PROSE_CHARS:
        return False, f"too short ({len(body)} < {MIN_PROSE_CHARS} characters)"
    tokens = _TOKEN.findall(body)
    if len(tokens) < MIN_WORDS:
        return False, f"too few words ({len(tokens)} < {MIN_WORDS})"
    real = sum(
        1 for t in tokens if len(t) >= 2 and _REAL_WORD.match(t) and _VOWEL.search(t)
    )
    odd = sum(1 for t in tokens if _ODD.search(t))
    glued = sum(
        1
        for t in tokens
        if (len(t) > 24 and t.isalpha())
        or _GLUED_CAMEL.search(t)
        or "_" in t.strip("_")
    )
    n = len(tokens)
    if real / n < MIN_REAL_WORD_RATIO:
        return False, f"few real words ({real}/{n})"
    if odd / n > MAX_ODD_RATIO:
        return False, f"many odd-symbol tokens ({odd}/{n})"
    if glued / n > MAX_GLUED_RATIO:
        return False, f"many glued-identifier tokens ({glued}/{n})"
    return True, ""


def _clean(text: str) -> str:
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)  # words hyphenated at line ends
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r"\s*\n\s*", "\n", text)
    return text.strip()


def _windows(text: str, size: int, overlap: int) -> list[str]:
    """Cut *text* into windows of about *size* characters overlapping by *overlap*."""
    if len(text) <= size:
        return [text]
    out: list[str] = []
    start = 0
    n = len(text)
    while start < n:
        end = min(start + size, n)
        if end < n:  # end on a word boundary
            cut = text.rfind(" ", start + size // 2, end)
            cut2 = text.rfind("\n", start + size // 2, end)
            end = max(cut, cut2) if max(cut, cut2) > start else end
        out.append(text[start:end].strip())
        if end >= n:
            break
        nxt = end - overlap
        sp = text.find(" ", nxt, end)
        start = sp + 1 if sp != -1 else nxt
    return [w for w in out if w]


def chunk_pages(
    rel: str,
    pages: list[str],
    *,
    profile: Profile | None = None,
    size: int = CHUNK_CHARS,
    overlap: int = OVERLAP_CHARS,
) -> tuple[list[Chunk], list[dict[str, Any]]]:
    """Chunks of the prose pages, and ``{page, reason}`` for each dropped page."""
    chunks: list[Chunk] = []
    dropped: list[dict[str, Any]] = []
    title = Path(rel).stem
    for pno, raw in enumerate(pages, 1):
        text = _clean(raw)
        ok, why = prose_check(text)
        if not ok:
            dropped.append({"page": pno, "reason": why})
            continue
        wins = _windows(text, size, overlap)
        for i, win in enumerate(wins):
            workflow = None
            if profile is not None:
                try:
                    workflow = profile.infer_workflow(win)
                except Exception:  # noqa: BLE001 - tagging is best-effort
                    workflow = None
            chunks.append(
                Chunk(
                    id=f"{rel}:p{pno}:{i}",
                    text=f"Paper: {rel} (page {pno})\n{win}",
                    source_path=rel,
                    kind="pdf_page",
                    symbol=None,
                    workflow=workflow,
                    priority=2,
                    metadata={
                        "page": pno,
                        "heading": f"{title}, p. {pno}",
                        "window": i,
                        "n_windows": len(wins),
                    },
                )
            )
    return chunks, dropped


def chunk_pdf(rel: str, data: bytes, profile: Profile | None = None) -> FileChunks:
    """One PDF into ``pdf_page`` chunks (the chunker interface); never raises."""
    if not pdf_available():
        return FileChunks([], None, "pypdf is not installed (extra `pdf`)")
    try:
        pages = extract_pages(data)
    except Exception as exc:  # noqa: BLE001 - a broken PDF is skipped, not fatal
        return FileChunks([], None, f"unreadable PDF: {exc}")
    chunks, _ = chunk_pages(rel, pages, profile=profile)
    return FileChunks(chunks)


# -- the side index -------------------------------------------------------------


@dataclass
class PaperIndex:
    """BM25 (:class:`~pycsamt_lsp.index.bm25.BM25Index`, the main index's
    implementation) over the ``pdf_page`` chunks of one papers folder."""

    chunks: list[Chunk]
    files: dict[str, str]  # rel -> sha256
    dropped: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    bm25: BM25Index = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.bm25 = BM25Index.build([term_counts(c.text) for c in self.chunks])

    def __len__(self) -> int:
        return len(self.chunks)

    def search(
        self, query: str, k: int, profile: Profile | None = None
    ) -> list[tuple[Chunk, float]]:
        """Top *k* prose chunks for *query*: fetch ``3k``, keep those that pass.

        The score is the seed's lexical part ``BM25(q) + 0.35 BM25(e(q))``
        with the profile's expansion, as in the main index.
        """
        if not self.chunks or k <= 0:
            return []
        s = self.bm25.scores(tokenize(query))
        if profile is not None:
            exp = profile.expand(query)
            if exp:
                s = s + EXPANSION_WEIGHT * self.bm25.scores(exp)
        idx = np.flatnonzero(s > 0)
        order = sorted(idx.tolist(), key=lambda i: (-s[i], self.chunks[i].id))
        out: list[tuple[Chunk, float]] = []
        for i in order[: OVERFETCH * k]:
            c = self.chunks[i]
            body = c.text.split("\n", 1)[-1]
            if prose_check(body)[0]:
                out.append((c, float(s[i])))
            if len(out) >= k:
                break
        return out


def _load_cache(index_dir: Path | None) -> dict[str, list[str]]:
    if index_dir is None:
        return {}
    try:
        raw = json.loads((index_dir / CACHE_FILE).read_text(encoding="utf-8"))
        return {str(k): [str(p) for p in v] for k, v in raw.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _save_cache(index_dir: Path | None, cache: dict[str, list[str]]) -> None:
    if index_dir is None:
        return
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(index_dir / CACHE_FILE, json.dumps(cache))
    except OSError as exc:
        log.info("could not cache extracted paper text: %s", exc)


def _pdfs(base: Path) -> list[Path]:
    return sorted(
        p for p in base.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file()
    )


def _listing(pdfs: list[Path]) -> tuple[tuple[str, int, int], ...]:
    """What a built index is checked against: every PDF's path, size, mtime."""
    return tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in pdfs)


def build_paper_index(
    root: Path,
    papers_dir: str,
    *,
    profile: Profile | None = None,
    index_dir: Path | None = None,
    max_bytes: int = 50_000_000,
) -> PaperIndex | None:
    """Index the PDFs under ``root/papers_dir``; None when there are none
    (or pypdf is missing: logged).

    Extracted pages are cached on disk by file hash in *index_dir*, so pypdf
    runs once per PDF version; the built index itself is kept by its owner
    (:class:`PaperService`).
    """
    base = (Path(root) / papers_dir).resolve()
    if not base.is_dir():
        return None
    pdfs = _pdfs(base)
    if not pdfs:
        return None
    if not pdf_available():
        log.warning(
            "%d PDF(s) in %s ignored: install the `pdf` extra (pypdf)",
            len(pdfs),
            base,
        )
        return None
    cache = _load_cache(index_dir)
    dirty = False
    chunks: list[Chunk] = []
    files: dict[str, str] = {}
    dropped: dict[str, list[dict[str, Any]]] = {}
    errors: dict[str, str] = {}
    root_res = Path(root).resolve()
    for p in pdfs:
        try:
            rel = p.relative_to(root_res).as_posix()
        except ValueError:  # a papers folder outside the corpus (symlink, setting)
            rel = f"{papers_dir.rstrip('/')}/{p.relative_to(base).as_posix()}"
        if p.stat().st_size > max_bytes:
            errors[rel] = f"larger than {max_bytes} bytes"
            continue
        data = p.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        files[rel] = sha
        pages = cache.get(sha)
        if pages is None:
            try:
                pages = extract_pages(data)
            except Exception as exc:  # noqa: BLE001 - skip, count, go on
                log.info("skipped unreadable PDF %s: %s", rel, exc)
                errors[rel] = f"unreadable PDF: {exc}"
                continue
            cache[sha] = pages
            dirty = True
        got, why = chunk_pages(rel, pages, profile=profile)
        chunks.extend(got)
        if why:
            dropped[rel] = why
    if dirty:
        live = set(files.values())
        _save_cache(index_dir, {k: v for k, v in cache.items() if k in live})
    return PaperIndex(chunks, files, dropped, errors)


class PaperService:
    """The papers side index of one workspace, rebuilt when the folder's
    listing (path, size, mtime of every PDF) changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._built: dict[str, tuple[tuple[tuple[str, int, int], ...], PaperIndex]] = {}
        self._warned: set[str] = set()

    def index(
        self,
        root: Path,
        papers_dir: str,
        *,
        profile: Profile | None = None,
        index_dir: Path | None = None,
    ) -> PaperIndex | None:
        """The index of ``root/papers_dir`` (None without PDFs or pypdf)."""
        base = (Path(root) / papers_dir).resolve()
        if not base.is_dir():
            return None
        pdfs = _pdfs(base)
        if not pdfs:
            return None
        if not pdf_available():
            with self._lock:
                first = str(base) not in self._warned
                self._warned.add(str(base))
            if first:
                log.warning(
                    "%d PDF(s) in %s ignored: install the `pdf` extra (pypdf)",
                    len(pdfs),
                    base,
                )
            return None
        sig = _listing(pdfs)
        key = f"{base}|{index_dir}"
        with self._lock:
            hit = self._built.get(key)
            if hit is not None and hit[0] == sig:
                return hit[1]
            index = build_paper_index(
                root, papers_dir, profile=profile, index_dir=index_dir
            )
            if index is not None:
                self._built[key] = (sig, index)
            return index

    def clear(self) -> None:
        """Forget the built indexes (the on-disk page cache stays)."""
        with self._lock:
            self._built.clear()


def paper_index(ws: Workspace, papers_dir: str | None = None) -> PaperIndex | None:
    """The papers side index of a workspace (None without PDFs or pypdf)."""
    folder = papers_dir or ws.profile.papers_dir or "docs/papers"
    try:
        return ws.papers.index(
            ws.root, folder, profile=ws.profile, index_dir=ws.index_dir
        )
    except OSError as exc:
        log.warning("papers folder unreadable: %s", exc)
        return None
