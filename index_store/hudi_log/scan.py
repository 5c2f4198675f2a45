"""The log files of one file slice, scanned as Hudi's log record reader scans them
(``BaseHoodieLogRecordReader``, its default single pass): which blocks count, and their records in
write order.

The rules, block by block through the files in order:

- a corrupt block counts for nothing (Hudi queues it, then drops it when merging);
- a data or delete block whose ``INSTANT_TIME`` is not a valid instant (a write that failed, is
  still running, or lies past the instant read as of) is skipped;
- a rollback command block removes every block queued so far whose instant is its
  ``TARGET_INSTANT_TIME``: a retried task can have written the same instant's block twice, and
  one rollback block undoes both. Command blocks count whatever their own instant;
- the data and delete blocks left count, in the order written.

Only the blocks that count are decoded, so a block of a type not read here (CDC, unknown)
or one that does not decode stops the scan only when it would have counted."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import pyarrow as pa

from index_store.errors import LogFormatError
from index_store.hudi_log.decoders import DataRows, DeleteKeys, Rollback, decode_block
from index_store.hudi_log.format import BlockType, block_type_name
from index_store.hudi_log.frames import CorruptBlock, LogBlock, read_log_file
from index_store.hudi_log.records import OrderingTypeError, content_records, promoted_type, stack_records
from index_store.record_key import RecordKeySpec
from index_store.tables.hudi_timeline import HudiTimeline

__all__ = [
    "BlockFate",
    "LogScan",
    "ScannedBlock",
    "block_fates",
    "scan_blocks",
    "scan_log_files",
    "valid_instants",
]

ValidInstants = Callable[[str], bool] | Collection[str]


class BlockFate(StrEnum):
    """What a scan made of a block."""

    KEPT = "kept"  # a data or delete block whose records are returned
    NOT_VALID = "not_valid"  # its instant is not a valid instant: skipped
    ROLLED_BACK = "rolled_back"  # removed by a later rollback block
    COMMAND = "command"  # a rollback block, applied
    CORRUPT = "corrupt"  # bytes that are no well-framed block


@dataclass(frozen=True)
class ScannedBlock:
    """A block of the scanned files and what became of it."""

    block: LogBlock | CorruptBlock
    fate: BlockFate


@dataclass(frozen=True)
class LogScan:
    """The records of a file slice's log files (``records.LOG_COLUMNS`` then the data columns, in
    write order) and every block met, with its fate."""

    records: pa.Table
    blocks: tuple[ScannedBlock, ...]

    def fates(self) -> list[tuple[str, int, BlockFate]]:
        """``(file name, offset, fate)`` of every block, for messages and tests."""
        return [(os.path.basename(s.block.path), s.block.offset, s.fate) for s in self.blocks]


def scan_log_files(
    paths: Sequence[str | os.PathLike[str]],
    valid: ValidInstants,
    *,
    key_spec: RecordKeySpec | None = None,
    ordering_field: str | None = None,
    partition_path: str | None = None,
) -> LogScan:
    """The surviving records of the log files of one file slice, given in Hudi's order (version,
    then write token; by completion time from table version 8 on). ``valid`` says which instants
    are valid (``valid_instants`` makes it from the timeline). ``key_spec`` computes keys for rows
    without ``_hoodie_record_key``, ``ordering_field`` names the ordering (precombine) field,
    ``partition_path`` is the slice's partition for rows and deletes that do not carry theirs."""
    blocks = [block for path in paths for block in read_log_file(path)]
    return scan_blocks(
        blocks, valid, key_spec=key_spec, ordering_field=ordering_field, partition_path=partition_path
    )


