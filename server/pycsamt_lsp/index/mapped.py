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

The zip directory and the ``.npy`` headers are read here when the file is
the plain kind ``np.savez`` writes (stored members, no zip64 directory,
headers in numpy's own layout): ``np.load`` went through ``zipfile`` (whose
import, with ``shutil``, ``bz2`` and ``lzma``, was ~1.5 ms of a warm start)
and parsed each of the ~25 headers of ``index.npz`` and ``names.npz`` with
``ast.literal_eval`` (issue 18: warm start). The arrays are the same: the
unmapped ones are copies (writable, as ``np.load`` gives them), every
member's CRC is checked as ``zipfile`` checks it (unless the caller vouches
for the file: ``check_crc=False``), and anything else goes to ``np.load``
as before.
"""

from __future__ import annotations

import io
import mmap
import re
import struct
import sys
import zlib
from collections.abc import Collection
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = ["MAPPED_ARRAYS", "load_errors", "load_npz", "release", "shared_strings"]

#: The arrays worth mapping: large, read sparsely (a term's postings) or
#: only on updates (the row-wise terms of every chunk).
MAPPED_ARRAYS = frozenset({"doc_terms", "doc_tfs", "main_doc", "main_tf"})

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # zip local file header (30 bytes)
_LOCAL_MAGIC = 0x04034B50
#: zip central directory entry (46 bytes) and end of central directory (22)
_CENTRAL = struct.Struct("<I4B4H3I5HII")
_CENTRAL_MAGIC = 0x02014B50
_END = struct.Struct("<IHHHHIIH")
_END_MAGIC = 0x06054B50
_ZIP64_LOCATOR = b"PK\x06\x07"
#: a ``.npy`` header as numpy writes it for a plain array (else: numpy's parser)
_NPY_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-Z][0-9]{0,2})', 'fortran_order': False, "
    rb"'shape': \(((?:[0-9]+, )*[0-9]+,?)?\), \} *\n"
)
_NPY_MAGIC = b"\x93NUMPY"


class _Member(NamedTuple):
    """What a load needs of one zip member (the fields of ``zipfile.ZipInfo``
    it reads)."""

    filename: str
    header_offset: int
    compress_size: int
    CRC: int


def _bad_zip(message: str) -> Exception:
    """``zipfile.BadZipFile(message)``, what ``np.load`` raises for a
    damaged member (``zipfile`` imported only then)."""
    import zipfile

    return zipfile.BadZipFile(message)


def load_errors() -> tuple[type[BaseException], ...]:
    """What :func:`load_npz` raises for a damaged or foreign file, for an
    ``except`` clause (evaluated only when something is raised): ``zipfile``
    is in it when it was imported, which it is whenever it raised."""
    errors: tuple[type[BaseException], ...] = (OSError, ValueError, KeyError, EOFError)
    zf = sys.modules.get("zipfile")
    return (*errors, zf.BadZipFile) if zf is not None else errors


def _stored_members(buf: mmap.mmap) -> list[_Member] | None:
    """The members of the zip in *buf* when it is what ``np.savez`` writes:
    one disk, no comment, no zip64 directory, every member stored (not
    compressed, not encrypted) and listed once; None otherwise (``np.load``
    reads it then)."""
    end = len(buf) - _END.size
    if end < 0:
        return None
    sig, disk, cd_disk, n_disk, n, cd_size, cd_offset, comment = _END.unpack(buf[end:])
    if (
        sig != _END_MAGIC
        or disk
        or cd_disk
        or comment
        or n != n_disk
        or cd_offset + cd_size != end
        or buf[max(end - 20, 0) : max(end - 16, 0)] == _ZIP64_LOCATOR
    ):
        return None
    members: list[_Member] = []
    pos = cd_offset
    for _ in range(n):
        if pos + _CENTRAL.size > end:
            return None
        f = _CENTRAL.unpack_from(buf, pos)
        flags, method, crc, size, raw_size = f[5], f[6], f[9], f[10], f[11]
        name_end = pos + _CENTRAL.size + f[12]
        if (
            f[0] != _CENTRAL_MAGIC
            or flags & 0x1
            or method != 0
            or size != raw_size
            or 0xFFFFFFFF in (size, f[18])
        ):
            return None
        name = buf[pos + _CENTRAL.size : name_end].decode(
            "utf-8" if flags & 0x800 else "cp437"
        )
        members.append(_Member(name, f[18], size, crc))
        pos = name_end + f[13] + f[14]
    if pos != end or len({m.filename for m in members}) != len(members):
        return None
    return members


def _npy_header(
    buf: mmap.mmap, start: int
) -> tuple[tuple[int, ...], np.dtype, int] | None:
    """``(shape, dtype, data offset)`` of the ``.npy`` at *start*, or None
    when it is not a plain C-ordered array of a fixed-size dtype."""
    if buf[start : start + 8] == _NPY_MAGIC + b"\x01\x00":  # numpy's own layout
        length = int.from_bytes(buf[start + 8 : start + 10], "little")
        text = buf[start + 10 : start + 10 + length]
        m = _NPY_HEADER.fullmatch(text)
        if m is not None:
            dtype = np.dtype(m[1].decode("ascii"))
            shape = tuple(int(x) for x in (m[2] or b"").split(b",") if x.strip())
            if not dtype.hasobject:
                return shape, dtype, start + 10 + length
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


def _member_data(buf: mmap.mmap, info: Any) -> tuple[int, int] | None:
    """``(start, end)`` of the member's data in *buf* (*info*: a
    ``zipfile.ZipInfo`` or :class:`_Member`), None when its local header is
    not a plain one; ``zipfile``'s error when it names another file."""
    hdr = buf[info.header_offset : info.header_offset + _LOCAL_HEADER.size]
    if len(hdr) != _LOCAL_HEADER.size:
        return None
    fields = _LOCAL_HEADER.unpack(hdr)
    if fields[0] != _LOCAL_MAGIC:
        return None
    name_at = info.header_offset + _LOCAL_HEADER.size
    if buf[name_at : name_at + fields[9]] != info.filename.encode(
        "utf-8" if fields[2] & 0x800 else "cp437"
    ):
        raise _bad_zip(f"{info.filename}: file name in directory and header differ")
    start = name_at + fields[9] + fields[10]
    end = start + info.compress_size
    if end > len(buf):
        raise ValueError("index.npz: a member runs past the end of the file")
    return start, end


