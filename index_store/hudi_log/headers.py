"""A block's header and footer maps, read and written as Hudi does
(``HoodieLogBlock.getLogMetadata`` / ``getHeaderMetadataBytes``): an int count, then per entry the
key's ordinal (int), the value's length in bytes (int) and its UTF-8 bytes.

Hudi keeps these maps in a Java ``HashMap``, whose iteration order (and so the order written) is
not fixed: the real files hold ``INSTANT_TIME, SCHEMA`` as often as ``SCHEMA, INSTANT_TIME``. The
maps here keep the order read, so a block re-encodes to its own bytes; new blocks write keys in
ordinal order."""

from __future__ import annotations

from collections.abc import Mapping

from index_store.hudi_log.format import INT


class HeaderFormatError(ValueError):
    """A metadata map that runs past its block or is not UTF-8 (the block is then corrupt)."""


def read_metadata(data: bytes, pos: int, end: int) -> tuple[dict[int, str], int]:
    """The map starting at ``pos`` (not past ``end``) and the position after it. Keys are the
    ordinals as read: one no member of ``HeaderKey`` names (a newer Hudi's) is kept, not refused."""
    count, pos = _int(data, pos, end)
    if count < 0:
        raise HeaderFormatError(f"negative entry count {count}")
    entries: dict[int, str] = {}
    for _ in range(count):
        key, pos = _int(data, pos, end)
        size, pos = _int(data, pos, end)
        if size < 0 or pos + size > end:
            raise HeaderFormatError(f"entry {key} of {size} bytes runs past the block")
        try:
            entries[key] = data[pos : pos + size].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HeaderFormatError(f"entry {key} is not UTF-8 ({exc})") from exc
        pos += size
    return entries, pos


def write_metadata(entries: Mapping[int, str]) -> bytes:
    """A map's bytes, entries in the mapping's order."""
    parts = [INT.pack(len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        parts += [INT.pack(int(key)), INT.pack(len(raw)), raw]
    return b"".join(parts)


def _int(data: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos + INT.size > end:
        raise HeaderFormatError("the map runs past the block")
    return INT.unpack_from(data, pos)[0], pos + INT.size
