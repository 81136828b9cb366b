"""Dense fusion variants on the TUNING split (and the bundled suites) only.

Why this exists: issue 14 asks that RRF fusion with the local embedding
backend measurably improve the frozen test split, and that nothing be
chosen on that split. This harness ranks every variant of the dense lane
(what is fused, for which queries, how deep) from one workspace in one
process, with the vectors of ``build --embed minilm`` and the query vectors
kept per text, so a variant costs milliseconds instead of a benchmark run.
It refuses any file under ``suites/test/``: the frozen splits are evaluated
by ``bench_quality.py --dense`` once per final configuration, never here.

The baseline variant (``base``) is :func:`~pycsamt_lsp.search.dense.fusion.dense_query`
itself (checked against it on every query with ``--check``).

usage: dense_tune.py ROOT [--variants a,b,...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench_quality import (
    BUNDLED,
    PROJECT_SUITES,
    by_suite,
    load_records,
    paired_ci,
    score_record,
)
from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.routing import Router
from pycsamt_lsp.search.dense import (
    COSINE_FLOOR,
    FIRST_MARGIN,
    PRF_WEIGHT,
    RRF_K,
    MiniLMBackend,
    bm25_margin,
    dense_query,
    fused_order,
    rrf_fuse,
)
from pycsamt_lsp.search.dense.store import text_sha
from pycsamt_lsp.workspace.facade import Workspace

FROZEN = (PROJECT_SUITES / "test").resolve()
QCACHE = Path("/tmp/d/qvec-cache.npz")
IDENT = re.compile(
    r"[A-Za-z]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|\w+\.\w+\(|\w+\(\)"
)


def tuning_files(src: Path) -> list[Path]:
    """The bundled suites of the corpus and ``suites/tuning`` (never test/)."""
    files = sorted((src / BUNDLED).glob("*.jsonl")) + sorted(
        (PROJECT_SUITES / "tuning").glob("*.jsonl")
    )
    for f in files:
        if FROZEN in f.resolve().parents:
            raise SystemExit(f"refusing a frozen split: {f}")
    return files


class QueryVectors:
    """MiniLM query vectors kept per text (a file beside the corpus copies)."""

    def __init__(self) -> None:
        self.d: dict[str, np.ndarray] = {}
        if QCACHE.exists():
            z = np.load(QCACHE)
            self.d = dict(zip(z["keys"].tolist(), z["vecs"], strict=True))
        self.be: MiniLMBackend | None = None
        self.dirty = False

    def get(self, text: str) -> np.ndarray:
        key = text_sha(text)
        v = self.d.get(key)
        if v is None:
            if self.be is None:
                self.be = MiniLMBackend()
            v = self.d[key] = self.be.embed([text])[0]
            self.dirty = True
        return v

    def save(self) -> None:
        if self.dirty:
            QCACHE.parent.mkdir(parents=True, exist_ok=True)
            np.savez(
                QCACHE,
                keys=np.array(list(self.d)),
                vecs=np.stack(list(self.d.values())),
            )


@dataclass
class Q:
    """One query's precomputed parts."""

    rec: dict[str, Any]
    pool: list[dict[str, Any]]
    top_score: float
    intent: str
    qvec: np.ndarray  # raw query vector (unit)
    extra: dict[str, Any] = field(default_factory=dict)


def identifier_like(q: str) -> bool:
    """The query types code: a snake_case / CamelCase / dotted-call token."""
    return bool(IDENT.search(q))


def split_identifiers(q: str) -> str:
    """``estimate_ss_ama`` -> ``estimate ss ama``, ``StaticShiftAgent`` ->
    ``Static Shift Agent`` (what WordPiece reads as words)."""
    q = re.sub(r"_+", " ", q)
    q = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", q)
    return q


#: Chunk-vector caches by embedded-text hash (MiniLM, 256 pieces), written
#: by earlier tuning runs: a text variant costs only its texts not in them.
TEXT_CACHES = (
    Path("/tmp/e3/cache/minilm-256.npz"),
    Path("/tmp/dense-e/cache/head-256.npz"),
    Path("/tmp/d/text-cache.npz"),
)


def _first_sentence(doc: str, limit: int = 300) -> str:
    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    m = re.search(r"(?<=[.!?])\s", para)
    return (para[: m.start()] if m else para)[:limit]


