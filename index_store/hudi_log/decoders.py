"""What a block holds, decoded, and the registry of decoders by block type.

``DECODERS`` maps a type code to a function from a ``LogBlock`` to its content: ``DataRows`` (the
records of an Avro or parquet data block), ``DeleteKeys`` (the records a delete block deletes) or
``Rollback`` (a command block). HFile data blocks (what Hudi writes in its metadata table) decode
through ``index_store.hfile`` (``hfile_data.py``). CDC blocks have no decoder: ``decode_block``
raises ``UnsupportedLogBlockError`` for them, as for a type unknown here, instead of returning
records it cannot read; ``register_decoder`` plugs a reader in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from index_store.errors import (
    HFileCorruptError,
    LogFormatError,
    UnsupportedHFileError,
    UnsupportedLogBlockError,
)
from index_store.hudi_log.avro_data import AvroContentError, decode_avro_content
from index_store.hudi_log.avro_schema import UnsupportedAvroSchema
from index_store.hudi_log.deletes import DeleteContentError, UnsupportedDeleteContent, decode_delete_content
from index_store.hudi_log.format import BlockType, CommandType, HeaderKey, block_type_name
from index_store.hudi_log.frames import LogBlock
from index_store.hudi_log.hfile_data import decode_hfile_content
from index_store.hudi_log.parquet_data import ParquetContentError, decode_parquet_content

__all__ = [
    "DECODERS",
    "BlockContent",
    "DataRows",
    "DeleteKeys",
    "Rollback",
    "decode_block",
    "register_decoder",
]


@dataclass(frozen=True)
class DataRows:
    """The records of a data block, in the block's own schema."""

    rows: pa.Table


@dataclass(frozen=True)
class DeleteKeys:
    """The records a delete block deletes (``deletes.DELETE_COLUMNS``)."""

    deletes: pa.Table


@dataclass(frozen=True)
class Rollback:
    """A rollback command block: the earlier blocks of ``target_instant`` no longer count."""

    target_instant: str


BlockContent = DataRows | DeleteKeys | Rollback
Decoder = Callable[[LogBlock], BlockContent]


def _avro(block: LogBlock) -> BlockContent:
    if block.schema is None:
        raise AvroContentError("an Avro data block without its SCHEMA header")
    return DataRows(decode_avro_content(block.content, block.schema))


def _hfile(block: LogBlock) -> BlockContent:
    if block.schema is None:
        raise AvroContentError("an HFile data block without its SCHEMA header")
    return DataRows(decode_hfile_content(block.content, block.schema, block.path))


def _parquet(block: LogBlock) -> BlockContent:
    return DataRows(decode_parquet_content(block.content))


def _delete(block: LogBlock) -> BlockContent:
    return DeleteKeys(decode_delete_content(block.content))


def _command(block: LogBlock) -> BlockContent:
    command, target = block.header.get(HeaderKey.COMMAND_BLOCK_TYPE), block.target_instant
    if command != str(int(CommandType.ROLLBACK)):
        raise UnsupportedLogBlockError(
            block.path,
            block.offset,
            f"command block of type {command!r}: only rollback (0) exists in Hudi; a newer Hudi's command "
            "cannot be applied here",
        )
    if not target:
        raise LogFormatError(block.path, block.offset, "a rollback block without its TARGET_INSTANT_TIME")
    return Rollback(target)


DECODERS: dict[int, Decoder] = {
    BlockType.AVRO_DATA: _avro,
    BlockType.PARQUET_DATA: _parquet,
    BlockType.HFILE_DATA: _hfile,
    BlockType.DELETE: _delete,
    BlockType.COMMAND: _command,
}

# Why a block type has no decoder, for the error that says so.
_UNDECODED = {
    BlockType.CDC_DATA: (
        "a CDC block (change data capture, kept in .cdc log files), which a snapshot does not read: "
        "leave .cdc files out of the file slice"
    ),
}


def register_decoder(type_code: int, decoder: Decoder) -> None:
    """Decode blocks of ``type_code`` with ``decoder`` from now on (e.g. an HFile reader)."""
    DECODERS[int(type_code)] = decoder


def decode_block(block: LogBlock) -> BlockContent:
    """A block's content, decoded by its type's decoder; ``LogFormatError`` naming the file and
    the block's offset when it does not decode, ``UnsupportedLogBlockError`` when no decoder
    reads its type."""
    decoder = DECODERS.get(block.type_code)
    if decoder is None:
        reason = _UNDECODED.get(block.block_type) if block.block_type is not None else None
        raise UnsupportedLogBlockError(
            block.path,
            block.offset,
            reason
            or f"a block of {block_type_name(block.type_code)}, unknown here (a newer Hudi's?): upgrade "
            "hudi-index, or compact the file group with Hudi so its records reach the base file",
        )
    try:
        return decoder(block)
    except (UnsupportedAvroSchema, UnsupportedDeleteContent, UnsupportedHFileError) as exc:
        raise UnsupportedLogBlockError(block.path, block.offset, str(exc)) from exc
    except (AvroContentError, DeleteContentError, ParquetContentError, HFileCorruptError) as exc:
        raise LogFormatError(
            block.path,
            block.offset,
            f"the {block_type_name(block.type_code)} block is well framed but its content does not decode "
            f"({exc}); Hudi cannot read it either: restore the file, or roll back instant {block.instant}",
        ) from exc
