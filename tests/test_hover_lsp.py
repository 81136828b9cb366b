"""Hover cards, completion, go to definition and workspace symbols.

End to end through a real LSP client (pytest-lsp) on a fixture package, plus
the pure buffer analysis the handlers use, plus two checks on the real
pyCSAMT corpus.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_helpers import wait_for
from test_server import client, start, until  # noqa: F401 - the client fixture

#: Extra modules written next to ``write_fixture_corpus``'s package.
EXTRA = {
    "pkg/styles.py": '''
        """Docstring styles and inheritance."""


        def google_style(path, depth: int = 2, **options):
            """Walk a survey folder.

            Args:
                path (str): Folder holding the EDI files.
                depth: How deep to look,
                    counted from ``path``.
                **options: Passed to the reader.

            Returns:
                list: The files found.
            """
            return []


        def sphinx_style(rho, scale=1.0):
            """Scale apparent resistivity.

            :param rho: Apparent resistivity in ohm-m.
            :type rho: numpy.ndarray
            :param float scale: The factor.
            :returns: The scaled values.
            :rtype: numpy.ndarray
            """
            return rho


        def _helper():
            return None


        class Base:
            """A base processor."""

            def describe(self) -> str:
                """Say what it does."""
                return ""

            def _hidden(self):
                return None


        class Child(Base):
            """A child processor."""

            def __init__(self, name: str, *, level: int = 1):
                """Make one.

                Parameters
                ----------
                name : str
                    The processor name.
                level : int
                    Verbosity.
                """
                self.name = name

            def process(self, data):
                """Process the data."""
                return data
    ''',
}

SCRIPT = textwrap.dedent(
    """\
    from pkg.core.shift import correct_shift, ShiftAgent as SA
    import pkg.core.shift as sh
    import pkg.phase
    from pkg import nothing_here

    sh.correct_shift(data, factor=2.0)
    agent = SA("L1", k=2)
    agent.run(verbose=True)
    pkg.phase.strike_angle(z)
    s = "é😀"; correct_shift(1)
    unknown_thing.run()
    """
)


def write_extra(root: Path) -> None:
    for rel, text in EXTRA.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


async def open_corpus(client: LanguageClient, tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_extra(corpus)
    await start(client, corpus)
    return corpus


def open_doc(client: LanguageClient, path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text
            )
        )
    )
    return uri


def change_doc(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=uri, version=version
            ),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def hover(client: LanguageClient, uri: str, line: int, char: int):
    return await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=char),
        )
    )


async def completion(client: LanguageClient, uri: str, line: int, char: int):
    got = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=char),
        )
    )
    if got is None:
        return None
    return got.items if isinstance(got, types.CompletionList) else got


def col(line: str, needle: str, offset: int = 1) -> int:
    """A code-point column inside the first occurrence of *needle*."""
    return line.index(needle) + offset


def line_of(path: Path, needle: str) -> int:
    for i, text in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if needle in text:
            return i
    raise AssertionError(needle)


# -- end to end ------------------------------------------------------------------


@pytest.fixture
def index_states(client: LanguageClient) -> LanguageClient:
    """Record ``pycsamt/indexState`` on the client (``start`` waits on it)
    and accept the server's file-watcher registration."""
    client._index_states = []

    @client.feature("pycsamt/indexState")
    def _on_state(params):
        client._index_states.append(
            params if isinstance(params, dict) else {"state": params.state}
        )

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _on_register(params: types.RegistrationParams):
        return None

    return client