def sig_text(c: Any) -> str:
    """Leaf name as words, signature, first docstring sentence (code);
    the ``head`` recipe otherwise."""
    from pycsamt_lsp.search.dense.store import _words_of, embed_text

    meta = c.metadata or {}
    sym = c.symbol or ""
    if c.kind in ("python_symbol", "python_method") and sym:
        doc = _first_sentence(str(meta.get("docstring") or ""))
        return f"{_words_of(sym)}\n{meta.get('signature') or ''}\n{doc}".strip()
    if c.kind == "module_doc" and sym:
        doc = _first_sentence(str(meta.get("docstring") or ""))
        return f"{_words_of(sym)} module\n{doc}".strip()
    return embed_text(c, "head")


def text_vectors(ws: Workspace, ids: list[str], fn: Callable[[Any], str]) -> np.ndarray:
    """Vectors of ``fn(chunk)`` for every id, from the caches (missing ones
    embedded and added to ``/tmp/d/text-cache.npz``)."""
    d: dict[str, np.ndarray] = {}
    for p in TEXT_CACHES:
        if p.exists():
            z = np.load(p)
            for k, v in zip(z["keys"].tolist(), z["vecs"], strict=True):
                d.setdefault(k, v)
    snap = ws.require_published().snapshot
    t = snap.table
    slot = {t.ids[s]: s for s in snap.alive_slots()}
    texts = [fn(t.get(slot[c])) if c in slot else "" for c in ids]
    keys = [text_sha(x) for x in texts]
    miss = {k: x for k, x in zip(keys, texts, strict=True) if k not in d}
    if miss:
        print(f"embedding {len(miss)} texts", file=sys.stderr)
        vecs = MiniLMBackend().embed(list(miss.values()))
        d.update(zip(miss, vecs, strict=True))
        new = {k: d[k] for k in miss}
        own = TEXT_CACHES[-1]
        if own.exists():
            z = np.load(own)
            new.update(zip(z["keys"].tolist(), z["vecs"], strict=True))
        np.savez(own, keys=np.array(list(new)), vecs=np.stack(list(new.values())))
    vecs = np.stack([d[k] for k in keys]).astype(np.float32)
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)


class Lane:
    """Vectors, rows and the fusion arithmetic for one workspace."""

    def __init__(self, ws: Workspace, text: Callable[[Any], str] | None = None) -> None:
        self.ws = ws
        self.store = ws.dense.load_store()
        assert self.store is not None, "no embeddings.npz (build --embed minilm)"
        snap = ws.require_published().snapshot
        self.usable, self.kinds = ws.dense.live_rows(snap, self.store)
        self.V = self.store.vectors
        self.ids = self.store.ids
        if text is not None:
            self.V = text_vectors(ws, self.ids, text)
        self.row = self.store.row_of()
        t = snap.table
        self.meta: dict[str, dict[str, Any]] = {}
        for s in snap.alive_slots():
            self.meta[t.ids[s]] = {
                "id": t.ids[s],
                "symbol": t.symbols[s],
                "workflow": t.workflows[s],
                "kind": t.kinds[s],
                "source_path": t.paths[s],
            }

    def prf(self, q: np.ndarray, anchor: str | None, w: float) -> np.ndarray:
        if not anchor or w <= 0:
            return q
        r = self.row.get(anchor)
        if r is None or not self.usable[r]:
            return q
        v = q + np.float32(w) * self.V[r]
        return v / np.linalg.norm(v)

    def dense_list(
        self, q: np.ndarray, n: int, mask: np.ndarray | None = None
    ) -> list[str]:
        cos = self.V @ q
        ok = self.usable & (cos >= COSINE_FLOOR)
        if mask is not None:
            ok &= mask
        idx = np.flatnonzero(ok)
        order = sorted(idx.tolist(), key=lambda i: (-float(cos[i]), self.ids[i]))[:n]
        return [self.ids[i] for i in order]


def wrrf(rankings: list[tuple[list[str], float]], k: int = RRF_K) -> dict[str, float]:
    """Weighted RRF (weight 1 everywhere is :func:`rrf_fuse`)."""
    out: dict[str, float] = {}
    for ranking, w in rankings:
        seen: set[str] = set()
        for rank, item in enumerate(ranking):
            if item in seen:
                continue
            seen.add(item)
            out[item] = out.get(item, 0.0) + w / (k + rank)
    return out


Variant = Callable[[Lane, Q], list[dict[str, Any]]]


