"""Merged reads of merge-on-read tables (``index_store.merged``) against hudi-rs's own reads of the
same tables: every real table of tests/data/hudi/mor_*.zip and tables written by
``index_store.datagen.hudi_mor`` (updates and deletes in log files, file groups of log files only,
rolled-back and pending delta commits, table versions 6, 8 and 9)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi_data import MOR_TABLES
from mor_tables import WRITTEN, assert_same_rows, hudi_rs_rows, rows

from hudi_expr import AlwaysTrue, col
from index_store import TableFormatError, open_table
from index_store.datagen.hudi_mor import DeltaCommit
from index_store.merged import MergedSlices, conform, read_slices, slices_of_files
from index_store.merged.schema import MergedLayout
from index_store.tables import open_reader

NON_EMPTY = [t for t in MOR_TABLES if "empty" not in t]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("written")
    return {name: make(base / name).root for name, make in WRITTEN.items()}


def _all_tables(hudi_tables: dict[str, Path], written: dict[str, Path]) -> dict[str, Path]:
    return {**{n: hudi_tables[n] for n in NON_EMPTY}, **written}


ALL = NON_EMPTY + list(WRITTEN)


def _merged(root: Path, query_type: str = "snapshot") -> pa.Table:
    reader = open_reader(root)
    slices = reader.file_slices()
    return read_slices(MergedLayout.of(reader, slices), slices, query_type=query_type)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ALL)
def test_merged_slices_are_hudi_rs_snapshot(
    name: str, hudi_tables: dict[str, Path], written: dict[str, Path]
) -> None:
    root = _all_tables(hudi_tables, written)[name]
    ours = _merged(root)
    expected = hudi_rs_rows(root)
    assert_same_rows(ours, expected)
    # hudi-rs's schema, meta columns included: each column of its snapshot, in its type
    assert [f.name for f in ours.schema][: len(expected.schema)] == expected.schema.names
    assert all(ours.schema.field(f.name).type == f.type for f in expected.schema)


@pytest.mark.parametrize("name", ALL)
def test_read_optimized_is_the_base_files(
    name: str, hudi_tables: dict[str, Path], written: dict[str, Path]
) -> None:
    root = _all_tables(hudi_tables, written)[name]
    ours = _merged(root, "read_optimized")
    assert_same_rows(ours, hudi_rs_rows(root, "read_optimized"))
    bases = [s.base for s in open_reader(root).file_slices() if s.base is not None]
    base_rows = pa.concat_tables([pq.read_table(root / f.path) for f in bases], promote_options="permissive")
    assert_same_rows(ours, base_rows)


def test_the_written_tables_cover_the_cases(written: dict[str, Path]) -> None:
    """The written tables hold what the tests above must see merged (so they cannot pass on base
    files alone): log files on some slices and not on others, groups of log files only, and a
    snapshot that differs from the base files' rows."""
    for name, root in written.items():
        slices = open_reader(root).file_slices()
        assert any(s.logs for s in slices), name
        assert not _merged(root).equals(_merged(root, "read_optimized")), name
    slices = open_reader(written["updates_deletes_v9"]).file_slices()
    assert any(not s.logs for s in slices)
    assert any(s.base is None for s in open_reader(written["log_only_v8"]).file_slices())


def test_expected_snapshot_of_the_writer(written: dict[str, Path]) -> None:
    """Beside hudi-rs, the writer's own account of what its commits add up to."""
    table = WRITTEN["failed_commits_v6"](written["failed_commits_v6"].parent / "again")
    assert_same_rows(_merged(table.root), table.expected)


def test_projection_and_row_counts(written: dict[str, Path]) -> None:
    root = written["log_only_v6"]
    reader = open_reader(root)
    slices = reader.file_slices()
    layout = MergedLayout.of(reader, slices)
    whole = read_slices(layout, slices)
    some = read_slices(layout, slices, ["qty", "id", "_hoodie_record_key"])
    assert some.column_names == ["qty", "id", "_hoodie_record_key"]
    assert_same_rows(some, whole.select(["qty", "id", "_hoodie_record_key"]))
    none = read_slices(layout, slices, [])
    assert (none.num_columns, none.num_rows) == (0, whole.num_rows)
    with pytest.raises(ValueError, match="no column 'nope'"):
        read_slices(layout, slices, ["nope"])
    with pytest.raises(ValueError, match="query_type must be"):
        read_slices(layout, slices, query_type="incremental")  # type: ignore[arg-type]


