"""The import validator on real PyPI packages, ours against pyright (issue 17).

For each package of ``tests/realpkgs/harness.py`` (scikit-image: lazily
loaded through ``.pyi`` stubs; lxml: Cython modules), the committed fixture
holds import lines labelled by importing them in a venv with the package
installed (real / absent). Both checkers see the same lines, pointed at the
same files: the unpacked sdist (a ``src/`` checkout) and an installed copy of
the wheel (``.so`` + ``.pyi``).

Figures per root: recall on hallucinated lines (share that gets an *error*;
a warning does not count), hallucinated lines left with a warning only or
silent, false errors on real lines, real lines with a warning.

``--server PATH`` measures another tree of the server (e.g. a ``git archive``
of an older commit's ``server/``) for before/after tables. Prints a table and
writes JSON (``benchmarks/results/bench_packages.json``). Nothing is asserted
(the pass/fail thresholds are in ``tests/test_real_packages.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from realpkgs import harness  # noqa: E402

DEFAULT_OUT = Path(__file__).with_name("results") / "bench_packages.json"


def _fmt(s: dict[str, Any] | None) -> list[str]:
    if not s:
        return ["-"] * 6
    if "failed" in s:
        return ["failed: " + str(s["failed"])[:60], "", "", "", "", ""]
    return [
        f"{s['recall']:.3f}" if s["recall"] is not None else "-",
        f"{s['caught']}/{s['hallucinated']}",
        f"{s['missed_warned']}/{s['missed_silent']}",
        f"{s['false_errors']}/{s['real']}",
        str(s["real_warned"]),
        "",
    ]


def table(results: list[dict[str, Any]]) -> str:
    head = [
        "package",
        "root",
        "checker",
        "recall",
        "caught",
        "missed warn/silent",
        "false errors",
        "real warned",
    ]
    rows = [head]
    for res in results:
        for root, row in res["roots"].items():
            for checker in ("ours", "pyright"):
                if checker in row:
                    rows.append(
                        [
                            f"{res['package']} {res['version']}",
                            root,
                            checker,
                            *_fmt(row[checker])[:5],
                        ]
                    )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "packages", nargs="*", default=sorted(harness.PACKAGES), help="default: all"
    )
    ap.add_argument("--server", help="PYTHONPATH of the server tree to measure")
    ap.add_argument("--no-pyright", action="store_true")
    ap.add_argument("--root", action="append", help="only these root variants")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--examples", action="store_true", help="print missed/false lines")
    args = ap.parse_args(argv)
    results = []
    for name in args.packages:
        spec = harness.PACKAGES[name]
        results.append(
            harness.measure(
                spec,
                server_path=args.server,
                with_pyright=not args.no_pyright,
                variants=args.root,
            )
        )
    print(table(results))
    if args.examples:
        for res in results:
            for root, row in res["roots"].items():
                for checker in ("ours", "pyright"):
                    s = row.get(checker) or {}
                    for key in ("missed_examples", "false_examples"):
                        for line in s.get(key, []):
                            print(f"{res['package']} {root} {checker} {key}: {line}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"server": args.server or "installed", "results": results}
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
