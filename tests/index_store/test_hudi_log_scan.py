"""Which log blocks count and what their records are (index_store.hudi_log.scan_log_files), against
hudi-rs, the Hudi project's own reader (``hudi.HudiTable.read``), on the real merge-on-read tables
of tests/data/hudi, at every committed instant of each (time travel) and now.

The snapshot is rebuilt here from each file slice (the slices as hudi-rs lists them: a base file
and its log files): the base file's rows, merged with the records our scan returns as Hudi merges
them. Log records of a key fold in write order, then onto the base row; the newer record wins,
unless the table orders by event time (``hoodie.record.merge.mode=EVENT_TIME_ORDERING``) and the
older one has the greater ordering value. A delete removes the key; a delete without an ordering
value (Hudi's Integer 0) wins by write order. Keys, deletes and the valid-block rules must all be
right for the rows to equal hudi-rs's."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hudi_data import MOR_TABLES

from index_store.errors import RecordKeyError, UnsupportedLogBlockError
from index_store.hudi_log import (
    DECODERS,
    INSTANT,
    IS_DELETE,
    LOG_COLUMNS,
    ORDERING_VALUE,
    PARTITION_PATH,
    RECORD_KEY,
    SEQUENCE,
    BlockFate,
    BlockType,
    DataRows,
    LogBlock,
    block_header,
    decode_block,
    encode_command_block,
    encode_data_block,
    encode_delete_block,
    frame,
    parse_log,
    read_log_file,
    register_decoder,
    scan_blocks,
    scan_log_files,
    valid_instants,
)
from index_store.hudi_log.format import CommandType
from index_store.record_key import RecordKeySpec
from index_store.tables.hudi_timeline import HudiTimeline, read_properties

ROLLBACK_TABLE = "mor_parquet_v6_nonpartitioned_rollback"
ROLLED_BACK = "20250126040826878"  # the delta commit whose log block the rollback undid
# tables whose log files hold blocks that change some snapshot (the others have none)
WITH_LOGS = {
    "mor_avro_v9_timebasedkeygen_nonhivestyle",
    "mor_avro_v9_txns_complex_nometa",
    "mor_avro_v9_txns_nonpart_nometa",
    "mor_avro_v9_txns_simple_meta",
    "mor_avro_v9_txns_simple_nometa",
    "mor_parquet_v6_nonpartitioned",
    "mor_parquet_v6_nonpartitioned_rollback",
    "mor_parquet_v6_simplekeygen_nonhivestyle",
    "mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable",
}
ALWAYS = lambda _instant: True  # noqa: E731


def timeline_of(root: Path) -> HudiTimeline:
    folder = root / ".hoodie" / "timeline"
    return HudiTimeline.load(str(folder if folder.is_dir() else root / ".hoodie"))


class Table:
    """A real table's setup as the merge needs it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.props = read_properties(str(root / ".hoodie"))
        self.ordering_field = self.props.get("hoodie.table.ordering.fields") or self.props.get(
            "hoodie.table.precombine.field"
        )
        # Version 6 tables name no merge mode: their payload, OverwriteWithLatestAvroPayload, keeps
        # the latest write (commit time ordering).
        by_event = self.props.get("hoodie.record.merge.mode") == "EVENT_TIME_ORDERING"
        self.event_field = self.ordering_field if by_event else None
        self.timeline = timeline_of(root)

    def key_spec(self, schema: pa.Schema) -> RecordKeySpec:
        spec = RecordKeySpec.from_hudi_properties(self.props, schema)
        assert spec is not None
        return spec

    def commits(self) -> list[str | None]:
        """Every completed write instant, and None (now)."""
        actions = ("commit", "deltacommit", "replacecommit")
        return [
            *sorted(i.requested for i in self.timeline.instants if i.is_completed and i.action in actions),
            None,
        ]

    def snapshot(self, as_of: str | None, *, use_logs: bool = True) -> list[tuple[Any, ...]]:
        """The rows of the table as of an instant, from our log records, sorted, in the columns of
        hudi-rs's output."""
        options = hudi.HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
        table = hudi.HudiTable(str(self.root))
        valid = valid_instants(self.timeline, as_of)
        rows: list[dict[str, Any]] = []
        for file_slice in table.get_file_slices(options):
            base = pq.read_table(self.root / file_slice.base_file_relative_path())
            base_keys = self.key_spec(base.schema).keys_of(base).to_pylist()
            paths = [self.root / p for p in file_slice.log_files_relative_paths()] if use_logs else []
            scan = scan_log_files(
                paths, valid, ordering_field=self.ordering_field, partition_path=file_slice.partition_path
            )
            rows += merge(base.to_pylist(), base_keys, scan.records.to_pylist(), self.event_field)
        return sorted((tuple(r.get(c) for c in self.columns) for r in rows), key=repr)

    def expected(self, as_of: str | None) -> list[tuple[Any, ...]]:
        """hudi-rs's snapshot as of an instant, sorted."""
        options = hudi.HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
        batches = hudi.HudiTable(str(self.root)).read(options)
        if not batches:
            self.columns = []
            return []
        table = pa.Table.from_batches(batches)
        self.columns = table.column_names
        return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def merge(
    base: list[dict[str, Any]], base_keys: list[str], log: list[dict[str, Any]], event_field: str | None
) -> list[dict[str, Any]]:
    """Base rows merged with log records as Hudi merges them (this module's docstring)."""
    latest: dict[str, dict[str, Any]] = {}
    for record in log:  # in write order (SEQUENCE)
        key = record[RECORD_KEY]
        if key not in latest or newer_wins(latest[key], record, event_field):
            latest[key] = record
    out = []
    for row, key in zip(base, base_keys, strict=True):
        record = latest.pop(key, None)
        if record is None:
            out.append(row)
            continue
        as_record = {IS_DELETE: False, ORDERING_VALUE: row.get(event_field) if event_field else None}
        if not newer_wins(as_record, record, event_field):
            out.append(row)
        elif not record[IS_DELETE]:
            out.append(record)
    return out + [r for r in latest.values() if not r[IS_DELETE]]


