"""HudiCowTable against real Hudi tables (hudi-rs test data, table versions 6, 8 and 9).

The oracle is independent of the reader: the timeline file names, the commit metadata (write
statistics, replaced file ids) read here with json/fastavro, the parquet footers, and the rows
DuckDB reads from the returned files. Expected rows come from the SQL that wrote each table
(apache/hudi-rs ``crates/test/data/sample_table``) and the snapshots hudi-rs asserts.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import re
import shutil
from pathlib import Path

import duckdb
import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi_data import DATA

from index_store.errors import TableFormatError, UnsupportedTableError
from index_store.tables import HudiCowTable, HudiTable, PlainParquetTable, open_reader
from index_store.tables.hudi import parse_base_file_name
from index_store.tables.hudi_timeline import parse_instant_name, parse_properties, read_properties

COW_TABLES = sorted(p.stem for p in DATA.glob("v*.zip"))
MOR_TABLES = sorted(p.stem for p in DATA.glob("mor_*.zip"))

CLASSIC_ROWS = [(1, "Alice", False), (2, "Bob", False), (3, "Carol", True), (4, "Diana", True)]
TXNS_PARTITIONED = ["TXN-001", "TXN-003", "TXN-007", "TXN-008", *(f"TXN-{i:03d}" for i in range(11, 19))]
TXNS_NONPART = ["TXN-001", "TXN-003", "TXN-004", *(f"TXN-{i:03d}" for i in range(6, 17))]

# table -> (live files, base files on disk, sorted record keys of the snapshot)
EXPECTED: dict[str, tuple[int, int, list]] = {
    "v6_complexkeygen_hivestyle": (3, 4, [f"id:{i},name:{n}" for i, n, _ in CLASSIC_ROWS]),
    "v6_empty": (0, 0, []),
    "v6_nonpartitioned": (1, 2, ["1", "2", "3", "4"]),
    "v6_simplekeygen_hivestyle_no_metafields": (3, 3, [1, 2, 3, 4]),
    "v6_simplekeygen_nonhivestyle": (3, 4, ["1", "2", "3", "4"]),
    "v6_simplekeygen_nonhivestyle_overwritetable": (1, 5, ["4"]),
    "v6_timebasedkeygen_nonhivestyle": (4, 5, ["1", "2", "3", "4"]),
    "v8_empty": (0, 0, []),
    "v8_nonpartitioned": (1, 2, ["1", "2", "3", "4"]),
    "v8_simplekeygen_hivestyle_no_metafields": (3, 3, [1, 2, 3, 4]),
    "v8_simplekeygen_nonhivestyle": (3, 4, ["1", "2", "3", "4"]),
    # INSERT INTO is an insert (not an upsert) in Hudi 1.1: TXN-001 is written twice, and hudi-rs
    # expects both rows (EXPECTED_TIMEBASED_*_TXN_IDS); the file holding deleted TXN-002/004 is empty.
    "v9_timebasedkeygen_epochmillis": (
        7,
        9,
        ["TXN-001", "TXN-001", "TXN-002", "TXN-003", "TXN-005", "TXN-006"],
    ),
    "v9_timebasedkeygen_nonhivestyle": (6, 8, ["TXN-001", "TXN-001", "TXN-003", "TXN-004", "TXN-005"]),
    "v9_txns_complex_meta": (5, 17, []),  # keys checked in test_txns_snapshots
    "v9_txns_nonpart_meta": (2, 11, TXNS_NONPART),
    "v9_txns_nonpart_nometa": (2, 11, TXNS_NONPART),
    "v9_txns_simple_meta": (5, 17, TXNS_PARTITIONED),
    "v9_txns_simple_nometa": (5, 17, TXNS_PARTITIONED),
    "v9_txns_simple_overwrite": (3, 8, ["TXN-101", "TXN-102", "TXN-103"]),
}
INSERT_DUPLICATES = {"v9_timebasedkeygen_epochmillis", "v9_timebasedkeygen_nonhivestyle"}


# --- an oracle built from the raw files ----------------------------------------------------------


def timeline_dir(root: Path) -> Path:
    return root / ".hoodie" / ("timeline" if (root / ".hoodie" / "timeline").is_dir() else "")


def completed_instants(root: Path) -> dict[str, Path]:
    """instant time -> completed instant file, from the file names alone."""
    done = {}
    for p in timeline_dir(root).iterdir():
        m = re.fullmatch(r"(\d{17})(?:_\d{17})?\.([a-z]+)", p.name)
        if m and m.group(2) not in ("inflight", "requested"):
            done[m.group(1)] = p
    return done


def read_instant(path: Path) -> dict:
    data = path.read_bytes()
    if data[:4] == b"Obj\x01":
        return next(iter(fastavro.reader(io.BytesIO(data))))
    return json.loads(data) if data.strip() else {}


def replaced_groups(root: Path) -> set[tuple[str, str]]:
    replaced = set()
    for path in completed_instants(root).values():
        if path.name.endswith(".replacecommit"):
            for partition, ids in read_instant(path)["partitionToReplaceFileIds"].items():
                replaced |= {(partition, i) for i in ids}
    return replaced


def base_files_on_disk(root: Path) -> list[tuple[str, str, str, str]]:
    """(relative path, partition, file id, instant) of every Hudi base file in the table folder."""
    found = []
    for path in root.rglob("*.parquet"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".hoodie/", "__MACOSX/")) or path.name.startswith("."):
            continue
        file_id, _, instant = path.name[: -len(".parquet")].split("_")
        found.append((rel, rel.rpartition("/")[0], file_id, instant))
    return found


def write_stat(root: Path, instant: str, rel_path: str) -> dict:
    metadata = read_instant(completed_instants(root)[instant])
    (stat,) = [
        s for stats in metadata["partitionToWriteStats"].values() for s in stats if s["path"] == rel_path
    ]
    return stat


def record_keys(root: Path, paths: list[str], key: str) -> list:
    if not paths:
        return []
    files = [str(root / p) for p in paths]
    rows = duckdb.sql(f'SELECT "{key}" FROM read_parquet({files}, hive_partitioning = false)').fetchall()
    return sorted(r[0] for r in rows)


# --- every copy-on-write table --------------------------------------------------------------------


def test_every_cow_zip_has_an_expectation() -> None:
    assert sorted(EXPECTED) == COW_TABLES
    assert len(MOR_TABLES) == 12


@pytest.mark.parametrize("name", COW_TABLES)
def test_snapshot_is_latest_committed_slice_of_each_live_group(hudi_tables, name: str) -> None:
    root = hudi_tables[name]
    reader = open_reader(root)
    assert isinstance(reader, HudiCowTable) and reader.kind == "hudi_cow"
    assert reader.root == str(root)
    files = reader.list_files()
    n_live, n_disk, _ = EXPECTED[name]
    on_disk = base_files_on_disk(root)
    assert (len(files), len(on_disk)) == (n_live, n_disk)
    assert [f.path for f in files] == sorted(f.path for f in files)

    completed = completed_instants(root)
    replaced = replaced_groups(root)
    newest: dict[tuple[str, str], str] = {}
    for _, partition, file_id, instant in on_disk:
        if instant in completed and (partition, file_id) not in replaced:
            newest[(partition, file_id)] = max(instant, newest.get((partition, file_id), ""))
    expected_paths = sorted(rel for rel, p, f, i in on_disk if newest.get((p, f)) == i)
    assert [f.path for f in files] == expected_paths

    groups = [(f.partition, f.file_group) for f in files]
    assert len(set(groups)) == len(groups), "one file per file group"
    for f in files:
        file_id, _, instant = parse_base_file_name(os.path.basename(f.path))
        assert (f.file_group, f.instant) == (file_id, instant)
        assert f.instant in completed, "never a file of an uncompleted instant"
        assert (f.partition, f.file_group) not in replaced, "never a file of a replaced group"
        assert f.path == (f"{f.partition}/" if f.partition else "") + os.path.basename(f.path)
        assert f.size == os.path.getsize(root / f.path)
        # the file on disk is the one the commit wrote: same size, same row count
        stat = write_stat(root, f.instant, f.path)
        assert stat["fileSizeInBytes"] == f.size
        assert stat["numWrites"] == pq.read_metadata(root / f.path).num_rows
    assert reader.latest_instant() == max(completed, default=None)


@pytest.mark.parametrize("name", COW_TABLES)
def test_snapshot_record_keys(hudi_tables, name: str) -> None:
    root = hudi_tables[name]
    reader = HudiCowTable(root)
    key = reader.record_key_field()
    no_meta = "no_metafields" in name
    assert key == ("id" if no_meta else "_hoodie_record_key")
    keys = record_keys(root, [f.path for f in reader.list_files()], key)
    if name not in INSERT_DUPLICATES:
        assert len(keys) == len(set(keys)), "an upsert table's snapshot has each key once"
    if EXPECTED[name][2]:
        assert keys == sorted(EXPECTED[name][2])


@pytest.mark.parametrize("name", COW_TABLES)
def test_partition_values_match_folder_and_column(hudi_tables, name: str) -> None:
    root = hudi_tables[name]
    reader = HudiCowTable(root)
    hive_style = reader.properties["hoodie.datasource.write.hive_style_partitioning"] == "true"
    timestamp_keygen = "timebased" in name
    assert reader.partition_schema() == pa.schema([]), "partition columns are stored in the files"
    for f in reader.list_files():
        if not reader.partition_fields:
            assert f.partition == "" and f.partition_values == {}
            continue
        if timestamp_keygen:  # the folder holds a formatted time, not the column's value
            assert f.partition_values == {}
            continue
        assert list(f.partition_values) == reader.partition_fields
        segments = f.partition.split("/")
        table = pq.read_table(root / f.path, columns=list(f.partition_values))
        file_schema = pq.read_schema(root / f.path)
        for segment, (column, value) in zip(segments, f.partition_values.items(), strict=True):
            assert segment == (f"{column}={value}" if hive_style else str(value))
            assert type(value) is type(table.column(column)[0].as_py())
            assert pa.scalar(value, file_schema.field(column).type).type == file_schema.field(column).type
            assert set(table.column(column).to_pylist()) == {value}


def test_classic_tables_rows(hudi_tables) -> None:
    """The v6/v8 sample tables: 3 inserts, then an upsert of Alice (isActive -> false) and Diana."""
    for name in COW_TABLES:
        if name.startswith(("v6", "v8")) and "empty" not in name:
            root = hudi_tables[name]
            files = [str(root / f.path) for f in HudiCowTable(root).list_files()]
            sql = (
                f"SELECT id, name, isActive FROM read_parquet({files}, hive_partitioning = false) ORDER BY id"
            )
            rows = duckdb.sql(sql).fetchall()
            assert rows == ([(4, "Diana", False)] if "overwrite" in name else CLASSIC_ROWS), name


def test_txns_snapshots(hudi_tables) -> None:
    """hudi-rs v9_verification: updates, deletes, insert overwrite of eu, clustering."""
    for name in ("v9_txns_simple_meta", "v9_txns_simple_nometa", "v9_txns_complex_meta"):
        root = hudi_tables[name]
        files = [str(root / f.path) for f in HudiCowTable(root).list_files()]
        con = duckdb.connect()
        con.execute(f"CREATE VIEW rel AS SELECT * FROM read_parquet({files}, hive_partitioning = false)")
        ids = con.sql("SELECT txn_id FROM rel ORDER BY txn_id").fetchall()
        assert [r[0] for r in ids] == TXNS_PARTITIONED, name
        assert con.sql("SELECT txn_type FROM rel WHERE txn_id = 'TXN-001'").fetchall() == [("reversal",)]
        assert con.sql("SELECT fee_amount::VARCHAR FROM rel WHERE txn_id = 'TXN-007'").fetchall() == [
            ("75.00",)
        ]
        eu = con.sql("SELECT txn_id FROM rel WHERE region = 'eu' ORDER BY 1").fetchall()
        assert [r[0] for r in eu] == ["TXN-011", "TXN-012", "TXN-018"]
    root = hudi_tables["v9_txns_complex_meta"]
    keys = record_keys(root, [f.path for f in HudiCowTable(root).list_files()], "_hoodie_record_key")
    assert all(re.fullmatch(r"txn_id:TXN-\d{3},account_id:ACC-[A-Z]", k) for k in keys)
    assert len(set(keys)) == 12


def test_replacecommits_remove_their_file_groups(hudi_tables) -> None:
    expectations = {
        # INSERT OVERWRITE TABLE replaced every group of all three partitions
        "v6_simplekeygen_nonhivestyle_overwritetable": (3, {"ebcb261d-62d3-4895-90ec-5b3c9622dff4-0"}),
        "v9_txns_simple_overwrite": (
            5,
            {
                "4e4989ce-c02d-40ba-a21c-dcf49f74b33d-0",
                "c493c7eb-69ac-40ab-b1fc-1d2d1713bed5-0",
                "771732df-fa59-4f64-ad1f-14f0bf1655be-0",
            },
        ),
        # insert overwrite of eu (2 groups), then clustering of 5 groups into 3
        "v9_txns_simple_nometa": (7, None),
        "v9_txns_nonpart_nometa": (4, None),  # clustering only
    }
    for name, (n_replaced, live_groups) in expectations.items():
        root = hudi_tables[name]
        replaced = replaced_groups(root)
        assert len(replaced) == n_replaced
        files = HudiCowTable(root).list_files()
        assert not {(f.partition, f.file_group) for f in files} & replaced
        on_disk = {(p, fid) for _, p, fid, _ in base_files_on_disk(root)}
        assert replaced <= on_disk, "the replaced files are still on disk (not cleaned): they must be skipped"
        if live_groups is not None:
            assert {f.file_group for f in files} == live_groups
    # clustering output is live
    files = HudiCowTable(hudi_tables["v9_txns_simple_nometa"]).list_files()
    assert sum(f.instant == "20260307135709297" for f in files) == 3


@pytest.mark.parametrize("name", ["v6_empty", "v8_empty"])
def test_empty_tables(hudi_tables, name: str) -> None:
    reader = open_reader(hudi_tables[name])
    assert reader.list_files() == []
    assert reader.latest_instant() is None
    assert reader.partition_schema() == pa.schema([])
    assert reader.record_key_field() == "_hoodie_record_key"


@pytest.mark.parametrize("name", MOR_TABLES)
def test_merge_on_read_opens_as_slices(hudi_tables, name: str) -> None:
    """open_reader opens merge-on-read tables; ``read_as`` says their rows need merging, which every
    row reader refuses (tests/index_store/test_prune_mor.py)."""
    reader = open_reader(hudi_tables[name])
    assert isinstance(reader, HudiTable)
    assert (reader.kind, reader.read_as) == ("hudi_mor", "slices")


def test_timestamp_keygen_partition_fields(hudi_tables) -> None:
    reader = HudiCowTable(hudi_tables["v9_timebasedkeygen_epochmillis"])
    assert reader.partition_fields == ["ts_millis"]
    assert {f.partition for f in reader.list_files()} >= {"2024/01/15/09", "2024/01/17/11"}


# --- altered copies: pending, archived, rolled back, duplicate and dropped-column cases ------------


def test_pending_commit_files_are_not_read(copy_table) -> None:
    root = copy_table("v8_simplekeygen_nonhivestyle")
    before = HudiCowTable(root).list_files()
    live = root / before[0].path
    pending = "20990101000000000"
    shutil.copy(live, live.with_name(f"{before[0].file_group}_0-1-2_{pending}.parquet"))
    (root / ".hoodie/timeline" / f"{pending}.commit.requested").write_bytes(b"")
    (root / ".hoodie/timeline" / f"{pending}.inflight").write_bytes(b"")
    reader = HudiCowTable(root)
    assert reader.list_files() == before
    assert reader.latest_instant() == "20250713011316909"


def test_latest_slice_of_an_uncompleted_commit_falls_back(copy_table) -> None:
    root = copy_table("v6_simplekeygen_nonhivestyle")
    (root / ".hoodie/20240418172804498.commit").unlink()  # requested + inflight remain: pending
    reader = HudiCowTable(root)
    assert [(f.partition, f.instant) for f in reader.list_files()] == [
        ("10", "20240418172802262"),
        ("20", "20240418172802262"),
    ]
    assert reader.latest_instant() == "20240418172802262"


def test_archived_commits_are_committed(copy_table) -> None:
    root = copy_table("v6_simplekeygen_nonhivestyle")
    before = HudiCowTable(root).list_files()
    for p in (root / ".hoodie").glob("20240418172802262.*"):  # archival moves the oldest instants away
        p.unlink()
    after = HudiCowTable(root).list_files()
    assert after == before
    assert "20240418172802262" in {f.instant for f in after}


def _write_avro(path: Path, record: dict, fields: list[dict]) -> None:
    schema = {"type": "record", "name": "HoodieRollbackMetadata", "fields": fields}
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [record])


def test_rolled_back_instants_are_not_read(copy_table) -> None:
    root = copy_table("v6_simplekeygen_nonhivestyle")
    _write_avro(
        root / ".hoodie/20240418190000000.rollback",
        {"startRollbackTime": "20240418190000000", "commitsRollback": ["20240418172804498"]},
        [
            {"name": "startRollbackTime", "type": "string"},
            {"name": "commitsRollback", "type": {"type": "array", "items": "string"}},
        ],
    )
    reader = HudiCowTable(root)
    assert {f.instant for f in reader.list_files()} == {"20240418172802262"}
    assert reader.latest_instant() == "20240418190000000"


def test_duplicate_base_file_of_one_slice_keeps_the_committed_one(copy_table) -> None:
    root = copy_table("v8_simplekeygen_nonhivestyle")
    before = HudiCowTable(root).list_files()
    original = root / before[0].path
    file_id, _, instant = parse_base_file_name(original.name)
    shutil.copy(original, original.with_name(f"{file_id}_9-999-999_{instant}.parquet"))
    assert HudiCowTable(root).list_files() == before
    # if the commit metadata names neither file, refuse to guess
    stray = original.with_name(f"{file_id}_8-888-888_{instant}.parquet")
    shutil.copy(original, stray)
    original.rename(original.with_name(f"{file_id}_7-777-777_{instant}.parquet"))
    with pytest.raises(TableFormatError, match="two base files"):
        HudiCowTable(root).list_files()


def test_partition_column_not_stored_in_files(copy_table) -> None:
    """drop.partition.columns=true: the column is typed from the table schema, valued from folders."""
    root = copy_table("v6_simplekeygen_nonhivestyle")
    for path in root.glob("[0-9]*/*.parquet"):
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["byteField"]), path)
    props = root / ".hoodie/hoodie.properties"
    props.write_text(props.read_text().replace("drop.partition.columns=false", "drop.partition.columns=true"))
    reader = HudiCowTable(root)
    assert reader.partition_schema() == pa.schema([pa.field("byteField", pa.int32())])
    assert [f.partition_values for f in reader.list_files()] == [
        {"byteField": 10},
        {"byteField": 20},
        {"byteField": 30},
    ]
    # a dropped column must have a value in every file (a missing one would read as NULL): refuse
    (root / "30").rename(root / "thirty")
    with pytest.raises(TableFormatError, match="has no valid int32 value for 'byteField'"):
        reader.list_files()


def test_dropped_timestamp_partition_column_is_not_a_partition_column(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _synthetic(
        root,
        {
            "hoodie.table.partition.fields": "ts",
            "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
            "hoodie.datasource.write.drop.partition.columns": "true",
        },
        {"2024/01/02": pa.table({"_hoodie_record_key": ["a"], "x": [1]})},
    )
    reader = HudiCowTable(root)
    assert reader.partition_schema() == pa.schema([])  # the folder holds a formatted time, not ts
    assert [f.partition_values for f in reader.list_files()] == [{}]
    assert reader.record_key_field() == "_hoodie_record_key"


def test_properties_backup_is_read(copy_table) -> None:
    root = copy_table("v6_nonpartitioned")
    props = root / ".hoodie/hoodie.properties"
    props.rename(props.with_name("hoodie.properties.backup"))
    assert len(open_reader(root).list_files()) == 1


def _props_edit(root: Path, **changes: str) -> None:
    path = root / ".hoodie/hoodie.properties"
    props = read_properties(str(root / ".hoodie"))
    props.update({k.replace("_", "."): v for k, v in changes.items()})
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if k != "hoodie.table.create.schema"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hoodie_table_base_file_format": "ORC"}, "ORC base files"),
        ({"hoodie_table_version": "10"}, "table version 10"),
        ({"hoodie_bootstrap_base_path": "/src"}, "bootstrapped"),
        ({"hoodie_table_format": "iceberg"}, "table format 'iceberg'"),
        ({"hoodie_table_type": "SOMETHING"}, "unknown hoodie.table.type"),
    ],
)
def test_unsupported_table_properties(copy_table, change: dict, message: str) -> None:
    root = copy_table("v6_nonpartitioned")
    _props_edit(root, **change)
    with pytest.raises(UnsupportedTableError, match=message):
        HudiCowTable(root)


# --- a synthetic table: partition path forms the sample tables do not have ------------------------


def _synthetic(root: Path, props: dict[str, str], partitions: dict[str, pa.Table]) -> None:
    instant = "20240101000000000"
    (root / ".hoodie").mkdir(parents=True)
    base = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6", "hoodie.table.name": "t"}
    (root / ".hoodie/hoodie.properties").write_text(
        "# comment\n" + "".join(f"{k}={v}\n" for k, v in {**base, **props}.items())
    )
    stats = {}
    for i, (partition, table) in enumerate(partitions.items()):
        folder = root / partition
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".hoodie_partition_metadata").write_text("#partition\n")
        name = f"0000000{i}-aaaa-bbbb-cccc-dddddddddddd-0_0-1-1_{instant}.parquet"
        pq.write_table(table, folder / name)
        stats[partition] = [{"fileId": name.split("_")[0], "path": f"{partition}/{name}", "numWrites": 1}]
    (root / f".hoodie/{instant}.commit").write_text(json.dumps({"partitionToWriteStats": stats}))


def test_synthetic_partition_paths(tmp_path: Path) -> None:
    row = {"id": pa.array(["k"]), "city": pa.array(["New York"]), "day": pa.array([None], pa.date32())}
    root = tmp_path / "t"
    _synthetic(
        root,
        {
            "hoodie.table.partition.fields": "city,day",
            "hoodie.table.recordkey.fields": "id",
            "hoodie.populate.meta.fields": "false",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.datasource.write.partitionpath.urlencode": "true",
        },
        {
            "city=New%20York/day=__HIVE_DEFAULT_PARTITION__": pa.table(row),
            "city=Paris/day=2024-01-02": pa.table(
                {"id": ["p"], "city": ["Paris"], "day": pa.array([pa.scalar(19724, pa.date32())])}
            ),
        },
    )
    reader = HudiCowTable(root)
    values = [f.partition_values for f in reader.list_files()]
    assert values == [{"city": "New York", "day": None}, {"city": "Paris", "day": dt.date(2024, 1, 2)}]
    assert reader.record_key_field() == "id"


def test_synthetic_custom_keygen_keeps_only_simple_fields(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _synthetic(
        root,
        {
            "hoodie.table.partition.fields": "ts:timestamp,region:simple",
            "hoodie.table.keygenerator.type": "CUSTOM",
            "hoodie.table.recordkey.fields": "a,b",
            "hoodie.populate.meta.fields": "false",
        },
        {"2024010112/eu": pa.table({"a": [1], "b": [2], "ts": [5], "region": ["eu"]})},
    )
    reader = HudiCowTable(root)
    assert reader.partition_fields == ["ts", "region"]
    assert [f.partition_values for f in reader.list_files()] == [{"region": "eu"}]
    assert reader.record_key_field() is None, "a composite key without meta fields has no single column"
    assert HudiCowTable(root, record_key_field="a").record_key_field() == "a"


# --- open_reader -----------------------------------------------------------------------------------


def test_open_reader_errors(tmp_path: Path, copy_table) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        open_reader(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        open_reader(tmp_path / "file")
    (tmp_path / "broken/.hoodie/timeline").mkdir(parents=True)
    with pytest.raises(TableFormatError, match=r"no \.hoodie/hoodie\.properties"):
        open_reader(tmp_path / "broken")
    with pytest.raises(TableFormatError, match=r"no hoodie\.properties"):
        HudiCowTable(tmp_path / "broken")
    with pytest.raises(TableFormatError, match=r"no \.hoodie folder"):
        HudiCowTable(tmp_path)
    with pytest.raises(ValueError, match="partition_schema applies to plain"):
        open_reader(copy_table("v6_nonpartitioned"), partition_schema=pa.schema([("a", pa.int64())]))
    (tmp_path / "delta/_delta_log").mkdir(parents=True)
    with pytest.raises(UnsupportedTableError, match="Delta Lake"):
        open_reader(tmp_path / "delta")
    (tmp_path / "iceberg/metadata").mkdir(parents=True)
    (tmp_path / "iceberg/metadata/v1.metadata.json").write_text("{}")
    with pytest.raises(UnsupportedTableError, match="Iceberg"):
        open_reader(tmp_path / "iceberg")
    (tmp_path / "plain").mkdir()
    assert isinstance(open_reader(tmp_path / "plain"), PlainParquetTable)
    # a .hoodie folder holding only this library's index (.hoodie/.index) belongs to a plain table
    (tmp_path / "plain/.hoodie/.index/files").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), tmp_path / "plain/.hoodie/.index/files/f.parquet")
    pq.write_table(pa.table({"x": [1]}), tmp_path / "plain/data.parquet")
    reader = open_reader(tmp_path / "plain")
    assert isinstance(reader, PlainParquetTable)
    assert [f.path for f in reader.list_files()] == ["data.parquet"]


# --- the parsers -------------------------------------------------------------------------------------


def test_parse_properties() -> None:
    text = (
        "#Properties saved on 2024\n"
        "! another comment\n"
        "  a.b=1\n"
        "c\\:d = x\\:y\n"
        "e : spaced value \n"
        "f g\n"
        "multi=one\\\n"
        "     two\n"
        "u=\\u00e9\\t\\\\\n"
        "empty=\n"
        "# not a continuation \\\n"
        "last=ok\n"
    )
    assert parse_properties(text) == {
        "a.b": "1",
        "c:d": "x:y",
        "e": "spaced value ",
        "f": "g",
        "multi": "onetwo",
        "u": "é\t\\",
        "empty": "",
        "last": "ok",
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("20240418173213674.commit", ("20240418173213674", "commit", "completed", None)),
        ("20240418173213674.inflight", ("20240418173213674", "commit", "inflight", None)),
        ("20240418173213674.commit.requested", ("20240418173213674", "commit", "requested", None)),
        (
            "20240707001303088.replacecommit.inflight",
            ("20240707001303088", "replacecommit", "inflight", None),
        ),
        (
            "20260307162504409_20260307162508702.commit",
            ("20260307162504409", "commit", "completed", "20260307162508702"),
        ),
        ("20260307162524292.clustering.requested", ("20260307162524292", "clustering", "requested", None)),
        ("hoodie.properties", None),
        ("20240418173213674.commit.crc", None),
        ("history", None),
    ],
)
def test_parse_instant_name(name: str, expected) -> None:
    instant = parse_instant_name(name)
    got = None if instant is None else (instant.requested, instant.action, instant.state, instant.completed)
    assert got == expected


def test_parse_base_file_name() -> None:
    name = "a22e8257-e249-45e9-ba46-115bc85adcba-0_0-161-223_20240418173235694.parquet"
    assert parse_base_file_name(name) == (
        "a22e8257-e249-45e9-ba46-115bc85adcba-0",
        "0-161-223",
        "20240418173235694",
    )
    assert parse_base_file_name("._" + name) is None
    assert parse_base_file_name("part-0000.parquet") is None
    assert parse_base_file_name(name.replace(".parquet", ".log")) is None
