"""Log file framing, both ways: a log file's bytes cut into blocks (``LogBlock``, content still
encoded) and corrupt spans (``CorruptBlock``), and a block's frame written around its content.

A block, every integer big-endian (``HoodieLogFormatWriter`` / ``HoodieLogFileReader``)::

    "#HUDI#"                    magic
    long   size                 bytes after this field, through the trailer
    int    format version       1
    int    block type           BlockType ordinal
    map    header               headers.py
    long   content length
    bytes  content              per block type
    map    footer               (always empty so far)
    long   trailer              size + 6: the block's length from its magic, less the size field

Corrupt blocks are found as Hudi finds them: a block is well framed when its size field is there,
the trailer ``size - 8`` bytes further holds ``size + 6``, and right after it comes the next magic
or the end of the file. Any other block is corrupt up to the next magic (searched from just after
its own) or to the end of the file, and reading goes on there: a crash mid-append leaves a partial
last block, which costs that block only. Two stricter rules than Hudi's, which would throw instead:
a well-framed block whose inside does not add up (header, content length, footer and trailer must
fill the frame exactly) or whose format version is not 1 is corrupt too, skipped to its frame's
end; and bytes before the first magic or a tail too short for a magic are reported as corrupt
rather than ignored, so the blocks of a file always cover every one of its bytes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from index_store.hudi_log.format import FORMAT_VERSION, INT, LONG, MAGIC, BlockType, HeaderKey
from index_store.hudi_log.headers import HeaderFormatError, read_metadata, write_metadata

__all__ = ["CorruptBlock", "LogBlock", "frame", "parse_log", "read_log_file"]

_SIZE_AT = len(MAGIC)  # the size field follows the magic
_BODY_AT = _SIZE_AT + LONG.size  # where the size counts from
# format version, type, empty header, content length, empty footer, trailer
_MIN_SIZE = INT.size * 2 + INT.size + LONG.size + INT.size + LONG.size


@dataclass(frozen=True, eq=False)
class LogBlock:
    """One well-framed block of a log file; its content is decoded on demand (``decoders.py``),
    so a block that does not count for a read is never decoded."""

    path: str  # the log file it was read from ("" for bytes not read from a file)
    offset: int  # byte offset of its magic in the file
    size: int  # its bytes, magic through trailer
    type_code: int  # a BlockType, or a code unknown here kept as read
    header: Mapping[int, str]  # in the order written (headers.py says why that matters)
    content: bytes
    footer: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))
    format_version: int = FORMAT_VERSION

    @property
    def block_type(self) -> BlockType | None:
        """The type, or None for a code this library does not know."""
        try:
            return BlockType(self.type_code)
        except ValueError:
            return None

    @property
    def instant(self) -> str | None:
        """``INSTANT_TIME``: the instant (delta commit, rollback) that wrote the block."""
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant(self) -> str | None:
        """``TARGET_INSTANT_TIME``: the instant a rollback command block undoes."""
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        """``SCHEMA``: the Avro schema (JSON) of a data block's records."""
        return self.header.get(HeaderKey.SCHEMA)


@dataclass(frozen=True, eq=False)
class CorruptBlock:
    """Bytes of a log file that are no well-framed block, skipped as Hudi skips them."""

    path: str
    offset: int
    size: int
    reason: str
    data: bytes  # the skipped bytes, so a file's blocks always add up to the file

    type_code = int(BlockType.CORRUPT)


def read_log_file(path: str | os.PathLike[str]) -> list[LogBlock | CorruptBlock]:
    """The blocks of a log file, in file order (never raises for a truncated or corrupt file)."""
    with open(path, "rb") as f:
        data = f.read()
    return parse_log(data, os.fspath(path))


