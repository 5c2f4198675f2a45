"""``HFileReader``: an HFile (Hudi's metadata table base files, and its log files' HFile data
blocks) as sorted key -> value cells, read through its block index.

Opening reads the trailer and the load-on-open section (root data index, meta index, file info)
only. A point lookup descends the index (root, then intermediate and leaf index blocks of a
multi-level index) to the one data block its key can be in and decodes that block alone; a batch
of keys descends once per index block and decodes each data block it needs once. A scan decodes
every data block. Keys are the cells' rows (Hudi's record keys, column stats keys...), values the
cells' values, both as Arrow binary arrays."""

from __future__ import annotations

import bisect
import mmap
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import HFileCorruptError, UnsupportedHFileError
from index_store.hfile.blocks import Block, BlockKind, read_block
from index_store.hfile.cells import CellFormatError, Cells, decode_cells, find_cell
from index_store.hfile.codecs import Codec, UnsupportedCodec, codec_of
from index_store.hfile.index import (
    IndexEntries,
    IndexFormatError,
    locate,
    read_non_root_index,
    read_root_index,
)
from index_store.hfile.protobuf import ProtobufError, message_fields, read_varint
from index_store.hfile.trailer import Trailer, read_trailer

__all__ = ["KEY", "SCHEMA", "VALUE", "HFileReader", "starts_with_any"]

KEY, VALUE = "key", "value"
SCHEMA = pa.schema([pa.field(KEY, pa.binary(), nullable=False), pa.field(VALUE, pa.binary(), nullable=False)])
_PBUF = b"PBUF"
_INDEX_KINDS = (BlockKind.LEAF_INDEX, BlockKind.INTERMEDIATE_INDEX)
_DATA_KINDS = (BlockKind.DATA, BlockKind.ENCODED_DATA)


