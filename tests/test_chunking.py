"""Chunkers: every chunk kind and field, workflow tags and priorities (DESIGN 4)."""

from __future__ import annotations

import json
import textwrap

import pytest

from pycsamt_lsp.chunking import CHUNK_KINDS, Chunk, chunk_file
from pycsamt_lsp.chunking.docs import split_sections
from pycsamt_lsp.chunking.python import module_name
from pycsamt_lsp.corpus.profile import profile_from_dict

PROFILE = profile_from_dict(
    {
        "name": "fixture",
        "package": "geo",
        "roots": ["geo", "docs", "recipes"],
        "root_docs": ["README.md"],
        "recipe_dir": "recipes",
        "priority": {"high": ["geo/core"], "docs": ["docs", "README.md"]},
        "workflows": {
            "static_shift": ["static shift", "galvanic"],
            "phase_analysis": ["phase tensor", "strike"],
            "denoise": ["denoise", "hampel"],
        },
        "workflow_paths": [["geo/ss", "static_shift"], ["geo/pt", "phase_analysis"]],
    }
)

PY = textwrap.dedent(
    '''\
    """Tools for the fixture package.

    A module docstring spanning lines.
    """

    import os

    LIMIT: int = 42
    """Largest number of stations."""

    UNDOCUMENTED = 3

    _PRIVATE = 4
    """Private constant, documented but skipped."""


    @decorate
    @other.decorator(1)
    def correct(data, /, factor: float = 1.0, *rest, mode="ama", strict: bool, **kw) -> dict:
        """Correct the data.

        More words.
        """

        def inner():
            return 1

        return {}


    async def fetch(url: str) -> bytes:
        return b""


    def _helper(x):
        """Private helper."""
        return x


    class Agent(Base, metaclass=Meta):
        """An agent."""

        def __init__(self, name: str, k: int = 3):
            """Make it."""
            self.name = name

        def run(self, n=1) -> "Agent":
            """Run it."""
            return self

        @classmethod
        def load(cls, path):
            return cls(path)

        def _private(self):
            return None

        def __repr__(self):
            return "Agent"
    '''
)


def by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {c.symbol: c for c in chunks if c.symbol}


@pytest.fixture
def py_chunks() -> list[Chunk]:
    fc = chunk_file("geo/tools.py", PY.encode(), PROFILE)
    assert fc.error is None
    return fc.chunks


def test_module_name():
    assert module_name("pycsamt/emtools/ss.py") == "pycsamt.emtools.ss"
    assert module_name("pycsamt/agents/__init__.py") == "pycsamt.agents"
    assert module_name("geo/tools.py") == "geo.tools"


def test_python_chunk_inventory(py_chunks):
    got = sorted((c.kind, c.symbol) for c in py_chunks)
    assert got == sorted(
        [
            ("module_doc", "geo.tools"),
            ("python_symbol", "geo.tools.LIMIT"),
            ("python_symbol", "geo.tools.correct"),
            ("python_symbol", "geo.tools.fetch"),
            ("python_symbol", "geo.tools.Agent"),
            ("python_method", "geo.tools.Agent.__init__"),
            ("python_method", "geo.tools.Agent.run"),
            ("python_method", "geo.tools.Agent.load"),
        ]
    )
    symbols = {c.symbol for c in py_chunks}
    # private functions/methods/constants, undocumented constants, nested
    # functions and dunders other than __init__ are not chunks
    for absent in (
        "geo.tools._helper",
        "geo.tools.Agent._private",
        "geo.tools.Agent.__repr__",
        "geo.tools.UNDOCUMENTED",
        "geo.tools._PRIVATE",
        "geo.tools.inner",
        "geo.tools.correct.inner",
    ):
        assert absent not in symbols
    assert all(c.kind in CHUNK_KINDS for c in py_chunks)


def test_module_doc_chunk(py_chunks):
    mod = by_symbol(py_chunks)["geo.tools"]
    assert mod.kind == "module_doc"
    assert mod.id == "geo/tools.py:module"
    assert mod.source_path == "geo/tools.py"
    assert "A module docstring spanning lines." in mod.text
    assert mod.metadata["docstring"].startswith("Tools for the fixture package.")
    assert mod.line_start == 1
    assert mod.line_end == len(PY.splitlines())


