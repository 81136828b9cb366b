"""One list of secret shapes: every pattern any of the three old scrubbers
masked is masked by each entry point (the dense backend's used to let
``sk-`` keys through)."""

from __future__ import annotations

import re

import pytest

from pycsamt_lsp.answer.openai_client import scrub as answer_scrub
from pycsamt_lsp.devsearch.search import mask_secrets as devsearch_mask
from pycsamt_lsp.search.dense.backends import scrub as dense_scrub
from pycsamt_lsp.text.secrets import SCRUB_LIMIT, mask_secrets, scrub

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8"
SAMPLES = {
    "openai": f"Incorrect API key provided: {KEY}.",
    "glued openai": f"error=task-sk-{'x' * 12} failed",
    "aws": "key AKIAABCDEFGHIJKLMNOP here",
    "bearer": "Authorization header Bearer abcdefgh12345678",
    "github": "token ghp_" + "a" * 24,
    "slack": "xoxb-1234567890-abc",
    "google": "AIza" + "B" * 32,
    "url password": "https://user:hunter2@example.com/x",
}


def test_every_entry_point_is_the_one_scrubber():
    assert answer_scrub is scrub and dense_scrub is scrub
    assert devsearch_mask is mask_secrets


@pytest.mark.parametrize("name", list(SAMPLES))
def test_scrub_masks_every_known_shape(name):
    text = SAMPLES[name]
    out = scrub(text, None)
    assert out != text
    for secret in (KEY, "AKIAABCDEFGHIJKLMNOP", "abcdefgh12345678", "hunter2"):
        assert secret not in out


def test_scrub_masks_what_the_dense_scrubber_let_through():
    # the old dense scrubber only replaced the caller's own key
    old_dense = f"could not embed: 401 {KEY}"
    assert KEY not in scrub(old_dense, "some-other-key")


def test_scrub_masks_the_callers_key_and_caps_length():
    assert scrub("bad key my-secret-value!", "my-secret-value") == "bad key ***!"
    long = "x" * 1000
    out = scrub(long)
    assert len(out) == SCRUB_LIMIT and out.endswith("…")
    assert scrub("short") == "short"


# -- parity with the old answer scrubber (its sk- rule had no word boundary) --
OLD_SK = re.compile(r"sk-[A-Za-z0-9_\-]{8,}")


@pytest.mark.parametrize("text", [*SAMPLES.values(), "plain text", "sk-short"])
def test_scrub_masks_whatever_the_old_answer_scrubber_masked(text):
    for m in OLD_SK.finditer(text):
        assert m.group() not in scrub(text)


def test_mask_secrets_keeps_code_and_masks_literals():
    code = 'api_key = api_key\ntoken = "abc123secret"\nx = 1\n'
    out, n = mask_secrets(code, python=True)
    assert out.splitlines()[:2] == ["api_key = api_key", 'token = "***"']
    assert n == 1
    cfg, n = mask_secrets("password = hunter2\nname = x", python=False)
    assert cfg.splitlines()[0] == "password = ***" and n == 1
    key, n = mask_secrets(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"
    )
    assert "MIIB" not in key and n == 3
