"""Per-file build CPU (issue 18): the faster spellings give exactly what the
per-line ones they replaced gave.

* ``text.secrets.mask_triggered`` finds the lines to mask by one scan of the
  whole text per trigger regex (``_trigger_lines``) instead of testing every
  line with ``may_hold_secret``;
* ``chunking.docs.split_sections`` visits only the lines that can start a
  heading and slices the bodies between them.

The references below are the per-line algorithms as they were.
"""

from __future__ import annotations

import random

import pytest

from pycsamt_lsp.chunking.docs import _rst_heading, split_sections
from pycsamt_lsp.text import secrets
from pycsamt_lsp.text.markup import FENCE, MD_HEADING, RST_ADORNMENT


def _mask_per_line(text: str, python: bool) -> str:
    """``mask`` as it was: every line of a triggering text tested."""
    if not secrets.may_hold_secret(text):
        return text
    if secrets._KEY_BLOCK.search(text):
        return secrets.mask_secrets(text, python=python)[0]
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if secrets.may_hold_secret(line):
            lines[i] = secrets.mask_secrets(line, python=python)[0]
    return "\n".join(lines)


def _sections_per_line(text: str, suffix: str) -> list[tuple[str, int, int, str]]:
    """``split_sections`` as it was: one Python step per line."""
    lines = text.splitlines()
    sections: list[list] = [["", 1, []]]
    i, n = 0, len(lines)
    in_fence = False
    adorned = (
        [bool(RST_ADORNMENT.match(ln)) for ln in lines] + [False]
        if suffix != ".md"
        else []
    )
    while i < n:
        line = lines[i]
        if suffix == ".md":
            if FENCE.match(line):
                in_fence = not in_fence
            m = None if in_fence else MD_HEADING.match(line)
            if m:
                sections.append([m.group(2).strip(), i + 1, []])
                i += 1
                continue
        elif adorned[i] or adorned[i + 1]:
            got = _rst_heading(lines, i)
            if got:
                sections.append([got[0], i + 1, []])
                i += got[1]
                continue
        sections[-1][2].append(line)
        i += 1
    out = []
    for k, (title, start, body) in enumerate(sections):
        end = sections[k + 1][1] - 1 if k + 1 < len(sections) else max(n, 1)
        joined = "\n".join(body).strip()
        if joined or title:
            out.append((title, start, max(end, start), joined))
    return out


#: lines that trigger (or nearly trigger) the secret checks, and plain ones
_SECRET_LINES = [
    "",
    "plain prose about static shift",
    'api_key = "abcd1234efgh"',
    "token: abc123xyz",
    "TOKEN = os.environ['X']",
    "auth",
    "author = 'someone'",
    "oauth_header",
    "Authorization: Bearer abcdefgh12345678",
    "basic validation passes",
    "Basic dXNlcjpwYXNzd29yZA==",
    "see https://user:pw@example.org/path",
    "https://example.org/@handle",
    "ghp_" + "a" * 24,
    "xoxb-" + "1" * 12,
    "sk-" + "b" * 20,
    "AKIA" + "C" * 16,
    "password: str = 'hunter2'",
    "pwd=secret",
    "Straße Σ ΣΑΣ İstanbul \u212aey",
    "credentials\tfile",
    "x" * 300 + " token " + "y" * 10,
    "# a comment: secret = 'value'",
]


def test_trigger_lines_are_the_lines_may_hold_secret_accepts() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        lines = [rng.choice(_SECRET_LINES) for _ in range(rng.randint(1, 9))]
        text = "\n".join(lines)
        want = [i for i, ln in enumerate(lines) if secrets.may_hold_secret(ln)]
        assert secrets._trigger_lines(text) == want, text


@pytest.mark.parametrize("python", [True, False])
def test_mask_is_the_per_line_mask(python: bool) -> None:
    rng = random.Random(11)
    for _ in range(3000):
        text = "\n".join(rng.choice(_SECRET_LINES) for _ in range(rng.randint(1, 9)))
        assert secrets.mask(text, python=python) == _mask_per_line(text, python)
        if secrets.may_hold_secret(text):
            assert secrets.mask_triggered(text, python=python) == _mask_per_line(
                text, python
            )


def test_mask_of_a_private_key_block_masks_the_whole_block() -> None:
    text = (
        "a = 1\n-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----"
    )
    assert secrets.mask(text) == _mask_per_line(text, True)
    assert "MIIabc" not in secrets.mask(text)


