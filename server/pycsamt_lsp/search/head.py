"""The head field of code chunks (stage ``field_head``).

The seed scores one bag of words per chunk: a word of the docstring's
summary ("Convert old 3D impedance format to current ModEM list format")
counts no more than the same word in an example, a note or a line of code.
The *head* of a code chunk is the first sentence of its docstring, the line
that says what the symbol is for. (The symbol's own name is stage
``field_bm25``'s field; the parameter names were tried as part of the head
and lowered MRR@10 on the tuning split, so they are not in it.) A query
term found in the head adds a second, head-field term to the chunk's
``L(c)``, in the manner of BM25F's field weights.

How a head is scored, and why so:

* ``head(c, q) = sum of idf(t) over the distinct query terms t the head
  contains``: BM25 over the head field with the **body index's idf** (exact,
  the statistics every other score of the query uses, kept exact save by
  save) and a binary term frequency, so no length normalisation and no
  second set of statistics: a summary is one sentence, and a word it says
  twice ("format ... list format") is not twice the evidence (a
  saturating ``tf`` scored lower on the tuning split);
* heads are read from the chunk (its ``metadata["docstring"]``, else the
  text's ``Docstring:`` block) on first use and kept per slot: a slot's
  chunk never changes, so the cache is carried to the snapshots that keep
  the slot, and a saved file's new slots are read when a query first ranks
  them. A head score depends only on the chunk and the index statistics,
  never on what was read before: the ranking is the same whether the cache
  is cold or warm, after a save or after a rebuild;
* only the :data:`HEAD_POOL` best code candidates (after ``field_bm25``,
  ties included) are scored: the head refines the order near the top, and
  a query on a new topic reads at most that many chunks (a warm query
  none; a warm start nothing).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pycsamt_lsp.index.snapshot import Snapshot
from pycsamt_lsp.index.tokenize import tokenize

__all__ = [
    "HEAD_POOL",
    "HEAD_WEIGHT",
    "HeadCache",
    "first_sentence",
    "head_scores",
    "head_text",
]

#: The head score is added to ``L(c)`` with this weight, under the chunk's
#: seed multipliers (as ``field_bm25``'s is). Tuning split, MRR@10 with a
#: saturating tf for 0.3 / 0.5 / 0.75 / 1.0 / 1.5 / 2.0: sdist 0.786 /
#: 0.803 / 0.804 / 0.807 / 0.793 / 0.783, checkout 0.793 / 0.794 / 0.807 /
#: 0.804 / 0.804 / 0.789; 1.0 kept, then the binary tf (0.810 / 0.804).
#: Session 5 (helper G), with the larger tuning file ``dense_tuning.jsonl``
#: (198 questions) and stage ``fold``, HEAD_POOL 40, binary tf, MRR@10 for
#: 1.0 / 1.25 / 1.5 / 2.0 / 2.5 on dense_tuning: sdist 0.809 / 0.816 /
#: 0.826 / 0.823 / 0.825, checkout 0.813 / 0.826 / 0.835 / 0.831 / 0.825
#: (fresh_tuning 0.814 / 0.822 / 0.814 / 0.794 / 0.782 and 0.828 / 0.827 /
#: 0.829 / 0.806 / 0.804); 1.5, bundled suites 1.0 at every weight.
HEAD_WEIGHT = 1.5
#: How many of the best code candidates get a head score per query. 20, 40,
#: 80 and 100 gave the same rankings on fresh_tuning; on dense_tuning 40
#: (and 80) put one more question's symbol in the top 10 than 20 on each
#: corpus and raised paraphrase wf@10 0.806 -> 0.823 (sdist), but 40 cost
#: the sdist's warm core p50 +17 % (bench_query, 4 alternating rounds, two
#: runs: 0.435 vs 0.371 and 0.512 vs 0.432 ms; 20: 0.364 vs 0.379), too
#: close to issue 14's 0.5 ms, so the lead kept 20 (tuning split, sdist,
#: fold off: MRR@10 0.809 either way, hit@10 0.926 vs 0.930).
HEAD_POOL = 20
#: The first sentence is cut to this many characters (a summary, not a page).
_SENTENCE_MAX = 240
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_CODE_KINDS = ("python_symbol", "python_method")


def fold(term: str) -> str:
    """*term* without a plural ``s`` (``sites`` -> ``site``, not ``class``).

    A head is one sentence, so an exact-word test misses the singular/plural
    pair that says the same thing ("a Sites object" vs "Site objects"): on
    the bundled loading question the Sites class lost its first place to a
    writer whose head said "sites" and "directory".
    """
    if len(term) > 3 and term[-1] == "s" and term[-2] not in "su":
        return term[:-1]
    return term


def first_sentence(doc: str) -> str:
    """The first sentence of the first paragraph of *doc* (whitespace joined)."""
    doc = (doc or "").strip()
    if not doc:
        return ""
    para = " ".join(doc.split("\n\n", 1)[0].split())
    m = _SENTENCE_END.search(para)
    return (para[: m.start()] if m else para)[:_SENTENCE_MAX]


def head_text(kind: str, metadata: Mapping[str, object], text: str = "") -> str:
    """A code chunk's head: its docstring's first sentence ("" for prose).

    From the text's ``Docstring:`` block, as the Python chunker writes it
    (the same text as ``metadata["docstring"]`` on every code chunk of the
    sdist and the checkout); a text without that block falls back to the
    metadata entry.
    """
    if kind not in _CODE_KINDS:
        return ""
    at = text.find(_DOC_MARK)
    if at >= 0:
        return first_sentence(_block(text[at + len(_DOC_MARK) :]))
    doc = metadata.get("docstring")
    return first_sentence(doc) if isinstance(doc, str) else ""


_DOC_MARK = "\nDocstring:\n"
_CODE_MARK = "\nCode:\n"
#: the same marks inside a ``chunks.jsonl`` line (JSON escapes ``\n``)
_RAW_DOC = _DOC_MARK.replace("\n", "\\n").encode()
_RAW_CODE = _CODE_MARK.replace("\n", "\\n").encode()
#: bytes of a stored line read for the fast path (the docstring block ends
#: within them for most chunks; the marker itself sits at ~200 bytes)
_RAW_PREFIX = 4096


def _block(body: str) -> str:
    """A docstring block's text: up to the ``Code:`` line, when there is one."""
    end = body.find(_CODE_MARK)
    return body if end < 0 else body[:end]


