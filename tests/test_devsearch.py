"""Developer source search (issue 6): ranking, bounds, safety, evidence.

Most tests build a tiny corpus in ``tmp_path``; the ``corpus`` tests read the
real pyCSAMT sdist (never imported or executed).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zlib
from datetime import datetime
from pathlib import Path

import pytest

from pycsamt_lsp.corpus.profile import load_profile
from pycsamt_lsp.devsearch import files as devsearch_files
from pycsamt_lsp.devsearch.search import (
    MAX_RESULTS,
    TEST_ROLE,
    DevSearchError,
    SearchLimits,
    inspect_symbol,
    mask_secrets,
    read_checkout,
    read_source,
    search_source,
)

PROFILE = load_profile("pycsamt")
SHA_A = "a" * 40
SHA_B = "b" * 40
SHA_TAG = "d" * 40  # an annotated tag object (never a commit)

VALIDATION = '''"""Validation helpers."""


def _check(state):
    return {"state": state}


def validate_generated_code(code, *, root=None):
    """Check generated code statically."""
    return _check("ok")


class Agent:
    """An agent."""

    def _dispatch_code(self, text: str, out=None) -> dict:
        """Route code requests."""
        return validate_generated_code(text)
'''

CALLER = """from pycsamt.tools.validation import validate_generated_code

# validate_generated_code is called here twice
result = validate_generated_code("x = 1")
other = validate_generated_code("y = 2")
"""

SECRETS = '''"""Settings (a fixture with fake credentials)."""

api_key = "sk-abcdefghijklmnop1234"
password = "hunter2hunter2"
OPENAI_API_KEY = "sk-proj-ABCDEFGHIJKLMNOP"
AWS_ACCESS = "AKIAABCDEFGHIJKLMNOP"
aws_secret_access_key = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
headers = {"Authorization": "Bearer abcdef0123456789abcdef"}
settings_marker = 1


def connect(api_key=None, token: str = "", password=password):
    """Keep names and non-secret values."""
    max_tokens = 4096
    return api_key, token, max_tokens
'''


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small corpus: source, a caller, secrets, tests and excluded files."""
    root = tmp_path / "corpus"
    write(
        root,
        "PKG-INFO",
        "Metadata-Version: 2.1\nName: pycsamt\nVersion: 1.2.3\n\nbody\n",
    )
    write(root, "pycsamt/__init__.py", '"""Package."""\n__version__ = "1.2.3"\n')
    write(root, "pycsamt/tools/validation.py", VALIDATION)
    write(root, "pycsamt/agents/caller.py", CALLER)
    write(root, "pycsamt/config/settings.py", SECRETS)
    write(
        root,
        "pycsamt/tests/test_validation.py",
        "def test_validate_generated_code():\n    assert uniquetestword\n",
    )
    write(root, "docs/source/guide.md", "# Static shift\n\nUse the correction agent.\n")
    for rel in (
        "pycsamt/.hidden/h.py",
        "pycsamt/__pycache__/c.py",
        "pycsamt/build/b.py",
        "pycsamt/x.egg-info/e.py",
        "pycsamt/node_modules/n.py",
        "pycsamt/_static/s.py",
        "pycsamt/.env",
        "pycsamt/prod.env",
        "pycsamt/secrets.py",
        "pycsamt/credentials.py",
        "pycsamt/server.pem",
        "pycsamt/id_rsa",
        "tests/test_top.py",
        "setup.py",
    ):
        write(root, rel, "forbiddenmarker = 1\n")
    return root


def search(root: Path, query: str, **kw) -> dict:
    result = search_source(root, query, profile=PROFILE, **kw)
    json.dumps(result)  # every answer is JSON-serialisable, unchanged
    return result


# -- ranking ---------------------------------------------------------------------------


def test_definition_ranks_first_with_its_line(corpus):
    r = search(corpus, "Where is validate_generated_code implemented?")
    top = r["results"][0]
    assert top["path"] == "pycsamt/tools/validation.py"
    assert top["line"] == top["line_start"] == 8
    assert top["match"] == "definition"
    assert top["symbol"]["name"] == "validate_generated_code"
    assert "def validate_generated_code" in top["excerpt"]
    # the caller mentions it three times but only mentions it
    paths = [x["path"] for x in r["results"]]
    assert "pycsamt/agents/caller.py" in paths[1:]
    assert r["terms"]["identifiers"] == ["validate_generated_code"]
    assert r["limitation"] is None and r["truncated"] is False


