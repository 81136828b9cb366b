"""Measure the import validator on real PyPI packages (issue 17).

The ground truth is made by *importing*, never by reading: candidate import
lines are labelled by executing each of them in a venv that has the package
installed (``python -c``-style, one process, ``try``/``except`` per line).
Our validator (the ``pycsamt-lsp validate`` CLI) and pyright then check the
same lines, and we count

* recall on hallucinated lines: the share that gets an *error*;
* false errors on real lines: real imports that get an error.

Three steps, each cached under ``$PYCSAMT_LSP_CACHE/pkgs`` (default
``~/.cache/pycsamt-lsp/pkgs``):

1. ``generate`` (needs the package's venv): walk the installed package,
   import every module, list its public names (real candidates), invent
   plausible hallucinations from them (misspellings, swapped words, names of
   other modules, invented submodules...), label every line by importing it,
   and write ``tests/realpkgs/<package>-<version>.jsonl``. The committed file
   is what the tests read, so CI needs no venv with the package's heavy
   runtime dependencies; re-running ``generate`` reproduces it (the RNG is
   seeded by the package name, the labels come from the pinned version).
2. ``roots``: what the validator is pointed at, without any runtime
   dependency: the sdist (unpacked as published: a ``src/`` checkout for both
   packages here) and an installed copy (the wheel installed with
   ``pip install --no-deps --target``), i.e. ``.so`` modules and ``.pyi``
   stubs instead of ``.pyx`` sources.
3. ``measure``: run the CLI (and optionally pyright) on each root.

Run ``python tests/realpkgs/harness.py generate skimage`` to regenerate one
fixture; ``benchmarks/bench_packages.py`` prints the table.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

# --------------------------------------------------------------------------
# the packages


@dataclass(frozen=True)
class PkgSpec:
    """One real package: import name, distribution, pinned version, shape."""

    package: str
    distribution: str
    version: str
    shape: str
    #: Modules whose import needs an optional dependency the venv lacks are
    #: labelled "broken" by the import run and left out; nothing is listed
    #: by hand here.
    extra_install: tuple[str, ...] = ()
    #: A PEP 561 stub-only distribution (``types-foo==V``, installs
    #: ``foo-stubs/``): measured alone ("stubs") and installed beside the
    #: package ("installed+stubs"), never used for the labels.
    stubs: str = ""
    #: The roots measured (see :func:`roots`).
    variants: tuple[str, ...] = ("sdist", "src", "installed")

    @property
    def fixture(self) -> Path:
        return HERE / f"{self.package}-{self.version}.jsonl"


PACKAGES: dict[str, PkgSpec] = {
    "skimage": PkgSpec(
        package="skimage",
        distribution="scikit-image",
        version="0.26.0",
        shape=(
            "lazy_loader.attach_stub: every subpackage __init__.py defers to its "
            "__init__.pyi; src/ layout sdist with Cython .pyx; wheel with .so"
        ),
    ),
    "lxml": PkgSpec(
        package="lxml",
        distribution="lxml",
        version="6.1.3",
        shape=(
            "compiled: lxml.etree and lxml.objectify are Cython (.pyx + .pxi "
            "includes in the src/ layout sdist, .so in the wheel)"
        ),
    ),
    "requests": PkgSpec(
        package="requests",
        distribution="requests",
        version="2.33.1",
        shape=(
            "PEP 561 stub-only package: types-requests installs requests-stubs/ "
            "(.pyi only), alone and beside the pure-Python wheel; "
            "requests.packages fills its namespace and sys.modules in loops"
        ),
        stubs="types-requests==2.33.0.20261030",
        variants=("installed", "stubs", "installed+stubs"),
    ),
}


def cache_dir() -> Path:
    """``$PYCSAMT_LSP_CACHE/pkgs`` or ``~/.cache/pycsamt-lsp/pkgs``."""
    env = os.environ.get("PYCSAMT_LSP_CACHE")
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "pycsamt-lsp"
    out = base / "pkgs"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


# --------------------------------------------------------------------------
# downloads (PyPI only, through pip or its simple index)


def _simple_files(distribution: str) -> list[dict[str, Any]]:
    """The PyPI simple-index (PEP 691 JSON) file list of a distribution.

    Used for the sdist because ``pip download --no-binary :all:`` prepares
    metadata by *building* the sdist, which needs a compiler for both
    packages here; the simple index is the same API pip reads."""
    url = f"https://pypi.org/simple/{distribution}/"
    req = urllib.request.Request(
        url, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)["files"]


def sdist_root(spec: PkgSpec) -> Path:
    """Unpacked sdist of the pinned version (downloaded once, sha256-checked)."""
    target = cache_dir() / "sdist" / f"{spec.distribution}-{spec.version}"
    mark = target / ".complete"
    if mark.is_file():
        return target / mark.read_text(encoding="utf-8").strip()
    norm = re.sub(r"[-_.]+", "_", spec.distribution).lower()
    files = [
        f
        for f in _simple_files(spec.distribution)
        if f["filename"].lower() in (f"{norm}-{spec.version}.tar.gz",)
        or f["filename"] == f"{spec.distribution}-{spec.version}.tar.gz"
    ]
    if not files:
        raise RuntimeError(f"no sdist of {spec.distribution}=={spec.version} on PyPI")
    info = files[0]
    with urllib.request.urlopen(info["url"], timeout=300) as resp:
        data = resp.read()
    want = info.get("hashes", {}).get("sha256")
    if want and hashlib.sha256(data).hexdigest() != want:
        raise RuntimeError(f"sha256 mismatch for {info['filename']}")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        arc = Path(tmp) / info["filename"]
        arc.write_bytes(data)
        with tarfile.open(arc) as tf:
            tf.extractall(target, filter="data")
    tops = [p.name for p in target.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise RuntimeError(f"unexpected sdist layout: {tops}")
    mark.write_text(tops[0] + "\n", encoding="utf-8")
    return target / tops[0]


def installed_root(
    spec: PkgSpec, *, with_package: bool = True, stubs: str = ""
) -> Path:
    """The wheel installed with ``pip --no-deps --target`` (a site-packages copy).

    No runtime dependency is installed: the validator never imports the
    package, so the copy only has to hold its files. ``stubs``: a stub-only
    distribution installed there too (or alone, ``with_package=False``)."""
    name = f"{spec.package}-{spec.version}-site"
    if stubs:
        name = f"{spec.package}-{spec.version}{'+' if with_package else '-'}stubs-site"
    target = cache_dir() / name
    reqs = [f"{spec.distribution}=={spec.version}"] if with_package else []
    reqs += [stubs] if stubs else []
    mark = target / ".complete"
    if mark.is_file():
        return target
    if target.exists():
        shutil.rmtree(target)
    proc = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--target",
            str(target),
            *reqs,
        ]
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pip could not install the wheel: {proc.stderr[-400:]}")
    mark.write_text(" ".join(reqs) + "\n", encoding="utf-8")
    return target


def roots(spec: PkgSpec) -> dict[str, Path]:
    """Root variants the validator is measured on, by label: the unpacked
    sdist, its ``src/`` folder, the installed wheel; for a stubs spec the
    stub-only package alone and beside the installed wheel."""
    out: dict[str, Path] = {}
    if {"sdist", "src"} & set(spec.variants):
        sd = sdist_root(spec)
        out.update(sdist=sd, src=sd / "src")
    if "installed" in spec.variants:
        out["installed"] = installed_root(spec)
    if "stubs" in spec.variants:
        out["stubs"] = installed_root(spec, with_package=False, stubs=spec.stubs)
    if "installed+stubs" in spec.variants:
        out["installed+stubs"] = installed_root(spec, stubs=spec.stubs)
    return {k: v for k, v in out.items() if k in spec.variants}


def venv_python(spec: PkgSpec) -> Path:
    """A venv with the package and its runtime dependencies (for labelling)."""
    venv = cache_dir() / f"{spec.package}-venv"
    py = venv / "bin" / "python"
    if not py.is_file():
        proc = _run([sys.executable, "-m", "venv", str(venv)])
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr)
    probe = _run(
        [
            str(py),
            "-c",
            f"import importlib.metadata as m; print(m.version({spec.distribution!r}))",
        ]
    )
    if probe.stdout.strip() != spec.version:
        proc = _run(
            [
                str(py),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"{spec.distribution}=={spec.version}",
                *spec.extra_install,
            ]
        )
        if proc.returncode != 0:
            raise RuntimeError(f"venv install failed: {proc.stderr[-400:]}")
    return py


# --------------------------------------------------------------------------
# step 1: candidates and labels (inside the venv)

_DISCOVER = r"""
import contextlib, importlib, importlib.util, io, json, os, sys, warnings
warnings.simplefilter("ignore")
pkg = sys.argv[1]
top = importlib.util.find_spec(pkg).submodule_search_locations[0]
mods = {pkg}
for dirpath, dirs, files in os.walk(top):
    dirs[:] = sorted(d for d in dirs if d.isidentifier() and d not in ("tests", "test", "testing", "__pycache__"))
    rel = os.path.relpath(dirpath, top)
    base = pkg if rel == "." else pkg + "." + rel.replace(os.sep, ".")
    if rel != "." and any(f.endswith((".py", ".pyi")) for f in files):
        mods.add(base)
    for f in files:
        stem = f.split(".")[0]
        if not f.endswith((".py", ".pyi", ".so", ".pyd")) or stem == "__init__":
            continue
        if not stem.isidentifier() or stem.startswith(("test_", "conftest")):
            continue
        mods.add(base + "." + stem)
