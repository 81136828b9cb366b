"""Retrieval quality side by side: ``pycsamt-lsp`` against pyCSAMT 2.6.4's assistant.

For every corpus (default: the sdist and the checkout with docs) both engines
build their own index on their own copy of the corpus, then rank the same
questions (top 10):

- ours: ``pycsamt.query`` through the command registry, i.e. exactly what
  ``pycsamt-lsp query --json`` returns, in one process (``--via-cli`` runs the
  real CLI once per question instead);
- the reference: ``build_retriever(root).search(q, k=10)``, the call its
  ``query`` CLI makes, in one process of its own venv (``reference.py``).

Questions are JSONL records (``#`` lines skipped): ``query``, optional
``expected_symbols`` (dotted names), ``expected_workflow`` /
``expected_retrieval_workflow``. Default: the corpus's own bundled suites
(``pycsamt/assistant/evals/suites/*.jsonl``) and the project's ``suites/``.

Metrics, per suite and overall (only records that carry the expectation):

- MRR@10: 1 / rank of the first result matching ANY expected symbol (0 if none
  in the top 10); ``mrr1@10`` does the same for the first listed symbol only;
- hit@10: some expected symbol is in the top 10; recall@10: the fraction of
  expected symbols found;
- wf@10: the expected workflow is among the workflows of the top-10 chunks
  (the reference harness's ``workflow_in_topk``);
- top-1 has no symbol: how often rank 1 is a chunk without a symbol (recipe,
  doc section), for the diagnosis in issue 14.

Symbol matching (identical for both engines, :func:`symbol_matches`): a result
matches an expected name E when its ``symbol`` S equals E, or ends with
``"." + E`` (E given relative), or S and E share the last component and E's
module is a prefix of S's module (E names a re-export such as
``pycsamt.agents.StaticShiftAgent`` of ``pycsamt.agents.static_shift.
StaticShiftAgent``). Chunks without a symbol (recipes, doc sections) never
match; a method never matches its class. Both engines expose ``symbol`` per
chunk (``null`` for prose), so no label or title parsing is involved.

``--disable A,+B`` (repeatable; the frozen plan's R1 / R2,
benchmarks/ranking_frozen_plan.md) ranks ours once more per spec with those
BM25 ranking stages off (``+name``: an opt-in stage on), through the same
``pycsamt.query`` command call in one process with its ``disable`` field set,
and reports per suite, ``ALL`` and ``test/POOLED`` (every frozen split) the
pass's MRR@10, hit@10, nDCG@10 (``dense_eval``'s) and wf@10 beside the
default's, with pass - default and its paired bootstrap 95% CI
(:func:`paired_ci`: 2,000 resamples, seed 0); JSON: ``disable_default`` and
``disable_variants`` per corpus. A misspelt stage is refused at once.

``--questions`` replaces the default files; ``--with-bundled`` adds each
corpus's own bundled suites to them (a run on the tuning files that still
reports the bundled metrics). ``--dump-top`` writes each record's top 10
(symbol, kind, path; :func:`top_dump`) for ours, the reference and every
``--disable`` pass into the JSON, beside the first expected symbol's
``rank`` that every pass's per-record rows carry: what a per-record
diagnosis of misses reads.

``--routing FILE`` scores intent / workflow / line accuracy on records with
``expected_intent`` / ``expected_workflow`` / ``expected_line`` for the
reference (its own harness: ``IntentRouter`` offline, its subject-workflow
classifier, ``ProjectRegistry.from_default(root)``), and for ours through
:func:`routing_accuracy` with any ``request -> decision`` callable; ours is
read from a ``route`` object in the result of the ``pycsamt.ask`` handler
(what ``pycsamt-lsp ask --json`` prints; no API key, so offline) once it has
one (see :func:`ours_decider`). Without ``--routing``, any
``suites/**/routing_*.jsonl`` of the project is used.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from bench_build import CORPORA, our_build, our_cli
from measure import git_state, offline_env, run_measured
from reference import (
    REF_VERSION,
    copy_corpus,
    ensure_ref_venv,
    load_jsonl,
    ref_batch_query,
    ref_build,
    ref_route,
)

K = 10
DEFAULT_OUT = Path(__file__).with_name("results") / "bench_quality.json"
PROJECT_SUITES = Path(__file__).resolve().parents[1] / "suites"
BUNDLED = "pycsamt/assistant/evals/suites"

Decision = Mapping[str, Any]
Decider = Callable[[str], Decision | None]

# Our side in one process: the same command handler `pycsamt-lsp query --json`
# calls, on the persisted index `pycsamt-lsp build` wrote.
OUR_DRIVER = r"""
import json, sys, time
from pathlib import Path
try:  # feature-folder layout
    try:  # the explicit registry (issue 13)
        from pycsamt_lsp.commands.catalog import run_command
    except ImportError:  # commands registered by importing the handlers
        import pycsamt_lsp.commands.handlers
        from pycsamt_lsp.commands.registry import run_command
    from pycsamt_lsp.corpus.profile import load_profile
    from pycsamt_lsp.workspace.facade import Workspace
except ImportError:  # flat layout, before the reorganisation
    import pycsamt_lsp.api
    from pycsamt_lsp.commands import run_command
    from pycsamt_lsp.profile import load_profile
    from pycsamt_lsp.workspace import Workspace