def test_function_chunk_fields(py_chunks):
    c = by_symbol(py_chunks)["geo.tools.correct"]
    line = (
        PY.splitlines().index(next(ln for ln in PY.splitlines() if "def correct" in ln))
        + 1
    )
    end = line + PY.splitlines()[line - 1 :].index("    return {}")
    assert c.kind == "python_symbol"
    assert c.id == f"geo/tools.py:{line}:{end}"
    assert (c.line_start, c.line_end) == (line, end)
    m = c.metadata
    assert m["name"] == "correct"
    assert m["returns"] == "dict"
    assert m["decorators"] == ["decorate", "other.decorator(1)"]
    assert m["docstring"] == "Correct the data.\n\nMore words."
    assert m["params"] == [
        {
            "name": "data",
            "kind": "positional_only",
            "default": None,
            "annotation": None,
        },
        {
            "name": "factor",
            "kind": "positional_or_keyword",
            "default": "1.0",
            "annotation": "float",
        },
        {"name": "rest", "kind": "var_positional", "default": None, "annotation": None},
        # defaults and annotations are the source text
        {
            "name": "mode",
            "kind": "keyword_only",
            "default": '"ama"',
            "annotation": None,
        },
        {
            "name": "strict",
            "kind": "keyword_only",
            "default": None,
            "annotation": "bool",
        },
        {"name": "kw", "kind": "var_keyword", "default": None, "annotation": None},
    ]
    sig = m["signature"]
    assert sig.startswith("correct(data, /, factor: float = 1.0, *rest")
    assert "strict: bool" in sig and "**kw" in sig and sig.endswith("-> dict")
    # the chunk text carries symbol, signature, docstring and code
    assert "Symbol: geo.tools.correct" in c.text
    assert sig in c.text
    assert "Correct the data." in c.text
    assert "return {}" in c.text
    assert c.priority == 1  # geo/tools.py is not a high-priority path


def test_async_function_and_returns(py_chunks):
    c = by_symbol(py_chunks)["geo.tools.fetch"]
    assert c.metadata["signature"] == "async fetch(url: str) -> bytes"
    assert c.metadata["returns"] == "bytes"
    assert c.metadata["docstring"] == ""
    assert c.metadata["params"] == [
        {
            "name": "url",
            "kind": "positional_or_keyword",
            "default": None,
            "annotation": "str",
        }
    ]


def test_class_and_method_chunks(py_chunks):
    syms = by_symbol(py_chunks)
    cls = syms["geo.tools.Agent"]
    assert cls.kind == "python_symbol"
    assert cls.metadata["signature"] == "class Agent(Base)"
    assert cls.metadata["bases"] == ["Base"]
    assert cls.metadata["docstring"] == "An agent."
    # a class's parameters are its __init__'s (self dropped)
    assert [p["name"] for p in cls.metadata["params"]] == ["name", "k"]
    # the class span covers its methods
    init = syms["geo.tools.Agent.__init__"]
    run = syms["geo.tools.Agent.run"]
    load = syms["geo.tools.Agent.load"]
    assert (
        cls.line_start
        < init.line_start
        < run.line_start
        < load.line_end
        <= cls.line_end
    )
    assert init.kind == run.kind == load.kind == "python_method"
    assert init.metadata["params"] == [
        {
            "name": "name",
            "kind": "positional_or_keyword",
            "default": None,
            "annotation": "str",
        },
        {
            "name": "k",
            "kind": "positional_or_keyword",
            "default": "3",
            "annotation": "int",
        },
    ]
    assert init.metadata["signature"] == "__init__(self, name: str, k: int = 3)"
    assert init.metadata["docstring"] == "Make it."
    assert run.metadata["returns"] == '"Agent"'
    assert run.metadata["params"][0]["default"] == "1"
    assert load.metadata["decorators"] == ["classmethod"]
    assert load.metadata["signature"] == "load(cls, path)"
    assert load.id == f"geo/tools.py:{load.line_start}:{load.line_end}"