out = {}
for m in sorted(mods):
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            mod = importlib.import_module(m)
            names = sorted(n for n in dir(mod) if not n.startswith("_"))
        out[m] = {"ok": True, "names": names}
    except BaseException as e:
        out[m] = {"ok": False, "error": (type(e).__name__ + ": " + str(e))[:200]}
# modules the package put in sys.modules under its name without a file
# (vendored aliases such as requests.packages.urllib3): importable too
reg = sorted(k for k in sys.modules if k.startswith(pkg + ".") and k not in mods)
out["__registered__"] = {"ok": False, "registered": reg}
print(json.dumps(out))
"""

_LABEL = r"""
import contextlib, io, json, sys, warnings
warnings.simplefilter("ignore")
lines = json.load(sys.stdin)
out = []
for line in lines:
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            exec(compile(line, "<candidate>", "exec"), {})
        out.append({"ok": True})
    except BaseException as e:
        out.append({"ok": False, "exc": type(e).__name__, "msg": str(e)[:200],
                    "name": getattr(e, "name", None)})
json.dump(out, sys.stdout)
"""


def discover(spec: PkgSpec) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every module file of the installed package, imported, with its public
    names; and the modules importing them registered in ``sys.modules``
    under the package's name without a file of their own."""
    proc = _run([str(venv_python(spec)), "-c", _DISCOVER, spec.package])
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-800:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out, out.pop("__registered__")["registered"]