def _check_crc(buf: mmap.mmap, info: Any, start: int, end: int) -> None:
    with memoryview(buf) as whole, whole[start:end] as member:
        if zlib.crc32(member) != info.CRC:
            raise _bad_zip(f"index.npz: bad CRC in {info.filename}")


def _member_array(
    buf: mmap.mmap, info: Any, *, mapped: bool, check_crc: bool = True
) -> np.ndarray | None:
    """The member's array: viewed in *buf* when *mapped* (the pages the CRC
    check read released), else a copy; the CRC checked unless told (as
    ``zipfile`` checks a member read whole); None when it is not a plain
    ``.npy`` of a fixed-size dtype."""
    bounds = _member_data(buf, info)
    if bounds is None:
        return None
    start, end = bounds
    lo = start - start % mmap.PAGESIZE
    if check_crc:
        _check_crc(buf, info, start, end)
        if mapped:
            buf.madvise(mmap.MADV_DONTNEED, lo, end - lo)
    got = _npy_header(buf, start)
    if got is None:
        return None
    shape, dtype, offset = got
    count = int(np.prod(shape)) if shape else 1
    if offset + count * dtype.itemsize > end:
        raise ValueError(f"index.npz: {info.filename} is shorter than its header")
    arr = np.frombuffer(buf, dtype=dtype, count=count, offset=offset).reshape(shape)
    if mapped:
        return arr
    arr = arr.copy()  # a copy owns its data, as np.load's does
    buf.madvise(mmap.MADV_DONTNEED, lo, end - lo)  # the mapping's pages it read
    return arr


def _mapped_member(
    buf: mmap.mmap, info: Any, check_crc: bool = True
) -> np.ndarray | None:
    """The member's array viewed in *buf* (CRC checked unless told), or None."""
    return _member_array(buf, info, mapped=True, check_crc=check_crc)


def load_npz(
    path: Path, mapped: Collection[str] = MAPPED_ARRAYS, *, check_crc: bool = True
) -> dict[str, np.ndarray]:
    """Every array of an ``.npz``; those named in *mapped* viewed in place.

    ``check_crc=False`` skips the CRC of the mapped members (their pages are
    then read only when used) and, when the file is read here rather than
    by ``np.load``, of the copied ones: for a file the caller knows was
    checked and has not changed since (``store.load_snapshot``'s ``verified``).

    Raises what ``np.load`` raises for a damaged file (``ValueError``,
    ``OSError``, ``zipfile.BadZipFile``, ``EOFError``, ``KeyError``; see
    :func:`load_errors`).
    """
    with open(path, "rb") as fh:
        try:
            buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file: np.load says what is wrong
            return _load_with_numpy(path, mapped, check_crc, None)
    members = _stored_members(buf)
    if members is None or not all(m.filename.endswith(".npy") for m in members):
        return _load_with_numpy(path, mapped, check_crc, buf)
    out: dict[str, np.ndarray] = {}
    for m in members:
        name = m.filename[:-4]
        keep = name in mapped and m.compress_size > 0
        arr = _member_array(buf, m, mapped=keep, check_crc=check_crc)
        if arr is None:  # not a plain array: numpy reads the whole file
            return _load_with_numpy(path, mapped, check_crc, buf)
        out[name] = arr
    return out


def _load_with_numpy(
    path: Path, mapped: Collection[str], check_crc: bool, buf: mmap.mmap | None
) -> dict[str, np.ndarray]:
    """:func:`load_npz` through ``np.load`` (and ``zipfile``): any file the
    direct reading does not take."""
    import zipfile

    out: dict[str, np.ndarray] = {}
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