class HFileReader:
    """An HFile opened from a path (memory-mapped: only the blocks read are paged in) or bytes."""

    def __init__(
        self, source: str | os.PathLike[str] | bytes, *, path: str = "", cached_blocks: int = 64
    ) -> None:
        self._mmap: mmap.mmap | None = None
        data: bytes | mmap.mmap = b""
        if isinstance(source, bytes | bytearray | memoryview):
            data = bytes(source)
        else:
            path = path or str(source)
            with Path(source).open("rb") as handle:
                if os.fstat(handle.fileno()).st_size:  # mmap refuses an empty file
                    data = self._mmap = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self.path = path
        self._data = data
        self.trailer: Trailer = read_trailer(data, path)
        try:
            self.codec: Codec = codec_of(self.trailer.codec)
        except UnsupportedCodec as exc:
            raise UnsupportedHFileError(path, str(exc)) from exc
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cached_blocks = cached_blocks
        self._index_blocks: dict[int, IndexEntries] = {}
        self._leaves: IndexEntries | None = None
        self._load_on_open()

    # -- opening ---------------------------------------------------------------------------------

    def _load_on_open(self) -> None:
        t = self.trailer
        root = self._block(t.load_on_open_offset, (BlockKind.ROOT_INDEX,))
        self._root = self._index(lambda: read_root_index(root.payload, t.data_index_count), root.offset)
        meta = self._block(root.offset + root.on_disk_size, (BlockKind.ROOT_INDEX,))
        self._meta = self._index(
            lambda: read_root_index(meta.payload, t.meta_index_count, rows=False), meta.offset
        )
        info_at = t.file_info_offset or meta.offset + meta.on_disk_size
        self.file_info: dict[str, bytes] = self._file_info(self._block(info_at, (BlockKind.FILE_INFO,)))
        version = self.file_info.get("KEY_VALUE_VERSION")
        # HBase marks files whose cells end in an MVCC vlong with KEY_VALUE_VERSION 1; Hudi's own
        # writer writes the vlong without the mark, so only an explicit 0 means "no vlong".
        self._with_mvcc = version is None or int.from_bytes(version, "big") != 0
        encoding = self.file_info.get("DATA_BLOCK_ENCODING", b"NONE")
        if encoding not in (b"NONE", b""):
            raise UnsupportedHFileError(
                self.path,
                f"data block encoding {encoding.decode(errors='replace')}: only unencoded cells are read",
            )

    def _file_info(self, block: Block) -> dict[str, bytes]:
        payload = block.payload
        if payload[:4] != _PBUF:
            raise UnsupportedHFileError(
                self.path, "a file info block without protobuf (PBUF): HFile v2 Writable format"
            )
        try:
            length, pos = read_varint(payload, 4)
            if pos + length > len(payload):
                raise ProtobufError(f"a file info message of {length} bytes runs past its block")
            info: dict[str, bytes] = {}
            for number, pair in message_fields(payload[pos : pos + length]):
                if number == 1 and isinstance(pair, bytes):
                    fields = dict(message_fields(pair))
                    name, value = fields.get(1, b""), fields.get(2, b"")
                    if isinstance(name, bytes) and isinstance(value, bytes):
                        info[name.decode("utf-8", "replace")] = value
        except ProtobufError as exc:
            raise HFileCorruptError(self.path, f"the file info block does not decode ({exc})") from exc
        return info

    def _block(self, offset: int, kinds: tuple[BlockKind, ...]) -> Block:
        return read_block(self._data, offset, self.codec, kinds, self.path)

    def _index(self, parse: Callable[[], IndexEntries], offset: int) -> IndexEntries:
        try:
            entries: IndexEntries = parse()
        except IndexFormatError as exc:
            raise HFileCorruptError(self.path, f"the index block at byte {offset}: {exc}") from exc
        return entries

    # -- public ----------------------------------------------------------------------------------

    @property
    def num_entries(self) -> int:
        """The number of cells, as the trailer says."""
        return self.trailer.entry_count

    @property
    def meta_names(self) -> list[str]:
        """The names of the file's meta blocks (e.g. ``bloomFilter``)."""
        return [name.decode("utf-8", "replace") for name in self._meta.rows]

    def meta_block(self, name: str) -> bytes | None:
        """A meta block's payload by name, None when the file has none of that name."""
        try:
            i = self._meta.rows.index(name.encode())
        except ValueError:
            return None
        return self._block(int(self._meta.offsets[i]), (BlockKind.META,)).payload

    def get(self, key: bytes) -> bytes | None:
        """The value of ``key``, None when the file does not hold it; decodes one data block."""
        entries, depth = self._root, 1
        while True:
            i = bisect.bisect_right(entries.rows, key) - 1
            if i < 0:
                return None
            if depth == self.trailer.data_index_levels:
                break
            entries, depth = self._child(int(entries.offsets[i]), depth), depth + 1
        offset = int(entries.offsets[i])
        try:
            return find_cell(self._payload(offset), key, self._with_mvcc)
        except CellFormatError as exc:
            raise HFileCorruptError(self.path, f"the data block at byte {offset}: {exc}") from exc

    def get_many(self, keys: Iterable[bytes] | pa.Array) -> pa.Table:
        """The cells of those of ``keys`` the file holds (``key``, ``value``), in key order; each
        index block and data block needed is read once."""
        wanted = keys if isinstance(keys, pa.Array) else pa.array(list(keys), pa.binary())
        wanted = pc.unique(wanted.cast(pa.binary()).drop_null())
        wanted = wanted.take(pc.sort_indices(wanted))
        if not len(wanted) or not len(self._root):
            return SCHEMA.empty_table()
        offsets = self._descend(wanted)
        found = [
            self._found(int(offset), wanted.filter(pa.array(offsets == offset)))
            for offset in np.unique(offsets[offsets >= 0])
        ]
        return pa.concat_tables(found) if found else SCHEMA.empty_table()

    def scan(self) -> pa.Table:
        """Every cell (``key``, ``value``) in key order; checks the count against the trailer and
        the order of the keys, so a damaged file is an error, never missing or misordered rows."""
        leaves = self._leaf_entries()
        tables = [self._table(self._cells(int(offset))) for offset in leaves.offsets]
        # One chunk per column, not one per block: what callers filter and join is contiguous.
        table = pa.concat_tables(tables).combine_chunks() if tables else SCHEMA.empty_table()
        if table.num_rows != self.trailer.entry_count:
            raise HFileCorruptError(
                self.path,
                f"{table.num_rows} cells in the data blocks, the trailer says {self.trailer.entry_count}",
            )
        keys = table[KEY].chunk(0) if table[KEY].num_chunks else pa.array([], pa.binary())
        if len(keys) > 1 and not pc.all(pc.less_equal(keys[:-1], keys[1:])).as_py():
            raise HFileCorruptError(self.path, "the cells are not in key order")
        return table

    def scan_prefix(self, prefix: bytes) -> pa.Table:
        """The cells whose key starts with ``prefix``, in key order; reads only the data blocks
        whose key range overlaps the prefix's."""
        if not prefix:
            return self.scan()
        leaves = self._leaf_entries()
        upper = _successor(prefix)
        bounds = pa.array([prefix] if upper is None else [prefix, upper], pa.binary())
        first, *rest = locate(leaves.keys, bounds)
        last = int(rest[0]) if rest else len(leaves) - 1
        tables = []
        for offset in leaves.offsets[max(int(first), 0) : last + 1]:
            table = self._table(self._cells(int(offset)))
            keep = pc.greater_equal(table[KEY], pa.scalar(prefix, pa.binary()))
            if upper is not None:
                keep = pc.and_(keep, pc.less(table[KEY], pa.scalar(upper, pa.binary())))
            tables.append(table.filter(keep))
        return pa.concat_tables(tables) if tables else SCHEMA.empty_table()

    def scan_prefixes(self, prefixes: Iterable[bytes]) -> pa.Table:
        """The cells whose key starts with any of ``prefixes``, in key order; each data block whose
        key range overlaps a prefix's is read once (Hudi's ``getRecordsByKeyPrefixes``)."""
        wanted = sorted(set(prefixes))
        if not wanted:
            return SCHEMA.empty_table()
        if b"" in wanted:
            return self.scan()
        leaves = self._leaf_entries()
        if not len(leaves.offsets):
            return SCHEMA.empty_table()
        uppers = [_successor(p) for p in wanted]
        located = locate(leaves.keys, pa.array(wanted + [u or b"" for u in uppers], pa.binary()))
        first, last = located[: len(wanted)], located[len(wanted) :]
        last = np.where([u is None for u in uppers], len(leaves) - 1, last)
        # The blocks of every prefix's range [first, last], each once.
        marks = np.zeros(len(leaves) + 1, np.int64)
        np.add.at(marks, np.maximum(first, 0), 1)
        np.add.at(marks, last + 1, -1)
        blocks = np.flatnonzero(np.cumsum(marks)[:-1] > 0)
        tables = [self._table(self._cells(int(leaves.offsets[b]))) for b in blocks]
        if not tables:
            return SCHEMA.empty_table()
        table = pa.concat_tables(tables).combine_chunks()
        return table.filter(starts_with_any(table[KEY], wanted))

    def close(self) -> None:
        """Unmap the file (a reader of bytes holds nothing to release)."""
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None

    def __enter__(self) -> HFileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"HFileReader({self.path or '<bytes>'}: {self.num_entries} cells, {self.codec.name}, "
            f"{self.trailer.data_index_levels}-level index)"
        )

    # -- index and blocks ------------------------------------------------------------------------

    def _child(self, offset: int, depth: int) -> IndexEntries:
        """The non-root index block at ``offset`` (``depth`` levels below the root), cached."""
        entries = self._index_blocks.get(offset)
        if entries is None:
            block = self._block(offset, _INDEX_KINDS)
            entries = self._index_blocks[offset] = self._index(
                lambda: read_non_root_index(block.payload), offset
            )
        return entries

    def _descend(self, keys: pa.Array) -> np.ndarray:
        """The offset of the data block each of ``keys`` (sorted) can be in, -1 for none."""
        offsets = np.full(len(keys), -1, np.int64)
        pending = [(self._root, np.arange(len(keys)))]
        for depth in range(1, self.trailer.data_index_levels + 1):
            next_level = []
            for entries, rows in pending:
                at = locate(entries.keys, keys.take(pa.array(rows)))
                inside = at >= 0
                if depth == self.trailer.data_index_levels:
                    offsets[rows[inside]] = entries.offsets[at[inside]]
                    continue
                for child in np.unique(at[inside]):
                    block = self._child(int(entries.offsets[child]), depth)
                    next_level.append((block, rows[inside][at[inside] == child]))
            pending = next_level
        return offsets

    def _leaf_entries(self) -> IndexEntries:
        """Every data block's index entry in key order (reads every index block once)."""
        if self._leaves is None:
            level = [self._root]
            for depth in range(1, self.trailer.data_index_levels):
                level = [self._child(int(o), depth) for entries in level for o in entries.offsets]
            keys = [k for entries in level for k in entries.rows]
            self._leaves = IndexEntries(
                pa.array(keys, pa.binary()),
                np.concatenate([e.offsets for e in level]) if level else np.empty(0, np.int64),
                np.concatenate([e.sizes for e in level]) if level else np.empty(0, np.int64),
                keys,
            )
        return self._leaves

    def _payload(self, offset: int) -> bytes:
        """The uncompressed payload of the data block at ``offset``, from a small cache of recent
        blocks (lookups of nearby keys decompress a block once)."""
        payload = self._cache.get(offset)
        if payload is not None:
            self._cache.move_to_end(offset)
            return payload
        block = self._block(offset, _DATA_KINDS)
        if block.kind is BlockKind.ENCODED_DATA:
            raise UnsupportedHFileError(self.path, f"the data block at byte {offset} is encoded (DATABLKE)")
        self._cache[offset] = block.payload
        if len(self._cache) > self._cached_blocks:
            self._cache.popitem(last=False)
        return block.payload

    def _cells(self, offset: int) -> Cells:
        """The cells of the data block at ``offset``."""
        try:
            return decode_cells(self._payload(offset), self._with_mvcc)
        except CellFormatError as exc:
            raise HFileCorruptError(self.path, f"the data block at byte {offset}: {exc}") from exc

    @staticmethod
    def _table(cells: Cells) -> pa.Table:
        return pa.Table.from_arrays([cells.keys, cells.values], schema=SCHEMA)

    def _found(self, offset: int, keys: pa.Array) -> pa.Table:
        """The cells of ``keys`` (sorted) in the data block at ``offset``. One or two keys walk the
        block until each is passed (half a block each, on average); more decode the block once
        and match them all in one hash lookup."""
        if len(keys) > 2:
            return self._match(self._cells(offset), keys)
        wanted = keys.to_pylist()
        try:
            values = [find_cell(self._payload(offset), key, self._with_mvcc) for key in wanted]
        except CellFormatError as exc:
            raise HFileCorruptError(self.path, f"the data block at byte {offset}: {exc}") from exc
        hits = [i for i, value in enumerate(values) if value is not None]
        return pa.Table.from_arrays(
            [
                pa.array([wanted[i] for i in hits], pa.binary()),
                pa.array([values[i] for i in hits], pa.binary()),
            ],
            schema=SCHEMA,
        )

    @staticmethod
    def _match(cells: Cells, keys: pa.Array) -> pa.Table:
        at = pc.index_in(keys, value_set=cells.keys)
        hits = at.drop_null()
        return pa.Table.from_arrays([keys.filter(pc.is_valid(at)), cells.values.take(hits)], schema=SCHEMA)


def starts_with_any(keys: pa.Array | pa.ChunkedArray, prefixes: Iterable[bytes]) -> pa.BooleanArray:
    """Per key, whether it starts with one of ``prefixes`` (one set lookup per prefix length)."""
    keys = keys.cast(pa.binary())
    by_length: dict[int, list[bytes]] = {}
    for p in prefixes:
        by_length.setdefault(len(p), []).append(p)
    if 0 in by_length:
        return pa.array(np.ones(len(keys), dtype=bool))
    hit = pa.array(np.zeros(len(keys), dtype=bool))
    for length, group in by_length.items():
        heads = pc.binary_slice(keys, 0, length)
        hit = pc.or_(hit, pc.is_in(heads, value_set=pa.array(group, pa.binary())))
    return hit


def _successor(prefix: bytes) -> bytes | None:
    """The least key above every key starting with ``prefix`` (None: no such key)."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes([stripped[-1] + 1]) if stripped else None