_DOC_LINES = [
    "",
    "Title",
    "Another title here",
    "=====",
    "===",
    "---",
    "-----------------------",
    "~~~",
    "~~~~ python",
    "```",
    "```python",
    "  ```",
    "# Heading",
    "## Heading ##",
    "#",
    "#nospace",
    "body text with words",
    "  indented text",
    "\tTabbed",
    "***",
    "=",
    "-- -",
    "text ``` inside",
]


@pytest.mark.parametrize("suffix", [".md", ".rst"])
def test_split_sections_is_the_per_line_split(suffix: str) -> None:
    rng = random.Random(3)
    for _ in range(20000):
        text = "\n".join(rng.choice(_DOC_LINES) for _ in range(rng.randint(0, 10)))
        assert split_sections(text, suffix) == _sections_per_line(text, suffix), text


def test_split_sections_keeps_other_line_breaks() -> None:
    # splitlines() also breaks at \r, \x0b, \x0c, \x1c-\x1e, \x85, \u2028, \u2029
    text = "Title\r=====\rbody\x0cmore\u2028# Head\x85text\n"
    for suffix in (".md", ".rst"):
        assert split_sections(text, suffix) == _sections_per_line(text, suffix)


# -- the build's tokenizer memo ---------------------------------------------


def test_term_counts_with_a_run_memo_is_term_counts_in_order() -> None:
    from pycsamt_lsp.index.tokenize import RunMemo, term_counts

    rng = random.Random(5)
    words = ["StaticShift", "estimate_ss_ama", "__init__", "x", "the", "HTTPServer"]
    words += ["a__b", "_private", "2d", "Ünïcode", "dead band", "self", "v2_data"]
    memo = RunMemo()
    for _ in range(2000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        text = text.replace(" ", rng.choice([" ", "\n", ".", "(", "-"]), 2)
        want = term_counts(text)
        got = term_counts(text, memo)
        assert got == want and list(got) == list(want), text
    assert memo  # it was used


def test_pack_batch_with_a_run_memo_packs_the_same_bytes(tmp_path) -> None:
    import pickle

    from pycsamt_lsp.corpus.profile import profile_from_dict
    from pycsamt_lsp.index.tokenize import RunMemo
    from pycsamt_lsp.model.state import pack_batch

    profile = profile_from_dict(
        {"name": "fixture", "package": "geo", "roots": ["geo", "docs"]}
    )
    (tmp_path / "geo").mkdir()
    (tmp_path / "docs").mkdir()
    files = {
        "geo/__init__.py": '"""Geo package: StaticShift tools."""\n',
        "geo/core.py": (
            '"""Core."""\n\nclass StaticShiftAgent:\n    """Fix a static shift."""\n\n'
            "    def run(self, api_key=None, n_iter=3):\n"
            '        """Run it."""\n        return n_iter\n\n\n'
            'def estimate_ss_ama(data):\n    """AMA estimate."""\n    return data\n'
        ),
        "docs/guide.rst": "Guide\n=====\n\nUse StaticShiftAgent.\n\nMore\n----\n\ntoken: abc\n",
    }
    jobs = []
    for rel, text in sorted(files.items()):
        (tmp_path / rel).write_text(text, encoding="utf-8")
        jobs.append((rel, str(tmp_path / rel), True, rel.endswith(".py")))
    plain = pack_batch((profile, str(tmp_path), jobs))
    memo = RunMemo()
    with_memo = pack_batch((profile, str(tmp_path), memo, jobs))
    assert sum(len(f[3][3]) for f in plain if f[3] is not None) >= 5  # chunk ids
    assert pickle.dumps(with_memo) == pickle.dumps(plain)
    assert memo


def _trigger_lines_by_regex(text: str) -> list[int]:
    """``_trigger_lines`` as the two regexes' scans give it (its spec)."""
    found: set[int] = set()
    for hay, pat in (
        (text.lower(), secrets._TRIGGER_LOW),
        (text, secrets._TRIGGER_SHAPE),
    ):
        found.update(hay.count("\n", 0, m.start()) for m in pat.finditer(hay))
    return sorted(found)


def test_trigger_lines_are_the_regex_scans_lines() -> None:
    pieces = [
        *_SECRET_LINES, "auth", "author", "authoriz", "auth_", "AUTH", "gh", "ghp_",
        "xox", "xoxs-", "://", "@", "/", " ", "\n", "\n\n", "key", "api", "-",
        "_", "private-key", "ACCESS_KEY", "ŞİK", "\u212a", "secret", "xauth",
    ]  # fmt: skip
    rng = random.Random(13)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert secrets._trigger_lines(text) == _trigger_lines_by_regex(text), text
