"""The little of protobuf's wire format an HFile needs, both ways: varints, and messages as
(field number, value) pairs. The trailer and the file info block are protobuf messages; a
hand-written reader of a dozen lines spares a dependency and a generated module."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["ProtobufError", "field_bytes", "field_varint", "message_fields", "read_varint", "varint"]

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5


class ProtobufError(ValueError):
    """Bytes that are no protobuf message: a varint or a field that runs past the end."""


def read_varint(data: bytes | memoryview, pos: int, end: int | None = None) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    end = len(data) if end is None else end
    value, shift = 0, 0
    while pos < end and shift < 64:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise ProtobufError("a varint runs past the end of its message (or is longer than 10 bytes)")


def message_fields(data: bytes | memoryview) -> Iterator[tuple[int, int | bytes]]:
    """The fields of a message in order: ints for varint and fixed fields, bytes for
    length-delimited ones (strings, bytes, nested messages)."""
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = read_varint(data, pos, end)
        number, wire = tag >> 3, tag & 7
        if wire == VARINT:
            value, pos = read_varint(data, pos, end)
            yield number, value
        elif wire == LENGTH_DELIMITED:
            length, pos = read_varint(data, pos, end)
            if pos + length > end:
                raise ProtobufError(f"field {number} of {length} bytes runs past the end of its message")
            yield number, bytes(data[pos : pos + length])
            pos += length
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if pos + size > end:
                raise ProtobufError(f"fixed field {number} runs past the end of its message")
            yield number, int.from_bytes(data[pos : pos + size], "little")
            pos += size
        else:
            raise ProtobufError(f"field {number} has wire type {wire}, which no HFile message uses")


def varint(value: int) -> bytes:
    """``value`` (unsigned) as a protobuf varint."""
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    """A varint field (uint32, uint64)."""
    return varint(number << 3 | VARINT) + varint(value)


def field_bytes(number: int, value: bytes) -> bytes:
    """A length-delimited field (string, bytes, nested message)."""
    return varint(number << 3 | LENGTH_DELIMITED) + varint(len(value)) + value