def fused(
    lane: Lane,
    qq: Q,
    *,
    prf: float = PRF_WEIGHT,
    depth: int = 50,
    weight: float = 1.0,
    bm_depth: int = 50,
    qvec: np.ndarray | None = None,
    gate: Callable[[Q], bool] | None = None,
    code_only: bool = False,
    keep_top: int = 0,
    dense_skip: tuple[str, ...] = (),
    tie_top: int = 0,
) -> list[dict[str, Any]]:
    """Top 10 of BM25 fused with the dense list, under a variant's knobs."""
    if gate is not None and not gate(qq):
        return qq.pool[:10]
    bm = [h["id"] for h in qq.pool[:bm_depth]]
    q = qq.qvec if qvec is None else qvec
    q = lane.prf(q, bm[0] if bm else None, prf)
    mask = None
    if code_only:
        mask = np.isin(lane.kinds, ["python_symbol", "python_method", "module_doc"])
    if dense_skip:  # session 7: kinds the dense list leaves to BM25
        skip = ~np.isin(lane.kinds, list(dense_skip))
        mask = skip if mask is None else mask & skip
    dl = lane.dense_list(q, depth, mask)
    f = rrf_fuse([bm, dl]) if weight == 1.0 else wrrf([(bm, 1.0), (dl, weight)])
    by = {h["id"]: h for h in qq.pool}
    head = bm[:keep_top]
    if tie_top and not head and bm:  # rank 1 goes to the best-fused of BM25's top few
        head = [max(bm[:tie_top], key=lambda c: (f.get(c, 0.0), -bm.index(c)))]
    order = head + [c for c in fused_order(f) if c not in head]
    return [by.get(c) or lane.meta[c] for c in order[:10]]