def scan_blocks(
    blocks: Iterable[LogBlock | CorruptBlock],
    valid: ValidInstants,
    *,
    key_spec: RecordKeySpec | None = None,
    ordering_field: str | None = None,
    partition_path: str | None = None,
) -> LogScan:
    """``scan_log_files`` over blocks already read, in write order."""
    blocks = list(blocks)
    fates = block_fates(blocks, valid)
    records = _records(
        [b for b, f in zip(blocks, fates, strict=True) if f is BlockFate.KEPT and isinstance(b, LogBlock)],
        key_spec=key_spec,
        ordering_field=ordering_field,
        partition_path=partition_path,
    )
    return LogScan(records, tuple(ScannedBlock(b, f) for b, f in zip(blocks, fates, strict=True)))


def block_fates(blocks: Sequence[LogBlock | CorruptBlock], valid: ValidInstants) -> list[BlockFate]:
    """What becomes of each block, in write order (this module's rules), without decoding any
    data or delete block: ``KEPT`` for those whose records count."""
    is_valid = valid if callable(valid) else frozenset(valid).__contains__
    fates: list[BlockFate] = []
    queued: list[tuple[int, LogBlock]] = []  # data and delete blocks that count so far
    for i, block in enumerate(blocks):
        if isinstance(block, CorruptBlock):
            fates.append(BlockFate.CORRUPT)
        elif block.type_code == BlockType.COMMAND:
            target = _rollback_target(block)
            fates.append(BlockFate.COMMAND)
            kept = []
            for j, earlier in queued:
                if earlier.instant == target:
                    fates[j] = BlockFate.ROLLED_BACK
                else:
                    kept.append((j, earlier))
            queued = kept
        elif is_valid(_instant(block)):
            fates.append(BlockFate.KEPT)
            queued.append((i, block))
        else:
            fates.append(BlockFate.NOT_VALID)
    return fates


def valid_instants(timeline: HudiTimeline, as_of: str | None = None) -> Callable[[str], bool]:
    """The valid instants of a timeline as Hudi's reader takes them: completed, or older than the
    active timeline's first instant (archived, so committed), never one a rollback or restore
    removed, and none after ``as_of`` (a time-travel read; its requested time)."""
    completed = set(timeline.completed)
    removed = timeline.rolled_back()
    pending = timeline.pending
    earliest = timeline.earliest

    def valid(instant: str) -> bool:
        if (as_of is not None and instant > as_of) or instant in removed:
            return False
        if instant in completed:
            return True
        return earliest is not None and instant < earliest and instant not in pending

    return valid


def _rollback_target(block: LogBlock) -> str:
    content = decode_block(block)
    if not isinstance(content, Rollback):
        raise LogFormatError(block.path, block.offset, f"a command block decoded as {type(content).__name__}")
    return content.target_instant


def _instant(block: LogBlock) -> str:
    if block.instant is None:
        raise LogFormatError(
            block.path,
            block.offset,
            f"a {block_type_name(block.type_code)} block without its INSTANT_TIME header, which Hudi "
            "always writes: the file was not written by Hudi, or was altered",
        )
    return block.instant


def _records(
    blocks: list[LogBlock],
    *,
    key_spec: RecordKeySpec | None,
    ordering_field: str | None,
    partition_path: str | None,
) -> pa.Table:
    tables, ordering_types = [], []
    for block in blocks:
        content = decode_block(block)
        if not isinstance(content, DataRows | DeleteKeys):
            raise LogFormatError(
                block.path, block.offset, f"a {type(content).__name__} is no data or delete block"
            )
        if (
            isinstance(content, DataRows)
            and ordering_field is not None
            and ordering_field in content.rows.column_names
        ):
            ordering_types.append(content.rows.schema.field(ordering_field).type)
        tables.append(
            content_records(
                content,
                _instant(block),
                key_spec=key_spec,
                ordering_field=ordering_field,
                partition_path=partition_path,
            )
        )
    try:
        # the ordering field's type, widened over the data blocks, is the one a delete's value takes
        return stack_records(tables, promoted_type(ordering_types))
    except OrderingTypeError as exc:
        raise LogFormatError(
            blocks[0].path, None, f"{exc}: check the ordering field {ordering_field!r}"
        ) from exc