def label(spec: PkgSpec, lines: list[str]) -> list[dict[str, Any]]:
    """Execute each line in the venv: the ground truth."""
    proc = _run(
        [str(venv_python(spec)), "-c", _LABEL], input=json.dumps(lines), timeout=1800
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-800:])
    return json.loads(proc.stdout)


def _classify(spec: PkgSpec, res: dict[str, Any]) -> str:
    """real / absent / broken (failed for another reason: left out)."""
    if res["ok"]:
        return "real"
    if res["exc"] not in ("ImportError", "ModuleNotFoundError"):
        return "broken"
    if res["msg"].startswith("cannot import name"):
        return "absent"
    name = res.get("name") or ""
    if res["exc"] == "ModuleNotFoundError" and (
        name == spec.package or name.startswith(spec.package + ".")
    ):
        return "absent"
    return "broken"


_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(name)]


def _public(mod: str) -> bool:
    return not any(p.startswith("_") for p in mod.split("."))


def _misspell(rng: random.Random, n: str) -> str:
    i = rng.randrange(1, len(n) - 1)
    op = rng.randrange(4)
    if op == 0:  # drop a letter
        return n[:i] + n[i + 1 :]
    if op == 1:  # transpose two letters
        return n[: i - 1] + n[i] + n[i - 1] + n[i + 1 :]
    if op == 2:  # double a letter
        return n[:i] + n[i] + n[i:]
    vowels = "aeiou"
    j = next((k for k in range(i, len(n)) if n[k] in vowels), None)
    if j is None:
        return n + "e"
    return n[:j] + rng.choice([v for v in vowels if v != n[j]]) + n[j + 1 :]


