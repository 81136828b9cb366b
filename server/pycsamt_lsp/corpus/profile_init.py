"""``pycsamt-lsp profile init PACKAGE``: a starting profile for any package.

Why: the validator needs only ``package``, but indexing and search want the
package folder, the doc folders and the test excludes spelled as
corpus-relative paths, which a new user would otherwise guess by copying the
bundled pyCSAMT profile. Everything here is found by looking at folders and
reading metadata files (``PKG-INFO``, ``*.dist-info/METADATA``,
``pyproject.toml``); the package is never imported.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pycsamt_lsp.errors import CorpusError

__all__ = ["init_profile", "locate_package"]

_DOC_DIRS = ("docs/source", "doc/source", "docs", "doc")
_EXAMPLE_DIRS = ("examples", "example", "docs/examples", "doc/examples", "samples")
_ROOT_DOCS = ("README.md", "README.rst", "README.txt", "AGENTS.md", "CHANGELOG.md")


def locate_package(package: str, root: str | Path | None) -> tuple[Path, str]:
    """``(corpus root, package folder relative to it)`` for ``package``.

    With ``root``: ``root/package`` or ``root/src/package`` (or a
    site-packages folder an editable install points out of). Without: the
    installed copy, read from site-packages."""
    from pycsamt_lsp.corpus.discovery import _project_root
    from pycsamt_lsp.corpus.installed import find_installed
    from pycsamt_lsp.corpus.layout import package_dir

    if root is not None:
        base = Path(root).expanduser()
        if not base.is_dir():
            raise CorpusError(f"root {base} does not exist or is not a folder")
        if package_dir(base, package) is None:
            pointed = find_installed(package, [base])
            if pointed is None:
                raise CorpusError(
                    f"package {package!r} is not under {base} (looked for "
                    f"{package}/, src/{package}/ and editable-install pointers)"
                )
            base = _project_root(pointed)
    else:
        found = find_installed(package)
        if found is None:
            raise CorpusError(
                f"package {package!r} is not installed here; pass --root "
                f"(a checkout, an unpacked sdist or a site-packages folder)"
            )
        base = _project_root(found)
    pdir = package_dir(base, package)
    if pdir is None:
        raise CorpusError(f"package {package!r} is not under {base}")
    return base.resolve(), pdir.relative_to(base).as_posix()


def _distribution(base: Path, package: str) -> str:
    """``name==version`` from the root's metadata, or ``""``."""
    for meta in (base / "PKG-INFO", *sorted(base.glob("*.dist-info/METADATA"))):
        if not meta.is_file():
            continue
        text = meta.read_text(encoding="utf-8", errors="replace")
        name = re.search(r"^Name:\s*(\S+)", text, re.M)
        ver = re.search(r"^Version:\s*(\S+)", text, re.M)
        if name and ver:
            if meta.name == "METADATA":
                tops = meta.parent / "top_level.txt"
                if tops.is_file() and package not in tops.read_text().split():
                    continue
            return f"{name.group(1)}=={ver.group(1)}"
    pp = base / "pyproject.toml"
    if pp.is_file():
        try:
            proj = tomllib.loads(pp.read_text(encoding="utf-8")).get("project", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            proj = {}
        if isinstance(proj.get("name"), str) and isinstance(proj.get("version"), str):
            return f"{proj['name']}=={proj['version']}"
    return ""


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{x}"' for x in items) + "]"


def init_profile(package: str, root: str | Path | None = None) -> tuple[str, Path]:
    """The text of a starting profile for ``package`` and the corpus root it
    describes (see the module docstring; keys in ``docs/profiles.md``)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", package):
        raise CorpusError(f"not an import name: {package!r}")
    base, pkg_rel = locate_package(package, root)
    docs = [d for d in _DOC_DIRS if (base / d).is_dir()]
    docs = docs[:1]  # the most specific one (docs/source before docs)
    examples = [d for d in _EXAMPLE_DIRS if (base / d).is_dir()]
    root_docs = [d for d in _ROOT_DOCS if (base / d).is_file()]
    roots = [pkg_rel, *docs, *examples]
    dist = _distribution(base, package)
    lines = [
        f"# Starting profile for {package}, written by `pycsamt-lsp profile init`",
        f"# from {base}.",
        "# Every key is described in docs/profiles.md; only `package` matters",
        "# to the import validator.",
        "",
        f'name = "{package}"',
        "# Import name of the package: the folder under the corpus root",
        f"# (found here at {pkg_rel}/).",
        f'package = "{package}"',
    ]
    if dist:
        lines += [
            "# What `pycsamt-lsp corpus fetch` downloads (sdist, else wheel).",
            f'distribution = "{dist}"',
        ]
    lines += [
        "",
        "# Corpus-relative folders that are indexed, plus these top-level files.",
        f"roots = {_toml_list(roots)}",
        f"root_docs = {_toml_list(root_docs)}",
        'suffixes = [".py", ".rst", ".md"]',
        "# Substrings of corpus-relative paths that are never indexed.",
        "excludes = "
        + _toml_list(
            [
                "__pycache__",
                "/tests/",
                "/test/",
                ".egg-info",
                "build/",
                "dist/",
                ".git/",
                ".tox/",
                ".nox/",
            ]
        ),
        "# File names that are unit tests (never reference material).",
        'test_globs = ["test_*.py", "*_test.py", "conftest.py"]',
        f"devsearch_roots = {_toml_list(roots)}",
        "",
        "[priority]",
        f"high = {_toml_list([pkg_rel])}",
        f"docs = {_toml_list([*docs, *root_docs])}",
        "",
    ]
    return "\n".join(lines), base
