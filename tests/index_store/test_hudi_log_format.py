"""Hudi log files (index_store.hudi_log): the framing, the blocks and their encoders, on the real
log files of the merge-on-read tables of tests/data/hudi (written by Spark with Hudi, table
versions 6 and 9), and on copies of them cut or damaged.

The oracle for bit-exactness is Hudi itself: every block of every real log file is decoded (its
records as Arrow, its deletes, its rollback) and encoded again from what was decoded, and the
bytes must be the file's."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hudi_data import MOR_TABLES

from index_store.errors import LogFormatError, UnsupportedLogBlockError
from index_store.hudi_log import (
    BlockType,
    CommandType,
    CorruptBlock,
    DataRows,
    DeleteKeys,
    HeaderKey,
    LogBlock,
    Rollback,
    block_header,
    decode_block,
    encode_command_block,
    encode_data_block,
    encode_delete_block,
    frame,
    parse_log,
    read_log_file,
)
from index_store.hudi_log.format import INT, LONG

# What the real log files hold (outside .hoodie/metadata, whose HFile blocks come later):
# (block type, content version) -> count. Content versions: the first int of an Avro data or delete
# block's content; a parquet block's content is a parquet file, a command block's is empty.
REAL_BLOCKS = {
    "mor_avro_v9_timebasedkeygen_nonhivestyle": {("AVRO_DATA", 3): 1, ("DELETE", 3): 1},
    "mor_avro_v9_txns_complex_nometa": {("AVRO_DATA", 3): 3, ("DELETE", 3): 2},
    "mor_avro_v9_txns_nonpart_nometa": {("AVRO_DATA", 3): 3, ("DELETE", 3): 2},
    "mor_avro_v9_txns_simple_meta": {("AVRO_DATA", 3): 3, ("DELETE", 3): 2},
    "mor_avro_v9_txns_simple_nometa": {("AVRO_DATA", 3): 3, ("DELETE", 3): 2},
    "mor_avro_v9_txns_simple_overwrite": {},
    "mor_parquet_v6_empty": {},
    "mor_parquet_v6_nonpartitioned": {("PARQUET_DATA", None): 1},
    "mor_parquet_v6_nonpartitioned_rollback": {("PARQUET_DATA", None): 2, ("COMMAND", None): 1},
    "mor_parquet_v6_simplekeygen_hivestyle_no_metafields": {},
    "mor_parquet_v6_simplekeygen_nonhivestyle": {("PARQUET_DATA", None): 1},
    "mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable": {("PARQUET_DATA", None): 1},
}
AVRO_TABLE = "mor_avro_v9_txns_simple_meta"


def log_files(root: Path) -> list[Path]:
    """A table's log files, the metadata table's left out."""
    return sorted(p for p in root.rglob(".*.log.*") if ".hoodie" not in p.relative_to(root).parts)


def covers(blocks: list[LogBlock | CorruptBlock], data: bytes) -> bool:
    """The blocks, in order, are exactly the bytes of the file."""
    pos = 0
    for block in blocks:
        if block.offset != pos:
            return False
        pos += block.size
    return pos == len(data)


def reencode(block: LogBlock) -> bytes:
    """A block encoded again from its decoded content (parquet blocks: from its content bytes,
    which are a parquet file this library does not write)."""
    content = decode_block(block)
    if isinstance(content, DataRows) and block.type_code == BlockType.AVRO_DATA:
        return encode_data_block(content.rows, block.header)
    if isinstance(content, DeleteKeys):
        return encode_delete_block(content.deletes, block.header)
    if isinstance(content, Rollback):
        return encode_command_block(block.header)
    return frame(block.type_code, block.header, block.content, block.footer)


def test_the_shared_tables_are_all_listed() -> None:
    assert sorted(REAL_BLOCKS) == MOR_TABLES


@pytest.mark.parametrize("name", MOR_TABLES)
def test_real_log_files_hold_the_blocks_hudi_wrote(hudi_tables: dict[str, Path], name: str) -> None:
    found: Counter[tuple[str, int | None]] = Counter()
    for path in log_files(hudi_tables[name]):
        blocks = read_log_file(path)
        assert covers(blocks, path.read_bytes())
        for block in blocks:
            assert isinstance(block, LogBlock), f"{path.name}: {block}"
            assert block.format_version == 1 and not block.footer
            version = None
            if block.type_code in (BlockType.AVRO_DATA, BlockType.DELETE):
                version = INT.unpack_from(block.content, 0)[0]
            found[(BlockType(block.type_code).name, version)] += 1
            keys = set(block.header)
            if block.type_code == BlockType.COMMAND:
                assert keys == {
                    HeaderKey.INSTANT_TIME,
                    HeaderKey.TARGET_INSTANT_TIME,
                    HeaderKey.COMMAND_BLOCK_TYPE,
                }
                assert block.header[HeaderKey.COMMAND_BLOCK_TYPE] == "0"
            else:
                assert keys == {HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA}
    assert dict(found) == REAL_BLOCKS[name]


@pytest.mark.parametrize("name", [n for n in MOR_TABLES if REAL_BLOCKS[n]])
def test_every_real_block_reencodes_to_its_own_bytes(hudi_tables: dict[str, Path], name: str) -> None:
    for path in log_files(hudi_tables[name]):
        data = path.read_bytes()
        blocks = parse_log(data, str(path))
        assert b"".join(reencode(b) for b in blocks if isinstance(b, LogBlock)) == data


def test_real_blocks_decode_to_their_records(hudi_tables: dict[str, Path]) -> None:
    root = hudi_tables["mor_avro_v9_txns_nonpart_nometa"]
    contents = [decode_block(b) for p in log_files(root) for b in read_log_file(p) if isinstance(b, LogBlock)]
    rows = pa.concat_tables([c.rows for c in contents if isinstance(c, DataRows)])
    assert rows.column("txn_id").to_pylist() == ["TXN-001", "TXN-005", "TXN-007"]
    assert rows.column("amount").to_pylist() == [Decimal("1250.00"), Decimal("2500.00"), Decimal("8900.00")]
    assert rows.schema.field("txn_datetime").type == pa.timestamp("us", tz="UTC")
    assert rows.schema.field("amount").type == pa.decimal128(15, 2)
    assert rows.schema.field("txn_date").type == pa.date32()
    deletes = pa.concat_tables([c.deletes for c in contents if isinstance(c, DeleteKeys)])
    assert deletes.to_pylist() == [
        {"record_key": key, "partition_path": "", "ordering_value": 0, "ordering_wrapper": "IntWrapper"}
        for key in ("TXN-002", "TXN-005")
    ]
    rollback = [
        decode_block(b)
        for p in log_files(hudi_tables["mor_parquet_v6_nonpartitioned_rollback"])
        for b in read_log_file(p)
        if isinstance(b, LogBlock) and b.type_code == BlockType.COMMAND
    ]
    assert rollback == [Rollback("20250126040826878")]


def test_new_blocks_read_back(hudi_tables: dict[str, Path]) -> None:
    (real,) = [b for b in _avro_blocks(hudi_tables) if isinstance(b, LogBlock)][:1]
    rows = decode_block(real)
    assert isinstance(rows, DataRows)
    header = block_header("20990101000000000", schema=real.schema)
    assert list(header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    deletes = pa.table(
        {"record_key": ["k1", "k2"], "partition_path": ["p", None], "ordering_value": [7, None]}
    )
    rollback = block_header(
        "20990101000000001", target_instant="20990101000000000", command=CommandType.ROLLBACK
    )
    data = (
        encode_data_block(rows.rows, header)
        + encode_delete_block(deletes, block_header("20990101000000000"))
        + encode_command_block(rollback)
    )
    blocks = parse_log(data)
    assert covers(blocks, data)
    assert [decode_block(b) for b in blocks if isinstance(b, LogBlock)] == [
        rows,
        DeleteKeys(
            pa.table(
                {
                    "record_key": ["k1", "k2"],
                    "partition_path": ["p", None],
                    "ordering_value": pa.array([7, None], pa.int64()),
                    "ordering_wrapper": ["LongWrapper", None],
                }
            )
        ),
        Rollback("20990101000000000"),
    ]


def test_delete_ordering_wrappers_of_mixed_types_reencode_exactly() -> None:
    """Hudi's default (Integer 0) beside long ordering values: one int64 column, and the wrapper
    column keeps each value's own branch, so the block re-encodes to its bytes."""
    deletes = pa.table(
        {
            "record_key": ["a", "b", "c"],
            "partition_path": ["p", "p", "p"],
            "ordering_value": pa.array([0, 1_700_000_000_000, None], pa.int64()),
            "ordering_wrapper": ["IntWrapper", "LongWrapper", None],
        }
    )
    data = encode_delete_block(deletes, block_header("20990101000000000"))
    (block,) = parse_log(data)
    assert isinstance(block, LogBlock)
    content = decode_block(block)
    assert isinstance(content, DeleteKeys) and content.deletes.equals(deletes)
    assert encode_delete_block(content.deletes, block.header) == data