@pytest.mark.usefixtures("index_states")
async def test_hover_cards(client: LanguageClient, tmp_path: Path):
    await open_corpus(client, tmp_path)
    lines = SCRIPT.splitlines()
    uri = open_doc(client, tmp_path / "script.py", SCRIPT)

    # an imported function, in the import statement
    h = await hover(client, uri, 0, col(lines[0], "correct_shift"))
    assert h is not None and h.contents.kind == types.MarkupKind.Markdown
    md = h.contents.value
    assert "def correct_shift(data, factor: float = 1.0, *, method: str" in md
    assert "`factor`: `float` = `1.0` — Multiplicative factor." in md
    assert "Correct the galvanic static shift" in md
    assert "workflow `static_shift`" in md
    assert "shift.py#L" in md
    start = lines[0].index("correct_shift")
    assert (h.range.start.line, h.range.start.character, h.range.end.character) == (
        0,
        start,
        start + len("correct_shift"),
    )

    # an alias: the class card with the constructor's parameters
    h = await hover(client, uri, 0, col(lines[0], "SA", 1))
    md = h.contents.value
    assert "class ShiftAgent(line: str, k: int = 3)" in md
    assert "**Constructor parameters**" in md and "`k`: `int` = `3`" in md
    assert "**Methods** `run`" in md

    # an attribute chain of an imported module, and the module alias itself
    h = await hover(client, uri, 5, col(lines[5], "correct_shift"))
    assert "def correct_shift(" in h.contents.value
    h = await hover(client, uri, 5, 1)
    assert "*module* `pkg.core.shift`" in h.contents.value
    assert "Static shift tools." in h.contents.value

    # a call site: the class called through its alias, a keyword argument
    h = await hover(client, uri, 6, col(lines[6], "SA"))
    assert "class ShiftAgent(" in h.contents.value
    h = await hover(client, uri, 5, col(lines[5], "factor"))
    assert "**`factor`: `float` = `1.0` — Multiplicative factor.**" in h.contents.value

    # a method through an instance; a chain from ``import pkg.phase``
    h = await hover(client, uri, 7, col(lines[7], "run"))
    assert "def run(self, verbose: bool = False)" in h.contents.value
    assert "*method* `pkg.core.shift.ShiftAgent.run`" in h.contents.value
    h = await hover(client, uri, 8, col(lines[8], "strike_angle"))
    assert "def strike_angle(z, freq=None)" in h.contents.value

    # UTF-16 columns: "é😀" is 3 UTF-16 units before the call on that line
    text9 = lines[9]
    cp = text9.index("correct_shift")
    u16 = len(text9[:cp].encode("utf-16-le")) // 2
    assert u16 == cp + 1
    h = await hover(client, uri, 9, u16 + 1)
    assert h is not None and "def correct_shift(" in h.contents.value
    assert (h.range.start.character, h.range.end.character) == (u16, u16 + 13)

    # unknown names, absent names, blank space: no hover, no error
    assert await hover(client, uri, 10, 3) is None
    assert await hover(client, uri, 3, col(lines[3], "nothing_here")) is None
    assert await hover(client, uri, 4, 0) is None


@pytest.mark.usefixtures("index_states")
async def test_hover_in_a_broken_buffer_and_after_a_corpus_edit(
    client: LanguageClient, tmp_path: Path
):
    corpus = await open_corpus(client, tmp_path)
    text = "import pkg.core.shift as sh\nx = (\nsh.correct_shift(\n"
    uri = open_doc(client, tmp_path / "broken.py", text)
    h = await hover(client, uri, 2, 5)
    assert h is not None and "def correct_shift(" in h.contents.value
    h = await hover(client, uri, 0, 25)
    assert h is not None and "*module* `pkg.core.shift`" in h.contents.value

    text = "from pkg.phase import strike_angle\nstrike_angle(1)\n"
    change_doc(client, uri, text, 2)
    h = await hover(client, uri, 1, 3)
    assert "freq=None" in h.contents.value and "window" not in h.contents.value

    phase = corpus / "pkg" / "phase.py"
    phase.write_text(
        phase.read_text().replace("freq=None", "freq=None, window: int = 5"),
        encoding="utf-8",
    )
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=phase.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )

    async def updated():
        got = await hover(client, uri, 1, 3)
        return got if got and "window: int = 5" in got.contents.value else None

    assert await until(client, updated) is not None


@pytest.mark.usefixtures("index_states")
async def test_completion(client: LanguageClient, tmp_path: Path):
    await open_corpus(client, tmp_path)
    text = "import pkg.core.shift as sh\nfrom pkg.core.shift import \n"
    uri = open_doc(client, tmp_path / "c.py", text)

    items = await completion(client, uri, 1, len("from pkg.core.shift import "))
    labels = {i.label for i in items}
    assert {"correct_shift", "ShiftAgent"} <= labels
    by = {i.label: i for i in items}
    assert by["correct_shift"].kind == types.CompletionItemKind.Function
    assert by["ShiftAgent"].kind == types.CompletionItemKind.Class
    doc = by["correct_shift"].documentation
    assert isinstance(doc, types.MarkupContent) and "Multiplicative factor" in doc.value

    for n, line in enumerate(
        [
            "pkg.core.shift.",
            "sh.",
            "x = sh.corr",
            "import pkg.",
            "from pkg.",
            "from pkg.styles import ",
            "from pkg.styles import (google_style,\n    ",
            "c = pkg.styles.Child('a')\nc.",
            "# sh.",
        ],
        start=2,
    ):
        change_doc(client, uri, text + line, n)
        lines = (text + line).splitlines()
        items = await completion(client, uri, len(lines) - 1, len(lines[-1]))
        labels = [i.label for i in items] if items is not None else None
        if line in ("pkg.core.shift.", "sh.", "x = sh.corr"):
            assert {"correct_shift", "ShiftAgent"} <= set(labels), line
        elif line in ("import pkg.", "from pkg."):
            assert set(labels) == {"core", "phase", "styles", "tests"}, labels
            ordered = [i.label for i in sorted(items, key=lambda i: i.sort_text)]
            assert ordered[-1] == "tests"  # real, but the profile's test code
        elif line.startswith("from pkg.styles import"):
            assert {"google_style", "sphinx_style", "Base", "Child", "_helper"} <= set(
                labels
            )
            ordered = sorted(items, key=lambda i: i.sort_text)
            assert ordered[-1].label == "_helper"
        elif line.startswith("c = "):
            # methods of an instance's class, inherited ones included
            assert {"process", "describe"} <= set(labels)
            ordered = [i.label for i in sorted(items, key=lambda i: i.sort_text)]
            assert ordered.index("_hidden") > ordered.index("process")
        else:
            assert not labels, line


