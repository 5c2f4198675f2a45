"""``write_hfile``: an HFile in the layout HBase writes for Hudi, for tests and benchmarks that need
what the real metadata tables here never have: many data blocks, multi-level indexes (leaf index
blocks inline among the data blocks, intermediate blocks after them), shortened index keys, meta
blocks and every codec with a compressor here.

Layout: data blocks (a leaf index block after every ``index_fanout`` of them when one root block
cannot index them all), meta blocks, intermediate index blocks, then the load-on-open section
(root data index, meta index, file info) and the fixed trailer."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping, Sequence

from index_store.hfile.blocks import BlockKind, encode_block
from index_store.hfile.cells import encode_cells
from index_store.hfile.codecs import Codec
from index_store.hfile.index import encode_non_root_index, encode_root_index, hbase_key
from index_store.hfile.protobuf import field_bytes, varint
from index_store.hfile.trailer import Trailer, encode_trailer

__all__ = ["COMPARATOR", "write_hfile"]

COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
_CELL_OVERHEAD = 8 + 2 + 10 + 1  # lengths, row length, family/timestamp/type, MVCC byte


def write_hfile(
    keys: Sequence[bytes],
    values: Sequence[bytes],
    *,
    codec: Codec = Codec.GZ,
    block_size: int = 64 * 1024,
    index_fanout: int = 128,
    short_index_keys: bool = True,
    file_info: Mapping[str, bytes] | None = None,
    meta_blocks: Mapping[str, bytes] | None = None,
) -> bytes:
    """An HFile of the cells ``keys[i] -> values[i]`` (keys sorted, as HFiles require).

    ``block_size``: uncompressed bytes after which a data block is closed; ``index_fanout``: the
    most entries of one index block (more data blocks than that make a multi-level index);
    ``short_index_keys``: index a block by the shortest key between the previous block's last key
    and its first, as HBase does, instead of its first key."""
    if len(keys) != len(values):
        raise ValueError(f"{len(keys)} keys but {len(values)} values")
    if any(a > b for a, b in itertools.pairwise(keys)):
        raise ValueError("an HFile's keys must be in sorted order")
    if index_fanout < 2:
        raise ValueError("index_fanout must be at least 2")
    out = bytearray()
    groups = _data_blocks(keys, values, block_size)
    multi_level = len(groups) > index_fanout
    level: list[tuple[int, int, bytes]] = []  # (offset, on-disk size, index key) of the level being built
    above: list[tuple[int, int, bytes]] = []  # leaf index entries, when the index has levels
    leaf: list[tuple[int, int, bytes]] = []
    data_offsets: list[int] = []
    for i, (start, end) in enumerate(groups):
        block = encode_block(
            BlockKind.DATA, encode_cells(list(keys[start:end]), list(values[start:end])), codec
        )
        first = keys[start]
        index_key = _separator(keys[start - 1], first) if short_index_keys and start else first
        entry = (len(out), len(block), hbase_key(index_key)[: 2 + len(index_key)])
        data_offsets.append(len(out))
        out += block
        if not multi_level:
            level.append(entry)
            continue
        leaf.append(entry)
        if len(leaf) == index_fanout or i == len(groups) - 1:  # a leaf block inline, as HBase writes it
            leaf_block = encode_block(BlockKind.LEAF_INDEX, encode_non_root_index(leaf), codec)
            above.append((len(out), len(leaf_block), leaf[0][2]))
            out += leaf_block
            leaf = []
    levels = 1
    if multi_level:
        level, levels = above, 2
        while len(level) > index_fanout:
            next_level = []
            for chunk in range(0, len(level), index_fanout):
                entries = level[chunk : chunk + index_fanout]
                block = encode_block(BlockKind.INTERMEDIATE_INDEX, encode_non_root_index(entries), codec)
                next_level.append((len(out), len(block), entries[0][2]))
                out += block
            level, levels = next_level, levels + 1
    meta_entries = []
    for name, payload in sorted((meta_blocks or {}).items()):
        block = encode_block(BlockKind.META, payload, codec)
        meta_entries.append((len(out), len(block), name.encode()))
        out += block
    load_on_open = len(out)
    root = encode_root_index(level)
    if levels > 1:  # HBase's mid-key metadata after a multi-level root: not entries
        root += struct.pack(">qii", level[0][0], level[0][1], 0)
    out += encode_block(BlockKind.ROOT_INDEX, root, codec)
    out += encode_block(BlockKind.ROOT_INDEX, encode_root_index(meta_entries), codec)
    file_info_offset = len(out)
    info = _file_info(keys, values, file_info or {})
    out += encode_block(BlockKind.FILE_INFO, info, codec)
    trailer = Trailer(
        load_on_open_offset=load_on_open,
        file_info_offset=file_info_offset,
        data_index_count=len(level),
        meta_index_count=len(meta_entries),
        entry_count=len(keys),
        data_index_levels=levels,
        first_data_block_offset=data_offsets[0] if data_offsets else 0,
        last_data_block_offset=data_offsets[-1] if data_offsets else 0,
        codec=int(codec),
        comparator=COMPARATOR,
        uncompressed_data_index_size=len(root),
        total_uncompressed_bytes=sum(
            len(k) + len(v) + _CELL_OVERHEAD for k, v in zip(keys, values, strict=True)
        ),
    )
    out += encode_trailer(trailer)
    return bytes(out)


def _data_blocks(keys: Sequence[bytes], values: Sequence[bytes], block_size: int) -> list[tuple[int, int]]:
    """The (start, end) cell ranges of the data blocks: a block closes once it reaches
    ``block_size`` uncompressed bytes."""
    groups, start, size = [], 0, 0
    for i, (key, value) in enumerate(zip(keys, values, strict=True)):
        size += len(key) + len(value) + _CELL_OVERHEAD
        if size >= block_size:
            groups.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(keys):
        groups.append((start, len(keys)))
    return groups


def _separator(previous: bytes, first: bytes) -> bytes:
    """The shortest key above ``previous`` and not above ``first``: ``first`` cut one byte past
    their common prefix."""
    common = 0
    while common < min(len(previous), len(first)) and previous[common] == first[common]:
        common += 1
    return first[: common + 1]


def _file_info(keys: Sequence[bytes], values: Sequence[bytes], extra: Mapping[str, bytes]) -> bytes:
    """The file info block's payload: ``PBUF``, then a length-prefixed ``InfoProto``."""
    n = max(len(keys), 1)
    info = {
        "hfile.LASTKEY": hbase_key(keys[-1]) if keys else b"",
        "hfile.AVG_KEY_LEN": struct.pack(">i", sum(len(k) + 12 for k in keys) // n),
        "hfile.AVG_VALUE_LEN": struct.pack(">i", sum(len(v) for v in values) // n),
        "KEY_VALUE_VERSION": struct.pack(">i", 1),
        "MAX_MEMSTORE_TS_KEY": struct.pack(">q", 0),
        **extra,
    }
    message = b"".join(
        field_bytes(1, field_bytes(1, name.encode()) + field_bytes(2, value)) for name, value in info.items()
    )
    return b"PBUF" + varint(len(message)) + message