def test_documented_constant(py_chunks):
    c = by_symbol(py_chunks)["geo.tools.LIMIT"]
    assert c.kind == "python_symbol"
    assert c.metadata["docstring"] == "Largest number of stations."
    assert c.metadata["annotation"] == "int"
    line = PY.splitlines().index("LIMIT: int = 42") + 1
    assert (c.line_start, c.line_end) == (line, line)


def test_chunk_ids_unique_and_roundtrip(py_chunks):
    ids = [c.id for c in py_chunks]
    assert len(ids) == len(set(ids))
    for c in py_chunks:
        d = json.loads(json.dumps(c.to_dict()))
        assert set(d) >= {
            "id",
            "text",
            "source_path",
            "kind",
            "symbol",
            "workflow",
            "priority",
            "metadata",
        }
        assert Chunk.from_dict(d) == c


def test_module_without_docstring_has_no_module_doc():
    fc = chunk_file("geo/bare.py", b"def f():\n    return 1\n", PROFILE)
    assert [c.kind for c in fc.chunks] == ["python_symbol"]


# -- workflow tags and priority ---------------------------------------------


WF_SRC = textwrap.dedent(
    '''\
    def plain(x):
        """Nothing special here."""


    def tensor(x):
        """Compute the phase tensor of a site."""


    def cleanup(x):
        """Hampel filter."""
    '''
)


def test_workflow_from_keywords_then_path_map():
    chunks = by_symbol(chunk_file("geo/ss/core.py", WF_SRC.encode(), PROFILE).chunks)
    # no keyword: the path map decides
    assert chunks["geo.ss.core.plain"].workflow == "static_shift"
    # keywords win over the path map
    assert chunks["geo.ss.core.tensor"].workflow == "phase_analysis"
    assert chunks["geo.ss.core.cleanup"].workflow == "denoise"
    # outside any mapped path and without keywords: no workflow
    other = by_symbol(chunk_file("geo/misc.py", WF_SRC.encode(), PROFILE).chunks)
    assert other["geo.misc.plain"].workflow is None
    assert other["geo.misc.tensor"].workflow == "phase_analysis"
    assert (
        by_symbol(chunk_file("geo/pt/x.py", WF_SRC.encode(), PROFILE).chunks)[
            "geo.pt.x.plain"
        ].workflow
        == "phase_analysis"
    )


def test_priority_from_high_priority_paths():
    src = b'"""Doc."""\ndef f():\n    """Galvanic distortion."""\n'
    hi = chunk_file("geo/core/a.py", src, PROFILE).chunks
    lo = chunk_file("geo/a.py", src, PROFILE).chunks
    assert {c.priority for c in hi} == {3}
    assert {c.priority for c in lo} == {1}
    doc = chunk_file("docs/guide.md", b"# Title\n\nsome words about things\n", PROFILE)
    assert {c.priority for c in doc.chunks} == {2}
    readme = chunk_file("README.md", b"# Read me\n\nsome words about things\n", PROFILE)
    assert {c.priority for c in readme.chunks} == {2}


# -- documents --------------------------------------------------------------

RST = textwrap.dedent(
    """\
    Intro paragraph before any title, long enough to be kept.

    ===========
    Main Title
    ===========

    Overline and underline style title.

    Sub Section
    -----------

    Underline-only title about the phase tensor.

    Not a title because the underline is short
    ---

    .. code-block:: python

        x = 1
        # ======

    Another
    ~~~~~~~

    Last section body.
    """
)

MD = textwrap.dedent(
    """\
    # Top heading

    Some text about static shift correction.

    ```python
    # not a heading, a comment in a code fence
    x = 1
    ```

    ## Second heading ##

    More text.

    ~~~
    # also not a heading
    ~~~

    ### Third

    Body three.
    #NoSpace is not a heading either
    """
)


def test_rst_sections_underline_and_overline():
    fc = chunk_file("docs/guide.rst", RST.encode(), PROFILE)
    assert fc.error is None
    heads = [c.metadata["heading"] for c in fc.chunks]
    assert heads == [None, "Main Title", "Sub Section", "Another"]
    assert all(c.kind == "doc_section" for c in fc.chunks)
    lines = RST.splitlines()
    main = fc.chunks[1]
    assert main.line_start == lines.index("===========") + 1  # the overline
    sub = fc.chunks[2]
    assert sub.line_start == lines.index("Sub Section") + 1
    assert main.line_end == sub.line_start - 1
    assert "Not a title because the underline is short" in sub.text
    assert "x = 1" in sub.text
    assert fc.chunks[3].line_end == len(lines)
    assert sub.workflow == "phase_analysis"
    assert [c.id for c in fc.chunks] == [f"docs/guide.rst:sec{i}" for i in range(4)]
    assert all(c.symbol is None for c in fc.chunks)