def _variants(rng: random.Random, n: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    parts = n.split("_")
    words = _words(n)
    if len(parts) >= 2:
        out.append(("swap", "_".join(reversed(parts))))
    elif len(words) >= 2 and n[:1].isupper():
        out.append(("swap", "".join(w.capitalize() for w in reversed(words))))
    if n.islower():
        out.append(("case", "".join(w.capitalize() for w in words)))
    elif n[:1].isupper() and len(words) >= 1:
        out.append(("case", "_".join(words)))
    out.append(("plural", n[:-1] if n.endswith("s") else n + "s"))
    suffix = rng.choice(["_2d", "_fast", "_v2", "_filter", "_image", "_all", "_auto"])
    prefix = rng.choice(["compute_", "auto_", "fast_", "get_", "apply_", "load_"])
    out.append(("affix", n + suffix if n.islower() else n + "Ex"))
    out.append(("affix", prefix + n if n.islower() else "Base" + n))
    return out


def hallucinations(
    spec: PkgSpec, modules: dict[str, dict[str, Any]], per_kind: int = 40
) -> list[tuple[str, str]]:
    """``(kind, line)`` plausible invented imports, deterministic per package."""
    rng = random.Random(f"realpkgs:{spec.package}:{spec.version}")
    ok = {m: set(v["names"]) for m, v in modules.items() if v.get("ok")}
    pub = sorted(m for m in ok if _public(m))
    pairs = sorted(
        (m, n)
        for m in pub
        for n in ok[m]
        if len(n) >= 4 and m + "." + n not in ok and not n.isupper()
    )
    subs = sorted(m for m in pub if m != spec.package)
    out: dict[str, str] = {}

    def add(kind: str, line: str) -> None:
        out.setdefault(line, kind)

    for _ in range(per_kind):
        m, n = rng.choice(pairs)
        add("misspell", f"from {m} import {_misspell(rng, n)}")
    for _ in range(per_kind):
        m, n = rng.choice(pairs)
        for kind, v in _variants(rng, n):
            if v != n and v.isidentifier():
                add(kind, f"from {m} import {v}")
    for _ in range(per_kind):  # a real name of another module
        a, n = rng.choice(pairs)
        b = rng.choice(pub)
        if b != a and n not in ok[b]:
            add("cross", f"from {b} import {n}")
    for _ in range(per_kind):  # invented submodules
        base = rng.choice(subs) if subs else spec.package
        leaf = base.rsplit(".", 1)[-1]
        made = rng.choice(
            [
                leaf + "s",
                leaf + "_utils",
                "core",
                "helpers",
                "advanced",
                leaf + "_tools",
                _misspell(rng, leaf) if len(leaf) >= 4 else leaf + "x",
            ]
        )
        parent = base.rsplit(".", 1)[0] if rng.random() < 0.5 else base
        target = f"{parent}.{made}"
        if target in ok:
            continue
        m, n = rng.choice(pairs)
        shape = rng.randrange(3)
        if shape == 0:
            add("submodule", f"import {target}")
        elif shape == 1:
            add("submodule", f"from {target} import {n}")
        else:
            add("submodule", f"from {parent} import {made}")
    for _ in range(per_kind):  # invented names from the module's own words
        m = rng.choice(pub)
        vocab = sorted({w for n in ok[m] for w in _words(n) if len(w) >= 3})
        if len(vocab) < 2:
            continue
        a, b = rng.sample(vocab, 2)
        add("invented", f"from {m} import {a}_{b}")
    return sorted(((k, line) for line, k in out.items()), key=lambda t: t[1])


def generate(spec: PkgSpec) -> dict[str, Any]:
    """Build and write the labelled fixture; returns its summary."""
    modules, registered = discover(spec)
    real: dict[str, str] = {}
    for m, v in sorted(modules.items()):
        if not v.get("ok"):
            continue
        real[f"import {m}"] = "module"
        for n in v["names"]:
            real[f"from {m} import {n}"] = "name"
    for m in registered:
        real.setdefault(f"import {m}", "registered")
    fake = hallucinations(spec, modules)
    cands = [(k, line, "real") for line, k in real.items()]
    cands += [(k, line, "hallucinated") for k, line in fake if line not in real]
    labels = label(spec, [c[1] for c in cands])
    rows = []
    for (kind, line, origin), res in zip(cands, labels, strict=True):
        truth = _classify(spec, res)
        row = {"line": line, "truth": truth, "origin": origin, "kind": kind}
        if not res["ok"]:
            row["error"] = f"{res['exc']}: {res['msg']}"[:160]
        rows.append(row)
    meta = {
        "meta": True,
        "package": spec.package,
        "distribution": spec.distribution,
        "version": spec.version,
        "python": _run(
            [str(venv_python(spec)), "-c", "import sys; print(sys.version.split()[0])"]
        ).stdout.strip(),
        "modules": len(modules),
        "modules_unimportable": sorted(m for m, v in modules.items() if not v["ok"]),
        "counts": dict(Counter((r["origin"], r["truth"]) for r in rows).most_common()),
    }
    meta["counts"] = {f"{a}/{b}": c for (a, b), c in meta["counts"].items()}
    with spec.fixture.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(meta) + "\n")
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return meta


