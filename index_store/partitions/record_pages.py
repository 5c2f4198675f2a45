"""The page layout of record index format v2: each probed key touches one 4 KiB page, not three.

A page holds ``records_per_page`` records of one shard, sorted by hash, stored column-wise inside
the page (all hashes, then all file ids, then all key lengths, then all key slots), so a page is
binary-searched by its hashes and a found row's file id and key are in the same page. File ids
take the narrowest of 2, 4 or 8 bytes that holds the largest; key slots are ``key_width`` bytes
(the longest key, at most ``MAX_INLINE``). A longer key's slot holds its offset and length in the
file's overflow heap (its length byte is ``OVERFLOW``). Codec ``uuid``: when every key is a
canonical lowercase UUID string, slots hold its 16 bytes instead of its 36 characters (a looked-up
key that is not one cannot be stored, so it is absent); codec ``raw``: the UTF-8 bytes.

Everything here is vectorized over keys (numpy); ``record_index`` frames the pages in Arrow IPC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.arrays import expand_ranges

__all__ = [
    "MAX_INLINE",
    "OVERFLOW",
    "PAGE",
    "PageLayout",
    "PagedRows",
    "QueryKeys",
    "choose_layout",
    "key_bytes",
    "pack_pages",
]

PAGE = 4096
MAX_INLINE = 64  # longest key stored in its record; longer ones go to the overflow heap
OVERFLOW = 255  # length byte of a record whose key is in the heap (slot: u64 offset, u64 length)
_UUID_DASHES = (8, 13, 18, 23)
_UUID_HEX = np.array([i for i in range(36) if i not in _UUID_DASHES])
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_NIBBLE = np.zeros(256, dtype=np.uint8)  # a hex digit's value (lowercase)
_NIBBLE[_HEX_DIGITS] = np.arange(16, dtype=np.uint8)


@dataclass(frozen=True)
class PageLayout:
    """Where a record's fields sit in its page (see the module docstring)."""

    records_per_page: int
    file_width: int  # bytes of a file id: 2, 4 or 8
    key_width: int  # bytes of a key slot
    codec: str  # "raw" or "uuid"

    @property
    def record_bytes(self) -> int:
        return 8 + self.file_width + 1 + self.key_width

    def offsets(self) -> tuple[int, int, int]:
        """Byte offsets in a page of the file ids, the key lengths and the key slots."""
        r = self.records_per_page
        files = 8 * r
        lengths = files + self.file_width * r
        return files, lengths, lengths + r

    def to_json(self) -> dict[str, Any]:
        return {
            "records_per_page": self.records_per_page,
            "file_width": self.file_width,
            "key_width": self.key_width,
            "codec": self.codec,
        }

    @staticmethod
    def from_json(info: dict[str, Any]) -> PageLayout:
        """The layout recorded in a file's metadata; ``ValueError`` if it cannot be one."""
        layout = PageLayout(
            int(info["records_per_page"]), int(info["file_width"]), int(info["key_width"]), str(info["codec"])
        )
        if layout.file_width not in (2, 4, 8) or layout.codec not in ("raw", "uuid"):
            raise ValueError(f"page layout {info}")
        if not 0 <= layout.key_width <= MAX_INLINE or layout.records_per_page < 1:
            raise ValueError(f"page layout {info}")
        if layout.records_per_page * layout.record_bytes > PAGE:
            raise ValueError(f"page layout {info} does not fit a page")
        if layout.codec == "uuid" and layout.key_width != 16:
            raise ValueError(f"page layout {info}")
        return layout


