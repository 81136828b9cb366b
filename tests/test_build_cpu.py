"""The build worker's shortcuts change nothing they skip (issue 18).

Each fast path of a build worker (the whole-tree pre-check of
``mask_tree``, the pruned walks of the dynamic-namespace scans, the
``global`` line finder) is checked against what it skips: the slow path's
answer on the same input, and the masking/namespace facts a reader relies on.
"""

from __future__ import annotations

import ast
import os
import random
import re

import pytest

from pycsamt_lsp.model.dynamic import _GLOBAL_RE, _global_lines, _hit_lines
from pycsamt_lsp.model.extract import ModuleInfo
from pycsamt_lsp.text.secrets import _mask_tree, mask_tree


def _info(src: bytes) -> dict:
    return ModuleInfo.from_source(src, name="pkg.m", rel="pkg/m.py").to_dict()


# -- mask_tree: the pre-check on the whole tree ------------------------------


def test_a_clean_tree_is_returned_as_is():
    params = [
        {"name": "x", "kind": "positional_or_keyword", "default": None},
        {"name": "n", "kind": "keyword_only", "default": "3", "annotation": "int"},
    ]
    assert mask_tree(params) is params
    assert _mask_tree(params, True) == params


def test_a_secret_only_in_a_nested_node_is_still_masked():
    tree = {
        "signature": "f(x, cfg)",
        "params": [
            {"name": "x", "kind": "positional_or_keyword", "default": None},
            {"name": "cfg", "default": "{'nested': {'api_key': 'abc123xyz'}}"},
        ],
        "deep": [[["leaked sk-abcdefghijklmnop here"]]],
        "url": "https://user:hunter2@example.org/x",
    }
    out = mask_tree(tree)
    assert out["params"][1]["default"] == "{'nested': {'api_key': \"***\"}}"
    assert out["deep"] == [[["leaked sk-*** here"]]]
    assert out["url"] == "https://user:***@example.org/x"
    assert out["params"][0] == tree["params"][0]


def test_a_secret_looking_parameter_name_alone_still_masks_its_default():
    # "author" holds no trigger word for may_hold_secret, but mask_default
    # masks a string default by the parameter's name
    assert mask_tree([{"name": "author", "default": '"Jane"'}]) == [
        {"name": "author", "default": '"***"'}
    ]
    # the Kelvin sign case-folds to "k": the pre-check leaves non-ASCII alone
    kelvin = "api_\u212aey"
    assert mask_tree([{"name": kelvin, "default": '"v"'}]) == [
        {"name": kelvin, "default": '"***"'}
    ]


_WORDS = (
    "x", "cfg", "author", "token", "api_key", "Key", "keyword_only", "auth",
    "authority", "passwd", "basic", "Basic abc1234567=", "bearer", "AKIA",
    "AKIAABCDEFGHIJKLMNOP", "ghp_" + "a" * 22, "://u:p@h", "://h/p@x",
    "sk-", "sk-abcdefgh12", "xoxb-1234567890", "AIza" + "B" * 31, "=", ":",
    " ", "\n", "'", '"', "\\", "_", "-", "é", "\u212a", "secret", "pwd", "None",
    "-----BEGIN RSA PRIVATE KEY-----", "credential", "1", "{", "}",
)  # fmt: skip


