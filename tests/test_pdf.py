"""Papers: a PDF the test writes, read page by page, prose-filtered, cited by page."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest

from lsp_helpers import write_fixture_corpus

pytest.importorskip("pypdf")

from pycsamt_lsp.answer.context import answer_question
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.chunking import Chunk
from pycsamt_lsp.chunking import pdf as pdf_mod
from pycsamt_lsp.chunking.pdf import (
    OVERFETCH,
    PaperIndex,
    build_paper_index,
    chunk_pages,
    chunk_pdf,
    extract_pages,
    prose_check,
)
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.workspace.facade import Workspace

PROSE_1 = (
    "Static shift is a frequency independent displacement of apparent resistivity "
    "sounding curves. It is caused by small conductive or resistive bodies near the "
    "surface which distort the electric field around the receiver electrodes. Because "
    "the phase is not affected, the curves of neighbouring stations appear parallel "
    "but offset vertically on a logarithmic plot. The adaptive moving average filter "
    "estimates one multiplicative factor per station along the profile and removes "
    "the offset before any inversion of the magnetotelluric data is attempted."
)
PROSE_3 = (
    "The phase tensor is unaffected by small bodies near the surface and gives a "
    "reliable estimate of the geoelectric strike direction. Its skew angle measures "
    "how far the subsurface departs from a two dimensional structure. When the skew "
    "is small the strike can be used to rotate the impedance tensor before a two "
    "dimensional inversion, and the ellipses plotted along the profile show the "
    "dimensionality of the data at every period that was recorded in the survey."
)
TABLE_2 = [
    "Z_xx 1.2e-3 +/- 4.5e-4 @ 0.001Hz ## 3.14159 ; 2.71828 ; 1.41421 $$ 0x1F",
    "rho_a[ohm.m] {12.5, 13.7, 19.2} | phi[deg] {45.1, 44.9, 47.3} ~~ #### %%",
    "f=1e+2;T=1e-2;ZZ=[[1,2],[3,4]] ## ^^ ** => <= != == && || :: ;; ++ --",
] * 3


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: one Helvetica text stream per page, real xref table."""
    n = len(pages)
    page_ids = [4 + 2 * i for i in range(n)]
    content_ids = [5 + 2 * i for i in range(n)]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: (
            "<< /Type /Pages /Kids ["
            + " ".join(f"{p} 0 R" for p in page_ids)
            + f"] /Count {n} >>"
        ).encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 10 Tf", "12 TL", "50 760 Td"]
        ops += [f"({_esc(line)}) Tj T*" for line in lines]
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects[content_ids[i]] = (
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
        )
        objects[page_ids[i]] = (
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {content_ids[i]} 0 R >>"
        ).encode()
    out = bytearray(b"%PDF-1.4\n")
    offsets: dict[int, int] = {}
    for oid in sorted(objects):
        offsets[oid] = len(out)
        out += f"{oid} 0 obj\n".encode() + objects[oid] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n".encode() + b"0000000000 65535 f \n"
    for oid in range(1, size):
        out += f"{offsets[oid]:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def paper_bytes() -> bytes:
    return make_pdf([textwrap.wrap(PROSE_1, 90), TABLE_2, textwrap.wrap(PROSE_3, 90)])


