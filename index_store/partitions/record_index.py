"""The ``record_index`` partition: record key -> data file, for point lookups of many keys at once.

Built for tables whose keys are random (UUIDs), where per-file key ranges and bloom filters cannot
narrow anything. Each commit writes one Arrow IPC file (uncompressed, read memory-mapped) under
``<index root>/record_index/`` holding one entry per (key, data file), keyed by ``hash`` (the
first 64 bits of MurmurHash3 x64_128 of the key, ``hudi_expr.hash_keys``), sorted by hash.

Format v2 (written): record batches of 4 KiB pages (``record_pages``), each page holding the
hashes, file ids and keys of its records, so a probed key touches one page instead of three;
each batch's pages start at a multiple of 4 KiB of the file. Format v1 (read; written only when
asked, for compatibility tests): columns ``hash``, ``key`` and ``file_idx``.

Rows are hash-bucketed into shards by the hash's top bits (a power of two of them, chosen from
the key count: ``KEYS_PER_SHARD``); each shard is one or more record batches (of at most
``MAX_BATCH_ROWS`` rows, never splitting a run of equal hashes), so each batch covers a disjoint
hash range inside its shard. The schema metadata (``METADATA_KEY``) records the format, the shard
count, each shard's batch range and each batch's row count and first and last hash: a lookup
hashes its keys, sorts the hashes, and opens only the batches they fall in; within a batch, the
page fences in the metadata (the first hash of each page) send each key to one page,
binary-searched alone, and the key strings confirm the candidate rows (two keys sharing a hash
never match each other). ``RecordLookup.bytes_read`` counts the distinct 4 KiB pages of the
mapped file a lookup touched (and the metadata), not the size of the mapped batches.

A key may be in several rows (written by several commits, or in two data files of one): a lookup
returns them all, and the caller keeps the live ``file_idx``. Compaction keeps the rows of live
files only.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import itertools
import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import hash_keys
from index_store.arrays import expand_ranges, unique_sorted
from index_store.errors import IndexCorruptError, RecordKeyError
from index_store.partitions.base import INDEX_FILE_SUFFIX, Batch, LiveIndex
from index_store.partitions.record_pages import (
    PAGE,
    PagedRows,
    PageLayout,
    QueryKeys,
    choose_layout,
    key_bytes,
    pack_pages,
)

__all__ = [
    "KEYS_PER_SHARD",
    "MAX_BATCH_ROWS",
    "MAX_SHARDS",
    "METADATA_KEY",
    "PAGES_SCHEMA",
    "RECORD_INDEX_FORMAT",
    "RECORD_INDEX_FORMAT_V1",
    "RECORD_INDEX_SCHEMA",
    "RecordIndexPartition",
    "RecordLookup",
    "default_shards",
    "lookup_record_keys",
    "read_record_index",
    "shard_counts",
    "shard_of",
    "write_record_index",
]

RECORD_INDEX_SCHEMA = pa.schema(
    [
        pa.field("hash", pa.uint64(), nullable=False),
        pa.field("key", pa.string(), nullable=False),
        pa.field("file_idx", pa.int64(), nullable=False),
    ]
)

# Format v2 (written): one column of 4 KiB pages of interleaved records (``record_pages``).
PAGES_SCHEMA = pa.schema([pa.field("page", pa.binary(PAGE), nullable=False)])

NAME = "record_index"
METADATA_KEY = b"record_index"
RECORD_INDEX_FORMAT = "hudi_expr.record_index.v2"
RECORD_INDEX_FORMAT_V1 = "hudi_expr.record_index.v1"  # read still; written only when asked
KEYS_PER_SHARD = 1 << 22  # at most this many keys per shard by default (~2-4M for big indexes)
MAX_SHARDS = 1 << 12
MAX_BATCH_ROWS = 1 << 20  # rows per record batch (keeps a batch's string offsets far from 2 GiB)

_U64 = 1 << 64
PAGE_ROWS = 512  # v1: uint64 hashes per 4 KiB page


def default_shards(n_keys: int) -> int:
    """The smallest power of two of shards holding at most ``KEYS_PER_SHARD`` keys each."""
    shards = 1
    while shards < MAX_SHARDS and n_keys > shards * KEYS_PER_SHARD:
        shards *= 2
    return shards


class RecordIndexPartition:
    """Record key -> data file (``Partition``); ``shards``: shard count of the files it writes
    (a power of two; None: ``default_shards`` of the key count)."""

    name = NAME
    schema = RECORD_INDEX_SCHEMA

    def __init__(self, shards: int | None = None) -> None:
        if shards is not None:
            _check_shards(shards)
        self.shards = shards

    def write(self, root: Path, batch: Batch) -> str | None:
        if batch.record_keys is None or batch.record_keys.keys is None:
            return None
        table = batch.record_keys.keys
        for column in ("key", "file"):
            if column not in table.column_names:
                raise ValueError(f"record keys of a batch lack the column {column!r}")
        file = table["file"]
        if file.null_count:
            raise ValueError("record keys of a batch name no data file (null 'file')")
        pos = file.to_numpy().astype(np.int64, copy=False)
        file_idx = np.asarray(batch.file_idx, dtype=np.int64)
        if len(pos) and (pos.min() < 0 or pos.max() >= len(file_idx)):
            raise ValueError(f"record keys of a batch name data files outside its {len(file_idx)} files")
        shards = self.shards or (batch.config.record_index_shards if batch.config is not None else None)
        return write_record_index(root, table["key"], file_idx[pos], shards=shards)

    def compact(self, root: Path, index: LiveIndex) -> str | None:
        if not index.config.record_index:
            return None
        hashes, keys, file_idx = _read_rows(root, index.live.get(NAME, ()))
        keep = _member(file_idx, np.sort(np.asarray(index.file_idx, dtype=np.int64)))
        return write_record_index(
            root,
            keys.filter(pa.array(keep)),
            file_idx[keep],
            shards=self.shards or index.config.record_index_shards,
            hashes=hashes[keep],
        )


@dataclass(frozen=True)
class RecordLookup:
    """Entries found for looked-up keys, sorted by ``key_pos``."""

    key_pos: np.ndarray  # int64: position in the looked-up keys
    file_idx: np.ndarray  # int64: a file the key was recorded in (may be dead: filter by liveness)
    files_opened: int
    bytes_read: int  # the metadata and the 4 KiB pages of the mapped files touched


# ---------------------------------------------------------------------------------------------
# Writing


def write_record_index(
    root: Path,
    keys: pa.Array | pa.ChunkedArray,
    file_idx: np.ndarray,
    *,
    shards: int | None = None,
    hashes: np.ndarray | None = None,
    batch_rows: int = MAX_BATCH_ROWS,
    version: int = 2,
) -> str:
    """Write one record index file of ``(keys[i], file_idx[i])`` durably; its path relative to
    ``root``. Null keys are left out (a lookup never matches them). ``hashes``: each key's hash,
    when known already (compaction) — they must be ``hash_keys(keys)[0]`` for lookups to find
    the keys; tests pass others to force collisions. ``batch_rows``: most rows per record batch.
    ``version``: the format (2; 1, the older columns layout, for compatibility tests)."""
    keys = _string_keys(keys)
    file_idx = np.asarray(file_idx, dtype=np.int64)
    if len(file_idx) != len(keys):
        raise ValueError(f"{len(keys)} keys but {len(file_idx)} file_idx")
    if hashes is None:
        hashes = hash_keys(keys)[0]
    hashes = np.asarray(hashes, dtype=np.uint64)
    if len(hashes) != len(keys):
        raise ValueError(f"{len(keys)} keys but {len(hashes)} hashes")
    if keys.null_count:
        valid = keys.is_valid().to_numpy(zero_copy_only=False)
        keys, hashes, file_idx = keys.filter(pa.array(valid)), hashes[valid], file_idx[valid]
    n = len(keys)
    shards = default_shards(n) if shards is None else _check_shards(shards)
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")
    order = np.argsort(hashes)  # ties: only a key repeated, or a collision (order irrelevant)
    hashes, file_idx = hashes[order], file_idx[order]
    if isinstance(keys, pa.ChunkedArray) and sum(c.nbytes for c in keys.chunks) > (1 << 30):
        keys = keys.cast(pa.large_string())  # a combined take must not overflow 32-bit offsets
    keys = keys.take(pa.array(order))
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    bounds = _batch_bounds(hashes, shards, batch_rows)
    rel = f"{NAME}/{uuid.uuid4().hex}{INDEX_FILE_SUFFIX}"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if version == 1:
        _write_v1(path, hashes, keys, file_idx, bounds, shards)
    elif version == 2:
        _write_v2(path, hashes, keys, file_idx, bounds, shards)
    else:
        raise ValueError(f"record index format version must be 1 or 2, got {version!r}")
    with open(path, "rb") as f:
        os.fsync(f.fileno())
    return rel


def _write_v1(
    path: Path, hashes: np.ndarray, keys: pa.Array, file_idx: np.ndarray, bounds: np.ndarray, shards: int
) -> None:
    """Format v1: columns hash, key, file_idx (a key probe touches three columns' pages)."""
    meta = _metadata(hashes, bounds, shards, PAGE_ROWS, RECORD_INDEX_FORMAT_V1)
    schema = RECORD_INDEX_SCHEMA.with_metadata({METADATA_KEY: json.dumps(meta).encode()})
    options = pa.ipc.IpcWriteOptions(compression=None)
    with open(path, "wb") as f, pa.ipc.new_file(f, schema, options=options) as writer:
        for start, stop in itertools.pairwise(bounds.tolist()):
            writer.write_batch(
                pa.record_batch(
                    [
                        pa.array(hashes[start:stop], pa.uint64()),
                        keys.slice(start, stop - start).cast(pa.string()),
                        pa.array(file_idx[start:stop], pa.int64()),
                    ],
                    schema=schema,
                )
            )


def _write_v2(
    path: Path, hashes: np.ndarray, keys: pa.Array, file_idx: np.ndarray, bounds: np.ndarray, shards: int
) -> None:
    """Format v2: record batches of 4 KiB pages (``record_pages``), each batch's pages aligned
    to 4 KiB in the file, then the overflow heap of long keys (if any) as one more batch."""
    if len(file_idx) and int(file_idx.min()) < 0:
        raise ValueError("file_idx must not be negative")
    layout = choose_layout(keys, int(file_idx.max()) if len(file_idx) else 0)
    meta = _metadata(hashes, bounds, shards, layout.records_per_page, RECORD_INDEX_FORMAT)
    meta["layout"] = layout.to_json()
    lengths = key_bytes(keys)[2]
    long = lengths > layout.key_width if layout.codec == "raw" else np.zeros(len(lengths), bool)
    meta["heap_bytes"] = int(lengths[long].sum())
    schema = PAGES_SCHEMA.with_metadata({METADATA_KEY: json.dumps(meta).encode()})
    heap_parts: list[np.ndarray] = []
    heap_at = 0
    options = pa.ipc.IpcWriteOptions(compression=None)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema, options=options) as writer:
        for start, stop in itertools.pairwise(bounds.tolist()):
            pages, heap = pack_pages(
                layout, hashes[start:stop], file_idx[start:stop], keys.slice(start, stop - start), heap_at
            )
            heap_parts.append(heap)
            heap_at += len(heap)
            _write_pages(writer, sink, pages, schema)
        if meta["heap_bytes"]:
            heap = np.concatenate(heap_parts)
            pages = np.zeros((-(-len(heap) // PAGE), PAGE), dtype=np.uint8)
            pages.reshape(-1)[: len(heap)] = heap
            _write_pages(writer, sink, pages, schema)


def _write_pages(
    writer: pa.ipc.RecordBatchFileWriter, sink: pa.NativeFile, pages: np.ndarray, schema: pa.Schema
) -> None:
    """One record batch of ``pages``, padded (in its message's custom metadata) so that its
    pages start at a multiple of 4 KiB of the file: one probed page is one page of the OS."""
    array = pa.FixedSizeBinaryArray.from_buffers(pa.binary(PAGE), len(pages), [None, pa.py_buffer(pages)])
    batch = pa.record_batch([array], schema=PAGES_SCHEMA)
    at = sink.tell() + 8  # the message's continuation marker and length come first
    if sink.tell() == 0:  # the writer writes the magic and the schema with its first batch
        at += 8 + schema.serialize().size
    guess = 8 + (-(at + _message_bytes(8))) % PAGE  # the header grows 8 bytes per 8 characters
    aligned = [p for p in range(max(1, guess - 16), guess + 17) if (at + _message_bytes(p)) % PAGE == 0]
    pad = aligned[0] if aligned else 1  # none: still correct, a probed page may then span two
    writer.write_batch(batch, custom_metadata={"pad": "." * pad})


_MESSAGE_BYTES: dict[int, int] = {}


def _message_bytes(pad: int) -> int:
    """Bytes of the IPC message header of a page batch whose custom metadata pads ``pad``
    characters (it does not depend on the batch's length)."""
    if pad not in _MESSAGE_BYTES:
        one = pa.FixedSizeBinaryArray.from_buffers(pa.binary(PAGE), 1, [None, pa.py_buffer(bytes(PAGE))])
        stream = pa.BufferOutputStream()
        with pa.ipc.new_stream(stream, PAGES_SCHEMA) as w:
            w.write_batch(pa.record_batch([one], schema=PAGES_SCHEMA), custom_metadata={"pad": "." * pad})
        messages = pa.ipc.MessageReader.open_stream(stream.getvalue())
        messages.read_next_message()
        _MESSAGE_BYTES[pad] = messages.read_next_message().metadata.size
    return _MESSAGE_BYTES[pad]


def _check_shards(shards: int) -> int:
    if not isinstance(shards, int) or shards < 1 or shards > MAX_SHARDS or shards & (shards - 1):
        raise ValueError(f"shards must be a power of two from 1 to {MAX_SHARDS}, got {shards!r}")
    return shards


def _shift(shards: int) -> np.uint64:
    """Right shift taking a hash to its shard (``shards`` a power of two, > 1)."""
    return np.uint64(64 - (shards.bit_length() - 1))


def _shard_of(hashes: np.ndarray, shards: int) -> np.ndarray:
    if shards == 1:
        return np.zeros(len(hashes), dtype=np.int64)
    return (hashes >> _shift(shards)).astype(np.int64)


def shard_of(hashes: np.ndarray, shards: int) -> np.ndarray:
    """The shard (of ``shards``, a power of two) each key hash (``hash_keys(keys)[0]``) is stored
    in: its top bits. Shard ``s`` of ``n`` shards is the hash range of shards ``s * m / n`` to
    ``(s + 1) * m / n`` of ``m``, so lookups partitioned this way meet one shard of every file."""
    return _shard_of(np.asarray(hashes, dtype=np.uint64), _check_shards(shards))


def shard_counts(root: Path, live: Sequence[str]) -> list[int]:
    """The shard count of each record index file ``live`` (from its metadata; checked)."""
    return [_open(root, rel).shards for rel in live]


def _batch_bounds(hashes: np.ndarray, shards: int, batch_rows: int) -> np.ndarray:
    """Row offsets where record batches start (and the end): batches never cross a shard
    boundary, hold at most ``batch_rows`` rows and never split a run of equal hashes
    (unless one run alone is longer: then the run is one batch)."""
    n = len(hashes)
    if shards == 1:
        shard_starts = [0]
    else:
        firsts = np.arange(shards, dtype=np.uint64) << _shift(shards)
        shard_starts = sorted(set(np.searchsorted(hashes, firsts, "left").tolist()))
    cuts = [s for s in shard_starts if s < n]
    ends = [*cuts[1:], n] if cuts else []
    bounds: list[int] = []
    for start, end in zip(cuts, ends, strict=True):  # one loop step per batch, not per key
        pos = start
        while pos < end:
            bounds.append(pos)
            cut = pos + batch_rows
            if cut >= end:
                break
            # Cut before the run of equal hashes holding ``cut``, or after it if it started at pos.
            run = hashes[pos:end]
            run_start = pos + int(np.searchsorted(run, hashes[cut], "left"))
            pos = run_start if run_start > pos else pos + int(np.searchsorted(run, hashes[cut], "right"))
    bounds.append(n)
    return np.asarray(bounds, dtype=np.int64)


def _metadata(
    hashes: np.ndarray, bounds: np.ndarray, shards: int, page_rows: int, fmt: str
) -> dict[str, Any]:
    starts, stops = bounds[:-1], bounds[1:]
    firsts = hashes[starts] if len(starts) else np.zeros(0, np.uint64)
    lasts = hashes[stops - 1] if len(starts) else np.zeros(0, np.uint64)
    batch_shard = _shard_of(firsts, shards)
    shard_batches = np.searchsorted(batch_shard, np.arange(shards + 1), "left")
    # The first hash of every page of each batch's hash column (PAGE_ROWS hashes = 4 KiB), so a
    # lookup binary-searches one page per key instead of the whole column.
    fences = [hashes[a:b:page_rows] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)]
    return {
        "format": fmt,
        "rows": len(hashes),
        "page_rows": page_rows,
        "fences": base64.b64encode(np.concatenate(fences).astype("<u8").tobytes() if fences else b"").decode(
            "ascii"
        ),
        "shards": shards,
        "shard_batches": [[a, b] for a, b in itertools.pairwise(shard_batches.tolist())],
        "batch_rows": (stops - starts).tolist(),
        "batch_first": firsts.tolist(),
        "batch_last": lasts.tolist(),
    }


# ---------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True)
class _IndexFile:
    path: Path
    reader: pa.ipc.RecordBatchFileReader
    shards: int
    rows: np.ndarray  # int64 per batch
    first: np.ndarray  # uint64 per batch: its first (smallest) hash
    last: np.ndarray  # uint64 per batch: its last (largest) hash
    fences: list[np.ndarray] | None  # per batch: the first hash of each page (None: not recorded)
    metadata_bytes: int
    size: int  # of the file
    layout: PageLayout | None = None  # format v2: the page layout (None: format v1)
    heap_bytes: int = 0  # format v2: bytes of the overflow heap (its batch follows the records')
    batches: dict[int, Any] = dataclasses.field(default_factory=dict)  # checked ones (v2: PagedRows)
    heap: list[np.ndarray] = dataclasses.field(default_factory=list)  # v2: the mapped heap, once read


# Opened files by (path, size, modification time): index files are written once and never
# changed, so a lookup reuses the mapping and the parsed metadata of the previous one.
_OPENED: dict[tuple[str, int, int], _IndexFile] = {}
_MAX_OPENED = 64


def _open(root: Path, rel: str) -> _IndexFile:
    """A record index file's reader and validated metadata, or ``IndexCorruptError``."""
    path = root / rel
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise IndexCorruptError(str(path), "the timeline lists it but it does not exist") from None
    except OSError as exc:
        raise IndexCorruptError(str(path), f"unreadable ({exc})") from None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _OPENED:
        if len(_OPENED) >= _MAX_OPENED:
            _OPENED.pop(next(iter(_OPENED)))
        _OPENED[key] = _open_uncached(path)
    return _OPENED[key]


def _open_uncached(path: Path) -> _IndexFile:
    try:
        source = pa.memory_map(str(path), "r")
    except FileNotFoundError:
        raise IndexCorruptError(str(path), "the timeline lists it but it does not exist") from None
    except (pa.ArrowException, OSError) as exc:
        raise IndexCorruptError(str(path), f"unreadable ({exc})") from None
    try:
        reader = pa.ipc.open_file(source)
    except (pa.ArrowException, OSError) as exc:
        raise IndexCorruptError(str(path), f"not an Arrow IPC file ({exc})") from None
    schema = reader.schema
    plain = schema.remove_metadata()
    if not (plain.equals(RECORD_INDEX_SCHEMA) or plain.equals(PAGES_SCHEMA)):
        raise IndexCorruptError(str(path), f"unexpected schema {plain}")
    raw = (schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise IndexCorruptError(str(path), "no record index metadata")
    try:
        meta = json.loads(raw)
        opened = _check_metadata(path, reader, meta, paged=plain.equals(PAGES_SCHEMA))
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise IndexCorruptError(str(path), f"bad record index metadata ({exc})") from None
    return dataclasses.replace(opened, metadata_bytes=len(raw), size=source.size())


def _check_metadata(
    path: Path, reader: pa.ipc.RecordBatchFileReader, meta: dict[str, Any], paged: bool
) -> _IndexFile:
    def bad(reason: str) -> IndexCorruptError:
        return IndexCorruptError(str(path), f"bad record index metadata ({reason})")

    expected = RECORD_INDEX_FORMAT if paged else RECORD_INDEX_FORMAT_V1
    if meta.get("format") != expected:
        known = (RECORD_INDEX_FORMAT, RECORD_INDEX_FORMAT_V1)
        what = "a format this version does not read" if meta.get("format") not in known else "another schema"
        raise bad(f"format {meta.get('format')!r} ({what}), expected {expected!r}")
    shards = meta["shards"]
    if not isinstance(shards, int) or shards < 1 or shards > MAX_SHARDS or shards & (shards - 1):
        raise bad(f"shard count {shards!r}")
    layout = PageLayout.from_json(meta["layout"]) if paged else None
    heap_bytes = int(meta.get("heap_bytes", 0)) if paged else 0
    if heap_bytes < 0:
        raise bad("heap_bytes")
    nb = reader.num_record_batches - (1 if heap_bytes else 0)
    rows = np.asarray(meta["batch_rows"], dtype=np.int64)
    first_py, last_py = meta["batch_first"], meta["batch_last"]
    if len(rows) != nb or len(first_py) != nb or len(last_py) != nb:
        raise bad(f"{nb} record batches but {len(rows)}/{len(first_py)}/{len(last_py)} described")
    if not all(isinstance(h, int) and 0 <= h < _U64 for h in (*first_py, *last_py)):
        raise bad("hashes out of range")
    first = np.asarray(first_py, dtype=np.uint64)
    last = np.asarray(last_py, dtype=np.uint64)
    if np.any(rows < 1) or int(rows.sum()) != meta["rows"]:
        raise bad("batch row counts")
    if np.any(first > last) or np.any(last[:-1] >= first[1:]):
        raise bad("batch hash ranges not sorted and disjoint (an unsorted shard)")
    ranges = np.asarray(meta["shard_batches"], dtype=np.int64).reshape(-1, 2)
    if len(ranges) != shards or ranges[0, 0] != 0 or ranges[-1, 1] != nb:
        raise bad("shard batch ranges do not cover the record batches")
    if np.any(ranges[:, 0] > ranges[:, 1]) or np.any(ranges[1:, 0] != ranges[:-1, 1]):
        raise bad("shard batch ranges not contiguous")
    batch_shard = np.repeat(np.arange(shards), ranges[:, 1] - ranges[:, 0])
    if np.any(_shard_of(first, shards) != batch_shard) or np.any(_shard_of(last, shards) != batch_shard):
        raise bad("a batch holds hashes of another shard")
    page_rows = layout.records_per_page if layout is not None else PAGE_ROWS
    fences = _fences(meta, rows, first, bad, page_rows)
    if paged and fences is None:
        raise bad("no page fences")
    return _IndexFile(path, reader, shards, rows, first, last, fences, 0, 0, layout, heap_bytes)


def _fences(
    meta: dict[str, Any], rows: np.ndarray, first: np.ndarray, bad: Any, page_rows: int
) -> list[np.ndarray] | None:
    """Each batch's page fences from the metadata (v1 files written before them have none)."""
    if "fences" not in meta:
        return None
    if meta.get("page_rows") != page_rows:
        raise bad(f"page_rows {meta.get('page_rows')!r}, expected {page_rows}")
    try:
        raw = base64.b64decode(meta["fences"], validate=True)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise bad(f"fences are not base64 ({exc})") from None
    counts = (rows + page_rows - 1) // page_rows
    if len(raw) != 8 * int(counts.sum()):
        raise bad(f"{len(raw)} bytes of fences for {int(counts.sum())} pages")
    every = np.frombuffer(raw, dtype="<u8").astype(np.uint64)
    out = np.split(every, np.cumsum(counts)[:-1]) if len(counts) else []
    for i, fences in enumerate(out):
        if fences[0] != first[i] or np.any(fences[1:] < fences[:-1]):
            raise bad(f"fences of record batch {i} are not its sorted page starts")
    return out


def _paged(f: _IndexFile, i: int) -> PagedRows:
    """Record batch ``i`` of a v2 file as its pages' records (memory-mapped), checked against the
    metadata (cheap checks only) the first time it is read from this opened file."""
    if i in f.batches:
        return f.batches[i]
    assert f.layout is not None
    array = _page_array(f, i)
    n = int(f.rows[i])
    if len(array) != -(-n // f.layout.records_per_page):
        raise IndexCorruptError(str(f.path), f"record batch {i} has {len(array)} pages for {n} rows")
    rows = PagedRows(f.layout, _page_matrix(array), n, array.buffers()[1].address + array.offset * PAGE)
    ends = rows.hash_at(np.array([0, n - 1]))
    if ends[0] != f.first[i] or ends[1] != f.last[i]:
        raise IndexCorruptError(str(f.path), f"record batch {i} does not hold its hash range in the metadata")
    f.batches[i] = rows
    return rows


def _page_array(f: _IndexFile, i: int) -> pa.FixedSizeBinaryArray:
    try:
        batch = f.reader.get_batch(i)
        batch.validate()
    except (pa.ArrowException, OSError) as exc:
        raise IndexCorruptError(str(f.path), f"unreadable record batch {i} ({exc})") from None
    array = batch.column(0)
    if array.null_count:
        raise IndexCorruptError(str(f.path), f"null pages in record batch {i}")
    return array


def _page_matrix(array: pa.FixedSizeBinaryArray) -> np.ndarray:
    return np.frombuffer(
        array.buffers()[1], dtype=np.uint8, count=len(array) * PAGE, offset=array.offset * PAGE
    ).reshape(len(array), PAGE)


def _heap(f: _IndexFile) -> tuple[np.ndarray, int] | None:
    """A v2 file's overflow heap (mapped) and its address, or None if it has none."""
    if not f.heap_bytes:
        return None
    if not f.heap:
        array = _page_array(f, f.reader.num_record_batches - 1)
        if len(array) * PAGE < f.heap_bytes:
            raise IndexCorruptError(str(f.path), "the overflow heap is shorter than its metadata says")
        f.heap.append(_page_matrix(array).reshape(-1)[: f.heap_bytes])
        f.heap.append(np.array([array.buffers()[1].address + array.offset * PAGE]))
    return f.heap[0], int(f.heap[1][0])


def _batch(f: _IndexFile, i: int) -> pa.RecordBatch:
    """Record batch ``i`` of a v1 file (memory-mapped), checked against the metadata (cheap
    checks only) the first time it is read from this opened file."""
    if i in f.batches:
        return f.batches[i]
    try:
        batch = f.reader.get_batch(i)
        batch.validate()
    except (pa.ArrowException, OSError) as exc:
        raise IndexCorruptError(str(f.path), f"unreadable record batch {i} ({exc})") from None
    if batch.num_rows != f.rows[i]:
        raise IndexCorruptError(str(f.path), f"record batch {i} has {batch.num_rows} rows, not {f.rows[i]}")
    if batch.column(0).null_count or batch.column(2).null_count:
        raise IndexCorruptError(str(f.path), f"null hash or file_idx in record batch {i}")
    hashes = batch.column(0).to_numpy()
    if hashes[0] != f.first[i] or hashes[-1] != f.last[i]:
        raise IndexCorruptError(str(f.path), f"record batch {i} does not hold its hash range in the metadata")
    f.batches[i] = batch
    return batch


def _string_keys(keys: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    if isinstance(keys, pa.ChunkedArray) and pa.types.is_dictionary(keys.type):
        keys = keys.cast(keys.type.value_type)
    elif isinstance(keys, pa.Array) and pa.types.is_dictionary(keys.type):
        keys = keys.dictionary_decode()
    t = keys.type
    if pa.types.is_string_view(t):
        return keys.cast(pa.large_string())  # take has no string_view kernel
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        raise RecordKeyError(f"record keys must be strings, got {t}")
    return keys


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``values[i] in sorted_set`` (ascending) for each i."""
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[pos] == values


def lookup_record_keys(root: Path, live: Sequence[str], keys: pa.Array | pa.ChunkedArray) -> RecordLookup:
    """Every stored ``(key, file_idx)`` entry whose key equals one of ``keys``.

    The key strings are compared, not only their hashes: keys sharing a hash never match each
    other. A key may be in several entries (older commits): all are returned, the caller keeps
    the live ``file_idx``. Null keys never match. Raises ``IndexCorruptError`` for a missing,
    truncated or corrupt file, bad metadata, or a batch found unsorted where it is probed.
    """
    keys = _string_keys(keys)
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    hashes = hash_keys(keys)[0]
    if keys.null_count:
        pos = np.flatnonzero(keys.is_valid().to_numpy(zero_copy_only=False))
        hashes = hashes[pos]
    else:
        pos = None
    order = np.argsort(hashes)
    q_hash = hashes[order]
    q_pos = order if pos is None else pos[order]
    queries = QueryKeys(keys)  # v2 files compare key slots, made once
    found_pos: list[np.ndarray] = []
    found_idx: list[np.ndarray] = []
    opened = 0
    nbytes = 0
    for rel in live if len(q_hash) else ():
        f = _open(root, rel)
        opened += 1
        touched: list[np.ndarray] = []  # addresses of the mapped pages each batch touched
        # Batches hold disjoint, ascending hash ranges: the sorted query hashes of each are a slice.
        starts = np.searchsorted(q_hash, f.first, "left")
        stops = np.searchsorted(q_hash, f.last, "right")
        for i in np.flatnonzero(stops > starts).tolist():
            if f.layout is not None:
                got, pages = _probe_pages(
                    f, i, q_hash[starts[i] : stops[i]], q_pos[starts[i] : stops[i]], queries
                )
            else:
                batch = _batch(f, i)
                got, pages = _probe(
                    f, i, batch, q_hash[starts[i] : stops[i]], q_pos[starts[i] : stops[i]], keys
                )
            touched.append(pages)
            if got is not None:
                found_pos.append(got[0])
                found_idx.append(got[1])
        page_count = int(unique_sorted(np.concatenate(touched)).size) if touched else 0
        # Read: its footer metadata and the pages probed (whole pages, at most the file).
        nbytes += min(f.size, f.metadata_bytes + PAGE * page_count)
    if not found_pos:
        empty = np.zeros(0, dtype=np.int64)
        return RecordLookup(empty, empty.copy(), opened, nbytes)
    key_pos = np.concatenate(found_pos)
    file_idx = np.concatenate(found_idx)
    by_key = np.argsort(key_pos, kind="stable")
    return RecordLookup(key_pos[by_key], file_idx[by_key], opened, nbytes)


def _probe(
    f: _IndexFile, i: int, batch: pa.RecordBatch, q_hash: np.ndarray, q_pos: np.ndarray, keys: pa.Array
) -> tuple[tuple[np.ndarray, np.ndarray] | None, np.ndarray]:
    """The (key position, file_idx) of the rows of ``batch`` whose key is one of ``keys[q_pos]``
    (``q_hash``: their hashes, ascending), and the addresses of the 4 KiB pages it touched."""
    hashes = batch.column(0).to_numpy()
    n = len(hashes)
    # Fewer keys than pages: search each key's page only. More: the whole column is touched
    # anyway, and one searchsorted is faster than the page-wise bisection.
    if f.fences is not None and len(q_hash) < len(f.fences[i]):
        lo, hi = _search_pages(hashes, f.fences[i], q_hash)
    else:  # a file written without page fences: search the whole column
        lo = np.searchsorted(hashes, q_hash, "left")
        hi = np.searchsorted(hashes, q_hash, "right")
    # Where it was probed, the column must be sorted: what precedes lo is smaller, what follows
    # hi larger, and [lo, hi) the query's hash.
    before = hashes[np.maximum(lo - 1, 0)]
    at = hashes[np.minimum(lo, n - 1)]
    after = hashes[np.minimum(hi, n - 1)]
    last_in = hashes[np.maximum(hi - 1, 0)]
    ok = ((lo == 0) | (before < q_hash)) & ((hi == n) | (after > q_hash))
    ok &= (hi == lo) | ((at == q_hash) & (last_in == q_hash))
    if not ok.all():
        raise IndexCorruptError(str(f.path), f"record batch {i} is not sorted by hash")
    hash_col, key_col, idx_col = batch.column(0), batch.column(1), batch.column(2)
    pages = [_pages(hash_col, 1, np.concatenate([lo, hi, [0, n - 1]]), 8)]  # both ends checked too
    found = _confirm(f, i, batch, lo, hi, q_pos, keys)
    if found is None:
        return None, pages[0]
    key_pos, rows, file_idx = found
    offsets = np.frombuffer(key_col.buffers()[1], dtype=np.int32)[key_col.offset :]
    pages += [
        _pages(key_col, 1, np.concatenate([rows, rows + 1]), 4),
        _pages(key_col, 2, offsets[rows], 1, base=0),
        _pages(idx_col, 1, rows, 8),
    ]
    return (key_pos, file_idx), np.concatenate(pages)


def _probe_pages(
    f: _IndexFile, i: int, q_hash: np.ndarray, q_pos: np.ndarray, queries: QueryKeys
) -> tuple[tuple[np.ndarray, np.ndarray] | None, np.ndarray]:
    """``_probe`` for a v2 batch of pages: one page per key (its fence's), the rows of its hash
    and, for a long key, the overflow heap's pages holding it."""
    paged = _paged(f, i)
    assert f.fences is not None
    fences = f.fences[i]
    lo, hi, read = paged.search(fences, q_hash)
    if not paged.check_sorted(lo, hi, q_hash, fences) or not paged.pages_sorted(read, fences):
        raise IndexCorruptError(str(f.path), f"record batch {i} is not sorted by hash")
    count = hi - lo
    hit = np.flatnonzero(count)
    r = paged.layout.records_per_page
    touched = [paged.os_pages(read * r)]
    if not len(hit):
        return None, np.concatenate(touched)
    count, first = count[hit], lo[hit]
    which = np.repeat(hit, count)
    rows = expand_ranges(first, count)
    touched.append(paged.os_pages(rows))
    key_pos = q_pos[which]
    heap = _heap(f)
    ok, reads = paged.matches(rows, queries, key_pos, heap[0] if heap else None)
    if heap is not None and len(reads):
        lo_page = (heap[1] + reads[:, 0]) // PAGE
        hi_page = (heap[1] + np.maximum(reads[:, 1] - 1, reads[:, 0])) // PAGE
        touched.append(expand_ranges(lo_page, hi_page - lo_page + 1))
    pages = np.concatenate(touched)
    if not ok.any():
        return None, pages
    file_idx = paged.files[rows // r, rows % r].astype(np.int64)
    return (key_pos[ok].astype(np.int64, copy=False), file_idx[ok]), pages


def _search_pages(
    hashes: np.ndarray, fences: np.ndarray, q_hash: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``searchsorted(hashes, q_hash)`` left and right, each key searching only the page its hash
    falls in (``fences``: each page's first hash): about one page of the column per key. A run of
    equal hashes may go on past the page: it is followed to its end."""
    n = len(hashes)

    page = np.maximum(np.searchsorted(fences, q_hash, "left") - 1, 0)
    lo = page * PAGE_ROWS
    hi = np.minimum(lo + PAGE_ROWS, n)
    while True:  # binary search within each key's page: the first hash >= the key's
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        below = hashes[np.minimum(mid, n - 1)] < q_hash
        lo = np.where(active & below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)
    # The run of equal hashes from there (a key in several rows, or a collision) is short.
    end = lo.copy()
    while True:
        more = (end < n) & (hashes[np.minimum(end, n - 1)] == q_hash)
        if not more.any():
            return lo, end
        end += more


def _pages(
    array: pa.Array, buffer: int, positions: np.ndarray, width: int, base: int | None = None
) -> np.ndarray:
    """Addresses of the pages of the mapped file holding the ``width``-byte items at ``positions``
    of ``array``'s buffer ``buffer`` (offset by the array's own offset unless ``base`` is given)."""
    buf = array.buffers()[buffer]
    if buf is None or not len(positions):
        return np.zeros(0, dtype=np.int64)
    start = buf.address + (array.offset if base is None else base) * width
    return unique_sorted((start + positions.astype(np.int64) * width) // PAGE)


def _confirm(
    f: _IndexFile,
    i: int,
    batch: pa.RecordBatch,
    lo: np.ndarray,
    hi: np.ndarray,
    q_pos: np.ndarray,
    keys: pa.Array,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Rows whose hash matched, confirmed by their key strings: (key position, row, file_idx)."""
    count = hi - lo
    hit = np.flatnonzero(count)
    if not len(hit):
        return None
    count, lo = count[hit], lo[hit]
    if int(count.max()) == 1:
        rows, which = lo, hit
    else:
        which = np.repeat(hit, count)
        rows = expand_ranges(lo, count)
    stored = batch.column(1)
    _check_offsets(f, i, stored, rows)
    key_pos = q_pos[which]
    same = pc.equal(stored.take(pa.array(rows)), keys.take(pa.array(key_pos)).cast(pa.string()))
    match = same.to_numpy(zero_copy_only=False)
    if same.null_count:
        match = match & same.is_valid().to_numpy(zero_copy_only=False)
    match = np.asarray(match, dtype=bool)
    if not match.any():
        return None
    file_idx = batch.column(2).to_numpy()
    return key_pos[match].astype(np.int64, copy=False), rows[match], file_idx[rows[match]]


def _check_offsets(f: _IndexFile, i: int, keys: pa.StringArray, rows: np.ndarray) -> None:
    """The string offsets of ``rows`` point inside the data buffer (so that taking them cannot
    read past it, whatever a corrupt file holds)."""
    _, offsets_buf, data_buf = keys.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[keys.offset : keys.offset + len(keys) + 1]
    start, stop = offsets[rows], offsets[rows + 1]
    size = 0 if data_buf is None else data_buf.size
    if np.any(start < 0) or np.any(stop < start) or np.any(stop > size):
        raise IndexCorruptError(str(f.path), f"record batch {i} has string offsets out of bounds")


def _read_rows(root: Path, live: Sequence[str]) -> tuple[np.ndarray, pa.ChunkedArray, np.ndarray]:
    """All rows (hash, key, file_idx) of the files ``live``, each fully checked: batches sorted by
    hash, strings valid UTF-8 within bounds."""
    hashes: list[np.ndarray] = []
    keys: list[pa.Array] = []
    file_idx: list[np.ndarray] = []
    for rel in live:
        f = _open(root, rel)
        if f.layout is not None:
            _read_paged(f, hashes, keys, file_idx)
            continue
        for i in range(f.reader.num_record_batches):
            batch = _batch(f, i)
            try:
                batch.validate(full=True)
            except pa.ArrowException as exc:
                raise IndexCorruptError(str(f.path), f"invalid record batch {i} ({exc})") from None
            h = batch.column(0).to_numpy()
            if np.any(h[1:] < h[:-1]):
                raise IndexCorruptError(str(f.path), f"record batch {i} is not sorted by hash")
            hashes.append(h)
            keys.append(batch.column(1))
            file_idx.append(batch.column(2).to_numpy())
    if not hashes:
        return np.zeros(0, np.uint64), pa.chunked_array([], pa.string()), np.zeros(0, np.int64)
    return np.concatenate(hashes), pa.chunked_array(keys, pa.string()), np.concatenate(file_idx)


def _read_paged(
    f: _IndexFile, hashes: list[np.ndarray], keys: list[pa.Array], file_idx: list[np.ndarray]
) -> None:
    """Every row of a v2 file, checked (sorted by hash, overflow references inside the heap)."""
    heap = _heap(f)
    for i in range(len(f.rows)):
        try:
            h, k, fi = _paged(f, i).decode(heap[0] if heap else None)
            k = k.cast(pa.string())
            k.validate(full=True)
        except (ValueError, pa.ArrowException) as exc:
            raise IndexCorruptError(str(f.path), f"invalid record batch {i} ({exc})") from None
        if np.any(h[1:] < h[:-1]):
            raise IndexCorruptError(str(f.path), f"record batch {i} is not sorted by hash")
        hashes.append(h)
        keys.append(k)
        file_idx.append(fi)


def read_record_index(root: Path, live: Sequence[str]) -> pa.Table:
    """All rows ``(key, file_idx)`` of the files ``live`` (fully checked), in file then hash order."""
    _, keys, file_idx = _read_rows(root, live)
    return pa.table({"key": keys, "file_idx": pa.array(file_idx, pa.int64())})
