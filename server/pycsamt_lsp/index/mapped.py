"""Reading ``index.npz`` with its large posting arrays memory-mapped.

Why: a loaded index held every BM25 array in anonymous memory (9.9 MB on the
pyCSAMT sdist), though a query reads the postings of a handful of terms and
the row-wise arrays (``doc_terms``/``doc_tfs``) are read only when an edit
updates the index. Mapped, those arrays cost resident memory only for the
pages actually read, and those are clean file pages the kernel can drop.
``np.savez`` stores members uncompressed, so each array's data sits at a
fixed offset of the file and can be viewed in place (read-only: the index
code never writes into its arrays; updates build new ones).

The zip CRC of a mapped member is checked on load, as ``np.load`` would
(a damaged file is rebuilt, not served), and the pages that check read are
then released (``MADV_DONTNEED``: clean pages, read again from the page
cache when a query needs them). A later persist replaces ``index.npz`` by
rename, so a mapping of the old file stays valid. A member that is
compressed, of an object dtype or not a plain ``.npy`` is read normally
(``np.load``), as is every array not named in :data:`MAPPED_ARRAYS`.
"""

from __future__ import annotations

import io
import mmap
import struct
import sys
import zipfile
import zlib
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MAPPED_ARRAYS", "load_npz", "release", "shared_strings"]

#: The arrays worth mapping: large, read sparsely (a term's postings) or
#: only on updates (the row-wise terms of every chunk).
MAPPED_ARRAYS = frozenset({"doc_terms", "doc_tfs", "main_doc", "main_tf"})

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # zip local file header (30 bytes)
_LOCAL_MAGIC = 0x04034B50


def _npy_header(
    buf: mmap.mmap, start: int
) -> tuple[tuple[int, ...], np.dtype, int] | None:
    """``(shape, dtype, data offset)`` of the ``.npy`` at *start*, or None
    when it is not a plain C-ordered array of a fixed-size dtype."""
    fmt = np.lib.format
    head = io.BytesIO(buf[start : start + 65536])
    try:
        version = fmt.read_magic(head)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(head)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(head)
        else:
            return None
    except ValueError:
        return None
    if dtype.hasobject or (fortran and len(shape) > 1):
        return None
    return shape, dtype, start + head.tell()


def _mapped_member(
    buf: mmap.mmap, info: zipfile.ZipInfo, check_crc: bool = True
) -> np.ndarray | None:
    """The member's array viewed in *buf* (CRC checked unless told), or None."""
    hdr = buf[info.header_offset : info.header_offset + _LOCAL_HEADER.size]
    if len(hdr) != _LOCAL_HEADER.size:
        return None
    fields = _LOCAL_HEADER.unpack(hdr)
    if fields[0] != _LOCAL_MAGIC:
        return None
    start = info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]
    end = start + info.compress_size
    if end > len(buf):
        raise ValueError("index.npz: a member runs past the end of the file")
    if check_crc:
        with memoryview(buf) as whole, whole[start:end] as member:
            if zlib.crc32(member) != info.CRC:
                raise zipfile.BadZipFile(f"index.npz: bad CRC in {info.filename}")
        lo = start - start % mmap.PAGESIZE
        buf.madvise(mmap.MADV_DONTNEED, lo, end - lo)
    got = _npy_header(buf, start)
    if got is None:
        return None
    shape, dtype, offset = got
    count = int(np.prod(shape)) if shape else 1
    if offset + count * dtype.itemsize > end:
        raise ValueError(f"index.npz: {info.filename} is shorter than its header")
    return np.frombuffer(buf, dtype=dtype, count=count, offset=offset).reshape(shape)


def load_npz(
    path: Path, mapped: Collection[str] = MAPPED_ARRAYS, *, check_crc: bool = True
) -> dict[str, np.ndarray]:
    """Every array of an ``.npz``; those named in *mapped* viewed in place.

    ``check_crc=False`` skips the CRC of the mapped members (their pages are
    then read only when used): for a file the caller knows was checked and
    has not changed since (``store.load_snapshot``'s ``verified``).

    Raises what ``np.load`` raises for a damaged file (``ValueError``,
    ``OSError``, ``zipfile.BadZipFile``, ``EOFError``, ``KeyError``).
    """
    out: dict[str, np.ndarray] = {}
    buf: mmap.mmap | None = None
    with np.load(path, allow_pickle=False) as z:
        infos = {i.filename: i for i in z.zip.infolist()}
        for name in z.files:
            info = infos.get(name + ".npy")
            arr = None
            if (
                name in mapped
                and info is not None
                and info.compress_type == zipfile.ZIP_STORED
                and info.file_size > 0
            ):
                if buf is None:
                    with open(path, "rb") as fh:
                        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                arr = _mapped_member(buf, info, check_crc)
            out[name] = arr if arr is not None else z[name]
    return out


def release(arr: np.ndarray) -> bool:
    """Drop the resident pages of *arr* when it is viewed in a mapping of
    :func:`load_npz` (``MADV_DONTNEED``); False when it is not mapped.

    Why: the first update of a loaded index copies the row-wise arrays into
    growable buffers (``bm25._appended``); the mapped pages that copy read
    (~4 MB on the sdist) stayed resident for as long as the mapping lives,
    that is as long as any later index shares its postings (issue 18).
    They are clean file pages: a reader of the old index that needs them
    again reads them back from the page cache, the same bytes."""
    base: Any = arr
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # np.frombuffer's view of the mapping
        base = base.obj
    if not isinstance(base, mmap.mmap) or base.closed or not arr.nbytes:
        return False
    try:
        start = np.frombuffer(base, np.uint8, count=1).ctypes.data
    except (ValueError, TypeError):
        return False
    off = arr.ctypes.data - start
    if off < 0 or off + arr.nbytes > len(base):
        return False
    lo = off - off % mmap.PAGESIZE
    base.madvise(mmap.MADV_DONTNEED, lo, off + arr.nbytes - lo)
    return True


def shared_strings(values: list[Any]) -> list[Any]:
    """*values* with equal strings made one object (``sys.intern``).

    ``json.loads`` makes a new string for every occurrence: the per-chunk
    path, kind and workflow columns repeat a few hundred distinct values
    thousands of times."""
    intern = sys.intern
    return [intern(v) if type(v) is str else v for v in values]