# --- truncated and corrupt files --------------------------------------------------------------


def _avro_blocks(hudi_tables: dict[str, Path]) -> list[LogBlock | CorruptBlock]:
    return [b for p in log_files(hudi_tables[AVRO_TABLE]) for b in read_log_file(p)]


def _two_blocks(hudi_tables: dict[str, Path]) -> tuple[bytes, bytes]:
    """The bytes of two real blocks (an Avro data block and a delete block) of one table."""
    blocks = _avro_blocks(hudi_tables)
    data_block = next(b for b in blocks if isinstance(b, LogBlock) and b.type_code == BlockType.AVRO_DATA)
    delete_block = next(b for b in blocks if isinstance(b, LogBlock) and b.type_code == BlockType.DELETE)
    return reencode(data_block), reencode(delete_block)


def test_a_cut_anywhere_in_the_last_block_leaves_the_blocks_before_it(hudi_tables: dict[str, Path]) -> None:
    """A crash while appending leaves a partial last block: at every cut, the first block reads
    whole and the rest is one corrupt block, never an error (as Hudi)."""
    first, second = _two_blocks(hudi_tables)
    (whole,) = parse_log(first)
    assert isinstance(whole, LogBlock)
    for cut in range(1, len(second)):
        data = first + second[:cut]
        blocks = parse_log(data)
        assert covers(blocks, data)
        head, tail = blocks
        assert isinstance(head, LogBlock) and head.content == whole.content, cut
        assert isinstance(tail, CorruptBlock) and tail.offset == len(first) and tail.data == second[:cut], cut


