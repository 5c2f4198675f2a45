"""Hudi's log files, read and written bit-exact with Hudi: the updates and deletes a merge-on-read
table keeps beside its parquet base files, in ``.<fileId>_<instant>.log.<version>_<writeToken>``.

A log file is a sequence of blocks (``frames.py`` has the layout), each with a type and a header
map: Avro data blocks (Hudi's default), parquet data blocks, HFile data blocks (Hudi's metadata
table, read through ``index_store.hfile``), delete blocks (record keys, partition paths, ordering
values) and command blocks (a rollback of an instant's blocks).
A truncated or corrupt block is reported and skipped as Hudi skips it, never an error.

- ``read_log_file`` / ``parse_log``: the blocks of a file, content still encoded;
- ``decode_block``: one block's content (``DataRows``, ``DeleteKeys``, ``Rollback``);
- ``scan_log_files``: the records that count in the log files of one file slice, with their key,
  partition path, ordering value, delete marker, instant and write order (``records.py``);
  ``valid_instants`` turns a timeline into the instants that count; ``block_fates`` says which
  blocks count without decoding them;
- ``encode_data_block``, ``encode_delete_block``, ``encode_command_block``, ``block_header`` and
  ``frame``: blocks as Hudi writes them.
"""

from __future__ import annotations

from index_store.hudi_log.decoders import (
    DECODERS,
    BlockContent,
    DataRows,
    DeleteKeys,
    Rollback,
    decode_block,
    register_decoder,
)
from index_store.hudi_log.encode import (
    block_header,
    encode_command_block,
    encode_data_block,
    encode_delete_block,
)
from index_store.hudi_log.format import MAGIC, BlockType, CommandType, HeaderKey
from index_store.hudi_log.frames import CorruptBlock, LogBlock, frame, parse_log, read_log_file
from index_store.hudi_log.records import (
    INSTANT,
    IS_DELETE,
    LOG_COLUMNS,
    ORDERING_VALUE,
    PARTITION_PATH,
    RECORD_KEY,
    SEQUENCE,
)
from index_store.hudi_log.scan import (
    BlockFate,
    LogScan,
    ScannedBlock,
    block_fates,
    scan_blocks,
    scan_log_files,
    valid_instants,
)

__all__ = [
    "DECODERS",
    "INSTANT",
    "IS_DELETE",
    "LOG_COLUMNS",
    "MAGIC",
    "ORDERING_VALUE",
    "PARTITION_PATH",
    "RECORD_KEY",
    "SEQUENCE",
    "BlockContent",
    "BlockFate",
    "BlockType",
    "CommandType",
    "CorruptBlock",
    "DataRows",
    "DeleteKeys",
    "HeaderKey",
    "LogBlock",
    "LogScan",
    "Rollback",
    "ScannedBlock",
    "block_fates",
    "block_header",
    "decode_block",
    "encode_command_block",
    "encode_data_block",
    "encode_delete_block",
    "frame",
    "parse_log",
    "read_log_file",
    "register_decoder",
    "scan_blocks",
    "scan_log_files",
    "valid_instants",
]