def test_md_sections_skip_code_fences():
    fc = chunk_file("docs/guide.md", MD.encode(), PROFILE)
    heads = [c.metadata["heading"] for c in fc.chunks]
    assert heads == ["Top heading", "Second heading", "Third"]
    top, second, third = fc.chunks
    assert "# not a heading, a comment in a code fence" in top.text
    assert "# also not a heading" in second.text
    assert "#NoSpace" in third.text
    lines = MD.splitlines()
    assert top.line_start == 1
    assert second.line_start == lines.index("## Second heading ##") + 1
    assert top.line_end == second.line_start - 1
    assert third.line_start == lines.index("### Third") + 1
    assert top.workflow == "static_shift"
    assert top.label == "Top heading"


def test_split_sections_drops_empty_untitled_preamble():
    secs = split_sections("\n\n# A\n\nbody\n", ".md")
    assert [s[0] for s in secs] == ["A"]
    fc = chunk_file("docs/x.md", b"tiny\n# A\n\nbody text here\n", PROFILE)
    assert [c.metadata["heading"] for c in fc.chunks] == ["A"]


RECIPE = textwrap.dedent(
    """\
    # Hampel recipe

    Workflow: static_shift

    Use the agent.

    ## Python

    ```python
    # Step 1
    agent.run()
    ```

    ## Checks

    The phase tensor is unchanged.
    """
)


def test_recipe_chunks_take_the_workflow_line():
    fc = chunk_file("recipes/fix.md", RECIPE.encode(), PROFILE)
    assert [c.kind for c in fc.chunks] == ["recipe"] * 3
    # the file's `Workflow:` line beats keywords in the sections
    assert {c.workflow for c in fc.chunks} == {"static_shift"}
    assert [c.metadata["heading"] for c in fc.chunks] == [
        "Hampel recipe",
        "Python",
        "Checks",
    ]
    # without the line, keywords decide per section
    fc2 = chunk_file(
        "recipes/fix.md", RECIPE.replace("Workflow: static_shift", "").encode(), PROFILE
    )
    assert [c.workflow for c in fc2.chunks] == ["denoise", None, "phase_analysis"]
    # an unknown workflow name in the line is ignored
    fc3 = chunk_file(
        "recipes/fix.md", RECIPE.replace("static_shift", "nonsense").encode(), PROFILE
    )
    assert fc3.chunks[0].workflow == "denoise"
    # the same file outside the recipe folder is a doc section
    assert {
        c.kind for c in chunk_file("docs/fix.md", RECIPE.encode(), PROFILE).chunks
    } == {"doc_section"}


def test_recipe_kind_with_default_profile(pycsamt_profile):
    fc = chunk_file("assistant_recipes/x.md", RECIPE.encode(), pycsamt_profile)
    assert {c.kind for c in fc.chunks} == {"recipe"}
    assert {c.workflow for c in fc.chunks} == {"static_shift"}
    assert {c.priority for c in fc.chunks} == {3}


# -- bad files ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "data", "reason"),
    [
        ("geo/bad.py", b"def broken(:\n    pass\n", "syntax"),
        ("geo/latin.py", "x = 'caf\u00e9'\n".encode("latin-1"), "UTF-8"),
        ("docs/bin.md", b"# T\n\x00\x01\x02 binary", "binary"),
        ("geo/nul.py", b"x = 1\x00\n", "binary"),
    ],
)
def test_bad_files_give_an_error_not_an_exception(rel, data, reason):
    fc = chunk_file(rel, data, PROFILE)
    assert fc.chunks == []
    assert fc.error and reason.lower() in fc.error.lower()


def test_python_tree_is_returned_for_reuse():
    fc = chunk_file("geo/t.py", b"def f():\n    pass\n", PROFILE)
    assert fc.tree is not None and fc.tree.body[0].name == "f"
