"""Re-parsing only a saved module's changed statements gives ``ast.parse``'s tree.

``chunking.incremental.parse_module`` splices the previous tree's unchanged
top-level statements around a parse of the changed lines. Every edit here
is checked against a whole parse of the new text: the same dump with
positions, or the same failure. Real modules of the pyCSAMT sdist get the
same random edits in the end-to-end lane.
"""

from __future__ import annotations

import ast
import random
import textwrap
from pathlib import Path

import pytest

from pycsamt_lsp.chunking.incremental import MIN_CHARS, TreeCache, parse_module

SNIPPETS = [
    "x = 1",
    "    return None",
    "else:",
    "    pass",
    "@decorator",
    "def added(a, b=2):",
    "class Added(Base):",
    '"""a docstring line"""',
    "# a comment",
    "",
    "y = (1,",
    "     2)",
    "if x:",
    "    z = 3",
    "elif y:",
    "try:",
    "except Exception:",
    "from __future__ import annotations",
    "import os, sys",
    "value = x \\",
    "s = '''open",
    "'''",
    "\tz = 1",
    "lambda: (yield)",
]


def _module(n_funcs: int = 120) -> str:
    parts = ['"""Module docstring."""', "import os", ""]
    for i in range(n_funcs):
        parts.append(
            textwrap.dedent(
                f'''
                @decorator({i})
                def f{i}(a, b={i}, *args, c: int = 0, **kw) -> int:
                    """Function {i}: adds things."""
                    if a > {i}:
                        return a + b  # a comment
                    for k in range(c):
                        a += k * {i}
                    return a


                class C{i}(Base):
                    attr = {i}

                    def method(self, x):
                        return [y for y in x if y != {i}]
                '''
            )
        )
    return "\n".join(parts)


def _edit(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines) + 1)
        op = rng.choice(("insert", "delete", "replace", "indent"))
        if op == "insert":
            lines[i:i] = rng.sample(SNIPPETS, rng.randint(1, 3))
        elif op == "delete" and lines:
            del lines[i : i + rng.randint(1, 4)]
        elif op == "replace" and i < len(lines):
            lines[i] = rng.choice(SNIPPETS)
        elif i < len(lines):
            lines[i] = "    " + lines[i]
    return "\n".join(lines)


def _same(text: str, edited: str, rel: str = "m.py") -> bool | None:
    """Checks the incremental parse of *edited* after *text* against the whole
    one; returns whether it was incremental (None: *edited* does not parse)."""
    cache = TreeCache()
    cache.put(rel, text, ast.parse(text))
    try:
        want = ast.dump(ast.parse(edited), include_attributes=True)
    except SyntaxError:
        with pytest.raises(SyntaxError):
            parse_module(edited, rel, cache)
        return None
    tree, incremental = parse_module(edited, rel, cache)
    assert ast.dump(tree, include_attributes=True) == want
    # the cache now holds the new tree: a second edit builds on it
    again = edited + "\n\nlate = 1\n"
    tree2, inc2 = parse_module(again, rel, cache)
    assert ast.dump(tree2, include_attributes=True) == ast.dump(
        ast.parse(again), include_attributes=True
    )
    assert inc2 or "__future__" in again
    return incremental


def test_random_edits_give_the_whole_parse() -> None:
    text = _module(60)
    assert len(text) > MIN_CHARS
    rng = random.Random(20261201)
    got = [_same(text, _edit(rng, text)) for _ in range(150)]
    valid = [g for g in got if g is not None]
    assert len(valid) >= 20
    # most edits that parse are parsed in their region, not by the fallback
    assert sum(valid) > 0.6 * len(valid)


def test_edits_that_join_statements_fall_back() -> None:
    text = _module(60)
    lines = text.split("\n")
    at = lines.index("def f30(a, b=30, *args, c: int = 0, **kw) -> int:")
    cases = {
        "a decorator before an unchanged def": [*lines[:at], "@extra", *lines[at:]],
        "an else added to an if above": [
            *lines[: at - 4],
            "else:",
            "    q = 1",
            *lines[at - 4 :],
        ],
        "a line continued into the next statement": [
            *lines[: at - 2],
            "v = 1 + \\",
            *lines[at - 2 :],
        ],
    }
    for why, new in cases.items():
        edited = "\n".join(new)
        try:
            want = ast.dump(ast.parse(edited), include_attributes=True)
        except SyntaxError:
            continue
        cache = TreeCache()
        cache.put("m.py", text, ast.parse(text))
        tree, _ = parse_module(edited, "m.py", cache)
        assert ast.dump(tree, include_attributes=True) == want, why


def test_the_cache_is_bounded_and_skips_small_files() -> None:
    cache = TreeCache(max_files=2, max_chars=1_000_000)
    big = _module(60)
    cache.put("small.py", "x = 1\n", ast.parse("x = 1\n"))
    assert len(cache) == 0
    for name in ("a.py", "b.py", "c.py"):
        cache.put(name, big, ast.parse(big))
    assert len(cache) == 2 and cache.take("a.py") is None
    assert cache.take("c.py") is not None


def test_priming_keeps_the_whole_parse_and_never_replaces_a_newer_tree() -> None:
    """An opened file's tree (``TreeCache.prime``) is ``ast.parse``'s, its
    first save is spliced from it, and a tree a save kept first stays."""
    text = _module(60)
    cache = TreeCache()
    assert cache.prime("m.py", text)
    edited = text.replace("def f30(", "def g30(x):\n    return x\n\n\ndef f30(")
    tree, incremental = parse_module(edited, "m.py", cache)
    assert incremental
    assert ast.dump(tree, include_attributes=True) == ast.dump(
        ast.parse(edited), include_attributes=True
    )
    assert not cache.prime("m.py", text)  # the save's tree is newer: kept
    kept = cache.take("m.py")
    assert kept is not None and kept[0] == edited
    assert not cache.prime("small.py", "x = 1\n")  # below MIN_CHARS
    assert not cache.prime("bad.py", text + "\ndef (:\n")  # the save reports it
    assert len(cache) == 0


@pytest.mark.e2e
def test_real_modules_under_random_edits(real_corpus: Path) -> None:
    files = sorted((real_corpus / "pycsamt").rglob("*.py"))
    big = [p for p in files if p.stat().st_size > MIN_CHARS]
    rng = random.Random(7)
    for p in rng.sample(big, 12):
        text = p.read_text(encoding="utf-8")
        if "\r" in text:
            continue
        for _ in range(15):
            _same(text, _edit(rng, text), p.name)