def test_a_truncated_real_log_file(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    """A real log file of two blocks (the table's first two log files appended), cut in the middle
    of its last block's content, as a crash leaves it."""
    first, second = _two_blocks(hudi_tables)
    path = tmp_path / ".f1-0_20990101000000000.log.1_0-1-1"
    path.write_bytes(first + second[: len(second) // 2])
    blocks = read_log_file(path)
    assert [type(b) for b in blocks] == [LogBlock, CorruptBlock]
    corrupt = blocks[1]
    assert isinstance(corrupt, CorruptBlock) and "runs past the end of the file" in corrupt.reason
    assert corrupt.path == str(path)


def test_a_corrupt_block_in_the_middle_is_skipped(hudi_tables: dict[str, Path]) -> None:
    first, second = _two_blocks(hudi_tables)
    damaged = bytearray(second)
    LONG.pack_into(damaged, 6, LONG.unpack_from(damaged, 6)[0] + 3)  # a wrong size field
    data = first + bytes(damaged) + first
    blocks = parse_log(data)
    assert [type(b) for b in blocks] == [LogBlock, CorruptBlock, LogBlock]
    assert blocks[1].size == len(second) and blocks[2].offset == len(first) + len(second)
    assert covers(blocks, data)


def test_a_lost_magic_makes_the_block_before_it_corrupt_too(hudi_tables: dict[str, Path]) -> None:
    """Hudi checks a block's frame by the magic that must follow it: with the second block's magic
    gone, the first is corrupt as well, up to the third block's magic (which reads as usual)."""
    first, second = _two_blocks(hudi_tables)
    data = first + b"#HUDO#" + second[6:] + first
    blocks = parse_log(data)
    assert [type(b) for b in blocks] == [CorruptBlock, LogBlock]
    assert blocks[0].size == len(first) + len(second)
    assert "no magic right after the block" in blocks[0].reason  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("where", "damage", "reason"),
    [
        ("format version", lambda b: INT.pack_into(b, 14, 2), "log format version 2"),
        ("content length", lambda b: LONG.pack_into(b, _content_length_at(b), 10**6), "runs past the block"),
        ("trailer", lambda b: LONG.pack_into(b, len(b) - 8, 5), "the trailer says 5 bytes"),
        ("header count", lambda b: INT.pack_into(b, 22, 10**6), "malformed block"),
        ("header entry", lambda b: INT.pack_into(b, 30, 10**6), "runs past the block"),
    ],
)
def test_a_block_that_does_not_add_up_is_corrupt(
    hudi_tables: dict[str, Path], where: str, damage: object, reason: str
) -> None:
    first, second = _two_blocks(hudi_tables)
    damaged = bytearray(first)
    damage(damaged)  # type: ignore[operator]
    blocks = parse_log(bytes(damaged) + second)
    assert isinstance(blocks[0], CorruptBlock), where
    assert reason in blocks[0].reason, blocks[0].reason
    assert isinstance(blocks[-1], LogBlock) and blocks[-1].content == parse_log(second)[0].content  # type: ignore[union-attr]


def test_bytes_before_the_first_block_are_corrupt(hudi_tables: dict[str, Path]) -> None:
    first, _ = _two_blocks(hudi_tables)
    blocks = parse_log(b"garbage" + first)
    assert [type(b) for b in blocks] == [CorruptBlock, LogBlock]
    assert blocks[0].size == len(b"garbage")
    assert parse_log(b"") == []


def _content_length_at(block: bytearray) -> int:
    """Where a block's content length is: after magic, size, version, type and the header."""
    at = 6 + 8 + 4 + 4
    (count,) = INT.unpack_from(block, at)
    at += 4
    for _ in range(count):
        (size,) = INT.unpack_from(block, at + 4)
        at += 8 + size
    return at


def test_a_framed_block_whose_content_does_not_decode_is_an_error_naming_it(
    hudi_tables: dict[str, Path],
) -> None:
    """No checksum tells a damaged content from a good one; when the records run off their schema,
    decoding says which block, as Hudi would fail."""
    real = next(b for b in _avro_blocks(hudi_tables) if isinstance(b, LogBlock))
    content = bytearray(real.content)
    INT.pack_into(content, 4, 2)  # two records announced, one there
    (block,) = parse_log(frame(real.type_code, real.header, bytes(content)), "x.log")
    with pytest.raises(
        LogFormatError, match=r"x\.log, block at byte 0: the AVRO_DATA block .* ends before its 2"
    ):
        decode_block(block)
    old_deletes = frame(BlockType.DELETE, block_header("001"), INT.pack(2) + INT.pack(3) + b"\xac\xed\x00")
    with pytest.raises(UnsupportedLogBlockError, match="Kryo"):
        decode_block(parse_log(old_deletes)[0])  # type: ignore[arg-type]