def newer_wins(older: dict[str, Any], newer: dict[str, Any], event_field: str | None) -> bool:
    if event_field is None:
        return True
    old, new = older[ORDERING_VALUE], newer[ORDERING_VALUE]
    if old is None or new is None:  # a delete without an ordering value orders by write
        return True
    return bool(new >= old)


@pytest.mark.parametrize("name", MOR_TABLES)
def test_snapshots_equal_hudi_rs_at_every_instant(hudi_tables: dict[str, Path], name: str) -> None:
    table = Table(hudi_tables[name])
    logs_mattered = False
    for as_of in table.commits():
        expected = table.expected(as_of)
        assert table.snapshot(as_of) == expected, f"{name} as of {as_of or 'now'}"
        logs_mattered |= table.snapshot(as_of, use_logs=False) != expected
    # the comparison can fail: where log files hold records, leaving them out changes a snapshot
    assert logs_mattered == (name in WITH_LOGS)


def test_a_rollback_block_undoes_its_target(hudi_tables: dict[str, Path]) -> None:
    """The real rollback: log.1 holds a block of a delta commit that failed, log.2 the rollback
    block Hudi wrote for it, log.3 the next delta commit's block."""
    root = hudi_tables[ROLLBACK_TABLE]
    paths = sorted(root.glob(".*.log.*"))
    assert [p.name.split(".log.")[1][:1] for p in paths] == ["1", "2", "3"]
    # even taking every instant for valid, the rollback block removes the earlier block
    scan = scan_log_files(paths, ALWAYS)
    assert [fate for _, _, fate in scan.fates()] == [BlockFate.ROLLED_BACK, BlockFate.COMMAND, BlockFate.KEPT]
    assert scan.records.column(RECORD_KEY).to_pylist() == ["2"]
    assert scan.records.column(INSTANT).to_pylist() == ["20250126060846931"]
    # and the timeline does not count the rolled-back instant either
    valid = valid_instants(timeline_of(root))
    assert not valid(ROLLED_BACK) and valid("20250126060846931")
    scan = scan_log_files(paths, valid)
    assert [fate for _, _, fate in scan.fates()] == [BlockFate.NOT_VALID, BlockFate.COMMAND, BlockFate.KEPT]
    # without either rule, the rolled-back update of key 1 would show: hudi-rs does not have it
    table = Table(root)
    base = pq.read_table(next(root.glob("*.parquet")))
    merged = merge(
        base.to_pylist(),
        table.key_spec(base.schema).keys_of(base).to_pylist(),
        scan_log_files([paths[0], paths[2]], ALWAYS).records.to_pylist(),
        None,
    )
    expected = table.expected(None)
    assert sorted((tuple(r.get(c) for c in table.columns) for r in merged), key=repr) != expected