def _random_tree(rnd: random.Random, depth: int = 0) -> object:
    roll = rnd.random()
    if depth > 2 or roll < 0.4:
        if rnd.random() < 0.15:
            return rnd.choice([None, 1, True, 2.5])
        return "".join(rnd.choice(_WORDS) for _ in range(rnd.randint(0, 6)))
    if roll < 0.7:
        return [_random_tree(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    keys = ["name", "default", "kind", "annotation", "meta"]
    return {k: _random_tree(rnd, depth + 1) for k in rnd.sample(keys, 3)}


def test_the_pre_check_gives_what_the_full_walk_gives():
    rnd = random.Random(18)
    skipped = 0
    for _ in range(4000):
        tree = _random_tree(rnd)
        for python in (True, False):
            got = mask_tree(tree, python=python)
            assert got == _mask_tree(tree, python), tree
            skipped += got is tree and isinstance(tree, (list, dict))
    assert skipped > 100  # the fast path itself was exercised


def test_tree_pre_check_is_its_two_regexes():
    """_tree_is_clean tests plain substrings: the same answer as the words
    regex on the lowered JSON and the shapes regex on the JSON."""
    from pycsamt_lsp.text import secrets as s

    def spec(tree: object) -> bool:
        blob = s._TREE_JSON(tree)
        return blob.isascii() and (
            s._TREE_LOW.search(blob.lower()) is None
            and s._TRIGGER_SHAPE.search(blob) is None
        )

    rnd = random.Random(181)
    for _ in range(4000):
        tree = [_random_tree(rnd)]
        assert s._tree_is_clean(tree) == spec(tree), tree
    for word in _WORDS:
        for tree in ([word], [{"name": "x" * 300, "default": word}]):
            assert s._tree_is_clean(tree) == spec(tree), word


# -- the dynamic-namespace scans: pruned walks ---------------------------------


def test_globals_in_a_decorator_inside_a_class_is_seen():
    src = b"""
class Registry:
    x = 1

    @register(globals())
    def method(self):
        return 1
"""
    assert _info(src)["open_reason"] == "passes globals() around at line 5"


def test_a_global_statement_after_a_colon_is_bound():
    src = b"""
class C:
    def a(self):
        global _cache
        _cache = 1

    def b(self):
        if True: global _other
        return 2
"""
    b = _info(src)["bindings"]
    assert b["_cache"][:2] == [4, "global"] and b["_other"][:2] == [8, "global"]


def test_globals_inside_a_multiline_fstring_is_seen():
    src = b"""
class K:
    def f(self):
        return (
            f"a"
            f"{len(globals().keys()) or globals()}"
        )
"""
    assert _info(src)["open_reason"] == "passes globals() around at line 6"


def test_setattr_deep_in_a_nested_function_is_an_inject():
    src = b"""
class Host:
    def outer(self):
        def inner(mod):
            for _ in range(2):
                setattr(mod, "injected_name", 1)
        return inner

    def other(self):
        setattr(self, "own", 1)
"""
    assert _info(src)["injects"] == ["injected_name"]


def test_globals_writes_bind_literal_names_and_open_on_others():
    src = b"""
def setup():
    for n in ("a", "b"):
        globals()[n] = 1
    globals()["lit"] = 2
"""
    d = _info(src)
    assert d["bindings"]["lit"][:2] == [5, "global"]
    assert d["open_reason"] == "writes to globals() at line 4"


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_line_endings_do_not_change_the_scans(eol):
    src = eol.join(
        [
            b"class C:",
            b"    def f(self, mod):",
            b"        global g_name",
            b"        setattr(mod, 'lit', 1)",
            b"",
        ]
    )
    d = _info(src)
    assert d["bindings"]["g_name"][:2] == [3, "global"]
    assert d["injects"] == ["lit"]


def test_global_lines_are_the_regex_lines():
    rnd = random.Random(7)
    parts = [b"global", b"globals", b" ", b"\t", b"\n", b"(", b"x", b"_", b".", b"s"]
    cases = [b"global x", b"  global x\n", b"xglobals()", b"globals\n\n  (", b"\n"]
    cases += [
        b"".join(rnd.choice(parts) for _ in range(rnd.randint(1, 14)))
        for _ in range(5000)
    ]
    for data in cases:
        hits, mentions = _global_lines(data)
        assert hits == sorted(set(_hit_lines(data, _GLOBAL_RE))), data
        assert mentions == sorted(set(_hit_lines(data, re.compile(rb"global")))), data


# -- may_hold_secret: substrings on long texts, regexes on short ones ----------


def test_may_hold_secret_is_its_two_regexes_at_every_length():
    from pycsamt_lsp.text import secrets as s

    def spec(text: str) -> bool:
        return bool(text) and (
            s._TRIGGER_LOW.search(text.lower()) is not None
            or s._TRIGGER_SHAPE.search(text) is not None
        )

    rnd = random.Random(5)
    filler = ["lorem ", "ipsum\n", "high ", "keyword ", "author ", "x" * 40, "é"]
    for _ in range(3000):
        pieces = [rnd.choice(filler) for _ in range(rnd.randint(0, 12))]
        pieces += [rnd.choice(_WORDS) for _ in range(rnd.randint(0, 3))]
        rnd.shuffle(pieces)
        text = "".join(pieces) * rnd.choice([1, 1, 5, 20])
        assert s.may_hold_secret(text) == spec(text), text[:200]
    for word in _WORDS:  # each alternative alone, in a long and a short text
        for text in (word, "x" * 300 + " " + word + " " + "y" * 300):
            assert s.may_hold_secret(text) == spec(text), word


# -- docstrings and term counts: the same values, computed once -----------------


def test_docstring_is_ast_get_docstring_once_per_node():
    import ast
    import inspect

    from pycsamt_lsp.pyast.docstrings import cleandoc, docstring

    src = '''"""Module.

    Indented.
"""
class A:
    """\\tTabbed first line.

        deeper
      shallower

    """
    def f(self):
        "one line  "
    def g(self):
        x = 1
async def h():
    """

    starts blank
    """
'''
    tree = ast.parse(src)
    owners = [
        n
        for n in ast.walk(tree)
        if isinstance(
            n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        )
    ]
    for node in owners:
        assert docstring(node) == ast.get_docstring(node)
        assert docstring(node) == ast.get_docstring(node)  # the kept value
    with pytest.raises(TypeError):
        docstring(tree.body[1].body[0])  # an Expr cannot have one
    rnd = random.Random(9)
    parts = ["", " ", "  ", "\t", "\n", "x", " y ", "\u3000", "\x0c", "\r", "    z"]
    for _ in range(20000):
        text = "".join(rnd.choice(parts) for _ in range(rnd.randint(0, 10)))
        assert cleandoc(text) == inspect.cleandoc(text), repr(text)


def test_term_counts_are_the_per_word_merge_in_first_seen_order():
    from collections import Counter

    from pycsamt_lsp.index.tokenize import _WORD, term_counts, word_tokens

    def merged(text: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for raw, n in Counter(_WORD.findall(text)).items():
            for tok in word_tokens(raw):
                counts[tok] = counts.get(tok, 0) + n
        return counts

    text = (
        "StaticShiftAgent estimate_ss_ama foo_foo Foo foo __init__ HTTPServer "
        "the a x1 ss estimate static_shift StaticShift 2024 v2_beta"
    )
    for t in (text, text * 3, "", "one", text[::-1]):
        got = term_counts(t)
        assert list(got.items()) == list(merged(t).items())


# -- deferrable: the scan pattern's alternatives searched one by one --------


def test_deferrable_is_the_scan_pattern_searched_whole():
    """``deferrable`` searches ``_SCANNED``'s alternatives one at a time, each
    behind its literal; the answer is still "nothing the whole pattern
    matches" (fragments around every boundary the lookbehind, ``\\b`` and the
    comment/continuation skip care about)."""
    from pycsamt_lsp.model.deferred import _SCANNED, deferrable

    words = b"setattr .setattr xsetattr _setattr setattr_ setattr( modules .modules"
    words += b" sys. modulesx meta_path meta_pat . # \\ ( a _ 9 \xc3\xa9"
    bits = [*words.split(b" "), b" ", b"\n", b"\t", b". modules"]
    bits += [b".\\\nmodules", b".# c\nmodules"]
    rnd = random.Random(18)
    cases = [b"", b"setattr", b"x.setattr", b"sys.modules", b"meta_path"]
    cases += [b"".join(rnd.choices(bits, k=rnd.randint(1, 12))) for _ in range(4000)]
    seen = {True: 0, False: 0}
    for data in cases:
        want = _SCANNED.search(data) is None
        assert deferrable("geo.tests.m", "source", data) is want, data
        seen[want] += 1
    assert min(seen.values()) > 500  # both answers exercised


# -- json_encoder: encode's C encoder, made once -------------------------------


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_json_encoder_writes_what_encode_writes(ensure_ascii):
    import json

    from pycsamt_lsp.text.jsonenc import json_encoder

    want = json.JSONEncoder(ensure_ascii=ensure_ascii).encode
    got = json_encoder(ensure_ascii=ensure_ascii)
    rnd = random.Random(7)
    values: list[object] = ["", 'é"\\\n\x00\u2028', "\ud800", 0, -3, 1.5, 1e300]
    values += [float("inf"), float("nan"), None, True, False, (), [], {}]
    values += [{1: "a", 2.5: "b", False: "c", None: "d"}, {"z": 1, "a": [None]}]
    values += [_random_tree(rnd) for _ in range(300)]
    for v in values:
        assert got(v) == want(v)
    with pytest.raises(TypeError):
        got({"x": object()})


# -- mask_params: a parameter table's pre-check on its own strings ------------


def test_mask_params_gives_what_mask_tree_gives():
    """Random parameter tables (secret-looking names and defaults, token
    shapes, non-ASCII, odd shapes that take the general path): the same
    masked table as ``mask_tree``, and the table itself whenever
    ``mask_tree`` returns it (its JSON pre-check may also send a clean table
    through the walk, which returns an equal copy)."""
    import copy

    from pycsamt_lsp.text.secrets import mask_params

    names = ["x", "api_key", "author", "token", "cfg", "Kelvin\u212aey", "pwd_", "n"]
    values = [None, "1", '"Jane"', "'sk-abcdefghijklmnop'", "os.environ['TOKEN']"]
    values += ["https://u:pw@h/x", "List[str]", "basic", "ghp_" + "a" * 24, '"é"']
    values += ["AKIA" + "A" * 16, "f(auth)", "a\x00b", "\\bearer"]
    kinds = ["positional_or_keyword", "keyword_only", "var_keyword", "positional_only"]
    rnd = random.Random(19)
    for i in range(3000):
        table = [
            {
                "name": rnd.choice(names),
                "kind": rnd.choice(kinds),
                "default": rnd.choice(values),
                "annotation": rnd.choice(values),
            }
            for _ in range(rnd.randint(0, 4))
        ]
        if i % 50 == 0 and table:  # shapes the pre-check does not know
            table[0][rnd.choice(["kind", "extra"])] = rnd.choice([3, "x", None, []])
        want = mask_tree(copy.deepcopy(table))
        got = mask_params(table)
        assert got == want, table
        if mask_tree(table) is table:
            assert got is table, table


# -- docstrings the chunker's masking found clean: not scanned again ----------


def test_model_facts_from_a_chunked_tree_equal_a_fresh_parse():
    """``chunk_file`` marks the docstrings of clean chunk texts; the package
    model read from that tree skips masking them. Its facts equal those of
    the same bytes parsed afresh, secret-holding docstrings still masked."""
    from pycsamt_lsp.chunking import chunk_file
    from pycsamt_lsp.corpus.profile import load_profile
    from pycsamt_lsp.pyast.docstrings import known_clean

    src = b'''"""Module doc, clean."""
API_KEY = "sk-abcdefghijklmnopqrstuv"
"""A documented constant."""


def clean(a, b=1):
    """Adds a and b."""
    return a + b


def leaky(token="abc"):
    """Call with api_key = 'sk-abcdefghijklmnop1234' set."""


def _private():
    """Not chunked: still masked by the model if needed. token=xyz123"""


class Box:
    """A box; auth."""

    def put(self, x):
        """Puts x with password = 'hunter22'."""

    def get(self):
        """Gets x."""
'''
    fc = chunk_file("pkg/m.py", src, load_profile("pycsamt"))
    tree = fc.tree
    marked = {
        getattr(n, "name", "<module>")
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and known_clean(n)
    }
    assert {"<module>", "clean", "get"} <= marked
    assert not marked & {"leaky", "_private", "put", "Box"}
    from_chunked = ModuleInfo.from_tree(
        tree, name="pkg.m", rel="pkg/m.py", source=src
    ).to_dict()
    assert from_chunked == _info(src)
    assert "sk-abcdefghijklmnop1234" not in str(from_chunked)
    assert "hunter22" not in str(from_chunked)


def test_int_array_is_the_array_of_its_values():
    """``model.state._int_array`` (one ``struct.pack``) makes the array
    ``array("i", values)`` makes: type code, items and bytes."""
    from array import array

    from pycsamt_lsp.model.state import _int_array

    rng = random.Random(7)
    for n in (0, 1, 2, 17, 1000):
        values = [rng.randrange(-(2**31), 2**31) for _ in range(n)]
        got = _int_array(values)
        want = array("i", values)
        assert got.typecode == want.typecode
        assert got == want and got.tobytes() == want.tobytes()


def test_a_build_asks_numpy_for_no_huge_pages_unless_the_user_chose(monkeypatch):
    from pycsamt_lsp import cli

    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    cli._no_numpy_hugepages()
    assert os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0"
    monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
    cli._no_numpy_hugepages()
    assert os.environ["NUMPY_MADVISE_HUGEPAGE"] == "1"


def _plain_infer_workflow(profile, *texts):
    """``Profile.infer_workflow`` as it was: every keyword scanned in order."""
    identity = " ".join(t for t in texts[:2] if t).lower().replace("\\", "/")
    if identity:
        for wf, markers in profile.identity_markers:
            for m in markers:
                if m in identity:
                    return wf
    blob = " ".join(t for t in texts if t).lower()
    if not blob:
        return None
    for wf, keywords in profile.workflows:
        for k in keywords:
            if k in blob:
                return wf
    return None


def test_keyword_guards_are_substrings_of_what_they_guard():
    from pycsamt_lsp.corpus.profile import _guarded, load_profile

    for wf, keywords in load_profile().workflows:
        checks = _guarded(keywords)
        covered = []
        for c in checks:
            if isinstance(c, str):
                covered.append(c)
                # a guard standing for its group: every keyword it replaced
                # contains it
                continue
            guard, *members = c
            assert len(guard) >= 3 and all(guard in m for m in members), (wf, c)
            covered += members
        for k in keywords:  # every keyword is checked, or contains a check
            assert any(c in k for c in covered), (wf, k)


def test_infer_workflow_with_guards_is_the_plain_keyword_scan():
    """Texts made of the profile's keywords, their pieces and near misses
    (a guard without its keyword, a keyword split across words) give the
    workflow the plain scan gives, with and without a path and symbol."""
    from pycsamt_lsp.corpus.profile import load_profile

    profile = load_profile()
    words = [k for _wf, ks in profile.workflows for k in ks]
    pieces = {w[i:j] for w in words for i in range(len(w)) for j in (i + 3, i + 5)}
    vocab = [*words, *sorted(pieces), "Static", "SHIFT", "inversion", "the", "a"]
    rng = random.Random(18)
    for _ in range(3000):
        text = " ".join(rng.choice(vocab) for _ in range(rng.randrange(0, 6)))
        if rng.random() < 0.3:
            text = text.replace(" ", rng.choice(["", "-", "_", "\n"]))
        rel = rng.choice(["pycsamt/core/z.py", "docs/inversion/inv2d.rst", ""])
        symbol = rng.choice([None, "rotate_z", "Occam2D", ""])
        for args in ((text,), (rel, symbol, text), (rel, symbol, None)):
            assert profile.infer_workflow(*args) == _plain_infer_workflow(
                profile, *args
            ), args