@pytest.mark.usefixtures("index_states")
async def test_definition_and_workspace_symbols(client: LanguageClient, tmp_path: Path):
    corpus = await open_corpus(client, tmp_path)
    lines = SCRIPT.splitlines()
    uri = open_doc(client, tmp_path / "script.py", SCRIPT)

    async def definition(line: int, char: int):
        return await client.text_document_definition_async(
            types.DefinitionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=char),
            )
        )

    shift = corpus / "pkg" / "core" / "shift.py"
    [loc] = await definition(5, col(lines[5], "correct_shift"))
    assert loc.uri == shift.resolve().as_uri()
    assert loc.range.start.line == line_of(shift, "def correct_shift(")
    [loc] = await definition(7, col(lines[7], "run"))
    assert loc.range.start.line == line_of(shift, "def run(")
    [loc] = await definition(1, col(lines[1], "shift"))
    assert loc.uri == shift.resolve().as_uri() and loc.range.start.line == 0
    assert await definition(10, 2) is None

    got = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="ru"))
    hits = [(s.name, s.container_name) for s in got]
    assert ("run", "pkg.core.shift.ShiftAgent") in hits
    [run] = [s for s in got if s.name == "run"]
    assert run.kind == types.SymbolKind.Method
    assert run.location.uri == shift.resolve().as_uri()
    assert run.location.range.start.line == line_of(shift, "def run(")

    got = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="SA"))
    assert got[0].name == "ShiftAgent" or "ShiftAgent" in [s.name for s in got[:3]]
    got = await client.workspace_symbol_async(
        types.WorkspaceSymbolParams(query="ShiftAgent.ru")
    )
    assert [s.name for s in got] == ["run"]


# -- the real corpus ---------------------------------------------------------------

REAL = [sys.executable, "-m", "pycsamt_lsp", "serve"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=REAL))
async def real_client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


@pytest.mark.corpus
async def test_real_corpus_hover_and_completion(
    real_client: LanguageClient, real_corpus: Path, tmp_path: Path
):
    states: list = []

    @real_client.feature("pycsamt/indexState")
    def _on_state(params):
        states.append(params["state"] if isinstance(params, dict) else params.state)

    await real_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={
                "corpusRoot": str(real_corpus),
                "indexDir": str(tmp_path / "idx"),
                "watch": "off",
            },
            root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="w")],
        )
    )
    await wait_for(lambda: states and states[-1] in ("ready", "error"), timeout=300)
    assert states[-1] == "ready"
    text = (
        "from pycsamt.emtools.ss import estimate_ss_ama\n"
        "tbl = estimate_ss_ama(sites, half_window=3)\n"
        "from pycsamt.agents import \n"
    )
    uri = open_doc(real_client, tmp_path / "script.py", text)
    h = await hover(real_client, uri, 1, 8)
    md = h.contents.value
    for name in ("sites", "half_window", "pband", "max_skew", "sort_by"):
        assert f"`{name}`" in md, name
    assert "`half_window`: `int` = `3` — Neighbours on each side" in md
    assert "pycsamt/emtools/ss.py#L" in md
    h = await hover(real_client, uri, 0, 35)
    assert "def estimate_ss_ama(" in h.contents.value
    items = await completion(real_client, uri, 2, len("from pycsamt.agents import "))
    labels = {i.label for i in items}
    assert "StaticShiftAgent" in labels
    [agent] = [i for i in items if i.label == "StaticShiftAgent"]
    if agent.documentation is None:
        agent = await real_client.completion_item_resolve_async(agent)
    assert "method" in agent.documentation.value