def variants(qv: QueryVectors) -> dict[str, Variant]:
    """Named variants. ``base`` is the session-3 default (anchor 0.25, dense
    depth 50, no stage kept first); ``keep1_d10_prf0`` is today's default
    (``bm25_first`` + ``dense_depth``, no anchor) and ``prf0`` DESIGN 5's
    fusion exactly."""
    v: dict[str, Variant] = {
        "bm25": lambda lane, qq: qq.pool[:10],
        "base": lambda lane, qq: fused(lane, qq),
        "prf0": lambda lane, qq: fused(lane, qq, prf=0.0),
        "split_q": lambda lane, qq: fused(
            lane, qq, qvec=qv.get(split_identifiers(qq.rec["query"]))
        ),
        "gate_noident": lambda lane, qq: fused(
            lane, qq, gate=lambda x: not identifier_like(x.rec["query"])
        ),
        "gate_notcode": lambda lane, qq: fused(
            lane, qq, gate=lambda x: x.intent != "code"
        ),
        "gate_question": lambda lane, qq: fused(
            lane, qq, gate=lambda x: x.intent == "question"
        ),
        "code_only": lambda lane, qq: fused(lane, qq, code_only=True),
    }
    for d in (10, 20, 30):
        v[f"depth{d}"] = lambda lane, qq, d=d: fused(lane, qq, depth=d)
    for w in (0.5, 0.75):
        v[f"w{w}"] = lambda lane, qq, w=w: fused(lane, qq, weight=w)
    for t in (25.0, 40.0, 60.0):
        v[f"gate_s{t:g}"] = lambda lane, qq, t=t: fused(
            lane, qq, gate=lambda x, t=t: x.top_score < t
        )
    v["keep1"] = lambda lane, qq: fused(lane, qq, keep_top=1)
    v["keep1_conf"] = lambda lane, qq: fused(
        lane, qq, keep_top=1 if qq.top_score >= 25.0 else 0
    )
    for d in (10, 20):
        v[f"keep1_d{d}"] = lambda lane, qq, d=d: fused(lane, qq, keep_top=1, depth=d)
        v[f"d{d}_w0.75"] = lambda lane, qq, d=d: fused(lane, qq, depth=d, weight=0.75)
        v[f"d{d}_splitq"] = lambda lane, qq, d=d: fused(
            lane, qq, depth=d, qvec=qv.get(split_identifiers(qq.rec["query"]))
        )
    v["keep1_d10_prf0"] = lambda lane, qq: fused(
        lane, qq, keep_top=1, depth=10, prf=0.0
    )
    v["keep1_d15"] = lambda lane, qq: fused(lane, qq, keep_top=1, depth=15)
    v["keep1_d5"] = lambda lane, qq: fused(lane, qq, keep_top=1, depth=5)
    v["keep1_d10_splitq"] = lambda lane, qq: fused(
        lane, qq, keep_top=1, depth=10, qvec=qv.get(split_identifiers(qq.rec["query"]))
    )
    v["keep1_d10_bm20"] = lambda lane, qq: fused(
        lane, qq, keep_top=1, depth=10, bm_depth=20
    )
    v["keep2_d10"] = lambda lane, qq: fused(lane, qq, keep_top=2, depth=10)
    # session 5: BM25's first hit kept first only when it leads clearly
    # (its score over the second's at least r), at dense depth 10 or 50
    for r in (1.02, 1.03, 1.05, 1.08, 1.1, 1.15, 1.25, 1.5, 2.0):
        for d in (5, 10, 20, 50):
            v[f"keepm{r:g}_d{d}"] = lambda lane, qq, r=r, d=d: fused(
                lane, qq, keep_top=1 if margin(qq) >= r else 0, depth=d, prf=0.0
            )
        v[f"keepm{r:g}_d10_w0.75"] = lambda lane, qq, r=r: fused(
            lane,
            qq,
            keep_top=1 if margin(qq) >= r else 0,
            depth=10,
            prf=0.0,
            weight=0.75,
        )
    v["keepm1.1_d10_splitq"] = lambda lane, qq: fused(
        lane,
        qq,
        keep_top=1 if margin(qq) >= 1.1 else 0,
        depth=10,
        prf=0.0,
        qvec=qv.get(split_identifiers(qq.rec["query"])),
    )
    # session 7: the dense list without prose kinds (the checkout's doc
    # sections were 44% of its dense top 10s, the sdist's 1%)
    for name, skip in (
        ("nodoc", ("doc_section",)),
        ("code", ("doc_section", "recipe")),
    ):
        for r in (1.05,):
            v[f"keepm{r:g}_d10_{name}"] = lambda lane, qq, r=r, skip=skip: fused(
                lane,
                qq,
                keep_top=1 if margin(qq) >= r else 0,
                depth=10,
                prf=0.0,
                dense_skip=skip,
            )
            for bmd in (10, 15, 20, 30):
                v[f"keepm{r:g}_d10_{name}_bm{bmd}"] = (
                    lambda lane, qq, r=r, skip=skip, bmd=bmd: fused(
                        lane,
                        qq,
                        keep_top=1 if margin(qq) >= r else 0,
                        depth=10,
                        prf=0.0,
                        dense_skip=skip,
                        bm_depth=bmd,
                    )
                )
    # session 7: on a near tie, the dense vote picks rank 1 among BM25's
    # tied first results only (not any chunk both lists rank somewhere)
    for tt in (2, 3, 5, 10):
        for name, skip in (("", ()), ("_nodoc", ("doc_section",))):
            v[f"tie{tt}m1.05_d10{name}"] = lambda lane, qq, tt=tt, skip=skip: fused(
                lane,
                qq,
                keep_top=1 if margin(qq) >= 1.05 else 0,
                tie_top=tt,
                depth=10,
                prf=0.0,
                dense_skip=skip,
            )
    for bmd in (10, 15, 20, 30):
        v[f"keepm1.05_d10_bm{bmd}"] = lambda lane, qq, bmd=bmd: fused(
            lane,
            qq,
            keep_top=1 if margin(qq) >= 1.05 else 0,
            depth=10,
            prf=0.0,
            bm_depth=bmd,
        )
    for d in (20, 30, 50):
        v[f"keep1_d{d}_prf0"] = lambda lane, qq, d=d: fused(
            lane, qq, keep_top=1, depth=d, prf=0.0
        )
    for w in (0.5, 0.75, 1.25, 1.5):
        v[f"keep1_d10_prf0_w{w:g}"] = lambda lane, qq, w=w: fused(
            lane, qq, keep_top=1, depth=10, prf=0.0, weight=w
        )
    return v


def margin(qq: Q) -> float:
    """BM25's first score over its second's (``fusion.bm25_margin``)."""
    return bm25_margin(qq.pool)


def prepare(ws: Workspace, records: list[dict[str, Any]], qv: QueryVectors) -> list[Q]:
    router = Router(ws.profile)
    out = []
    for r in records:
        p = ws.pool(r["query"], 50)
        out.append(
            Q(
                rec=r,
                pool=p["results"],
                top_score=float(p["top_score"]),
                intent=router.route(r["query"]).intent,
                qvec=qv.get(r["query"]),
            )
        )
    return out