def test_a_rollback_removes_only_the_blocks_before_it() -> None:
    """Hudi's reader applies a rollback block to the blocks queued so far: a block of the same
    instant written after it counts (a retry that succeeded)."""
    schema = _schema({"k": "string", "v": "long"})
    blocks = parse_log(
        encode_data_block([{"k": "a", "v": 1}], block_header("001", schema=schema))
        + encode_data_block([{"k": "b", "v": 2}], block_header("002", schema=schema))
        + encode_command_block(block_header("003", target_instant="001", command=CommandType.ROLLBACK))
        + encode_data_block([{"k": "c", "v": 3}], block_header("001", schema=schema))
    )
    scan = scan_blocks(blocks, ALWAYS, key_spec=RecordKeySpec(("k",)))
    assert [f for _, _, f in scan.fates()] == [
        BlockFate.ROLLED_BACK,
        BlockFate.KEPT,
        BlockFate.COMMAND,
        BlockFate.KEPT,
    ]
    assert scan.records.select([RECORD_KEY, INSTANT, SEQUENCE, "v"]).to_pylist() == [
        {RECORD_KEY: "b", INSTANT: "002", SEQUENCE: 0, "v": 2},
        {RECORD_KEY: "c", INSTANT: "001", SEQUENCE: 1, "v": 3},
    ]


def test_a_block_of_an_instant_that_never_completed_is_skipped(copy_table: Any) -> None:
    """A copy of a real table whose last delta commit never completed (its completed instant file
    removed): the block it wrote no longer counts."""
    root = copy_table("mor_avro_v9_timebasedkeygen_nonhivestyle")
    (path,) = [p for p in root.rglob(".*_20260403183908664.log.*") if ".hoodie" not in p.parts]
    before = scan_log_files([path], valid_instants(timeline_of(root)))
    assert [f for _, _, f in before.fates()] == [BlockFate.KEPT]
    assert before.records.column(RECORD_KEY).to_pylist() == ["TXN-002"]
    assert before.records.column(IS_DELETE).to_pylist() == [True]
    (completed,) = (root / ".hoodie" / "timeline").glob("20260403183908664_*.deltacommit")
    completed.unlink()
    after = scan_log_files([path], valid_instants(timeline_of(root)))
    assert [f for _, _, f in after.fates()] == [BlockFate.NOT_VALID]
    assert after.records.num_rows == 0 and after.records.column_names == list(LOG_COLUMNS)