def _escaped(raw: bytes, at: int) -> bool:
    """Whether the byte at *at* is escaped (an odd run of backslashes before it)."""
    n = 0
    while at - n - 1 >= 0 and raw[at - n - 1] == 0x5C:
        n += 1
    return n % 2 == 1


def _raw_head(snap: Snapshot, slot: int) -> str | None:
    """The head of a stored slot from a prefix of its ``chunks.jsonl`` line,
    without parsing the line (a third of the cost); ``None`` when the prefix
    does not hold the whole docstring block (the caller parses the chunk).

    The block lies between the two marks inside the JSON string of the text;
    cut at a mark (an escape boundary), it decodes alone, to the same text
    :func:`head_text` reads from the parsed chunk.
    """
    t = snap.table
    if slot in t.in_memory or t.source is None or t.offsets is None:
        return None
    if slot + 1 >= len(t.offsets):
        return None
    start = int(t.offsets[slot])
    raw = t.source.read_raw(start, min(int(t.offsets[slot + 1]) - start, _RAW_PREFIX))
    at = raw.find(_RAW_DOC)
    if at < 0 or _escaped(raw, at):
        return None
    at += len(_RAW_DOC)
    end = raw.find(_RAW_CODE, at)
    if end < 0 or _escaped(raw, end):
        return None
    try:
        doc = json.loads(b'"' + raw[at:end] + b'"')
    except ValueError:
        return None
    return first_sentence(doc) if isinstance(doc, str) else None


@dataclass(eq=False)
class HeadCache:
    """Slot -> the head's distinct terms, filled on first use (module doc).

    One dict store per slot, so concurrent readers are safe; ``reads``
    counts the chunks read (a test checks what a save leaves warm).
    """

    terms: dict[int, frozenset[str]] = field(default_factory=dict)
    reads: int = 0
    #: query term -> (its fold, the index's idf of it), or None for a term
    #: the index does not hold (live); per cache, so per index: a save's
    #: update makes a new cache (:meth:`carried`), as the df changed
    weights: dict[str, tuple[str, float] | None] = field(default_factory=dict)

    def head(self, snap: Snapshot, slot: int) -> frozenset[str]:
        """The head terms of *slot* (its chunk read once)."""
        got = self.terms.get(slot)
        if got is None:
            text = None
            if snap.table.kinds[slot] not in _CODE_KINDS:
                text = ""
            else:
                try:
                    text = _raw_head(snap, slot)
                    if text is None:
                        c = snap.table.get(slot)
                        text = head_text(c.kind, c.metadata, c.text)
                except (KeyError, OSError, ValueError):
                    text = ""
            got = frozenset(map(fold, tokenize(text)))
            self.reads += 1
            self.terms[slot] = got
        return got

    def carried(self, alive: np.ndarray, n_old: int) -> HeadCache:
        """The cache for an update of its snapshot: the entries of slots that
        are still alive (their chunk is the same), none for the new slots."""
        return HeadCache(
            {k: v for k, v in self.terms.items() if k < n_old and alive[k]}
        )


#: distinct query terms whose (fold, idf) a cache keeps (a vocabulary's worth)
_TERMS_KEPT = 1 << 16
_UNSEEN: tuple[str, float] = ("", -1.0)


def _term_weight(snap: Snapshot, term: str) -> tuple[str, float] | None:
    """(fold, idf) of *term* in *snap*'s body index; None when it has none."""
    bm = snap.bm25
    tid = bm.vocab.get(term)
    if tid is None or not bm.df[tid] > 0:
        return None
    return fold(term), float(bm.idf(np.array([tid], np.int64))[0])


def head_scores(
    snap: Snapshot,
    cache: HeadCache,
    tokens: Iterable[str],
    slots: Sequence[int],
) -> np.ndarray:
    """The head score at each of *slots* for the query *tokens*: the sum of
    the body index's idf over the distinct query terms the head contains."""
    out = np.zeros(len(slots))
    # a query term matches a head term of the same fold (sites ~ site); a
    # fold two query terms share counts once, with the larger idf
    best: dict[str, float] = {}
    known_terms = cache.weights
    seen: set[str] = set()
    for t in tokens:
        if t in seen:
            continue
        seen.add(t)
        fw = known_terms.get(t, _UNSEEN)
        if fw is _UNSEEN:
            fw = _term_weight(snap, t)
            if len(known_terms) >= _TERMS_KEPT:
                known_terms.clear()
            known_terms[t] = fw
        if fw is not None:
            f, w = fw
            if w > best.get(f, -1.0):
                best[f] = w
    if not best:
        return out
    weights = list(best.items())
    known = cache.terms.get
    wanted = frozenset(best)
    for i, slot in enumerate(slots):
        head = known(slot)
        if head is None:
            head = cache.head(snap, int(slot))
        # most heads share no query term: one set test, then the sum in
        # query-term order as before (the same float additions)
        if not wanted.isdisjoint(head):
            v = 0.0
            for t, w in weights:
                if t in head:
                    v += w
            out[i] = v
    return out