@dataclass
class Fixture:
    """The labelled lines of one package."""

    meta: dict[str, Any]
    real: list[dict[str, Any]] = field(default_factory=list)
    absent: list[dict[str, Any]] = field(default_factory=list)


def load_fixture(spec: PkgSpec) -> Fixture:
    rows = [
        json.loads(x) for x in spec.fixture.read_text(encoding="utf-8").splitlines()
    ]
    fx = Fixture(meta=rows[0])
    for r in rows[1:]:
        if r["truth"] == "real":
            fx.real.append(r)
        elif r["truth"] == "absent":
            fx.absent.append(r)
    return fx


# --------------------------------------------------------------------------
# step 3: the checkers

_NO_ATTR = re.compile(r"^'([\w.]+)' has no attribute or submodule '(\w+)'")
_NO_MOD = re.compile(r"^No module named '([\w.]+)'")


def _dotted_of(line: str) -> str:
    """``from M import n`` -> ``M.n``; ``import a.b`` -> ``a.b``."""
    m = re.match(r"from ([\w.]+) import (\w+)", line)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    return line.split()[1]


def _summary_dotted(text: str) -> str | None:
    m = _NO_ATTR.match(text)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    m = _NO_MOD.match(text)
    if m:
        return m.group(1)
    m = re.match(r"^Cannot verify '([\w.]+)'", text)
    return m.group(1) if m else None


def _attribute(lines: list[str], summaries: Iterable[str]) -> tuple[list[int], int]:
    """Per line, how many of the summaries are about it; plus unattributed.

    The CLI reports summaries without lines, each naming the dotted path it
    checked (or its first missing prefix). A summary goes to the first line
    not yet given one whose dotted path equals it or extends it, so the
    count per line is exact when every statement yields at most one."""
    dotted = [_dotted_of(x) for x in lines]
    by_prefix: dict[str, list[int]] = {}
    for i, d in enumerate(dotted):
        parts = d.split(".")
        for k in range(1, len(parts) + 1):
            by_prefix.setdefault(".".join(parts[:k]), []).append(i)
    got = [0] * len(lines)
    lost = 0
    for s in summaries:
        d = _summary_dotted(s)
        cands = by_prefix.get(d or "", [])
        free = [i for i in cands if got[i] == 0]
        pick = free[0] if free else (cands[0] if cands else None)
        if pick is None:
            lost += 1
        else:
            got[pick] += 1
    return got, lost


def write_profile(spec: PkgSpec, folder: Path) -> Path:
    """The smallest profile: the validator only needs ``package``."""
    path = folder / f"{spec.package}.toml"
    path.write_text(f'package = "{spec.package}"\n', encoding="utf-8")
    return path


def run_ours(
    spec: PkgSpec,
    root: Path,
    lines: list[str],
    *,
    server_path: str | None = None,
) -> dict[str, Any]:
    """``pycsamt-lsp validate -`` on the lines; per-line error/warning flags."""
    with tempfile.TemporaryDirectory(prefix="realpkgs-") as tmp:
        prof = write_profile(spec, Path(tmp))
        env = dict(os.environ)
        if server_path:
            env["PYTHONPATH"] = server_path + os.pathsep + env.get("PYTHONPATH", "")
        proc = _run(
            [
                sys.executable,
                "-m",
                "pycsamt_lsp",
                "validate",
                "-",
                "--json",
                "--profile",
                str(prof),
                "--root",
                str(root),
                "--index-dir",
                str(Path(tmp) / "idx"),
            ],
            input="\n".join(lines) + "\n",
            env=env,
            cwd=tmp,
            timeout=1800,
        )
    try:
        res = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"failed": (proc.stderr or proc.stdout).strip()[-400:]}
    err, lost_e = _attribute(lines, res["errors"])
    warn_summaries = [w for w in res["warnings"] if _summary_dotted(w)]
    warn, _ = _attribute(lines, warn_summaries)
    return {
        "errors": err,
        "warnings": warn,
        "unattributed_errors": lost_e,
        "error_texts": res["errors"],
    }


def pyright_command() -> list[str] | None:
    """pyright from npm (cached) or PATH; None when neither is there."""
    local = cache_dir() / "pyright" / "node_modules" / ".bin" / "pyright"
    if local.is_file():
        return [str(local)]
    found = shutil.which("pyright")
    if found:
        return [found]
    if shutil.which("npm"):
        proc = _run(
            [
                "npm",
                "install",
                "--silent",
                "--prefix",
                str(local.parents[2]),
                "pyright@1",
            ]
        )
        if proc.returncode == 0 and local.is_file():
            return [str(local)]
    return None