p = json.loads(sys.stdin.read())
t0 = time.perf_counter()
ws = Workspace(Path(p["root"]), load_profile(), index_dir=None)
ws.open()
out = {"load_s": time.perf_counter() - t0, "results": []}
if p["mode"] == "ask":
    try:
        import pycsamt_lsp.answer.ask  # registers pycsamt.ask
    except ImportError:
        import pycsamt_lsp.ask
for q in p["queries"]:
    t = time.perf_counter()
    if p["mode"] == "ask":
        res = run_command("pycsamt.ask", ws, {"question": q})
        item = {"route": res.get("route")}
    elif p.get("dense_disable"):  # a fusion ablation: the engine call itself
        from pycsamt_lsp.search.dense.fusion import dense_query
        res = dense_query(ws, q, p["k"], disable=p["dense_disable"])
        item = {"hits": res["results"], "retrieval": res.get("retrieval")}
    else:
        args = {"query": q, "k": p["k"], **({"dense": True} if p.get("dense") else {})}
        if p.get("disable"):  # a ranking ablation: the command's own field
            args["disable"] = p["disable"]
        res = run_command("pycsamt.query", ws, args)
        item = {"hits": res["results"], "retrieval": res.get("retrieval")}
        if res.get("dense_error"):
            item["dense_error"] = res["dense_error"]
    out["results"].append({"query": q, "seconds": time.perf_counter() - t, **item})
json.dump(out, open(p["out"], "w", encoding="utf-8"))
"""


# -- matching and metrics -------------------------------------------------------


def symbol_matches(got: str | None, expected: str) -> bool:
    """True when result symbol ``got`` answers the expected dotted name."""
    if not got:
        return False
    if got == expected or got.endswith("." + expected):
        return True
    g_mod, _, g_leaf = got.rpartition(".")
    e_mod, _, e_leaf = expected.rpartition(".")
    if not e_mod or g_leaf != e_leaf or not (g_mod + ".").startswith(e_mod + "."):
        return False
    # a re-export: what lies between must be modules (lower case), not a class
    middle = g_mod[len(e_mod) :].strip(".").split(".")
    return all(p[:1].islower() or p[:1] == "_" for p in middle)


def first_rank(hits: list[dict[str, Any]], expected: Iterable[str]) -> int | None:
    """1-based rank of the first hit matching any of ``expected`` in the top K."""
    exp = list(expected)
    for i, h in enumerate(hits[:K], 1):
        if any(symbol_matches(h.get("symbol"), e) for e in exp):
            return i
    return None


def score_record(rec: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-record figures (None where the record has no such expectation)."""
    out: dict[str, Any] = {"query": rec["query"], "suite": rec.get("_suite")}
    syms = rec.get("expected_symbols") or []
    top = hits[:K]
    if syms:
        r = first_rank(top, syms)
        r1 = first_rank(top, syms[:1])
        found = sum(
            1 for e in syms if any(symbol_matches(h.get("symbol"), e) for h in top)
        )
        out.update(
            rank=r,
            rr=1.0 / r if r else 0.0,
            rr1=1.0 / r1 if r1 else 0.0,
            hit=r is not None,
            recall=found / len(syms),
        )
    wf = rec.get("expected_retrieval_workflow") or rec.get("expected_workflow")
    if wf:
        out["wf_in_top"] = wf in {h.get("workflow") for h in top}
    out["top1_no_symbol"] = bool(top) and not top[0].get("symbol")
    out["top"] = [h.get("symbol") or h.get("title") or h.get("label") for h in top[:3]]
    return out


