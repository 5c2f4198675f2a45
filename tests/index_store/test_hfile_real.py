"""The HFile reader on the HFiles Hudi wrote (tests/data/hudi, ``.hoodie/metadata``): every base
file of every metadata table partition scans in key order with the trailer's count, each of its
keys is found by a point lookup, and its values decode as Hudi's metadata records; every
metadata log file (HFile data blocks and delete blocks) reads through ``scan_log_files``.

These files are small: all use GZ, a one-level index and at most one data block. The format's
other cases (many blocks, deeper indexes, other codecs) are test_hfile.py's, on written files."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

import pyarrow.compute as pc
import pytest

from index_store.errors import LogFormatError, UnsupportedLogBlockError
from index_store.hfile import KEY, VALUE, Codec, HFileReader
from index_store.hfile.trailer import TRAILER_SIZE, encode_trailer, read_trailer
from index_store.hfile.writer import write_hfile
from index_store.hudi_log import (
    IS_DELETE,
    RECORD_KEY,
    BlockType,
    DataRows,
    LogBlock,
    block_header,
    decode_block,
    frame,
    parse_log,
    read_log_file,
    scan_log_files,
)
from index_store.hudi_log.avro_data import decode_avro_records
from index_store.hudi_log.hfile_data import decode_hfile_content
from index_store.record_key import RecordKeySpec
from index_store.tables.hudi_timeline import read_properties

REAL_HFILES = 119  # in the 9 zips whose tables have a metadata table
METADATA_KEY = RecordKeySpec(("key",))  # .hoodie/metadata/.hoodie/hoodie.properties: recordkey.fields=key
# HoodieMetadataRecord's type per metadata table partition (MetadataPartitionType)
PARTITION_TYPES = {"files": {1, 2}, "column_stats": {3}, "partition_stats": {6}, "record_index": {5}}


def metadata_files(hudi_tables: dict[str, Path], pattern: str) -> list[Path]:
    """The files of ``pattern`` in every metadata table partition (its own .hoodie left out)."""
    return sorted(
        path
        for root in hudi_tables.values()
        for path in (root / ".hoodie" / "metadata").glob(f"*/{pattern}")
        if path.parent.name != ".hoodie"
    )


def test_every_real_hfile_scans_and_looks_up(hudi_tables: dict[str, Path]) -> None:
    """All 119: keys sorted and unique, as many as the trailer counts, every key found by a
    point lookup and by one batch, a key not in the file not found; GZ, one index level, at most
    one data block (what this test data holds, and why test_hfile.py writes the rest)."""
    paths = metadata_files(hudi_tables, "*.hfile")
    assert len(paths) == REAL_HFILES
    cells = 0
    for path in paths:
        with HFileReader(path) as reader:
            assert reader.codec is Codec.GZ and reader.trailer.data_index_levels == 1, path
            assert len(reader._root) <= 1, path
            table = reader.scan()
            keys = table[KEY].combine_chunks()
            assert table.num_rows == reader.num_entries, path
            assert pc.count_distinct(keys).as_py() == len(keys)
            assert keys.to_pylist() == sorted(keys.to_pylist())
            values = table[VALUE].to_pylist()
            assert [reader.get(k) for k in keys.to_pylist()] == values, path
            assert reader.get_many(keys).equals(table.combine_chunks())
            assert reader.get(b"\xff no such key") is None and reader.get(b"") is None
            cells += table.num_rows
    assert cells > 700


def test_real_hfile_values_are_metadata_records(hudi_tables: dict[str, Path]) -> None:
    """Each non-empty base file's values decode with the Avro schema of its file info as
    HoodieMetadataRecords of its partition's type, their emptied key restored from the cell."""
    checked = set()
    for path in metadata_files(hudi_tables, "*.hfile"):
        with HFileReader(path) as reader:
            if not reader.num_entries:
                continue
            schema = reader.file_info["schema"].decode()
            keys = reader.scan()[KEY].to_pylist()
        assert json.loads(schema)["name"] == "HoodieMetadataRecord"
        rows = decode_hfile_content(path.read_bytes(), schema, str(path))
        assert rows.num_rows == len(keys)
        assert rows.column("key").to_pylist() == [k.decode() for k in keys]
        partition = path.parent.name
        expected = PARTITION_TYPES.get(partition, {7})  # secondary_index_*: type 7
        assert set(rows.column("type").to_pylist()) <= expected, partition
        checked.add(partition.split("_idx")[0] if partition.startswith("secondary") else partition)
    assert {"files", "column_stats", "partition_stats", "record_index"} <= checked
    assert any(p.startswith("secondary_index") for p in checked)


def test_a_record_index_entry(hudi_tables: dict[str, Path]) -> None:
    """A record index base file maps a record key to its file group (a UUID in two longs, and an
    index): TXN-007's, in the simple table, is one of the table's file groups in region=apac."""
    root = hudi_tables["v9_txns_simple_meta"]
    found = []
    for path in sorted((root / ".hoodie" / "metadata" / "record_index").glob("*.hfile")):
        with HFileReader(path) as reader:
            value = reader.get(b"TXN-007")
            if value is not None:
                found.append((reader.file_info["schema"].decode(), value))
    ((schema, value),) = found
    (record,) = decode_avro_records(value, 1, schema, record_unions=True).to_pylist()
    meta = record["recordIndexMetadata"]
    assert record["type"] == 5 and meta["partitionName"] == "region=apac"
    mask = (1 << 64) - 1
    group = uuid.UUID(int=(meta["fileIdHighBits"] & mask) << 64 | (meta["fileIdLowBits"] & mask))
    file_groups = {p.name.split("_")[0] for p in (root / "region=apac").glob("*.parquet")}
    assert f"{group}-{meta['fileIndex']}" in file_groups


