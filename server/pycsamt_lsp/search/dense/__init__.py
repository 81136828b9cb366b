"""Optional dense retrieval: embedding backends, ``embeddings.npz``, RRF fusion.

Opt-in (``pycsamt-lsp build --embed``, ``query --dense``, the ``dense``
setting) and never required. The parts, one purpose each:

- :mod:`.minilm` — the packaged all-MiniLM-L6-v2 run by a numpy BERT encoder;
- :mod:`.backends` — hashing, MiniLM and OpenAI embedding backends;
- :mod:`.store` — ``embeddings.npz``: reading, writing, (re)building;
- :mod:`.fusion` — the dense ranking and its RRF fusion with BM25;
- :mod:`.service` — a workspace's loaded vectors and backends.
"""

from __future__ import annotations

from pycsamt_lsp.search.dense.backends import (
    DEFAULT_OPENAI_EMBED_MODEL,
    HASH_NAME,
    MINILM_NAME,
    Backends,
    EmbeddingBackend,
    EmbeddingError,
    HashingBackend,
    MiniLMBackend,
    OpenAIBackend,
    backend_for,
    l2_normalize,
    resolve_backend,
)
from pycsamt_lsp.search.dense.fusion import (
    COSINE_FLOOR,
    FIRST_MARGIN,
    FUSION_OFF_BY_DEFAULT,
    FUSION_STAGES,
    PRF_WEIGHT,
    RRF_K,
    bm25_margin,
    dense_query,
    dense_ranking,
    feedback_query,
    fused_order,
    fusion_stages,
    pool_size,
    rrf_fuse,
)
from pycsamt_lsp.search.dense.minilm import minilm_available, minilm_model_dir
from pycsamt_lsp.search.dense.service import DenseService
from pycsamt_lsp.search.dense.store import (
    MAX_EMBED_CHARS,
    TEXT_RECIPE,
    VECTOR_FILENAME,
    EmbeddingStore,
    build_embeddings,
    embed_text,
    load_store,
    manifest_extra,
    refresh_embeddings,
    save_store,
)

__all__ = [
    "COSINE_FLOOR",
    "DEFAULT_OPENAI_EMBED_MODEL",
    "FIRST_MARGIN",
    "FUSION_OFF_BY_DEFAULT",
    "FUSION_STAGES",
    "HASH_NAME",
    "MAX_EMBED_CHARS",
    "MINILM_NAME",
    "PRF_WEIGHT",
    "RRF_K",
    "TEXT_RECIPE",
    "VECTOR_FILENAME",
    "Backends",
    "DenseService",
    "EmbeddingBackend",
    "EmbeddingError",
    "EmbeddingStore",
    "HashingBackend",
    "MiniLMBackend",
    "OpenAIBackend",
    "backend_for",
    "bm25_margin",
    "build_embeddings",
    "dense_query",
    "dense_ranking",
    "embed_text",
    "feedback_query",
    "fused_order",
    "fusion_stages",
    "l2_normalize",
    "load_store",
    "manifest_extra",
    "minilm_available",
    "minilm_model_dir",
    "pool_size",
    "refresh_embeddings",
    "resolve_backend",
    "rrf_fuse",
    "save_store",
]
