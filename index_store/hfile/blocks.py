"""HFile blocks, both ways: a 33-byte header (magic, on-disk size without the header,
uncompressed size, previous block's offset, checksum type, bytes per checksum, on-disk data size
with the header), the payload compressed with the file's codec, then checksums.

The on-disk size with the header (what index entries store) covers the checksums; the data size
with the header stops before them. Checksums are not verified (HBase's NULL type writes zeros,
and a damaged payload shows as a payload that does not decompress or does not parse)."""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from enum import Enum

from index_store.errors import HFileCorruptError
from index_store.hfile.codecs import Codec, CodecError, compress, decompress

__all__ = ["HEADER", "HEADER_SIZE", "Block", "BlockKind", "encode_block", "read_block"]

HEADER = struct.Struct(">8siiqbii")
HEADER_SIZE = HEADER.size  # 33
BYTES_PER_CHECKSUM = 16 * 1024
CHECKSUM_SIZE = 4


class BlockKind(Enum):
    """A block's type, by its magic."""

    DATA = b"DATABLK*"
    ENCODED_DATA = b"DATABLKE"
    LEAF_INDEX = b"IDXLEAF2"
    INTERMEDIATE_INDEX = b"IDXINTE2"
    ROOT_INDEX = b"IDXROOT2"
    META = b"METABLKc"
    FILE_INFO = b"FILEINF2"
    BLOOM_CHUNK = b"BLMFBLK2"
    BLOOM_META = b"BLMFMET2"
    GENERAL_BLOOM_META = b"BLMFMETA"
    DELETE_FAMILY_BLOOM_META = b"DFBLMET2"


_KINDS = {kind.value: kind for kind in BlockKind}


@dataclass(frozen=True)
class Block:
    """One block read: its kind, where it is, its on-disk size with the header, and its payload
    uncompressed."""

    kind: BlockKind
    offset: int
    on_disk_size: int
    payload: bytes


def read_block(
    data: bytes | memoryview | mmap.mmap,
    offset: int,
    codec: Codec,
    expected: tuple[BlockKind, ...],
    path: str = "",
) -> Block:
    """The block at ``offset``, which must be of one of the ``expected`` kinds."""
    names = " or ".join(kind.name for kind in expected)
    if offset < 0 or offset + HEADER_SIZE > len(data):
        raise HFileCorruptError(path, f"a {names} block at byte {offset} runs past the end of the file")
    magic, on_disk, uncompressed, _previous, _checksum, _per_checksum, data_size = HEADER.unpack_from(
        data, offset
    )
    kind = _KINDS.get(magic)
    if kind is None or kind not in expected:
        found = kind.name if kind is not None else f"magic {magic!r}"
        raise HFileCorruptError(path, f"the block at byte {offset} is {found}, not {names}")
    if on_disk < 0 or uncompressed < 0 or not HEADER_SIZE <= data_size <= HEADER_SIZE + on_disk:
        raise HFileCorruptError(
            path,
            f"the {kind.name} block at byte {offset} has impossible sizes "
            f"({on_disk}, {uncompressed}, {data_size})",
        )
    end = offset + HEADER_SIZE + on_disk
    if end > len(data):
        raise HFileCorruptError(
            path,
            f"the {kind.name} block at byte {offset} ends at byte {end}, past the file's {len(data)} bytes",
        )
    try:
        payload = decompress(codec, data[offset + HEADER_SIZE : offset + data_size], uncompressed)
    except CodecError as exc:
        raise HFileCorruptError(path, f"the {kind.name} block at byte {offset}: {exc}") from exc
    return Block(kind, offset, HEADER_SIZE + on_disk, payload)


def encode_block(kind: BlockKind, payload: bytes, codec: Codec, previous_offset: int = -1) -> bytes:
    """A block as HBase writes it, with zeroed checksums of the NULL checksum type."""
    stored = compress(codec, payload)
    data_size = HEADER_SIZE + len(stored)
    checksums = -(-data_size // BYTES_PER_CHECKSUM) * CHECKSUM_SIZE
    header = HEADER.pack(
        kind.value, len(stored) + checksums, len(payload), previous_offset, 0, BYTES_PER_CHECKSUM, data_size
    )
    return header + stored + bytes(checksums)
