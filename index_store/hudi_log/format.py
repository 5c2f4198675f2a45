"""The constants of Hudi's log format: the magic, the versions, the block types and the keys of
header and footer maps, each an ordinal of Hudi's Java enums (``HoodieLogBlockType``,
``HeaderMetadataType``), so they are never renumbered: Hudi only appends members."""

from __future__ import annotations

import struct
from enum import IntEnum

MAGIC = b"#HUDI#"
# The log format version of every block Hudi has written since 0.5 (version 0, the archived
# logs of older releases, had no type, header, footer nor trailer).
FORMAT_VERSION = 1
# The first int of an Avro data or delete block's content; Hudi writes 3 (its
# HoodieLogBlock.version) and reads 1-3.
CONTENT_VERSION = 3

# Java DataOutput: every integer big-endian.
INT = struct.Struct(">i")
LONG = struct.Struct(">q")


class BlockType(IntEnum):
    """``HoodieLogBlockType``, by ordinal (the int after a block's format version)."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2  # never written: what a reader calls the bytes of a block it cannot frame
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """``HeaderMetadataType``, by ordinal: the keys of a block's header (and footer) map."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandType(IntEnum):
    """``HoodieCommandBlockTypeEnum``: a command block's ``COMMAND_BLOCK_TYPE`` header, the
    ordinal as decimal text."""

    ROLLBACK = 0


def block_type_name(code: int) -> str:
    """A block type code as a word for messages (``AVRO_DATA``, or ``type 42``)."""
    try:
        return BlockType(code).name
    except ValueError:
        return f"type {code}"