def key_bytes(keys: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A string array's bytes as (data, start, length) numpy arrays (nulls: length 0)."""
    if pa.types.is_large_string(keys.type):
        odt: Any = np.int64
    else:
        odt = np.int32
    buffers = keys.buffers()
    offsets = np.frombuffer(buffers[1], dtype=odt)[keys.offset : keys.offset + len(keys) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    start = offsets[:-1].astype(np.int64)
    length = (offsets[1:] - offsets[:-1]).astype(np.int64)
    return data, start, length


def _slots(data: np.ndarray, start: np.ndarray, length: np.ndarray, width: int) -> np.ndarray:
    """Each key's first ``width`` bytes, zero-padded: an (n, width) uint8 matrix (one numpy step
    per byte column, not per key)."""
    n = len(start)
    if n and width and bool((length == width).all()):
        first = int(start[0])
        if bool((start == first + width * np.arange(n)).all()):  # fixed-length keys, contiguous
            return data[first : first + n * width].reshape(n, width).copy()
    out = np.zeros((n, width), dtype=np.uint8)
    if not len(data):
        return out
    last = len(data) - 1
    for j in range(width):
        has = length > j
        out[:, j] = np.where(has, data[np.minimum(start + j, last)], 0)
    return out


def _is_uuid(slots: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Whether each key (its 36-byte slot) is a canonical lowercase UUID string."""
    ok = length == 36
    if not len(slots):
        return ok
    for d in _UUID_DASHES:
        ok &= slots[:, d] == ord("-")
    hexes = slots[:, _UUID_HEX]
    ok &= (((hexes >= ord("0")) & (hexes <= ord("9"))) | ((hexes >= ord("a")) & (hexes <= ord("f")))).all(1)
    return ok


def _uuid_pack(slots: np.ndarray) -> np.ndarray:
    """Canonical lowercase UUID strings (36-byte slots) as their 16 bytes (others: garbage)."""
    nibbles = _NIBBLE[slots[:, _UUID_HEX]]
    return (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]


def _uuid_unpack(packed: np.ndarray) -> np.ndarray:
    """16-byte UUIDs as 36-byte canonical lowercase strings (an (n, 36) uint8 matrix)."""
    out = np.full((len(packed), 36), ord("-"), dtype=np.uint8)
    nibbles = np.empty((len(packed), 32), dtype=np.uint8)
    nibbles[:, 0::2] = packed >> 4
    nibbles[:, 1::2] = packed & 15
    out[:, _UUID_HEX] = _HEX_DIGITS[nibbles]
    return out


def choose_layout(keys: pa.Array, max_file_idx: int) -> PageLayout:
    """The page layout for these keys (a string array without nulls) and file ids."""
    file_width = 2 if max_file_idx < 1 << 16 else 4 if max_file_idx < 1 << 32 else 8
    data, start, length = key_bytes(keys)
    longest = int(length.max()) if len(length) else 0
    if longest == 36 and len(length) and bool(_is_uuid(_slots(data, start, length, 36), length).all()):
        codec, width = "uuid", 16
    else:
        codec = "raw"
        width = longest if longest <= MAX_INLINE else MAX_INLINE
    record = 8 + file_width + 1 + width
    return PageLayout(PAGE // record, file_width, width, codec)


def pack_pages(
    layout: PageLayout, hashes: np.ndarray, file_idx: np.ndarray, keys: pa.Array, heap_start: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows (sorted by hash) as pages, an (n_pages, PAGE) uint8 matrix, and the overflow
    heap bytes of their long keys (placed from byte ``heap_start`` of the file's heap)."""
    r = layout.records_per_page
    n = len(hashes)
    n_pages = -(-n // r)
    padded = n_pages * r
    pages = np.zeros((n_pages, PAGE), dtype=np.uint8)
    at_files, at_lengths, at_keys = layout.offsets()

    def put(offset: int, values: np.ndarray, dtype: str) -> None:
        column = np.zeros(padded, dtype=dtype)
        column[:n] = values
        raw = column.view(np.uint8).reshape(n_pages, -1)
        pages[:, offset : offset + raw.shape[1]] = raw

    put(0, hashes, "<u8")
    put(at_files, file_idx, f"<u{layout.file_width}")
    data, start, length = key_bytes(keys)
    width = layout.key_width
    heap = np.zeros(0, dtype=np.uint8)
    if layout.codec == "uuid":
        slots = _uuid_pack(_slots(data, start, length, 36))
        lengths = np.full(n, 16, dtype=np.uint8)
    else:
        slots = _slots(data, start, length, width)
        long = length > width
        lengths = np.where(long, OVERFLOW, length).astype(np.uint8)
        if long.any():
            rows = np.flatnonzero(long)
            heap = _gather(data, start[rows], length[rows])
            where = heap_start + np.concatenate([[0], np.cumsum(length[rows])[:-1]]).astype("<u8")
            ref = np.stack([where, length[rows].astype("<u8")], axis=1).view(np.uint8).reshape(len(rows), 16)
            slots[rows] = 0
            slots[rows, :16] = ref
    put(at_lengths, lengths, "u1")
    if width:
        column = np.zeros((padded, width), dtype=np.uint8)
        column[:n] = slots
        pages[:, at_keys : at_keys + r * width] = column.reshape(n_pages, r * width)
    return pages, heap


def _gather(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The bytes ``data[start[i] : start[i] + length[i]]`` of every i, concatenated."""
    return data[expand_ranges(start, length)]


class QueryKeys:
    """Looked-up keys (a string array) as key slots of a page layout, made once per lookup
    (from the keys in their order: sequential reads) and shared by every batch it probes."""

    def __init__(self, keys: pa.Array) -> None:
        self.data, self.start, self.length = key_bytes(keys)
        self._slots: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}

    def slots(self, layout: PageLayout) -> tuple[np.ndarray, np.ndarray]:
        """Each key's slot in ``layout`` and whether the key can be stored so at all."""
        at = (layout.codec, layout.key_width)
        if at not in self._slots:
            if layout.codec == "uuid":
                text = _slots(self.data, self.start, self.length, 36)
                valid = _is_uuid(text, self.length)
                self._slots[at] = (_uuid_pack(text), valid)
            else:
                width = layout.key_width
                self._slots[at] = (_slots(self.data, self.start, self.length, width), self.length <= width)
        return self._slots[at]


class PagedRows:
    """The records of one record batch of pages (memory-mapped): field views and lookups."""

    def __init__(self, layout: PageLayout, pages: np.ndarray, n_rows: int, address: int) -> None:
        r = layout.records_per_page
        at_files, at_lengths, at_keys = layout.offsets()
        self.layout = layout
        self.n = n_rows
        self.address = address  # of the first page in memory (to count the OS pages touched)
        self.hashes = pages[:, : 8 * r].view("<u8")
        self.files = pages[:, at_files : at_files + layout.file_width * r].view(f"<u{layout.file_width}")
        self.lengths = pages[:, at_lengths : at_lengths + r]
        self.slots = pages[:, at_keys : at_keys + layout.key_width * r].reshape(
            len(pages), r, layout.key_width
        )
        self.checked = np.zeros(len(pages), dtype=bool)  # pages found sorted and agreeing with fences
        self.words = pages.reshape(-1).view("<u8")  # the pages as uint64 words: hashes by one index

    def pages_sorted(self, pages: np.ndarray, fences: np.ndarray) -> bool:
        """Whether each of ``pages`` (page numbers) is sorted by hash, starts with its fence and
        ends at most at the next one: checked once per page, when a lookup first reads it."""
        new = np.unique(pages)
        new = new[~self.checked[new]]
        if not len(new):
            return True
        r = self.layout.records_per_page
        hashes = self.hashes[new]
        used = np.minimum(self.n - new * r, r)  # rows in each page (the last one may be partial)
        pair_used = np.arange(1, r)[None, :] < used[:, None]
        ok = bool(((hashes[:, 1:] >= hashes[:, :-1]) | ~pair_used).all())
        ok &= bool((hashes[:, 0] == fences[new]).all())
        follows = new + 1 < len(fences)
        last = hashes[np.arange(len(new)), used - 1]
        ok &= bool((last[follows] <= fences[new[follows] + 1]).all())
        if ok:
            self.checked[new] = True
        return ok

    def hash_at(self, rows: np.ndarray) -> np.ndarray:
        r = self.layout.records_per_page
        return self.words[(rows // r) * (PAGE // 8) + rows % r]

    def os_pages(self, rows: np.ndarray) -> np.ndarray:
        """The OS pages (addresses // PAGE) holding the page records ``rows`` are in: one per
        page when the pages are page-aligned in the file, two otherwise."""
        start = self.address + (rows // self.layout.records_per_page) * PAGE
        return np.concatenate([start // PAGE, (start + PAGE - 1) // PAGE])

    def search(self, fences: np.ndarray, q_hash: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each query hash (ascending): the rows ``[lo, hi)`` holding it, and the pages read.
        Fewer queries than pages: each binary-searches the page its fence sends it to, and a run
        of equal hashes is followed across pages. More: every page is read anyway, so the hashes
        are copied out and searched at once. ``lo``/``hi`` may be wrong where the batch is not
        sorted: the caller checks (``check_sorted``, ``pages_sorted``)."""
        r = self.layout.records_per_page
        n = self.n
        if len(q_hash) >= len(fences):
            every = self.hashes.reshape(-1)[:n]
            lo = np.searchsorted(every, q_hash, "left")
            hi = np.searchsorted(every, q_hash, "right")
            return lo, hi, np.arange(len(fences))
        page = np.maximum(np.searchsorted(fences, q_hash, "left") - 1, 0)
        lo = page * r
        hi = np.minimum(lo + r, n)
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            below = self.hash_at(np.minimum(mid, n - 1)) < q_hash
            lo = np.where(active & below, mid + 1, lo)
            hi = np.where(active & ~below, mid, hi)
        # The run of equal hashes from lo; a page's first hash is its fence (no read needed).
        end = lo.copy()
        while True:
            inside = end < n
            at = np.where(inside, self.hash_at(np.minimum(end, n - 1)), 0)
            starts = inside & (end % r == 0)
            at = np.where(starts, fences[np.minimum(end // r, len(fences) - 1)], at)
            more = inside & (at == q_hash)
            if not more.any():
                break
            end += more
        return lo, end, page

    def check_sorted(self, lo: np.ndarray, hi: np.ndarray, q_hash: np.ndarray, fences: np.ndarray) -> bool:
        """Where probed, the rows are in hash order: the row before ``lo`` (in its page) is
        smaller, the row at ``hi`` (or the next page's fence) larger."""
        r = self.layout.records_per_page
        n = self.n
        if not len(lo):
            return True
        in_page = lo % r != 0
        before = self.hash_at(np.maximum(lo - 1, 0))
        ok = ~in_page | (before < q_hash)
        inside = hi < n
        after = np.where(
            hi % r == 0, fences[np.minimum(hi // r, len(fences) - 1)], self.hash_at(np.minimum(hi, n - 1))
        )
        ok &= ~inside | (after > q_hash)
        return bool(ok.all())

    def matches(
        self, rows: np.ndarray, keys: QueryKeys, which: np.ndarray, heap: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Whether the key stored at each of ``rows`` equals ``keys[which]``, and the heap byte
        ranges read to compare long keys (an (m, 2) array of start, stop)."""
        r = self.layout.records_per_page
        page, slot = rows // r, rows % r
        stored = self.slots[page, slot]
        data, start, length = keys.data, keys.start[which], keys.length[which]
        no_reads = np.zeros((0, 2), dtype=np.int64)
        query, valid = keys.slots(self.layout)
        if self.layout.codec == "uuid":
            return valid[which] & (stored == query[which]).all(1), no_reads
        width = self.layout.key_width
        stored_len = self.lengths[page, slot].astype(np.int64)
        inline = stored_len != OVERFLOW
        ok = inline & (stored_len == length)
        if width:
            ok &= (stored == query[which]).all(1)
        long = np.flatnonzero(~inline & (length > width))
        if not len(long) or heap is None:
            return ok, no_reads
        ref = np.ascontiguousarray(stored[long, :16]).view("<u8")
        h_start, h_len = ref[:, 0].astype(np.int64), ref[:, 1].astype(np.int64)
        same_len = (h_len == length[long]) & (h_start >= 0) & (h_start + h_len <= len(heap))
        cand = long[same_len]
        if len(cand):
            a = _gather(heap, h_start[same_len], h_len[same_len])
            b = _gather(data, start[cand], length[cand])
            per = np.repeat(np.arange(len(cand)), length[cand])
            differs = np.zeros(len(cand), dtype=bool)
            differs[per[a != b]] = True
            ok[cand[~differs]] = True
        reads = np.stack([h_start[same_len], h_start[same_len] + h_len[same_len]], axis=1)
        return ok, reads

    def decode(self, heap: np.ndarray | None) -> tuple[np.ndarray, pa.Array, np.ndarray]:
        """Every row: hashes, keys (strings) and file ids."""
        n = self.n
        hashes = self.hashes.reshape(-1)[:n].copy()
        files = self.files.reshape(-1)[:n].astype(np.int64)
        if self.layout.codec == "uuid":
            text = _uuid_unpack(self.slots.reshape(-1, 16)[:n])
            offsets = np.arange(n + 1, dtype=np.int32) * 36
            keys = pa.Array.from_buffers(
                pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(text.tobytes())]
            )
            return hashes, keys, files
        width = self.layout.key_width
        slots = self.slots.reshape(-1, width)[:n] if width else np.zeros((n, 0), np.uint8)
        lengths = self.lengths.reshape(-1)[:n].astype(np.int64)
        inline = lengths != OVERFLOW
        used = np.where(inline, lengths, 0)
        mask = np.arange(width)[None, :] < used[:, None]
        offsets = np.concatenate([[0], np.cumsum(used)]).astype(np.int64)
        keys = pa.Array.from_buffers(
            pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(slots[mask].tobytes())]
        )
        long = np.flatnonzero(~inline)
        if len(long):
            if heap is None:
                raise ValueError("a record refers to the overflow heap, which the file lacks")
            ref = np.ascontiguousarray(slots[long, :16]).view("<u8")
            h_start, h_len = ref[:, 0].astype(np.int64), ref[:, 1].astype(np.int64)
            if np.any(h_start + h_len > len(heap)):
                raise ValueError("an overflow reference outside the heap")
            big = np.concatenate([[0], np.cumsum(h_len)]).astype(np.int64)
            values = pa.Array.from_buffers(
                pa.large_string(),
                len(long),
                [None, pa.py_buffer(big), pa.py_buffer(_gather(heap, h_start, h_len))],
            )
            spread = np.full(n, -1, dtype=np.int64)
            spread[long] = np.arange(len(long))
            taken = values.take(pa.array(spread, mask=spread < 0))
            keys = pc.if_else(pa.array(~inline), taken, keys)
        return hashes, keys, files