def test_method_definition_and_qualified_name(corpus):
    r = search(corpus, "Agent._dispatch_code")
    top = r["results"][0]
    assert (top["path"], top["line"]) == ("pycsamt/tools/validation.py", 16)
    assert top["symbol"] == {
        "name": "Agent._dispatch_code",
        "kind": "method",
        "line_start": 16,
        "line_end": 18,
    }


def test_identifier_aware_words_find_camel_and_snake(tmp_path):
    root = tmp_path / "c"
    write(root, "pycsamt/agents/ss.py", "class StaticShiftAgent:\n    pass\n")
    write(root, "pycsamt/emtools/other.py", "x = 'static'\n")
    r = search(root, "static shift agent")
    assert r["results"][0]["path"] == "pycsamt/agents/ss.py"
    assert r["results"][0]["match"] == "definition"
    assert r["results"][0]["symbol"]["name"] == "StaticShiftAgent"


def test_mentions_get_the_densest_window_and_enclosing_symbol(corpus):
    r = search(corpus, "_check state")
    by_path = {x["path"]: x for x in r["results"]}
    hit = by_path["pycsamt/tools/validation.py"]
    assert hit["line"] == 4 and hit["symbol"]["name"] == "_check"


def test_docs_results_name_their_section(corpus):
    r = search(corpus, "correction agent")
    doc = next(x for x in r["results"] if x["path"] == "docs/source/guide.md")
    assert doc["symbol"] == {
        "name": "Static shift",
        "kind": "section",
        "line_start": 1,
        "line_end": None,
    }
    assert doc["role"] == "documentation"


def test_limit_is_capped_at_six(tmp_path):
    root = tmp_path / "c"
    for i in range(10):
        write(root, f"pycsamt/m{i}.py", f"def f{i}():\n    return 'needle'\n")
    assert len(search(root, "needle", limit=50)["results"]) == MAX_RESULTS
    r = search(root, "needle", limit=2)
    assert len(r["results"]) == 2 and r["limit"] == 2


def test_nothing_found_states_a_limitation(corpus):
    r = search(corpus, "Where is zzz_not_there implemented?")
    assert r["results"] == []
    assert r["limitation"].startswith(
        "no implementation found within the searched bounds"
    )


def test_an_absent_identifier_is_said_not_guessed(corpus):
    r = search(corpus, "Where is validate_everything implemented?")
    assert r["results"]  # 'validate' is a shared word ...
    assert r["limitation"].startswith("validate_everything does not occur")


def test_grammar_only_query_searches_nothing(corpus):
    r = search(corpus, "where is it?")
    assert r["results"] == [] and "no searchable words" in r["limitation"]
    assert r["counts"]["files_considered"] == 0


def test_missing_roots_are_stated(tmp_path):
    r = search(tmp_path, "validate_generated_code")
    assert r["results"] == [] and r["roots"] == []
    assert "none of the eligible roots" in r["limitation"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"query": ""}, "non-empty"),
        ({"query": "   "}, "non-empty"),
        ({"query": 3}, "non-empty"),
        ({"query": "x" * 2000}, "longer than"),
        ({"query": "x", "limit": 0}, "positive integer"),
        ({"query": "x", "limit": True}, "positive integer"),
        ({"query": "x", "include_tests": "yes"}, "true or false"),
    ],
)
def test_bad_search_arguments_raise(corpus, kwargs, message):
    with pytest.raises(DevSearchError, match=message):
        search_source(corpus, profile=PROFILE, **kwargs)


def test_bad_root_raises(tmp_path):
    with pytest.raises(DevSearchError, match="not a folder"):
        search_source(tmp_path / "missing", "x", profile=PROFILE)


# -- live: no index ---------------------------------------------------------------------