def run_pyright(
    spec: PkgSpec, root: Path, lines: list[str], *, installed: bool
) -> dict[str, Any]:
    """pyright on the same lines, resolving the package from ``root``.

    A checkout root is given as ``extraPaths`` (its ``src/`` when it has
    one), as a user would configure it. For the installed variant pyright
    gets what it is best at: the labelling venv itself (the package *and*
    its dependencies, so re-exported numpy names resolve), when that venv
    exists; otherwise the no-deps copy as ``extraPaths``."""
    cmd = pyright_command()
    if cmd is None:
        return {"failed": "pyright unavailable"}
    extra = root / "src" if (root / "src").is_dir() else root
    conf: dict[str, Any] = {"extraPaths": [str(extra)]}
    venv = cache_dir() / f"{spec.package}-venv"
    if installed and (venv / "bin" / "python").is_file():
        conf = {"venvPath": str(venv.parent), "venv": venv.name}
    with tempfile.TemporaryDirectory(prefix="realpkgs-pyright-") as tmp:
        t = Path(tmp)
        (t / "cand.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (t / "pyrightconfig.json").write_text(
            json.dumps(
                {
                    "include": ["cand.py"],
                    **conf,
                    "pythonVersion": "3.11",
                    "reportUnusedImport": False,
                    "reportRedeclaration": False,
                }
            ),
            encoding="utf-8",
        )
        proc = _run([*cmd, "--outputjson", "-p", str(t)], cwd=tmp, timeout=1800)
    try:
        res = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"failed": (proc.stderr or proc.stdout)[-400:]}
    err = [0] * len(lines)
    warn = [0] * len(lines)
    for d in res.get("generalDiagnostics", []):
        i = d["range"]["start"]["line"]
        if 0 <= i < len(lines):
            if d["severity"] == "error":
                err[i] += 1
            elif d["severity"] == "warning":
                warn[i] += 1
    return {"errors": err, "warnings": warn, "version": res.get("version")}


def score(fx: Fixture, real: dict[str, Any], fake: dict[str, Any]) -> dict[str, Any]:
    """Recall on hallucinated lines, false errors and warnings on real ones."""
    if "failed" in real or "failed" in fake:
        return {"failed": real.get("failed") or fake.get("failed")}
    caught = sum(1 for e in fake["errors"] if e)
    warned = sum(
        1 for e, w in zip(fake["errors"], fake["warnings"], strict=True) if not e and w
    )
    missed = [
        r["line"]
        for r, e, w in zip(fx.absent, fake["errors"], fake["warnings"], strict=True)
        if not e
    ]
    false = [r["line"] for r, e in zip(fx.real, real["errors"], strict=True) if e]
    return {
        "hallucinated": len(fx.absent),
        "caught": caught,
        "recall": round(caught / len(fx.absent), 4) if fx.absent else None,
        "missed_warned": warned,
        "missed_silent": len(fx.absent) - caught - warned,
        "real": len(fx.real),
        "false_errors": len(false),
        "real_warned": sum(
            1
            for w, e in zip(real["warnings"], real["errors"], strict=True)
            if w and not e
        ),
        "missed_examples": missed[:8],
        "false_examples": false[:8],
    }


def measure(
    spec: PkgSpec,
    *,
    server_path: str | None = None,
    with_pyright: bool = True,
    variants: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Every root variant: ours (and pyright) on the real and absent lines."""
    fx = load_fixture(spec)
    real_lines = [r["line"] for r in fx.real]
    fake_lines = [r["line"] for r in fx.absent]
    out: dict[str, Any] = {
        "package": spec.package,
        "version": spec.version,
        "roots": {},
    }
    for name, root in roots(spec).items():
        if variants is not None and name not in variants:
            continue
        row: dict[str, Any] = {"root": str(root)}
        row["ours"] = score(
            fx,
            run_ours(spec, root, real_lines, server_path=server_path),
            run_ours(spec, root, fake_lines, server_path=server_path),
        )
        if with_pyright:
            inst = name == "installed"
            row["pyright"] = score(
                fx,
                run_pyright(spec, root, real_lines, installed=inst),
                run_pyright(spec, root, fake_lines, installed=inst),
            )
        out["roots"][name] = row
    return out


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "generate":
        for name in argv[1:]:
            meta = generate(PACKAGES[name])
            print(json.dumps(meta, indent=2))
        return 0
    print("usage: harness.py generate PACKAGE...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