def check(ws: Workspace, lane: Lane, qs: list[Q]) -> int:
    """Variants ``base``, ``keep1_d10_prf0`` and ``keepm1.05_d10`` against
    dense_query (the session-3 fusion, session 4's and today's default):
    the number of differing top-10s."""
    be = MiniLMBackend()
    bad = 0
    pairs = (
        (lambda qq: fused(lane, qq), ("bm25_first", "dense_depth", "+prf")),
        (
            lambda qq: fused(lane, qq, keep_top=1, depth=10, prf=0.0),
            ("first_margin",),
        ),
        (
            lambda qq: fused(
                lane,
                qq,
                keep_top=1 if margin(qq) >= FIRST_MARGIN else 0,
                depth=10,
                prf=0.0,
            ),
            (),
        ),
        (  # session 7's candidate: first_page + dense_no_docs
            lambda qq: fused(
                lane,
                qq,
                keep_top=1 if margin(qq) >= FIRST_MARGIN else 0,
                tie_top=10,
                depth=10,
                prf=0.0,
                dense_skip=("doc_section",),
            ),
            ("+first_page", "+dense_no_docs"),
        ),
    )
    for qq in qs:
        for mine, disable in pairs:
            got = [h["id"] for h in mine(qq)]
            res = dense_query(ws, qq.rec["query"], 10, backend=be, disable=disable)
            if got != [h["id"] for h in res["results"]]:
                bad += 1
                print("differs:", disable, qq.rec["query"], file=sys.stderr)
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--variants", default="")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--show", default="", help="variant: print per-query changes")
    ap.add_argument("--text", choices=("head", "sig"), default="head")
    ap.add_argument(
        "--suite",
        default="tuning/",
        help="suite-name prefix of the tuning figures (e.g. tuning/dense_tuning)",
    )
    a = ap.parse_args(argv)
    checkout = not (a.root / "PKG-INFO").exists()
    records = load_records(tuning_files(a.root), checkout=checkout)
    ws = Workspace(a.root, load_profile(), index_dir=None)
    ws.open()
    qv = QueryVectors()
    t0 = time.perf_counter()
    qs = prepare(ws, records, qv)
    lane = Lane(ws, sig_text if a.text == "sig" else None)
    allv = variants(qv)
    names = [n for n in (a.variants.split(",") if a.variants else allv) if n]
    if a.check:
        print("base vs dense_query: differing top-10s:", check(ws, lane, qs))
    scored = {
        n: [score_record(qq.rec, allv[n](lane, qq)) for qq in qs]
        for n in ["bm25", *names]
    }
    qv.save()
    print(f"{len(qs)} records, {time.perf_counter() - t0:.1f} s")
    base = scored["bm25"]
    hdr = f"{'variant':<16}{'tun mrr':>8}{'tun hit':>8}{'bund mrr':>9}{'bund wf':>8}  fused-bm25 tuning mrr [95%] (+/-)"
    print(hdr)
    res: dict[str, Any] = {}
    for n, sc in scored.items():
        tun = [s for s in sc if str(s["suite"]).startswith(a.suite)]
        bun = [s for s in sc if str(s["suite"]).startswith("bundled")]
        at, ab = by_suite(tun)["ALL"], by_suite(bun)["ALL"]
        pairs = [
            (b, f)
            for b, f in zip(base, sc, strict=True)
            if "rr" in b and str(b["suite"]).startswith(a.suite)
        ]
        ci = paired_ci([f["rr"] - b["rr"] for b, f in pairs])
        wf_t = at["wf@10"]
        print(
            f"{n:<16}{at['mrr@10']:>8.3f}{at['hit@10']:>8.3f}{ab['mrr@10']:>9.3f}{ab['wf@10']:>8.3f}"
            f"  {ci['mean']:+.3f} [{ci['lo']:+.3f}, {ci['hi']:+.3f}] (+{ci['better']}/-{ci['worse']})"
            f"  tun wf {wf_t:.3f}"
        )
        res[n] = {"tuning": at, "bundled": ab, "ci": ci, "by_suite": by_suite(sc)}
    if a.show:
        for b, f, qq in zip(base, scored[a.show], qs, strict=True):
            if b.get("rr") != f.get("rr") or b.get("wf_in_top") != f.get("wf_in_top"):
                print(
                    f"{qq.rec['_suite']:<22} {qq.intent:<9} s={qq.top_score:6.1f} "
                    f"rr {b.get('rr', 0):.2f}->{f.get('rr', 0):.2f} "
                    f"wf {b.get('wf_in_top')}->{f.get('wf_in_top')} | {qq.rec['query'][:70]}"
                )
    if a.json:
        a.json.write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