def test_an_edit_is_found_on_the_next_search(corpus):
    assert search(corpus, "brand_new_function")["results"] == []
    write(corpus, "pycsamt/tools/new.py", "def brand_new_function():\n    return 1\n")
    r = search(corpus, "brand_new_function")
    assert r["results"][0]["path"] == "pycsamt/tools/new.py"
    assert r["results"][0]["line"] == 1
    # and an edit that moves it is seen too
    write(
        corpus,
        "pycsamt/tools/new.py",
        "\n\n\ndef brand_new_function():\n    return 2\n",
    )
    assert search(corpus, "brand_new_function")["results"][0]["line"] == 4


# -- bounds ----------------------------------------------------------------------------


def many_files(tmp_path: Path, n: int = 8) -> Path:
    root = tmp_path / "many"
    for i in range(n):
        write(root, f"pycsamt/f{i}.py", f"def f{i}():\n    return 'needle'\n")
    return root


def limit_names(result: dict) -> list[str]:
    return [h["limit"] for h in result["limits_hit"]]


def test_max_files_bound(tmp_path):
    root = many_files(tmp_path)
    r = search(root, "needle", limits=SearchLimits(max_files=3))
    assert limit_names(r) == ["max_files"] and r["truncated"]
    assert r["counts"]["files_considered"] == 3
    assert "3 candidate files" in r["limits_hit"][0]["message"]
    assert r["limitation"].startswith("results may be incomplete")


def test_max_bytes_bound(tmp_path):
    root = many_files(tmp_path)
    size = (root / "pycsamt/f0.py").stat().st_size
    r = search(root, "needle", limits=SearchLimits(max_bytes=3 * size + 1))
    assert limit_names(r) == ["max_bytes"] and r["truncated"]
    assert r["counts"]["bytes_inspected"] <= 3 * size + 1
    assert r["counts"]["files_scanned"] == 3


