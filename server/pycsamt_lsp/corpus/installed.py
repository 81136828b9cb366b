"""Where an installed package's files are, found by reading, never importing.

Why: the server usually runs in its own venv, so ``importlib.util.find_spec``
in its process does not see the user's environment, and an *editable*
install leaves only a pointer in site-packages. This module reads what pip
and the build backends write there:

* ``site-packages/<package>/`` or ``<package>.py`` (a regular install);
* ``*.pth`` files whose lines are folders (setuptools' ``__editable__.*.pth``
  with a path, the classic ``develop`` install, flit/pdm ``.pth``);
* setuptools' ``__editable___<dist>_finder.py`` with its literal ``MAPPING``
  (read with ``ast.literal_eval`` of that one assignment, never executed);
* ``<dist>.dist-info/direct_url.json`` with ``dir_info.editable`` (PEP 660 /
  PEP 610): the project folder, then its flat or ``src/`` layout.

Each gives a *corpus root*: the folder that contains ``<package>/`` (so a src
checkout's root is ``…/src``; ``discover_root`` prefers the project folder
when the package sits in its ``src/``).
"""

from __future__ import annotations

import ast
import json
import os
import site
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["find_installed", "site_dirs"]


def site_dirs() -> list[Path]:
    """Site-packages folders worth looking in, the user's first.

    ``$VIRTUAL_ENV`` (the venv active in the shell that started the editor)
    comes before the server's own interpreter paths."""
    out: list[Path] = []
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        out += sorted(Path(venv).glob("lib/python3*/site-packages"))
        out.append(Path(venv) / "Lib" / "site-packages")
    try:
        out += [Path(p) for p in site.getsitepackages()]
    except AttributeError:  # pragma: no cover - virtualenv's old site.py
        pass
    user = site.getusersitepackages()
    if isinstance(user, str):
        out.append(Path(user))
    out.append(Path(sysconfig.get_paths()["purelib"]))
    out += [Path(p) for p in sys.path if p.endswith("site-packages")]
    seen: set[Path] = set()
    uniq = []
    for p in out:
        if p.is_dir() and p not in seen:
            seen.add(p)
            uniq.append(p)
    return uniq


def _holds(folder: Path, package: str) -> bool:
    return (folder / package).is_dir() or (folder / f"{package}.py").is_file()


def _pth_dirs(site_dir: Path) -> Iterator[Path]:
    for pth in sorted(site_dir.glob("*.pth")):
        try:
            lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            p = Path(line)
            if not p.is_absolute():
                p = site_dir / p
            if p.is_dir():
                yield p


def _finder_mapping(path: Path) -> dict[str, str]:
    """``MAPPING`` of a setuptools editable finder, read as a literal."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "MAPPING" for t in node.targets)
            and node.value is not None
        ):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError):
                return {}
            if isinstance(value, dict):
                return {str(k): str(v) for k, v in value.items()}
    return {}


def _direct_url_dirs(site_dir: Path) -> Iterator[Path]:
    for du in sorted(site_dir.glob("*.dist-info/direct_url.json")):
        try:
            doc = json.loads(du.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not (doc.get("dir_info") or {}).get("editable"):
            continue
        url = urlparse(str(doc.get("url", "")))
        if url.scheme != "file":
            continue
        project = Path(unquote(url.path))
        for cand in (project, project / "src"):
            if cand.is_dir():
                yield cand


def find_installed(package: str, dirs: Iterable[Path] | None = None) -> Path | None:
    """The corpus root of an installed (or editable-installed) ``package``.

    Looks in ``dirs`` (default: :func:`site_dirs`) in order; else the first
    of them holding only its PEP 561 ``package-stubs`` (a ``types-*``
    install); None when it is nowhere. Nothing is imported or executed."""
    order = [Path(sd) for sd in (site_dirs() if dirs is None else dirs)]
    for sd in order:
        if _holds(sd, package):
            return sd
        for finder in sorted(sd.glob("__editable___*_finder.py")):
            target = _finder_mapping(finder).get(package)
            if target and Path(target).is_dir():
                return Path(target).parent
        for d in _pth_dirs(sd):
            if _holds(d, package):
                return d
        for d in _direct_url_dirs(sd):
            if _holds(d, package):
                return d
    for sd in order:
        if (sd / f"{package}-stubs").is_dir():
            return sd
    return None
