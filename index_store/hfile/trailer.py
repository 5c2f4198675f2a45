"""The fixed trailer, the last 4,096 bytes of an HFile, both ways: the magic ``TRABLK"$``, a
length-prefixed protobuf ``TrailerProto`` (where the load-on-open section is, the entry count,
the index depth, the codec), zero padding, and the version in the last four bytes (minor in the
first byte, major in the other three)."""

from __future__ import annotations

import mmap
from dataclasses import dataclass

from index_store.errors import HFileCorruptError, UnsupportedHFileError
from index_store.hfile.protobuf import (
    ProtobufError,
    field_bytes,
    field_varint,
    message_fields,
    read_varint,
    varint,
)

__all__ = ["MAJOR_VERSION", "TRAILER_MAGIC", "TRAILER_SIZE", "Trailer", "encode_trailer", "read_trailer"]

TRAILER_SIZE = 4096
TRAILER_MAGIC = b'TRABLK"$'
MAJOR_VERSION = 3


@dataclass(frozen=True)
class Trailer:
    """The fields of ``TrailerProto`` a reader uses (HBase's ``FixedFileTrailer``)."""

    load_on_open_offset: int
    file_info_offset: int
    data_index_count: int  # entries of the root data index
    meta_index_count: int
    entry_count: int  # cells in the file
    data_index_levels: int  # 1: the root points at data blocks; n: n - 1 levels of index blocks between
    first_data_block_offset: int
    last_data_block_offset: int
    codec: int  # codecs.Codec's ordinal, checked by the reader
    comparator: str = ""
    uncompressed_data_index_size: int = 0
    total_uncompressed_bytes: int = 0
    minor_version: int = 0


# TrailerProto's field numbers (HBase's HFile.proto).
_FIELDS = {
    1: "file_info_offset",
    2: "load_on_open_offset",
    3: "uncompressed_data_index_size",
    4: "total_uncompressed_bytes",
    5: "data_index_count",
    6: "meta_index_count",
    7: "entry_count",
    8: "data_index_levels",
    9: "first_data_block_offset",
    10: "last_data_block_offset",
    11: "comparator",
    12: "codec",
}


def read_trailer(data: bytes | memoryview | mmap.mmap, path: str = "") -> Trailer:
    """The trailer at the end of ``data`` (a whole HFile)."""
    if len(data) < TRAILER_SIZE:
        raise HFileCorruptError(path, f"{len(data)} bytes, fewer than the {TRAILER_SIZE}-byte trailer")
    start = len(data) - TRAILER_SIZE
    if bytes(data[start : start + 8]) != TRAILER_MAGIC:
        raise HFileCorruptError(path, f"no trailer magic {TRAILER_MAGIC!r} {TRAILER_SIZE} bytes from the end")
    tail = bytes(data[start:])
    version = tail[-4:]
    minor, major = version[0], int.from_bytes(version[1:], "big")
    if major != MAJOR_VERSION:
        raise UnsupportedHFileError(
            path, f"HFile major version {major}; only version {MAJOR_VERSION} (what Hudi writes) is read"
        )
    values: dict[str, int | str] = {"data_index_levels": 1, "codec": 2}
    try:
        length, pos = read_varint(tail, 8, TRAILER_SIZE - 4)
        if pos + length > TRAILER_SIZE - 4:
            raise ProtobufError(f"the trailer's message of {length} bytes runs past the trailer")
        for number, value in message_fields(tail[pos : pos + length]):
            name = _FIELDS.get(number)
            if name == "comparator" and isinstance(value, bytes):
                values[name] = value.decode("utf-8", "replace")
            elif name is not None and isinstance(value, int):
                values[name] = value
    except ProtobufError as exc:
        raise HFileCorruptError(path, f"the trailer does not decode ({exc})") from exc
    for required in ("load_on_open_offset", "entry_count"):
        if required not in values:
            raise HFileCorruptError(path, f"the trailer has no {required}")
    values.setdefault("file_info_offset", 0)
    trailer = Trailer(
        load_on_open_offset=int(values["load_on_open_offset"]),
        file_info_offset=int(values["file_info_offset"]),
        data_index_count=int(values.get("data_index_count", 0)),
        meta_index_count=int(values.get("meta_index_count", 0)),
        entry_count=int(values["entry_count"]),
        data_index_levels=int(values["data_index_levels"]),
        first_data_block_offset=int(values.get("first_data_block_offset", 0)),
        last_data_block_offset=int(values.get("last_data_block_offset", 0)),
        codec=int(values["codec"]),
        comparator=str(values.get("comparator", "")),
        uncompressed_data_index_size=int(values.get("uncompressed_data_index_size", 0)),
        total_uncompressed_bytes=int(values.get("total_uncompressed_bytes", 0)),
        minor_version=minor,
    )
    if not 0 <= trailer.load_on_open_offset < start or trailer.data_index_levels < 1:
        raise HFileCorruptError(
            path,
            f"the trailer puts the load-on-open section at byte {trailer.load_on_open_offset} with "
            f"{trailer.data_index_levels} index levels, outside a file of {len(data)} bytes",
        )
    return trailer


def encode_trailer(trailer: Trailer) -> bytes:
    """The 4,096 bytes of ``trailer`` as HBase writes them."""
    message = b"".join(
        field_bytes(number, trailer.comparator.encode())
        if name == "comparator"
        else field_varint(number, getattr(trailer, name))
        for number, name in _FIELDS.items()
    )
    body = TRAILER_MAGIC + varint(len(message)) + message
    if len(body) > TRAILER_SIZE - 4:
        raise ValueError(f"a trailer message of {len(message)} bytes does not fit the fixed trailer")
    version = bytes([trailer.minor_version]) + MAJOR_VERSION.to_bytes(3, "big")
    return body + bytes(TRAILER_SIZE - 4 - len(body)) + version