class FakeClock:
    """Advances one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_scan_time_bound(tmp_path):
    root = many_files(tmp_path)
    limits = SearchLimits(scan_seconds=2.5, enumerate_seconds=1e9, clock=FakeClock())
    r = search(root, "needle", limits=limits)
    assert limit_names(r) == ["scan_seconds"] and r["truncated"]
    assert 0 < r["counts"]["files_scanned"] < 8
    assert "scan budget" in r["limits_hit"][0]["message"]


def test_enumeration_time_bound(tmp_path):
    root = many_files(tmp_path)
    limits = SearchLimits(enumerate_seconds=3.5, scan_seconds=1e9, clock=FakeClock())
    r = search(root, "needle", limits=limits)
    assert limit_names(r) == ["enumerate_seconds"] and r["truncated"]
    assert 0 < r["counts"]["files_considered"] < 8
    assert "enumeration budget" in r["limits_hit"][0]["message"]


def test_oversized_files_are_skipped_and_counted(tmp_path):
    root = many_files(tmp_path, 2)
    write(root, "pycsamt/big.py", "needle = 1\n" + "#" * 5000 + "\n")
    r = search(root, "needle", limits=SearchLimits(max_file_bytes=1000))
    assert "pycsamt/big.py" not in [x["path"] for x in r["results"]]
    assert r["counts"]["files_skipped_too_large"] == 1
    assert limit_names(r) == ["max_file_bytes"]
    assert "pycsamt/big.py" in r["limits_hit"][0]["message"]


def test_default_limits_match_the_issue():
    lim = SearchLimits()
    assert (
        lim.max_files,
        lim.max_bytes,
        lim.scan_seconds,
        lim.enumerate_seconds,
        lim.max_file_bytes,
    ) == (6000, 32 * 1024 * 1024, 10.0, 5.0, 1_000_000)


# -- exclusions, tests, symlinks ---------------------------------------------------------------


def test_excluded_files_are_never_searched(corpus):
    r = search(corpus, "forbiddenmarker")
    assert r["results"] == []
    assert r["counts"]["files_excluded"] >= 6 and r["counts"]["dirs_excluded"] >= 6
    r = search(corpus, "forbiddenmarker", include_tests=True)
    assert r["results"] == []  # tests/ at the top is outside the eligible roots


def test_tests_only_when_asked_and_labelled(corpus):
    r = search(corpus, "uniquetestword")
    assert r["results"] == [] and r["counts"]["tests_excluded"] == 1
    r = search(
        corpus,
        "Show the unit tests for test_validate_generated_code",
        include_tests=True,
    )
    top = r["results"][0]
    assert top["path"] == "pycsamt/tests/test_validation.py"
    assert top["role"] == TEST_ROLE
    assert all(x["role"] != TEST_ROLE for x in r["results"][1:])


@pytest.mark.skipif(os.name == "nt", reason="symlinks")
def test_symlink_out_of_the_root_is_not_searched_or_read(corpus, tmp_path):
    outside = write(tmp_path / "outside", "leak.py", "def leakedsymbol():\n    pass\n")
    (corpus / "pycsamt/link.py").symlink_to(outside)
    (corpus / "pycsamt/linkdir").symlink_to(outside.parent, target_is_directory=True)
    assert search(corpus, "leakedsymbol")["results"] == []
    for rel in ("pycsamt/link.py", "pycsamt/linkdir/leak.py"):
        with pytest.raises(DevSearchError, match="resolves outside"):
            read_source(corpus, rel, profile=PROFILE)


@pytest.mark.skipif(os.name == "nt", reason="symlinks")
def test_symlink_inside_the_roots_is_followed(corpus):
    (corpus / "pycsamt/alias.py").symlink_to(corpus / "pycsamt/tools/validation.py")
    assert read_source(corpus, "pycsamt/alias.py", profile=PROFILE)["end"] >= 1


@pytest.mark.skipif(os.name == "nt", reason="symlinks")
def test_symlink_to_a_refused_file_inside_the_roots(corpus):
    (corpus / "pycsamt/notes.py").symlink_to(corpus / "pycsamt/secrets.py")
    (corpus / "pycsamt/hid.py").symlink_to(corpus / "pycsamt/.hidden/h.py")
    assert search(corpus, "forbiddenmarker")["results"] == []
    with pytest.raises(DevSearchError, match="resolves to a refused file"):
        read_source(corpus, "pycsamt/notes.py", profile=PROFILE)
    with pytest.raises(DevSearchError, match="resolves into a hidden folder"):
        read_source(corpus, "pycsamt/hid.py", profile=PROFILE)


@pytest.mark.parametrize(
    "path, reason",
    [
        ("../../etc/passwd", "traversal"),
        ("pycsamt/../../etc/passwd", "traversal"),
        ("pycsamt/tools/../../../etc/passwd", "traversal"),
        ("/etc/passwd", "absolute"),
        ("\\etc\\passwd", "absolute"),
        ("C:\\Windows\\win.ini", "absolute"),
        ("~/.ssh/id_rsa", "absolute"),
        ("setup.py", "outside the eligible roots"),
        ("tests/test_top.py", "outside the eligible roots"),
        ("pycsamt/.env", "hidden"),
        ("pycsamt/.hidden/h.py", "hidden"),
        ("pycsamt/__pycache__/c.py", "cache"),
        ("pycsamt/prod.env", "sensitive"),
        ("pycsamt/secrets.py", "sensitive"),
        ("pycsamt/credentials.py", "sensitive"),
        ("pycsamt/server.pem", "sensitive"),
        ("pycsamt/id_rsa", "sensitive"),
        ("pycsamt/nope.py", "no such file"),
        ("", "non-empty"),
    ],
)
def test_refused_paths(corpus, path, reason):
    with pytest.raises(DevSearchError, match=reason) as err:
        read_source(corpus, path, profile=PROFILE)
    assert "\n" not in str(err.value)
    with pytest.raises(DevSearchError, match=reason):
        inspect_symbol(corpus, path, "x", profile=PROFILE)


# -- secret masking ----------------------------------------------------------------------------


def test_secrets_are_masked_in_read_source(corpus):
    r = read_source(corpus, "pycsamt/config/settings.py", profile=PROFILE)
    text = r["text"]
    for secret in (
        "sk-abcdefghijklmnop1234",
        "hunter2hunter2",
        "sk-proj-ABCDEFGHIJKLMNOP",
        "AKIAABCDEFGHIJKLMNOP",
        "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
        "abcdef0123456789abcdef",
    ):
        assert secret not in text
    assert 'api_key = "***"' in text and 'password = "***"' in text
    assert 'OPENAI_API_KEY = "***"' in text and 'aws_secret_access_key = "***"' in text
    # code that only names a credential is kept
    assert 'def connect(api_key=None, token: str = "", password=password):' in text
    assert "max_tokens = 4096" in text
    assert r["masked_lines"] == 6


def test_secrets_are_masked_in_search_excerpts(corpus):
    r = search(corpus, "settings_marker api_key")
    blob = json.dumps(r)
    assert "sk-abcdefghijklmnop1234" not in blob and "hunter2hunter2" not in blob
    assert any("***" in x["excerpt"] for x in r["results"])


@pytest.mark.parametrize(
    "line, python, expected",
    [
        ("OPENAI_API_KEY=sk-abcdefghijklmnopqrst", False, "OPENAI_API_KEY=***"),
        ("export TOKEN=abc123def", False, "export TOKEN=***"),
        ("password: hunter2", False, "password: ***"),
        ("token: ghp_abcdefghijklmnopqrstuvwxyz0123", False, "token: ***"),
        ('"api_key": "abc"', True, '"api_key": "***"'),
        (
            "curl -H 'Authorization: Bearer abcdefghijkl'",
            False,
            "curl -H 'Authorization: Bearer ***'",
        ),
        (
            "url = 'https://user:pa55word@host/x'",
            True,
            "url = 'https://user:***@host/x'",
        ),
        ("key AKIAABCDEFGHIJKLMNOP here", False, "key *** here"),
        (
            "api_key = os.environ['OPENAI_API_KEY']",
            True,
            "api_key = os.environ['OPENAI_API_KEY']",
        ),
        ("secret = None", False, "secret = None"),
        ("if password == 'x':", True, "if password == 'x':"),
        ("tokenizer = 'cl100k'", True, "tokenizer = 'cl100k'"),
    ],
)
def test_mask_secrets_lines(line, python, expected):
    assert mask_secrets(line, python=python)[0] == expected


def test_private_key_block_is_masked():
    text = "a = 1\n-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\nb"
    masked, n = mask_secrets(text)
    assert "MIIEabc" not in masked and n == 3
    assert masked.startswith("a = 1\n") and masked.endswith("\nb")


# -- read_source ----------------------------------------------------------------------------------


def test_read_source_window_and_clamp(tmp_path):
    root = tmp_path / "c"
    write(root, "pycsamt/long.py", "".join(f"x{i} = {i}\n" for i in range(1, 201)))
    r = read_source(root, "pycsamt/long.py", start=5, lines=3, profile=PROFILE)
    assert (r["start"], r["end"], r["text"]) == (5, 7, "x5 = 5\nx6 = 6\nx7 = 7")
    assert (
        r["truncated"] is False and r["more_after"] is True and r["total_lines"] == 200
    )
    r = read_source(root, "pycsamt/long.py", lines=500, profile=PROFILE)
    assert (r["start"], r["end"]) == (1, 80) and r["truncated"]
    assert "clamped to 80 lines" in r["truncation"]
    assert len(r["text"].split("\n")) == 80


def test_read_source_character_cap(tmp_path):
    root = tmp_path / "c"
    write(
        root, "pycsamt/wide.py", "".join(f"v{i} = '{'y' * 190}'\n" for i in range(60))
    )
    r = read_source(root, "pycsamt/wide.py", profile=PROFILE)
    assert len(r["text"]) <= 4000 and r["truncated"]
    assert "4,000 characters" in r["truncation"] and r["end"] < 60
    write(root, "pycsamt/one.py", "z = '" + "q" * 9000 + "'\n")
    r = read_source(root, "pycsamt/one.py", profile=PROFILE)
    assert len(r["text"]) == 4000 and "line 1 cut" in r["truncation"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"start": 0}, "start must be 1 or more"),
        ({"start": -3}, "start must be 1 or more"),
        ({"start": "1"}, "start must be an integer"),
        ({"lines": 0}, "lines must be 1 or more"),
        ({"lines": 2.5}, "lines must be an integer"),
        ({"start": 999}, "past the end"),
    ],
)
def test_read_source_bad_arguments(corpus, kwargs, message):
    with pytest.raises(DevSearchError, match=message):
        read_source(corpus, "pycsamt/tools/validation.py", profile=PROFILE, **kwargs)


def test_read_source_crlf_and_json(corpus):
    write(corpus, "pycsamt/win.py", b"a = 1\r\nb = 2\r\n")
    r = read_source(corpus, "pycsamt/win.py", profile=PROFILE)
    assert (r["text"], r["total_lines"]) == ("a = 1\nb = 2", 2)
    json.dumps(r)
    json.dumps(
        inspect_symbol(corpus, "pycsamt/tools/validation.py", "Agent", profile=PROFILE)
    )


def test_read_source_labels_tests(corpus):
    r = read_source(corpus, "pycsamt/tests/test_validation.py", profile=PROFILE)
    assert r["role"] == TEST_ROLE


# -- inspect_symbol -------------------------------------------------------------------------------


def test_inspect_function(corpus):
    r = inspect_symbol(
        corpus,
        "pycsamt/tools/validation.py",
        "validate_generated_code",
        profile=PROFILE,
    )
    assert r["signature"] == "def validate_generated_code(code, *, root=None)"
    assert r["docstring"] == "Check generated code statically."
    assert (r["line_start"], r["line_end"], r["kind"]) == (8, 10, "function")
    assert (
        r["evidence"]["sha256"]
        == hashlib.sha256(
            (corpus / "pycsamt/tools/validation.py").read_bytes()
        ).hexdigest()
    )


def test_inspect_method_and_class(corpus):
    r = inspect_symbol(
        corpus, "pycsamt/tools/validation.py", "Agent._dispatch_code", profile=PROFILE
    )
    assert r["signature"] == "def _dispatch_code(self, text: str, out=None) -> dict"
    assert (r["kind"], r["line_start"], r["line_end"]) == ("method", 16, 18)
    leaf = inspect_symbol(
        corpus, "pycsamt/tools/validation.py", "_dispatch_code", profile=PROFILE
    )
    assert leaf["symbol"] == "Agent._dispatch_code"
    cls = inspect_symbol(
        corpus, "pycsamt/tools/validation.py", "Agent", profile=PROFILE
    )
    assert (cls["signature"], cls["docstring"]) == ("class Agent", "An agent.")


def test_inspect_masks_secret_defaults(corpus):
    write(
        corpus,
        "pycsamt/tools/client.py",
        'def make(api_key="sk-abcdefghijklmnop1234"):\n    """Build."""\n',
    )
    r = inspect_symbol(corpus, "pycsamt/tools/client.py", "make", profile=PROFILE)
    assert "sk-abcdefghijklmnop" not in r["signature"] and "***" in r["signature"]


def test_inspect_errors(corpus):
    with pytest.raises(
        DevSearchError, match=r"'nope' not found in .*defined there: _check"
    ):
        inspect_symbol(corpus, "pycsamt/tools/validation.py", "nope", profile=PROFILE)
    with pytest.raises(DevSearchError, match="dotted Python name"):
        inspect_symbol(corpus, "pycsamt/tools/validation.py", "a b", profile=PROFILE)
    with pytest.raises(DevSearchError, match="Python files only"):
        inspect_symbol(corpus, "docs/source/guide.md", "x", profile=PROFILE)
    write(corpus, "pycsamt/broken.py", "def (:\n")
    with pytest.raises(DevSearchError, match="does not parse"):
        inspect_symbol(corpus, "pycsamt/broken.py", "x", profile=PROFILE)


# -- evidence -------------------------------------------------------------------------------------------


def test_evidence_fields(corpus):
    r = search(corpus, "validate_generated_code")
    ev = r["results"][0]["evidence"]
    data = (corpus / "pycsamt/tools/validation.py").read_bytes()
    assert ev["sha256"] == hashlib.sha256(data).hexdigest() and ev["size_bytes"] == len(
        data
    )
    read_at = datetime.fromisoformat(ev["read_at"].replace("Z", "+00:00"))
    assert read_at.utcoffset().total_seconds() == 0
    assert abs(time.time() - read_at.timestamp()) < 60
    assert (ev["package_version"], ev["version_source"]) == ("1.2.3", "PKG-INFO")
    assert ev["version_mismatch"] is False and ev["changed_during_search"] is False
    assert ev["flags"] == [] and ev["revision"] is None
    assert "not a git checkout" in ev["revision_source"]


def test_version_mismatch_between_pkg_info_and_source(corpus):
    write(corpus, "pycsamt/__init__.py", '__version__ = "1.3.0.dev0"\n')
    ck = read_checkout(corpus, PROFILE)
    assert ck["version_mismatch"] is True and ck["package_version"] == "1.2.3"
    assert "pycsamt/__init__.py __version__ says 1.3.0.dev0" in ck["version_note"]
    ev = search(corpus, "validate_generated_code")["results"][0]["evidence"]
    assert ev["version_mismatch"] is True and "version_mismatch" in ev["flags"]


def test_version_fallbacks(tmp_path):
    root = tmp_path / "c"
    write(root, "pyproject.toml", '[project]\nname = "pycsamt"\nversion = "2.0.0"\n')
    write(
        root,
        "pycsamt/__init__.py",
        "try:\n    __version__ = f()\nexcept Exception:\n"
        '    __version__ = "0+unknown"\n',
    )
    ck = read_checkout(root, PROFILE)
    assert (ck["package_version"], ck["version_mismatch"]) == ("2.0.0", False)
    assert ck["version_source"] == "pyproject.toml [project] version"
    write(root, "pyproject.toml", '[project]\nname = "other-tool"\nversion = "9.0"\n')
    assert read_checkout(root, PROFILE)["package_version"] is None  # not our project
    (root / "pyproject.toml").unlink()
    write(root, "pycsamt/_version.py", 'version = __version__ = "3.1"\n')
    assert read_checkout(root, PROFILE)["package_version"] == "3.1"
    (root / "pycsamt/_version.py").unlink()
    ck = read_checkout(root, PROFILE)
    assert ck["package_version"] is None and "no version metadata" in ck["version_note"]


def fake_git(root: Path, head: str = "ref: refs/heads/main\n") -> Path:
    git = root / ".git"
    write(git, "HEAD", head)
    write(
        git,
        "packed-refs",
        f"# pack-refs with: peeled\n{SHA_A} refs/heads/main\n"
        f"{SHA_TAG} refs/tags/v1.2.3\n^{SHA_A}\n{SHA_B} refs/heads/other\n",
    )
    return git


def test_revision_from_packed_refs(corpus):
    fake_git(corpus)
    ck = read_checkout(corpus, PROFILE)
    assert ck["revision"] == SHA_A and ck["ref"] == "refs/heads/main"
    assert "packed-refs" in ck["revision_source"]
    assert ck["tags_at_head"] == ["v1.2.3"]  # annotated tag, peeled in packed-refs
    assert ck["version_mismatch"] is False


def test_loose_ref_wins_over_packed(corpus):
    git = fake_git(corpus)
    write(git, "refs/heads/main", SHA_B + "\n")
    ck = read_checkout(corpus, PROFILE)
    assert ck["revision"] == SHA_B and "loose ref" in ck["revision_source"]
    assert ck["tags_at_head"] == [] and "no version tag" in ck["version_note"]
    ev = search(corpus, "validate_generated_code")["results"][0]["evidence"]
    assert ev["revision"] == SHA_B


def test_detached_head_and_tag_mismatch(corpus):
    git = fake_git(corpus, head=SHA_B + "\n")
    write(git, "refs/tags/v9.9.9", SHA_B + "\n")
    ck = read_checkout(corpus, PROFILE)
    assert ck["revision"] == SHA_B and "detached" in ck["revision_source"]
    assert ck["tags_at_head"] == ["v9.9.9"]
    assert ck["version_mismatch"] is True and "v9.9.9" in ck["version_note"]


def test_annotated_loose_tag_is_peeled(corpus):
    git = fake_git(corpus)
    tag_sha = "c" * 40
    obj = zlib.compress(
        b"tag 60\x00object " + SHA_A.encode() + b"\ntype commit\ntag v1.2.3\n"
    )
    write(git, f"objects/{tag_sha[:2]}/{tag_sha[2:]}", obj)
    write(git, "refs/tags/release-1.2.3", tag_sha + "\n")
    assert "release-1.2.3" in read_checkout(corpus, PROFILE)["tags_at_head"]


def test_git_file_pointing_to_a_gitdir(corpus, tmp_path):
    real = fake_git(tmp_path / "elsewhere")
    (corpus / ".git").write_text(f"gitdir: {real}\n", encoding="utf-8")
    assert read_checkout(corpus, PROFILE)["revision"] == SHA_A


def test_worktree_commondir(corpus, tmp_path):
    common = fake_git(tmp_path / "main")
    wt = common / "worktrees" / "wt"
    write(wt, "HEAD", "ref: refs/heads/other\n")
    write(wt, "commondir", "../..\n")
    (corpus / ".git").write_text(f"gitdir: {wt}\n", encoding="utf-8")
    assert read_checkout(corpus, PROFILE)["revision"] == SHA_B


def test_hostile_ref_is_not_followed(corpus):
    fake_git(corpus, head="ref: ../../../etc/passwd\n")
    ck = read_checkout(corpus, PROFILE)
    assert ck["revision"] is None and "unresolved" in ck["revision_source"]


def test_concurrent_edit_is_flagged(corpus, monkeypatch):
    target = corpus / "pycsamt/tools/validation.py"
    real_read = devsearch_files._read_bytes
    calls: list[Path] = []

    def reader(path: Path, max_bytes: int) -> bytes | None:
        data = real_read(path, max_bytes)
        calls.append(path)
        if path == target and calls.count(target) == 1:  # edited right after the read
            target.write_text(VALIDATION + "\n# saved meanwhile\n", encoding="utf-8")
        return data

    monkeypatch.setattr(devsearch_files, "_read_bytes", reader)
    r = search(corpus, "validate_generated_code")
    top = r["results"][0]
    assert top["path"] == "pycsamt/tools/validation.py"
    assert top["evidence"]["changed_during_search"] is True
    assert "changed_during_search" in top["evidence"]["flags"]
    assert top["evidence"]["sha256"] == hashlib.sha256(VALIDATION.encode()).hexdigest()
    others = [x["evidence"]["changed_during_search"] for x in r["results"][1:]]
    assert others and not any(others)


def test_nothing_is_imported_or_executed(corpus):
    write(
        corpus,
        "pycsamt/boom.py",
        "raise SystemExit('executed!')\ndef boom_marker():\n    pass\n",
    )
    r = search(corpus, "boom_marker")
    assert r["results"][0]["path"] == "pycsamt/boom.py"
    assert inspect_symbol(corpus, "pycsamt/boom.py", "boom_marker", profile=PROFILE)


# -- the real corpus --------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_real_corpus_validate_generated_code(real_corpus, capsys):
    t0 = time.perf_counter()
    r = search_source(
        real_corpus, "Where is validate_generated_code implemented?", profile=PROFILE
    )
    elapsed = time.perf_counter() - t0
    top = r["results"][0]
    assert top["path"] == "pycsamt/assistant/tools/validation_tools.py"
    src = (real_corpus / top["path"]).read_text(encoding="utf-8").splitlines()
    assert src[top["line"] - 1].startswith("def validate_generated_code(")
    assert (
        top["match"] == "definition"
        and top["symbol"]["name"] == "validate_generated_code"
    )
    assert top["evidence"]["package_version"] == "2.6.4"
    assert top["evidence"]["version_mismatch"] is False
    assert r["truncated"] is False and len(r["results"]) <= MAX_RESULTS
    with capsys.disabled():
        print(
            f"\n[devsearch] real corpus: {r['counts']['files_scanned']} files, "
            f"{r['counts']['bytes_inspected']:,} bytes in {elapsed * 1000:.0f} ms"
        )


@pytest.mark.corpus
def test_real_corpus_dispatch_code_definitions_first(real_corpus):
    r = search_source(
        real_corpus, "Where is _dispatch_code implemented?", profile=PROFILE
    )
    top2 = {(x["path"], x["match"]) for x in r["results"][:2]}
    assert top2 == {
        ("pycsamt/agents/master.py", "definition"),
        ("pycsamt/app/agent_master/callbacks/chat.py", "definition"),
    }


@pytest.mark.corpus
def test_real_corpus_inspect_and_read(real_corpus):
    rel = "pycsamt/assistant/tools/validation_tools.py"
    r = inspect_symbol(real_corpus, rel, "validate_generated_code", profile=PROFILE)
    assert r["signature"].startswith("def validate_generated_code(code, *, root=None")
    assert r["line_start"] == 24 and r["line_end"] > r["line_start"]
    src = read_source(real_corpus, rel, start=24, lines=5, profile=PROFILE)
    assert src["text"].startswith("def validate_generated_code(")