def parse_log(data: bytes, path: str = "") -> list[LogBlock | CorruptBlock]:
    """The blocks of a log file's bytes, in order; their bytes always add up to ``data``."""
    blocks: list[LogBlock | CorruptBlock] = []
    pos = 0
    while pos < len(data):
        if not data.startswith(MAGIC, pos):
            # only at the file's start or for a tail after the last block (a block always ends
            # right before a magic or the file's end)
            end = _next_magic(data, pos + 1)
            blocks.append(
                CorruptBlock(path, pos, end - pos, "no magic at the start of the block", data[pos:end])
            )
            pos = end
            continue
        framed = _frame_end(data, pos)
        if isinstance(framed, str):
            end = _next_magic(data, pos + len(MAGIC))
            blocks.append(CorruptBlock(path, pos, end - pos, framed, data[pos:end]))
            pos = end
            continue
        block = _block(data, pos, framed, path)
        blocks.append(block)
        pos = framed
    return blocks


def frame(
    type_code: int,
    header: Mapping[int, str],
    content: bytes,
    footer: Mapping[int, str] | None = None,
) -> bytes:
    """A whole block (magic through trailer) around already encoded ``content``."""
    body = b"".join(
        [
            INT.pack(FORMAT_VERSION),
            INT.pack(int(type_code)),
            write_metadata(header),
            LONG.pack(len(content)),
            content,
            write_metadata(footer or {}),
        ]
    )
    size = len(body) + LONG.size
    return MAGIC + LONG.pack(size) + body + LONG.pack(size + len(MAGIC))


def _next_magic(data: bytes, start: int) -> int:
    found = data.find(MAGIC, start)
    return len(data) if found < 0 else found


def _frame_end(data: bytes, pos: int) -> int | str:
    """Where the block at ``pos`` ends when it is well framed, else why it is corrupt."""
    if pos + _BODY_AT > len(data):
        return "the file ends inside the block's size field"
    size = LONG.unpack_from(data, pos + _SIZE_AT)[0]
    end = pos + _BODY_AT + size
    if size < _MIN_SIZE or end > len(data):
        return f"block size {size} runs past the end of the file ({len(data) - pos - _BODY_AT} bytes left)"
    trailer = LONG.unpack_from(data, end - LONG.size)[0]
    if trailer != size + len(MAGIC):
        return f"the trailer says {trailer} bytes, the size field {size} (+{len(MAGIC)})"
    # Hudi takes fewer than six bytes left for the end of the file (its magic read hits EOF)
    if len(data) - end >= len(MAGIC) and not data.startswith(MAGIC, end):
        return "no magic right after the block"
    return end


def _block(data: bytes, pos: int, end: int, path: str) -> LogBlock | CorruptBlock:
    """The well-framed block in ``data[pos:end]``, or a corrupt one when its inside does not add
    up (skipped to ``end``: its frame was checked, so the next block starts there)."""
    at = pos + _BODY_AT
    trailer_at = end - LONG.size
    try:
        version, at = INT.unpack_from(data, at)[0], at + INT.size
        if version != FORMAT_VERSION:
            raise HeaderFormatError(f"log format version {version}, not {FORMAT_VERSION}")
        type_code, at = INT.unpack_from(data, at)[0], at + INT.size
        header, at = read_metadata(data, at, trailer_at)
        if at + LONG.size > trailer_at:
            raise HeaderFormatError("the content length runs past the block")
        length, at = LONG.unpack_from(data, at)[0], at + LONG.size
        if length < 0 or at + length > trailer_at:
            raise HeaderFormatError(f"content of {length} bytes runs past the block")
        content, at = data[at : at + length], at + length
        footer, at = read_metadata(data, at, trailer_at)
        if at != trailer_at:
            raise HeaderFormatError(f"{trailer_at - at} bytes between the footer and the trailer")
    except HeaderFormatError as exc:
        return CorruptBlock(path, pos, end - pos, f"malformed block: {exc}", data[pos:end])
    return LogBlock(
        path, pos, end - pos, type_code, MappingProxyType(header), content, MappingProxyType(footer), version
    )