@pytest.fixture(autouse=True)
def _no_real_openai(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_generated_pdf_is_read_page_by_page():
    pages = extract_pages(paper_bytes())
    assert len(pages) == 3
    assert "Static shift is a frequency independent" in pages[0]
    assert "phase tensor" in pages[2]


def test_pdf_chunks_cite_pages_and_drop_the_non_prose_page():
    fc = chunk_pdf("docs/papers/shift.pdf", paper_bytes(), load_profile("pycsamt"))
    assert fc.error is None
    pages = sorted({c.metadata["page"] for c in fc.chunks})
    assert pages == [1, 3]  # page 2 (a table of numbers and symbols) is dropped
    for c in fc.chunks:
        assert c.kind == "pdf_page"
        assert c.source_path == "docs/papers/shift.pdf"
        assert c.id.startswith(f"docs/papers/shift.pdf:p{c.metadata['page']}:")
        assert c.metadata["heading"] == f"shift, p. {c.metadata['page']}"
        assert c.line_start is None
    by_page = {c.metadata["page"]: c for c in fc.chunks}
    assert by_page[1].workflow == "static_shift"
    assert by_page[3].workflow == "phase_analysis"
    _, dropped = chunk_pages("x.pdf", extract_pages(paper_bytes()))
    assert [d["page"] for d in dropped] == [2]
    assert dropped[0]["reason"]


def test_prose_filter_rules():
    assert prose_check(PROSE_1) == (True, "")
    assert not prose_check("Too short to be a page.")[0]
    ok, why = prose_check(PROSE_1 + " /uni0041/uni0042")
    assert not ok and "/uni00" in why
    ok, why = prose_check(" ".join(TABLE_2))
    assert not ok
    glued = " ".join(
        ["thisisaverylonggluedidentifierwithoutspaces"] * 10 + PROSE_1.split()[:40]
    )
    ok, why = prose_check(glued)
    assert not ok and "glued" in why
    odd = " ".join(["x≈√∑"] * 15 + PROSE_1.split()[:60])
    ok, why = prose_check(odd)
    assert not ok and "odd-symbol" in why
    numbers = " ".join(str(i * 1.5) for i in range(200))
    ok, why = prose_check(numbers)
    assert not ok and "real words" in why


def test_long_pages_are_chunked_with_overlap():
    text = " ".join(f"{PROSE_1} {PROSE_3}" for _ in range(3))
    chunks, dropped = chunk_pages("p.pdf", [text], size=600, overlap=120)
    assert not dropped and len(chunks) >= 4
    bodies = [c.text.split("\n", 1)[1] for c in chunks]
    for a, b in itertools.pairwise(bodies):
        assert len(a) <= 600
        head = b[:40]
        assert head in a, "each window starts inside the previous one"
    assert [c.metadata["window"] for c in chunks] == list(range(len(chunks)))
    assert all(c.metadata["page"] == 1 for c in chunks)


def test_search_overfetches_and_keeps_prose_chunks():
    good = [
        Chunk(
            id=f"p.pdf:p{i}:0",
            text=f"Paper: p.pdf (page {i})\n{PROSE_1}",
            source_path="p.pdf",
            kind="pdf_page",
            metadata={"page": i},
        )
        for i in (1, 2, 3)
    ]
    # the best BM25 match is not prose on its own (a glued table in one window)
    bad = Chunk(
        id="p.pdf:p9:0",
        text="Paper: p.pdf (page 9)\n" + "static_shift static_shift factor_table " * 30,
        source_path="p.pdf",
        kind="pdf_page",
        metadata={"page": 9},
    )
    idx = PaperIndex([bad, *good], {"p.pdf": "0"})
    hits = idx.search("static shift factor", 2)
    assert OVERFETCH == 3
    assert [c.id for c, _ in hits] == ["p.pdf:p1:0", "p.pdf:p2:0"]
    assert all(score > 0 for _, score in hits)
    assert idx.search("static shift factor", 0) == []


def _corpus_with_paper(tmp_path) -> Workspace:
    root = tmp_path / "corpus"
    root.mkdir()
    prof = write_fixture_corpus(root)
    papers = root / "docs" / "papers"
    papers.mkdir(parents=True)
    (papers / "shift_paper.pdf").write_bytes(paper_bytes())
    ws = Workspace(root, load_profile(prof), index_dir=tmp_path / "idx")
    ws.build()
    return ws


def test_ask_cites_paper_pages(tmp_path):
    ws = _corpus_with_paper(tmp_path)
    res = answer_question(
        ws,
        "why are apparent resistivity curves offset vertically by near surface bodies",
        k=4,
        settings=AskSettings(),
    )
    papers = [c for c in res["citations"] if c["kind"] == "pdf_page"]
    assert papers, res["citations"]
    c = papers[0]
    assert c["source_path"] == "docs/papers/shift_paper.pdf"
    assert c["page"] == 1
    assert c["label"] == "shift_paper.pdf, p. 1"
    assert c["line_start"] is None
    assert c["uri"].startswith("file://") and c["uri"].endswith(
        "docs/papers/shift_paper.pdf"
    )
    assert len(c["snippet"]) <= 280 and c["snippet"].startswith("Static shift is")
    # papers can be switched off
    off = answer_question(
        ws,
        "why are apparent resistivity curves offset vertically by near surface bodies",
        settings=AskSettings(papers=False),
    )
    assert all(c["kind"] != "pdf_page" for c in off["citations"])


def test_catalog_counts_papers_and_dropped_pages(tmp_path):
    ws = _corpus_with_paper(tmp_path)
    res = answer_question(ws, "what is in the index?", settings=AskSettings())
    assert res["path"] == "catalog"
    assert res["catalog"]["papers"]["files"] == ["docs/papers/shift_paper.pdf"]
    assert res["catalog"]["papers"]["dropped_pages"] == 1
    assert "**Papers:** 1 PDF(s)" in res["answer"]


def test_extracted_pages_are_cached_by_hash(tmp_path, monkeypatch):
    ws = _corpus_with_paper(tmp_path)
    first = build_paper_index(ws.root, "docs/papers", index_dir=ws.index_dir)
    assert first is not None and len(first) >= 2
    assert (ws.index_dir / pdf_mod.CACHE_FILE).is_file()

    def no_pypdf(_data):
        raise AssertionError("pypdf must not run again for an unchanged PDF")

    monkeypatch.setattr(pdf_mod, "extract_pages", no_pypdf)
    again = build_paper_index(ws.root, "docs/papers", index_dir=ws.index_dir)
    assert [c.id for c in again.chunks] == [c.id for c in first.chunks]


def test_broken_pdf_is_skipped_not_fatal(tmp_path):
    root = tmp_path / "r"
    (root / "docs/papers").mkdir(parents=True)
    (root / "docs/papers/broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    (root / "docs/papers/good.pdf").write_bytes(paper_bytes())
    idx = build_paper_index(root, "docs/papers", index_dir=tmp_path / "idx")
    assert idx is not None
    assert idx.errors["docs/papers/broken.pdf"].startswith("unreadable PDF")
    assert not any(c.source_path.endswith("broken.pdf") for c in idx.chunks)
    assert any(c.source_path == "docs/papers/good.pdf" for c in idx.chunks)
    fc = chunk_pdf("x.pdf", b"not a pdf at all")
    assert fc.chunks == [] and fc.error.startswith("unreadable PDF")
    assert build_paper_index(root, "no/such/folder") is None


def test_no_papers_folder_means_no_index(tmp_path):
    assert build_paper_index(Path(tmp_path), "docs/papers") is None
