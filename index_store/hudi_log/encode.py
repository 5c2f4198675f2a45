"""Whole blocks as Hudi writes them (``HoodieLogFormatWriter``): Avro data blocks, delete blocks
and rollback command blocks, framed and ready to append to a log file. Re-encoding a block read
from a real file, with its own header (order kept), gives back its bytes exactly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from index_store.hudi_log.avro_data import encode_avro_content
from index_store.hudi_log.deletes import encode_delete_content
from index_store.hudi_log.format import CONTENT_VERSION, BlockType, CommandType, HeaderKey
from index_store.hudi_log.frames import frame

__all__ = ["block_header", "encode_command_block", "encode_data_block", "encode_delete_block"]


def block_header(
    instant: str,
    *,
    schema: str | None = None,
    target_instant: str | None = None,
    command: CommandType | None = None,
) -> dict[int, str]:
    """A header for a new block, keys in ordinal order: ``INSTANT_TIME``, and ``SCHEMA`` (data and
    delete blocks), ``TARGET_INSTANT_TIME`` and ``COMMAND_BLOCK_TYPE`` (rollback blocks)."""
    header = {HeaderKey.INSTANT_TIME: instant}
    if target_instant is not None:
        header[HeaderKey.TARGET_INSTANT_TIME] = target_instant
    if schema is not None:
        header[HeaderKey.SCHEMA] = schema
    if command is not None:
        header[HeaderKey.COMMAND_BLOCK_TYPE] = str(int(command))
    return {int(k): v for k, v in header.items()}


def encode_data_block(
    rows: pa.Table | Sequence[Mapping[str, Any]],
    header: Mapping[int, str],
    *,
    content_version: int = CONTENT_VERSION,
) -> bytes:
    """An Avro data block of ``rows`` in the Avro schema of ``header[SCHEMA]``."""
    schema = header.get(HeaderKey.SCHEMA)
    if schema is None:
        raise ValueError("an Avro data block's header needs its SCHEMA (the records' Avro schema as JSON)")
    return frame(BlockType.AVRO_DATA, header, encode_avro_content(rows, schema, content_version))


def encode_delete_block(deletes: pa.Table, header: Mapping[int, str]) -> bytes:
    """A delete block (version 3) of ``record_key``, ``partition_path`` and optional
    ``ordering_value`` / ``ordering_wrapper`` columns (``deletes.py``)."""
    return frame(BlockType.DELETE, header, encode_delete_content(deletes))


def encode_command_block(header: Mapping[int, str]) -> bytes:
    """A command block (a rollback: ``block_header(instant, target_instant=...,
    command=CommandType.ROLLBACK)``); its content is empty, as Hudi writes it."""
    if HeaderKey.TARGET_INSTANT_TIME not in header or HeaderKey.COMMAND_BLOCK_TYPE not in header:
        raise ValueError("a command block's header needs TARGET_INSTANT_TIME and COMMAND_BLOCK_TYPE")
    return frame(BlockType.COMMAND, header, b"")