def test_truncated_log_file_keeps_its_readable_records(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    """Two real log files of one file group appended into one file, cut inside the second block:
    the first block's records come back, the rest is a corrupt block."""
    root = hudi_tables["mor_avro_v9_txns_simple_meta"]
    first, second = sorted((root / "region=us").glob(".*.log.*"))
    path = tmp_path / first.name
    data = first.read_bytes() + second.read_bytes()[:-20]
    path.write_bytes(data)
    scan = scan_log_files([path], valid_instants(timeline_of(root)))
    assert [f for _, _, f in scan.fates()] == [BlockFate.KEPT, BlockFate.CORRUPT]
    whole = scan_log_files([first], valid_instants(timeline_of(root)))
    assert scan.records.equals(whole.records) and whole.records.num_rows == 1


def test_a_corrupt_block_in_the_middle_is_skipped(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    root = hudi_tables["mor_avro_v9_txns_simple_meta"]
    first, second = sorted((root / "region=us").glob(".*.log.*"))
    damaged = bytearray(first.read_bytes())
    damaged[-3] ^= 0xFF  # the trailer no longer matches the size field
    path = tmp_path / first.name
    path.write_bytes(first.read_bytes() + bytes(damaged) + second.read_bytes())
    scan = scan_log_files([path], valid_instants(timeline_of(root)), partition_path="region=us")
    assert [f for _, _, f in scan.fates()] == [BlockFate.KEPT, BlockFate.CORRUPT, BlockFate.KEPT]
    assert scan.records.select([RECORD_KEY, IS_DELETE, PARTITION_PATH]).to_pylist() == [
        {RECORD_KEY: "TXN-001", IS_DELETE: False, PARTITION_PATH: "region=us"},
        {RECORD_KEY: "TXN-002", IS_DELETE: True, PARTITION_PATH: "region=us"},
    ]


@pytest.mark.parametrize(
    ("code", "message"), [(42, "type 42, unknown here"), (int(BlockType.CDC_DATA), "CDC block")]
)
def test_a_block_of_a_type_not_decoded(hudi_tables: dict[str, Path], code: int, message: str) -> None:
    """An unknown block type (or a CDC block) between two real blocks: read as a block, skipped
    when its instant does not count, an error naming it when it does, never silently dropped."""
    root = hudi_tables["mor_avro_v9_txns_simple_meta"]
    first, second = sorted((root / "region=us").glob(".*.log.*"))
    odd = frame(code, block_header("20260307162605000"), b"\x00\x01\x02")
    blocks = parse_log(first.read_bytes() + odd + second.read_bytes(), "f.log")
    assert [b.type_code for b in blocks] == [BlockType.AVRO_DATA, code, BlockType.DELETE]
    valid = valid_instants(timeline_of(root))
    assert not valid("20260307162605000")
    scan = scan_blocks(blocks, valid)
    assert [f for _, _, f in scan.fates()] == [BlockFate.KEPT, BlockFate.NOT_VALID, BlockFate.KEPT]
    assert scan.records.column(RECORD_KEY).to_pylist() == ["TXN-001", "TXN-002"]
    with pytest.raises(UnsupportedLogBlockError, match=message) as caught:
        scan_blocks(blocks, ALWAYS)
    assert caught.value.offset == len(first.read_bytes()) and caught.value.path == "f.log"


def test_a_decoder_plugs_in_by_type(hudi_tables: dict[str, Path]) -> None:
    """The registry: a decoder registered for a type code reads its blocks (as the HFile reader
    does); here one for code 42 whose content is a key."""
    blocks = parse_log(frame(42, block_header("001"), b"key-1"))
    register_decoder(42, lambda block: DataRows(pa.table({"_hoodie_record_key": [block.content.decode()]})))
    try:
        scan = scan_blocks(blocks, ALWAYS)
    finally:
        DECODERS.pop(42)
    assert scan.records.column(RECORD_KEY).to_pylist() == ["key-1"]
    with pytest.raises(UnsupportedLogBlockError):
        scan_blocks(blocks, ALWAYS)


def test_a_schema_change_between_blocks(hudi_tables: dict[str, Path]) -> None:
    """A real block, then one written with its schema evolved (a column added, one dropped), then
    blocks whose column widens from int to long: one table, missing values null."""
    root = hudi_tables["mor_avro_v9_txns_simple_meta"]
    real_path = sorted((root / "region=us").glob(".*.log.*"))[0]
    (real,) = read_log_file(real_path)
    assert isinstance(real, LogBlock) and real.schema is not None
    content = decode_block(real)
    assert isinstance(content, DataRows)
    evolved = json.loads(real.schema)
    evolved["fields"] = [f for f in evolved["fields"] if f["name"] != "txn_metadata"]
    evolved["fields"].append({"name": "channel", "type": ["null", "string"], "default": None})
    rows = content.rows.drop_columns(["txn_metadata"]).append_column("channel", pa.array(["web"]))
    rows = rows.set_column(
        rows.schema.get_field_index("_hoodie_record_key"), "_hoodie_record_key", pa.array(["TXN-009"])
    )
    data = real_path.read_bytes() + encode_data_block(
        rows, block_header("20260307162605000", schema=json.dumps(evolved))
    )
    scan = scan_blocks(parse_log(data), ALWAYS, ordering_field="txn_ts")
    records = scan.records
    assert records.column(RECORD_KEY).to_pylist() == ["TXN-001", "TXN-009"]
    assert records.column("channel").to_pylist() == [None, "web"]
    assert records.column("txn_metadata").to_pylist()[1] is None
    assert records.column("txn_metadata").to_pylist()[0] is not None
    assert records.column(ORDERING_VALUE).to_pylist() == records.column("txn_ts").to_pylist()
    assert records.schema.field("txn_datetime").type == pa.timestamp("us", tz="UTC")

    narrow, wide = _schema({"k": "string", "v": "int"}), _schema({"k": "string", "v": "long"})
    data = encode_data_block([{"k": "a", "v": 1}], block_header("001", schema=narrow)) + encode_data_block(
        [{"k": "b", "v": 2**40}], block_header("002", schema=wide)
    )
    records = scan_blocks(parse_log(data), ALWAYS, key_spec=RecordKeySpec(("k",)), ordering_field="v").records
    assert records.schema.field("v").type == pa.int64()
    assert records.column("v").to_pylist() == [1, 2**40]
    assert records.column(ORDERING_VALUE).to_pylist() == [1, 2**40]


def test_keys_of_rows_without_meta_fields_come_from_the_key_spec(hudi_tables: dict[str, Path]) -> None:
    """Real rows of the complex-key table (key fields txn_id, account_id) written without Hudi's
    meta fields: the key spec read from hoodie.properties computes the keys Hudi stored."""
    root = hudi_tables["mor_avro_v9_txns_complex_nometa"]
    table = Table(root)
    blocks = [b for p in sorted(root.rglob(".*.log.*")) for b in read_log_file(p)]
    real = scan_blocks(blocks, ALWAYS).records.filter(pc.invert(pc.field(IS_DELETE)))
    schema = json.loads(next(b for b in blocks if isinstance(b, LogBlock) and b.schema).schema or "")
    schema["fields"] = [f for f in schema["fields"] if not f["name"].startswith("_hoodie_")]
    columns = [f["name"] for f in schema["fields"]]
    rebuilt = parse_log(
        encode_data_block(real.select(columns), block_header("001", schema=json.dumps(schema)))
    )
    spec = table.key_spec(real.select(columns).schema)
    scan = scan_blocks(rebuilt, ALWAYS, key_spec=spec, partition_path="region=us")
    assert scan.records.column(RECORD_KEY).equals(real.column(RECORD_KEY))
    assert real.column(RECORD_KEY).to_pylist()[0].startswith("txn_id:TXN-")
    assert set(scan.records.column(PARTITION_PATH).to_pylist()) == {"region=us"}
    with pytest.raises(RecordKeyError, match="pass key_spec"):
        scan_blocks(rebuilt, ALWAYS)


def test_ordering_values_and_delete_markers() -> None:
    """A delete's ordering value takes the ordering field's type; Hudi's Integer 0 ("none") is
    null; a row whose _hoodie_is_deleted is true is a delete."""
    schema = _schema({"k": "string", "ts": "long", "_hoodie_is_deleted": "boolean"})
    data = encode_data_block(
        [{"k": "a", "ts": 5, "_hoodie_is_deleted": False}, {"k": "b", "ts": 6, "_hoodie_is_deleted": True}],
        block_header("001", schema=schema),
    ) + encode_delete_block(
        pa.table(
            {
                "record_key": ["c", "d"],
                "partition_path": [None, "p2"],
                "ordering_value": pa.array([0, 9], pa.int32()),
            }
        ),
        block_header("002"),
    )
    records = scan_blocks(
        parse_log(data), ALWAYS, key_spec=RecordKeySpec(("k",)), ordering_field="ts", partition_path="p1"
    ).records
    assert records.column_names[: len(LOG_COLUMNS)] == list(LOG_COLUMNS)
    assert records.schema.field(ORDERING_VALUE).type == pa.int64()
    assert records.select([RECORD_KEY, PARTITION_PATH, ORDERING_VALUE, IS_DELETE, "ts"]).to_pylist() == [
        {RECORD_KEY: "a", PARTITION_PATH: "p1", ORDERING_VALUE: 5, IS_DELETE: False, "ts": 5},
        {RECORD_KEY: "b", PARTITION_PATH: "p1", ORDERING_VALUE: 6, IS_DELETE: True, "ts": 6},
        {RECORD_KEY: "c", PARTITION_PATH: "p1", ORDERING_VALUE: None, IS_DELETE: True, "ts": None},
        {RECORD_KEY: "d", PARTITION_PATH: "p2", ORDERING_VALUE: 9, IS_DELETE: True, "ts": None},
    ]


def test_valid_instants_follow_the_timeline(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    timeline = timeline_of(hudi_tables[ROLLBACK_TABLE])
    assert ROLLED_BACK in timeline.rolled_back()
    now, before = valid_instants(timeline), valid_instants(timeline, as_of="20250126040823628")
    assert [now(i) for i in ("20250126040823628", ROLLED_BACK, "20250126060846931", "20990101000000000")] == [
        True,
        False,
        True,
        False,
    ]
    assert before("20250126040823628") and not before("20250126060846931")
    # archived instants (older than the active timeline's first) are committed
    assert now("20240101000000000")
    folder = tmp_path / ".hoodie"
    shutil.copytree(hudi_tables[ROLLBACK_TABLE] / ".hoodie", folder)
    os.remove(folder / "20250126060846931.deltacommit")  # now only requested and inflight
    assert not valid_instants(HudiTimeline.load(str(folder)))("20250126060846931")


def _schema(fields: dict[str, str]) -> str:
    return json.dumps(
        {
            "type": "record",
            "name": "r",
            "fields": [{"name": n, "type": ["null", t]} for n, t in fields.items()],
        }
    )