def test_every_real_metadata_log_file_scans(hudi_tables: dict[str, Path]) -> None:
    """Every log file of every metadata table partition: HFile data blocks and delete blocks,
    read through scan_log_files with the metadata table's key field; each HFile block's records
    are its cells, keys restored."""
    paths = metadata_files(hudi_tables, ".*.log.*")
    assert len(paths) == 633
    kinds: set[int] = set()
    records = 0
    for path in paths:
        blocks = read_log_file(path)
        kinds |= {b.type_code for b in blocks}
        for block in blocks:
            if isinstance(block, LogBlock) and block.type_code == BlockType.HFILE_DATA:
                content = decode_block(block)
                assert isinstance(content, DataRows)
                keys = HFileReader(block.content).scan()[KEY].to_pylist()
                assert content.rows.column("key").to_pylist() == [k.decode() for k in keys]
        scan = scan_log_files([path], lambda instant: True, key_spec=METADATA_KEY)
        assert pc.all(pc.is_valid(scan.records.column(RECORD_KEY))).as_py() in (True, None)
        records += scan.records.num_rows
    assert kinds == {BlockType.HFILE_DATA, BlockType.DELETE}
    assert records > 2000


def test_files_partition_log(hudi_tables: dict[str, Path]) -> None:
    """The files partition's log of the merge-on-read table lists its partitions under
    ``__all_partitions__`` and each partition's files under the partition's path; the metadata
    table's own properties say how its keys are made (its key generator: the ``key`` field)."""
    root = hudi_tables["mor_avro_v9_txns_simple_meta"]
    metadata = root / ".hoodie" / "metadata"
    key_spec = RecordKeySpec.from_hudi_properties(read_properties(str(metadata / ".hoodie")), None)
    assert key_spec == METADATA_KEY
    paths = sorted((metadata / "files").glob(".*.log.*"))
    scan = scan_log_files(paths, lambda instant: True, key_spec=key_spec)
    keys = set(scan.records.column(RECORD_KEY).to_pylist())
    assert "__all_partitions__" in keys
    partitions = {p.name for p in root.iterdir() if p.name.startswith("region=")}
    assert partitions and partitions <= keys
    assert not any(scan.records.column(IS_DELETE).to_pylist())


SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "key", "type": "string"},
            {"name": "n", "type": "long"},
            {
                "name": "v",
                "type": [
                    "null",
                    {"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]},
                    {"type": "record", "name": "B", "fields": [{"name": "b", "type": "string"}]},
                ],
            },
        ],
    }
)


def test_a_written_hfile_block_round_trips() -> None:
    """An HFile data block written here (many blocks, a 2-level index, SNAPPY): every record back,
    keys from the cells, a union of records as a struct of its branches."""
    keys = [f"k{i:05d}".encode() for i in range(500)]
    # Avro binary of {"key": "", "n": i, "v": A(i) or B("x")}: an empty string, a zig-zag long,
    # the union's branch index then the branch.
    values = [b"\x00" + _zigzag(i) + (b"\x02" + _zigzag(i) if i % 2 else b"\x04\x02x") for i in range(500)]
    content = write_hfile(keys, values, codec=Codec.SNAPPY, block_size=256, index_fanout=8)
    (block,) = parse_log(frame(int(BlockType.HFILE_DATA), block_header("001", schema=SCHEMA), content))
    assert isinstance(block, LogBlock)
    decoded = decode_block(block)
    assert isinstance(decoded, DataRows)
    rows = decoded.rows.to_pylist()
    assert [r["key"] for r in rows] == [k.decode() for k in keys] and [r["n"] for r in rows] == list(
        range(500)
    )
    assert rows[1]["v"] == {"A": {"a": 1}, "B": None} and rows[2]["v"] == {"A": None, "B": {"b": "x"}}


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _with_codec(data: bytes, code: int) -> bytes:
    trailer = dataclasses.replace(read_trailer(data), codec=code)
    return data[:-TRAILER_SIZE] + encode_trailer(trailer)


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        (write_hfile([b"k"], [b"\x00\x02"])[:-10], LogFormatError, "no trailer magic"),
        (write_hfile([b"k"], [b"\x00"]), LogFormatError, "do not decode with the block's schema"),
        (_with_codec(write_hfile([b"k"], [b"\x00\x02"]), 9), UnsupportedLogBlockError, "codec code 9"),
    ],
    ids=["truncated", "record-short", "unknown-codec"],
)
def test_a_bad_hfile_block(content: bytes, error: type[Exception], message: str) -> None:
    """A truncated HFile, values that are not records of the schema, an unknown codec: the log
    error naming the block, the unsupported one as such."""
    schema = json.dumps(
        {
            "type": "record",
            "name": "R",
            "fields": [{"name": "key", "type": "string"}, {"name": "n", "type": "long"}],
        }
    )
    (block,) = parse_log(
        frame(int(BlockType.HFILE_DATA), block_header("001", schema=schema), content), "m.log"
    )
    assert isinstance(block, LogBlock)
    with pytest.raises(error, match=message) as caught:
        decode_block(block)
    assert isinstance(caught.value, LogFormatError) and caught.value.path == "m.log"
    assert caught.value.offset == 0