def test_a_stream_lists_the_slices_anew(tmp_path: Path) -> None:
    """``MergedSlices`` over a listing function: each stream sees the table as it is then."""
    table = WRITTEN["updates_deletes_v9"](tmp_path / "t")
    reader = open_reader(table.root)
    stream = MergedSlices(MergedLayout.of(reader), reader.file_slices)
    first = pa.table(stream)  # through __arrow_c_stream__
    table.append(DeltaCommit(updates=rows([1, 400], 9), inserts=rows([900], 9), deletes=[4]))
    second = stream.read_all()
    assert second.num_rows == first.num_rows and 900 in second.column("id").to_pylist()
    assert 4 in first.column("id").to_pylist() and 4 not in second.column("id").to_pylist()
    assert_same_rows(second, hudi_rs_rows(table.root))


def test_slices_of_kept_files() -> None:
    """A slice is read whole when any of its files is kept, its base file or a log file."""
    from index_store.tables.base import DataFile, FileSlice

    a = FileSlice("a", "p", DataFile("p/a_1.parquet", 1), (DataFile("p/.a_1.log.1_0", 1),))
    b = FileSlice("b", "p", DataFile("p/b_1.parquet", 1))
    c = FileSlice("c", "p", None, (DataFile("p/.c_1.log.1_0", 1),))
    slices = [a, b, c]
    assert slices_of_files(slices, "/t", ["/t/p/.a_1.log.1_0", "/t/p/.c_1.log.1_0"]) == [a, c]
    assert slices_of_files(slices, "/t", ["p/b_1.parquet"]) == [b]
    assert slices_of_files(slices, "/t", []) == []


def test_conform_fills_older_files() -> None:
    """A base file written before a column existed, or with an older type: NULLs and a cast; a
    partition column the files do not store: its folder's value."""
    schema = pa.schema([("id", pa.int64()), ("added", pa.string()), ("region", pa.string())])
    old = pa.record_batch({"id": pa.array([1, 2], pa.int32())})
    out = conform(old, schema, {"region": "eu"})
    assert out.schema == schema
    assert out.to_pylist() == [
        {"id": 1, "added": None, "region": "eu"},
        {"id": 2, "added": None, "region": "eu"},
    ]


def test_indexed_table_reads_merged_rows(written: dict[str, Path]) -> None:
    """``IndexedTable.read``/``count``/``exists`` of a merge-on-read table, without an index."""
    root = written["updates_deletes_v9"]
    t = open_table(root)
    expected = hudi_rs_rows(root)
    assert_same_rows(t.read(AlwaysTrue()), expected)
    ids = expected.column("id").to_pylist()
    assert t.count(col("id") >= 300) == sum(i >= 300 for i in ids)
    assert t.exists(col("id") == 701) and not t.exists(col("id") == 0)  # 0: updated, then deleted
    assert t.count(col("id") == 0, query_type="read_optimized") == 1  # the base file still has it
    # explain says the slices are merged and read (no secondary index selects rows here).
    told = t.explain(col("id") >= 300, "count")
    assert told.splitlines() == [
        "count: the kept file slices read (merged where they have log files), then filtered",
        "no index built: every file slice is kept",
    ]
    with pytest.raises(ValueError, match="what must be"):
        t.explain(col("id") >= 300, "rows")  # type: ignore[arg-type]
    only = t.read(col("id") < 10, columns=["id"])
    assert only.column_names == ["id"] and sorted(only.column("id").to_pylist()) == [
        i for i in sorted(ids) if i < 10
    ]


def test_a_vanished_base_file_is_named(tmp_path: Path, written: dict[str, Path]) -> None:
    root = Path(shutil.copytree(written["updates_deletes_v6"], tmp_path / "t"))
    reader = open_reader(root)
    slices = reader.file_slices()
    layout = MergedLayout.of(reader, slices)
    gone = next(s for s in slices if s.base is not None and not s.logs).base
    assert gone is not None
    os.remove(root / gone.path)
    with pytest.raises(TableFormatError, match=f"base file .*{gone.path}.* disappeared"):
        read_slices(layout, slices)


def test_without_hudi_rs_the_error_names_the_package(written: dict[str, Path]) -> None:
    """A process where ``import hudi`` fails: merging raises ``MergedReaderMissingError`` naming
    the extra to install; read-optimized reads (base files only) need no hudi-rs."""
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["hudi"] = None  # import hudi raises ImportError, as when it is not installed
        from hudi_expr import AlwaysTrue
        from index_store import open_table
        from index_store.errors import MergedReaderMissingError
        t = open_table({str(written["updates_deletes_v9"])!r})
        print(t.read(AlwaysTrue(), query_type="read_optimized").num_rows)
        try:
            t.read(AlwaysTrue())
        except MergedReaderMissingError as exc:
            print(exc)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    lines = done.stdout.strip().splitlines()
    assert lines[0] == str(hudi_rs_rows(written["updates_deletes_v9"], "read_optimized").num_rows)
    assert "needs hudi-rs" in lines[1] and "pip install 'hudi-index[hudi]'" in lines[1]