def top_dump(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The top K as ``symbol`` / ``kind`` / ``path`` rows (``--dump-top``):
    what a per-record diagnosis reads, the same fields for both engines
    (ours: ``path``; the reference: ``source_path``)."""
    return [
        {
            "symbol": h.get("symbol"),
            "kind": h.get("kind"),
            "path": h.get("path") or h.get("source_path"),
            "title": None if h.get("symbol") else h.get("title") or h.get("label"),
        }
        for h in hits[:K]
    ]


def aggregate(scored: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over the records that carry each expectation."""

    def mean(key: str) -> float | None:
        vals = [float(s[key]) for s in scored if key in s]
        return sum(vals) / len(vals) if vals else None

    return {
        "n": len(scored),
        "n_symbols": sum(1 for s in scored if "rr" in s),
        "n_workflow": sum(1 for s in scored if "wf_in_top" in s),
        "mrr@10": mean("rr"),
        "mrr1@10": mean("rr1"),
        "hit@10": mean("hit"),
        "recall@10": mean("recall"),
        "wf@10": mean("wf_in_top"),
        "top1_no_symbol": mean("top1_no_symbol"),
    }


def by_suite(scored: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    suites: dict[str, list[dict[str, Any]]] = {}
    for s in scored:
        suites.setdefault(s["suite"] or "?", []).append(s)
    out = {name: aggregate(v) for name, v in sorted(suites.items())}
    out["ALL"] = aggregate(scored)
    return out


# -- routing --------------------------------------------------------------------

ROUTE_FIELDS = (
    ("intent", "expected_intent"),
    ("workflow", "expected_workflow"),
    ("line", "expected_line"),
)


def routing_accuracy(records: list[dict[str, Any]], decide: Decider) -> dict[str, Any]:
    """Intent / workflow / line accuracy of ``decide`` (request -> decision).

    A decision is a mapping with ``intent``, ``workflow`` and ``line`` (missing
    keys count as None). As in the reference's harness, each accuracy is over
    the records whose expected value is not null; ``None`` when there is none.
    ``decide`` returning None for a record counts as all-None.
    """
    pairs: dict[str, list[tuple[Any, Any]]] = {f: [] for f, _ in ROUTE_FIELDS}
    misses: list[dict[str, Any]] = []
    for rec in records:
        d = decide(rec["query"]) or {}
        wrong = {}
        for f, ef in ROUTE_FIELDS:
            if rec.get(ef) is not None:
                pairs[f].append((d.get(f), rec[ef]))
                if d.get(f) != rec[ef]:
                    wrong[f] = {"got": d.get(f), "expected": rec[ef]}
        if wrong:
            misses.append({"query": rec["query"], **wrong})
    out: dict[str, Any] = {}
    for f, _ in ROUTE_FIELDS:
        p = pairs[f]
        out[f"{f}_accuracy"] = sum(g == e for g, e in p) / len(p) if p else None
        out[f"n_{f}"] = len(p)
    out["misses"] = misses
    return out


def routing_by_suite(
    records: list[dict[str, Any]], decide: Decider
) -> dict[str, dict[str, Any]]:
    """:func:`routing_accuracy` per suite (``_suite``) and over all records."""
    suites: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        suites.setdefault(r.get("_suite") or "?", []).append(r)
    out = {
        name: routing_accuracy(recs, decide) for name, recs in sorted(suites.items())
    }
    out["ALL"] = routing_accuracy(records, decide)
    return out


def ref_decider(root: Path, records: list[dict[str, Any]]) -> tuple[Decider, dict]:
    """The reference's decisions for ``records`` (one process) as a Decider."""
    res = ref_route(root, records, k=K)
    table = {d["query"]: d for d in res["decisions"]}
    return table.get, res


def ours_decider(root: Path, records: list[dict[str, Any]]) -> Decider | None:
    """Our routing decisions, read from the ``pycsamt.ask`` command's result.

    Hook for issue 15: runs the handler ``pycsamt-lsp ask --json`` calls (no API
    key in the environment, so offline) for every record in one process and
    reads a ``route`` object (``{"intent", "workflow", "line", ...}``) from each
    result. Returns None while no result carries one.
    """
    out = _our_driver(root, [r["query"] for r in records], mode="ask")
    table = {
        r["query"]: r["route"]
        for r in out["results"]
        if isinstance(r.get("route"), dict)
    }
    return table.get if table else None


# -- running both engines ---------------------------------------------------------


def _our_driver(
    root: Path,
    queries: list[str],
    *,
    mode: str = "query",
    dense: bool = False,
    dense_disable: list[str] | None = None,
    disable: list[str] | None = None,
) -> dict[str, Any]:
    """Run :data:`OUR_DRIVER` in a child of this interpreter; its JSON result.

    *dense_disable*: fused with ``dense_query(disable=...)`` (fusion and
    ranking stage names, ``+name`` on) instead of the ``pycsamt.query``
    command, which has no fusion-stage field. *disable*: BM25 ranking
    stages off (``+name`` on), passed as the ``pycsamt.query`` command's
    own ``disable`` field, so the pass is the default's call with one
    argument more.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        payload = {
            "root": str(root),
            "queries": queries,
            "k": K,
            "out": str(out),
            "mode": mode,
            "dense": dense,
            "dense_disable": dense_disable or [],
            "disable": disable or [],
        }
        res = run_measured(
            [sys.executable, "-c", OUR_DRIVER],
            stdin_text=json.dumps(payload),
            cwd=tmp,
            env=offline_env(),
        )
        if res["returncode"] != 0 or not out.exists():
            raise RuntimeError(f"our driver failed:\n{res['stderr'][-1500:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def our_batch(
    root: Path, queries: list[str], via_cli: bool, *, dense: bool = False
) -> dict[str, Any]:
    """Our ranked hits for every query (one process, or one CLI call each);
    *dense*: ``pycsamt.query`` with ``dense: true`` (RRF with the vectors)."""
    if not via_cli:
        try:
            return _our_driver(root, queries, dense=dense)
        except RuntimeError as exc:
            print(f"{exc}\nfalling back to one CLI process per question")
    results = []
    for q in queries:
        t = time.perf_counter()
        dense_flag = ["--dense"] if dense else []
        proc = subprocess.run(
            [
                *our_cli(),
                "query",
                "--root",
                str(root),
                "--json",
                "-k",
                str(K),
                *dense_flag,
                q,
            ],
            capture_output=True,
            text=True,
            env=offline_env(),
            cwd=tempfile.gettempdir(),
        )
        hits = json.loads(proc.stdout)["results"] if proc.returncode == 0 else []
        results.append({"query": q, "seconds": time.perf_counter() - t, "hits": hits})
    return {"load_s": None, "results": results}


def our_embed(root: Path, backend: str) -> dict[str, Any]:
    """``pycsamt-lsp build --embed BACKEND`` on the built copy; its cost.

    The build part reloads the index it just wrote (same fingerprint), so
    the process's time is mostly embedding; the report's own
    ``embed_seconds`` / ``embed_cpu_seconds`` are the embedding alone.
    """
    res = run_measured(
        [*our_cli(), "build", "--root", str(root), "--json", "--embed", backend],
        cwd=tempfile.gettempdir(),
        env=offline_env(),
    )
    if res["returncode"] != 0:
        raise RuntimeError(f"build --embed {backend} failed:\n{res['stderr'][-2000:]}")
    emb = json.loads(res["stdout"]).get("embeddings") or {}
    return {
        "backend": backend,
        "model": emb.get("model"),
        "recipe": emb.get("recipe"),
        "n_vectors": emb.get("n_vectors"),
        "texts_embedded": emb.get("embedded"),
        "reused": emb.get("reused"),
        "embed_s": emb.get("embed_seconds"),
        "embed_cpu_s": emb.get("embed_cpu_seconds"),
        "texts_per_s": emb.get("texts_per_s"),
        "npz_mb": (emb.get("file_bytes") or 0) / 2**20,
        "vectors_mb": (emb.get("vectors_bytes") or 0) / 2**20,
        "process_wall_s": res["wall_s"],
        "process_cpu_s": res["cpu_s"],
        "process_maxrss_mb": res["maxrss_mb"],
    }


def question_files(
    src: Path, extra: list[Path] | None, *, with_bundled: bool = False
) -> list[Path]:
    """The given files, else the corpus's bundled suites and ours (not routing_*).

    *with_bundled*: the given files and the corpus's bundled suites (each
    corpus its own), so a run on chosen files still reports them."""
    if extra:
        bundled = sorted((src / BUNDLED).glob("*.jsonl")) if with_bundled else []
        return bundled + list(extra)
    ours = sorted(PROJECT_SUITES.rglob("*.jsonl"))
    return sorted((src / BUNDLED).glob("*.jsonl")) + [
        p for p in ours if not p.name.startswith("routing_")
    ]


def suite_name(path: Path) -> str:
    """``test/frozen_test`` for our suites, ``bundled/phase`` for the corpus's."""
    if PROJECT_SUITES in path.resolve().parents:
        return path.resolve().relative_to(PROJECT_SUITES).with_suffix("").as_posix()
    return (
        f"{path.parent.name if path.parent.name != 'suites' else 'bundled'}/{path.stem}"
    )


def load_records(files: list[Path], *, checkout: bool = False) -> list[dict[str, Any]]:
    """Records with a ``query``, tagged with their suite.

    On a checkout corpus, records marked ``"in_checkout": false`` (their
    symbols exist only in the sdist) are left out, for both engines alike.
    """
    recs = []
    for f in files:
        for r in load_jsonl(f):
            if "query" not in r or (checkout and r.get("in_checkout") is False):
                continue
            recs.append({**r, "_suite": suite_name(f)})
    return recs


def bench_corpus(
    name: str, src: Path, tmp: Path, a: argparse.Namespace
) -> dict[str, Any]:
    checkout = not (src / "PKG-INFO").exists()
    records = load_records(
        question_files(src, a.questions, with_bundled=a.with_bundled),
        checkout=checkout,
    )
    queries = list(dict.fromkeys(r["query"] for r in records))
    ours_copy = copy_corpus(src, tmp / f"{name}-ours")
    ref_copy = copy_corpus(src, tmp / f"{name}-ref")
    res0 = {"checkout_filter": checkout}
    print(f"[{name}] building both indexes ...", flush=True)
    ob, rb = our_build(ours_copy), ref_build(ref_copy)
    for who, b in (("ours", ob), ("reference", rb)):
        if b["returncode"] != 0:
            raise RuntimeError(f"{who} build failed on {name}:\n{b['stderr'][-2000:]}")
    print(f"[{name}] ranking {len(queries)} questions with both ...", flush=True)
    ours = our_batch(ours_copy, queries, a.via_cli)
    ref = ref_batch_query(ref_copy, queries, k=K)
    o_hits = {r["query"]: r["hits"] for r in ours["results"]}
    r_hits = {r["query"]: r["hits"] for r in ref["results"]}
    o_scored = [score_record(r, o_hits[r["query"]]) for r in records]
    r_scored = [score_record(r, r_hits[r["query"]]) for r in records]
    res: dict[str, Any] = {
        "source": str(src),
        **res0,
        "n_records": len(records),
        "ours": by_suite(o_scored),
        "ref": by_suite(r_scored),
        "ours_via_cli": a.via_cli,
        "query_ms_p50": {
            "ours": 1000 * statistics.median(r["seconds"] for r in ours["results"]),
            "ref": 1000 * statistics.median(r["seconds"] for r in ref["results"]),
        },
        "records": [
            {"query": o["query"], "suite": o["suite"], "ours": o, "ref": r}
            | (
                {
                    "ours_top": top_dump(o_hits[o["query"]]),
                    "ref_top": top_dump(r_hits[o["query"]]),
                }
                if a.dump_top
                else {}
            )
            for o, r in zip(o_scored, r_scored, strict=True)
        ],
    }
    if a.disable:
        res.update(
            disable_passes(
                ours_copy, records, queries, o_hits, a.disable, dump_top=a.dump_top
            )
        )
    if a.dense:
        seed = (a.vectors_from or {}).get(name)
        if seed is not None:  # reuse vectors of unchanged texts (same model/recipe)
            idx = ours_copy / ".pycsamt_rag"
            idx.mkdir(exist_ok=True)
            shutil.copy2(Path(seed) / "embeddings.npz", idx / "embeddings.npz")
        print(f"[{name}] embedding ours with {a.dense} ...", flush=True)
        res["embed"] = our_embed(ours_copy, a.dense)
        res["embed"]["seeded_from"] = str(seed) if seed is not None else None
        fused = our_batch(ours_copy, queries, a.via_cli, dense=True)
        paths = {r.get("retrieval") for r in fused["results"]}
        if paths != {"dense+bm25"} and not a.via_cli:
            errs = {r.get("dense_error") for r in fused["results"]} - {None}
            raise RuntimeError(f"dense did not run on {name}: {paths} {errs}")
        d_hits = {r["query"]: r["hits"] for r in fused["results"]}
        d_scored = [score_record(r, d_hits[r["query"]]) for r in records]
        res["ours_dense"] = by_suite(d_scored)
        res["query_ms_p50"]["ours_dense"] = 1000 * statistics.median(
            r["seconds"] for r in fused["results"]
        )
        for rec, d in zip(res["records"], d_scored, strict=True):
            rec["ours_dense"] = d
        res["dense_ci"] = dense_ci(o_scored, d_scored)
        # fusion ablations: the same vectors, other fusion stages (one pass each)
        res["dense_variants"] = {}
        for spec in a.dense_disable or []:
            names = [x for x in spec.split(",") if x]
            alt = _our_driver(ours_copy, queries, dense=True, dense_disable=names)
            a_hits = {r["query"]: r["hits"] for r in alt["results"]}
            a_scored = [score_record(r, a_hits[r["query"]]) for r in records]
            res["dense_variants"][spec] = {
                "disable": names,
                "by_suite": by_suite(a_scored),
                "ci": dense_ci(o_scored, a_scored),
                "records": [
                    {
                        "query": x["query"],
                        "suite": x["suite"],
                        "rr": x.get("rr"),
                        "hit": x.get("hit"),
                        "wf": x.get("wf_in_top"),
                    }
                    for x in a_scored
                ],
            }
    if a.routing:
        routing = load_records(a.routing)
        decide, raw = ref_decider(ref_copy, routing)
        res["routing"] = {
            "n_records": len(routing),
            "ref": routing_by_suite(routing, decide),
            "ref_own_metrics": raw["metrics"],
            "ref_registry": raw.get("registry"),
        }
        # our scoring of the reference's decisions must equal its own harness's
        own, mine_all = raw["metrics"], res["routing"]["ref"]["ALL"]
        res["routing"]["ref_agrees_with_own_harness"] = all(
            own.get(f"{f}_accuracy") == mine_all[f"{f}_accuracy"]
            for f, _ in ROUTE_FIELDS
            if mine_all[f"{f}_accuracy"] is not None
        )
        mine = ours_decider(ours_copy, routing) if routing else None
        res["routing"]["ours"] = routing_by_suite(routing, mine) if mine else None
    return res


# -- ranking-stage passes (--disable) ----------------------------------------------

#: what a ``--disable`` pass reports, as (name, per-record key); nDCG@10 is
#: dense_eval's (binary gains, the same symbol matching as MRR@10)
VARIANT_METRICS = (
    ("mrr@10", "rr"),
    ("hit@10", "hit"),
    ("ndcg@10", "ndcg"),
    ("wf@10", "wf_in_top"),
)
POOLED = "test/POOLED"


def split_spec(spec: str) -> list[str]:
    """``"a,+b,"`` -> ``["a", "+b"]`` (empty names dropped)."""
    return [x.strip() for x in spec.split(",") if x.strip()]


def variant_scores(
    records: list[dict[str, Any]], hits: Mapping[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """:func:`score_record` per record plus ``ndcg`` (records with symbols),
    ``hit`` as a float, so every metric of :data:`VARIANT_METRICS` is a mean."""
    from dense_eval import ndcg_at_10  # it imports this module

    out = []
    for rec in records:
        h = hits[rec["query"]]
        s = score_record(rec, h)
        if "rr" in s:
            s["ndcg"] = ndcg_at_10(h, rec["expected_symbols"])
            s["hit"] = float(s["hit"])
        out.append(s)
    return out


def _groups(scored: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Record positions per suite, ``ALL`` and ``test/POOLED`` (every frozen
    split together: the sample of the frozen plan's rule 1)."""
    out: dict[str, list[int]] = {}
    for i, s in enumerate(scored):
        suite = s["suite"] or "?"
        out.setdefault(suite, []).append(i)
        if suite.startswith("test/"):
            out.setdefault(POOLED, []).append(i)
    out = dict(sorted(out.items()))
    out["ALL"] = list(range(len(scored)))
    return out


def variant_summary(scored: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per group of :func:`_groups`: n, n_symbols, n_workflow and the mean of
    every :data:`VARIANT_METRICS` over the records that carry it."""
    out = {}
    for name, idx in _groups(scored).items():
        rows = [scored[i] for i in idx]
        agg: dict[str, Any] = {
            "n": len(rows),
            "n_symbols": sum(1 for r in rows if "rr" in r),
            "n_workflow": sum(1 for r in rows if "wf_in_top" in r),
        }
        for m, key in VARIANT_METRICS:
            vals = [float(r[key]) for r in rows if key in r]
            agg[m] = sum(vals) / len(vals) if vals else None
        out[name] = agg
    return out


def variant_ci(
    base: list[dict[str, Any]], alt: list[dict[str, Any]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per group of :func:`_groups` and metric: ``alt - base`` per question,
    its mean and paired bootstrap 95% CI (:func:`paired_ci`, 2,000
    resamples, seed 0); metrics no record of the group carries are left out."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, idx in _groups(base).items():
        cis = {}
        for m, key in VARIANT_METRICS:
            diffs = [
                float(alt[i][key]) - float(base[i][key])
                for i in idx
                if key in base[i] and key in alt[i]
            ]
            if diffs:
                cis[m] = paired_ci(diffs)
        if cis:
            out[name] = cis
    return out


def disable_passes(
    root: Path,
    records: list[dict[str, Any]],
    queries: list[str],
    default_hits: Mapping[str, list[dict[str, Any]]],
    specs: list[str],
    *,
    dump_top: bool = False,
) -> dict[str, Any]:
    """One ranking of every question per ``--disable`` spec, each against the
    default (*default_hits*, ours as ranked above), on the built copy *root*.

    Each pass is the default's engine call, ``pycsamt.query`` in one process
    (:data:`OUR_DRIVER`), with the command's ``disable`` field set: the named
    BM25 ranking stages off, ``+name`` ones on. Returns ``disable_default``
    (the default's figures with nDCG@10) and ``disable_variants`` (per spec:
    figures, paired CIs against the default, per-record figures with the
    first expected symbol's ``rank``, p50); *dump_top*: each record's top K
    too (:func:`top_dump`).
    """
    base = variant_scores(records, default_hits)
    variants: dict[str, Any] = {}
    for spec in specs:
        names = split_spec(spec)
        print(f"  ranking with disable={spec} ...", flush=True)
        out = _our_driver(root, queries, disable=names)
        hits = {r["query"]: r["hits"] for r in out["results"]}
        alt = variant_scores(records, hits)
        variants[spec] = {
            "disable": names,
            "by_suite": variant_summary(alt),
            "ci": variant_ci(base, alt),
            "query_ms_p50": 1000
            * statistics.median(r["seconds"] for r in out["results"]),
            "records": [
                {"query": x["query"], "suite": x["suite"], "rank": x.get("rank")}
                | {key: x.get(key) for _, key in VARIANT_METRICS}
                | ({"top": top_dump(hits[x["query"]])} if dump_top else {})
                for x in alt
            ],
        }
    return {
        "disable_default": {
            "by_suite": variant_summary(base),
            "records": [
                {"query": x["query"], "suite": x["suite"], "rank": x.get("rank")}
                | {key: x.get(key) for _, key in VARIANT_METRICS}
                for x in base
            ],
        },
        "disable_variants": variants,
    }


def disable_table(results: dict[str, Any]) -> str:
    """Per corpus, pass and suite: the default's and the pass's means, and
    pass - default with its paired bootstrap 95% CI (better / worse counts)."""
    head = (
        f"{'corpus':<14}{'disable':<32}{'suite':<22}{'n':>5}  {'metric':<9}"
        f"{'default':>8}{'pass':>8}{'diff':>8}  {'95% CI':<18}{'b/w':>8}"
    )
    rows = [head, "-" * len(head)]
    for cname, res in results["corpora"].items():
        base = res.get("disable_default", {}).get("by_suite", {})
        for spec, var in res.get("disable_variants", {}).items():
            label = spec
            for suite, cis in var["ci"].items():
                b, v = base.get(suite, {}), var["by_suite"].get(suite, {})
                slabel = suite
                for m, _ in VARIANT_METRICS:
                    c = cis.get(m)
                    if c is None:
                        continue
                    rows.append(
                        f"{cname:<14}{label:<32}{slabel:<22}{c['n']:>5}  {m:<9}"
                        f"{_f(b.get(m)):>8}{_f(v.get(m)):>8}{c['mean']:>+8.3f}  "
                        f"{'[' + format(c['lo'], '+.3f') + ', ' + format(c['hi'], '+.3f') + ']':<18}"
                        f"{str(c['better']) + '/' + str(c['worse']):>8}"
                    )
                    cname = label = slabel = ""
            rows.append(
                f"{'':<14}{'':<32}query p50 ms {var['query_ms_p50']:.2f} "
                "(in process, after the default's pass: not a latency "
                "comparison, bench_query is)"
            )
    return "\n".join(rows)


def paired_ci(
    diffs: list[float], *, n_boot: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """Mean of the per-question differences and its 95% paired bootstrap CI.

    Why paired: both rankings answer the same questions, so resampling the
    questions (with replacement) and averaging each one's difference keeps
    what is common to both out of the interval; a gain is "measurable"
    when the interval excludes 0. Deterministic (fixed seed).
    """
    n = len(diffs)
    if not n:
        return {"n": 0, "mean": None, "lo": None, "hi": None}
    rng = random.Random(seed)
    boots = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(n_boot))
    return {
        "n": n,
        "mean": sum(diffs) / n,
        "lo": boots[int(0.025 * n_boot)],
        "hi": boots[int(0.975 * n_boot) - 1],
        "better": sum(d > 1e-9 for d in diffs),
        "worse": sum(d < -1e-9 for d in diffs),
    }


def dense_ci(
    bm25: list[dict[str, Any]], fused: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per suite, ALL and ``test/POOLED`` (every frozen split's questions
    together, the issue-14 decision's sample): fused - BM25 reciprocal rank
    and hit@10, paired."""
    suites: dict[str, list[tuple[dict, dict]]] = {}
    for b, f in zip(bm25, fused, strict=True):
        if "rr" not in b:
            continue
        suites.setdefault(b["suite"] or "?", []).append((b, f))
        suites.setdefault("ALL", []).append((b, f))
        if str(b["suite"] or "").startswith("test/"):
            suites.setdefault("test/POOLED", []).append((b, f))
    return {
        name: {
            "mrr@10": paired_ci([f["rr"] - b["rr"] for b, f in pairs]),
            "hit@10": paired_ci([float(f["hit"]) - float(b["hit"]) for b, f in pairs]),
        }
        for name, pairs in suites.items()
    }


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def table(results: dict[str, Any]) -> str:
    """Side by side per corpus and suite; n = records with symbols / workflow."""
    head = f"{'corpus':<14}{'suite':<22}{'n':>8}  {'metric':<15}{'ours':>8}{'ref':>8}{'ours/ref':>10}{'ours-ref':>10}"
    rows = [head, "-" * len(head)]
    metrics = ("mrr@10", "mrr1@10", "hit@10", "recall@10", "wf@10", "top1_no_symbol")
    for cname, res in results["corpora"].items():
        for suite in res["ours"]:
            o, r = res["ours"][suite], res["ref"][suite]
            label, n = suite, f"{o['n_symbols']}/{o['n_workflow']}"
            for m in metrics:
                if o[m] is None and r[m] is None:
                    continue
                q = o[m] / r[m] if o[m] is not None and r[m] else None
                d = o[m] - r[m] if o[m] is not None and r[m] is not None else None
                rows.append(
                    f"{cname:<14}{label:<22}{n:>8}  {m:<15}{_f(o[m]):>8}{_f(r[m]):>8}{_f(q):>10}{_f(d):>10}"
                )
                cname = label = n = ""
        p = res["query_ms_p50"]
        rows.append(
            f"{'':<14}{'':<22}{'':>8}  {'query p50 ms':<15}{p['ours']:>8.2f}{p['ref']:>8.2f}"
            + (
                "    (ours: a whole CLI process per question)"
                if res.get("ours_via_cli")
                else "    (in process; ours includes labels and snippets)"
            )
        )
        rt = res.get("routing")
        if rt:
            for suite, ref_acc in rt["ref"].items():
                ours_acc = (rt["ours"] or {}).get(suite)
                label = f"routing {suite}"
                for f, _ in ROUTE_FIELDS:
                    ours = ours_acc[f"{f}_accuracy"] if ours_acc else None
                    ref = ref_acc[f"{f}_accuracy"]
                    n = str(ref_acc["n_" + f])
                    rows.append(
                        f"{'':<14}{label:<22}{n:>8}  {f + ' acc':<15}{_f(ours):>8}{_f(ref):>8}"
                    )
                    label = ""
            if not rt.get("ref_agrees_with_own_harness", True):
                rows.append(
                    f"{'':<46}WARNING: differs from the reference harness's own metrics"
                )
            if not rt["ours"]:
                rows.append(
                    f"{'':<46}ours: no `route` object in `pycsamt.ask` results yet"
                )
            if not rt.get("ref_registry"):
                rows.append(
                    f"{'':<46}ref: no projects/*.yml registry in this corpus (line = None)"
                )
    return "\n".join(rows)


def dense_table(results: dict[str, Any]) -> str:
    """The dense lane: ours BM25, ours fused (RRF k=60) and the reference, and
    the embedding cost, per corpus and suite."""
    head = (
        f"{'corpus':<14}{'suite':<22}{'n':>6}  {'metric':<10}{'bm25':>8}{'fused':>8}"
        f"{'ref':>8}{'fused-bm25':>12}{'fused/ref':>11}"
    )
    rows = [head, "-" * len(head)]
    for cname, res in results["corpora"].items():
        if "ours_dense" not in res:
            continue
        for suite in res["ours"]:
            o, d, r = res["ours"][suite], res["ours_dense"][suite], res["ref"][suite]
            label, n = suite, str(o["n_symbols"])
            for m in ("mrr@10", "hit@10", "recall@10", "wf@10"):
                if o[m] is None:
                    continue
                diff = d[m] - o[m] if d[m] is not None else None
                q = d[m] / r[m] if d[m] is not None and r[m] else None
                rows.append(
                    f"{cname:<14}{label:<22}{n:>6}  {m:<10}{_f(o[m]):>8}{_f(d[m]):>8}"
                    f"{_f(r[m]):>8}{_f(diff):>12}{_f(q):>11}"
                )
                cname = label = n = ""
        for suite, ci in res.get("dense_ci", {}).items():
            parts = []
            for m in ("mrr@10", "hit@10"):
                c = ci[m]
                parts.append(
                    f"{m} {c['mean']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]"
                    f" ({c['better']} better, {c['worse']} worse)"
                )
            rows.append(
                f"{'':<14}fused-bm25 {suite} (n={ci['mrr@10']['n']}, paired "
                f"bootstrap 95%): " + "; ".join(parts)
            )
        for spec, var in res.get("dense_variants", {}).items():
            rows.append(f"{'':<14}fusion with disable={spec}:")
            for suite, ci in var["ci"].items():
                # test/POOLED has a paired CI but no aggregate of its own
                agg = var["by_suite"].get(suite) or {}
                c, h = ci["mrr@10"], ci["hit@10"]
                rows.append(
                    f"{'':<16}{suite} mrr@10 {_f(agg.get('mrr@10'))} hit@10 "
                    f"{_f(agg.get('hit@10'))} wf@10 {_f(agg.get('wf@10'))}; "
                    f"fused-bm25 mrr@10 {c['mean']:+.3f}"
                    f" [{c['lo']:+.3f}, {c['hi']:+.3f}] ({c['better']}/{c['worse']}),"
                    f" hit@10 {h['mean']:+.3f} [{h['lo']:+.3f}, {h['hi']:+.3f}]"
                )
        e = res["embed"]
        p = res["query_ms_p50"]
        rows.append(
            f"{'':<14}embed {e['model']} ({e['recipe']}): {e['texts_embedded']} texts "
            f"for {e['n_vectors']} chunks in {e['embed_s']:.1f} s wall / "
            f"{e['embed_cpu_s']:.1f} s CPU ({e['texts_per_s'] or 0:.1f} texts/s); "
            f"embeddings.npz {e['npz_mb']:.1f} MB, vectors {e['vectors_mb']:.1f} MB "
            f"in memory, build --embed peak RSS {e['process_maxrss_mb']:.0f} MB"
            + (
                f" ({e['reused']} vectors reused from {e['seeded_from']})"
                if e.get("seeded_from")
                else ""
            )
        )
        rows.append(
            f"{'':<14}query p50 ms: bm25 {p['ours']:.2f}, fused "
            f"{p['ours_dense']:.2f} (includes embedding the query), ref {p['ref']:.2f}"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--questions", type=Path, action="append", help="JSONL file (repeatable)"
    )
    ap.add_argument(
        "--routing",
        type=Path,
        action="append",
        help="JSONL with expected_intent/workflow/line (repeatable)",
    )
    ap.add_argument(
        "--corpus",
        action="append",
        metavar="NAME=PATH",
        help="repeatable; default sdist and checkout-docs",
    )
    ap.add_argument(
        "--via-cli",
        action="store_true",
        help="ours: one `pycsamt-lsp query --json` process per question",
    )
    ap.add_argument(
        "--dense",
        nargs="?",
        const="minilm",
        metavar="BACKEND",
        help="also embed ours (build --embed BACKEND, default minilm) and rank "
        "with RRF fusion: ours BM25, ours fused and the reference side by side",
    )
    ap.add_argument(
        "--vectors-from",
        action="append",
        metavar="NAME=INDEX_DIR",
        help="with --dense: seed corpus NAME's copy with INDEX_DIR/embeddings.npz, "
        "so only texts not embedded there go to the model (the report says how "
        "many were reused); repeatable",
    )
    ap.add_argument(
        "--dense-disable",
        action="append",
        metavar="A,B,+C",
        help="with --dense: also fuse with these fusion / ranking stages off "
        "(+name on), e.g. bm25_first,dense_depth,+prf (the session-3 fusion); "
        "repeatable, one pass each, with its paired CI against BM25",
    )
    ap.add_argument(
        "--disable",
        action="append",
        metavar="A,+B",
        help="also rank ours with these BM25 ranking stages off (+name: an "
        "opt-in stage on), e.g. +fold,+name_cover,+head_wide, through the same "
        "pycsamt.query call as the default (in process, also with --via-cli); "
        "repeatable, one pass each, with MRR@10 / hit@10 / nDCG@10 / wf@10 "
        "per suite and paired CIs against the default",
    )
    ap.add_argument(
        "--no-routing",
        action="store_true",
        help="skip the routing pass (the suites/**/routing_*.jsonl default), "
        "e.g. to measure one retrieval split only",
    )
    ap.add_argument(
        "--with-bundled",
        action="store_true",
        help="with --questions: also the corpus's bundled suites (each corpus "
        "its own pycsamt/assistant/evals/suites)",
    )
    ap.add_argument(
        "--dump-top",
        action="store_true",
        help="JSON: each record's top 10 (symbol, kind, path) for ours, the "
        "reference and every --disable pass, for a per-record diagnosis",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    for spec in a.dense_disable or []:  # a misspelt stage: refused now, not hours in
        from pycsamt_lsp.search.dense.fusion import FUSION_OFF_BY_DEFAULT, FUSION_STAGES
        from pycsamt_lsp.search.retrieval import check_disable

        try:
            check_disable(
                [x for x in spec.split(",") if x],
                more=FUSION_STAGES,
                more_off=FUSION_OFF_BY_DEFAULT,
                what="ranking or fusion",
            )
        except ValueError as exc:
            ap.error(f"--dense-disable {spec}: {exc}")
    for spec in a.disable or []:  # a misspelt stage: refused now, not hours in
        from pycsamt_lsp.search.retrieval import check_disable

        try:
            if not split_spec(spec):
                raise ValueError("no stage named")
            check_disable(split_spec(spec))
        except ValueError as exc:
            ap.error(f"--disable {spec}: {exc}")
    a.vectors_from = dict(v.split("=", 1) for v in a.vectors_from or [])
    if a.no_routing:
        a.routing = None
    elif not a.routing:
        a.routing = sorted(PROJECT_SUITES.rglob("routing_*.jsonl")) or None
    corpora = (
        {k: Path(v).expanduser() for k, v in (c.split("=", 1) for c in a.corpus)}
        if a.corpus
        else CORPORA
    )
    ensure_ref_venv()
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "k": K,
        "git": git_state(),
        "reference": f"pycsamt {REF_VERSION} (build_retriever(root).search)",
        "questions": [str(p) for p in a.questions]
        if a.questions
        else "bundled suites + suites/",
        "corpora": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-quality-") as tmp:
        for name, src in corpora.items():
            results["corpora"][name] = bench_corpus(name, src, Path(tmp), a)
    print()
    g = results["git"]
    print(f"commit {g['commit']}, {g['server_dirty_files']} uncommitted server file(s)")
    print(table(results))
    if a.disable:
        print()
        print(disable_table(results))
    if a.dense:
        print()
        print(dense_table(results))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(results, indent=1, default=str))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
