"""Partition values given to ``IndexedTable.tag``: one rule for every method. A null, empty or absent
partition of a non-partitioned table is its one partition; the forms a user writes (a bare value
on a hive table, a trailing slash, Hudi's ``_hoodie_partition_path``) are the table's paths; a
well-formed new partition holds inserts; anything else is a ``PartitionPathError``, never a
present key called an insert. The oracle is DuckDB reading every live file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_store import IndexedTable, PartitionPathError, RecordKeyError, open_table

METHODS: list[Literal["auto", "bloom", "record"]] = ["bloom", "record", "auto"]


def _files(result: pa.Table, root: Path | str) -> list[str | None]:
    return [None if f is None else os.path.relpath(f, root) for f in result["file"].to_pylist()]


def _hive(root: Path) -> IndexedTable:
    """``region=apac`` (ids 1-3, 10) and ``region=eu`` (ids 4-6), keyed by the integer ``id``."""
    for region, files in (("apac", [[1, 2, 3], [10]]), ("eu", [[4, 5, 6]])):
        (root / f"region={region}").mkdir(parents=True)
        for i, ids in enumerate(files):
            pq.write_table(
                pa.table({"id": pa.array(ids, pa.int64())}), root / f"region={region}" / f"f{i}.parquet"
            )
    t = open_table(root)
    t.build(record_key="id", record_index=True, progress=False)
    return t


@pytest.mark.parametrize("method", METHODS)
def test_null_empty_and_absent_partitions_of_a_non_partitioned_table(
    tmp_path: Path, method: Literal["auto", "bloom", "record"]
) -> None:
    """The issue's case: keyed by an integer id holding 5 and 6, ``partitions=[None] * 3`` found
    nothing with the record index (three inserts)."""
    pq.write_table(pa.table({"id": pa.array([5, 6], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([7], pa.int64())}), tmp_path / "b.parquet")
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=True, progress=False)
    keys = ["6", "5", "12345"]
    expected = ["a.parquet", "a.parquet", None]
    for partitions in ([None] * 3, ["", "", ""], ["/", None, ""], pa.nulls(3, pa.string()), None):
        result = t.tag(keys, partitions, using=method)
        assert _files(result, tmp_path) == expected, partitions
        if partitions is not None:
            assert result["partition"].to_pylist() == ["", "", ""]
    with pytest.raises(PartitionPathError, match=r"'p=a'.*not partitioned"):
        t.tag(keys, ["", "p=a", ""], using=method)


@pytest.mark.parametrize("method", METHODS)
def test_partition_forms_a_user_writes_are_the_tables_paths(
    tmp_path: Path, method: Literal["auto", "bloom", "record"]
) -> None:
    t = _hive(tmp_path / "t")
    forms = ["apac", "region=apac/", "/region=apac", "region=apac", "apac/"]
    result = t.tag(["2"] * len(forms) + ["10", "5"], [*forms, "apac", "eu"], using=method)
    assert _files(result, t.root) == ["region=apac/f0.parquet"] * 5 + [
        "region=apac/f1.parquet",
        "region=eu/f0.parquet",
    ]
    assert result["partition"].to_pylist() == ["region=apac"] * 6 + ["region=eu"]
    # A well-formed partition the table does not have yet: its keys are inserts, in that partition.
    # A key asked in another existing partition than its own is an insert too (non-global index).
    result = t.tag(["2", "2", "99", "2"], ["jp", "region=jp/", "eu", "region=eu"], using=method)
    assert _files(result, t.root) == [None] * 4
    assert result["partition"].to_pylist() == ["region=jp", "region=jp", "region=eu", "region=eu"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("value", "why"),
    [
        (None, "null or empty is the partition of a non-partitioned table only"),
        ("", "null or empty is the partition of a non-partitioned table only"),
        ("apac/x", "it has 2 levels, the table's paths have 1"),
        ("country=apac", "level 1 'country=apac' names another key than the table's 'region'"),
        ("region=", "has no value"),
    ],
)
def test_a_partition_that_cannot_be_mapped_is_an_error(
    tmp_path: Path, method: Literal["auto", "bloom", "record"], value: str | None, why: str
) -> None:
    t = _hive(tmp_path / "t")
    with pytest.raises(PartitionPathError, match="region=apac") as caught:
        t.tag(["1", "2"], ["apac", value], using=method)
    assert why in str(caught.value) and "1 partition value maps to no partition path" in str(caught.value)
    assert isinstance(caught.value, RecordKeyError)  # callers catching key errors catch it too


def test_several_hive_levels_take_bare_values_level_by_level(tmp_path: Path) -> None:
    root = tmp_path / "t"
    for year, region, ids in (("2024", "apac", [1, 2]), ("2024", "eu", [3]), ("2025", "apac", [4])):
        folder = root / f"year={year}" / f"region={region}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), folder / "f.parquet")
    t = open_table(root)
    t.build(record_key="id", record_index=True, progress=False)
    for method in METHODS:
        result = t.tag(
            ["1", "3", "4", "4"],
            ["2024/apac", "year=2024/eu/", "2025/region=apac", "2026/apac"],
            using=method,
        )
        assert _files(result, root) == [
            "year=2024/region=apac/f.parquet",
            "year=2024/region=eu/f.parquet",
            "year=2025/region=apac/f.parquet",
            None,
        ]
        assert result["partition"].to_pylist()[-1] == "year=2026/region=apac"
        with pytest.raises(PartitionPathError, match="level 2 'country=eu' names another key"):
            t.tag(["3"], ["2024/country=eu"], using=method)


def _live_rows(t: IndexedTable, columns: str) -> list[tuple[str, ...]]:
    listing = ", ".join(f"'{os.path.join(t.root, f.path)}'" for f in t.reader.list_files())
    return duckdb.sql(
        f"SELECT {columns} FROM read_parquet([{listing}], hive_partitioning = false)"
    ).fetchall()


@pytest.mark.parametrize("method", METHODS[:2])
def test_a_real_hive_style_hudi_table_from_its_partition_column_or_path(
    hudi_tables: dict[str, Path], tmp_path: Path, method: Literal["auto", "bloom", "record"]
) -> None:
    """v9_txns_simple_meta is partitioned ``region=...``: the region column's bare values, Hudi's
    ``_hoodie_partition_path`` and a trailing slash all find every key where it is."""
    t = open_table(hudi_tables["v9_txns_simple_meta"], index_path=tmp_path / "idx")
    t.build(record_index=True, progress=False)
    rows = _live_rows(t, "_hoodie_record_key, region, _hoodie_partition_path")
    keys = [r[0] for r in rows]
    by_path = t.tag(keys, [r[2] for r in rows], using=method)
    assert by_path["file"].null_count == 0
    for forms in ([r[1] for r in rows], [r[2] + "/" for r in rows]):
        got = t.tag(keys, forms, using=method)
        assert got.select(["key", "partition", "file"]).equals(by_path.select(["key", "partition", "file"]))
    assert set(by_path["partition"].to_pylist()) == {"region=apac", "region=eu", "region=us"}


@pytest.mark.parametrize("method", METHODS[:2])
def test_real_hudi_tables_of_bare_value_partitions(
    hudi_tables: dict[str, Path], tmp_path: Path, method: Literal["auto", "bloom", "record"]
) -> None:
    """A timestamp key generator writes four levels for one field (``2024/01/15/10``); a simple one
    without hive style writes the bare value, so ``region=apac`` names the field and maps to it."""
    t = open_table(hudi_tables["v9_timebasedkeygen_nonhivestyle"], index_path=tmp_path / "ts")
    t.build(record_index=True, progress=False)
    rows = _live_rows(t, "_hoodie_record_key, _hoodie_partition_path")
    result = t.tag([r[0] for r in rows], [r[1] + "/" for r in rows], using=method)
    assert result["file"].null_count == 0
    # (TXN-001 and TXN-003 are in two files of their partition: a row each)
    assert set(zip(result["key"].to_pylist(), result["partition"].to_pylist(), strict=True)) == set(rows)
    new = t.tag([rows[0][0]], ["2031/12/31/23"], using=method)
    assert new["file"].to_pylist() == [None] and new["partition"].to_pylist() == ["2031/12/31/23"]
    with pytest.raises(PartitionPathError, match="it has 3 levels, the table's paths have 4"):
        t.tag([rows[0][0]], ["2024/01/15"], using=method)

    t = open_table(hudi_tables["v9_txns_simple_overwrite"], index_path=tmp_path / "ow")
    t.build(record_index=True, progress=False)
    rows = _live_rows(t, "_hoodie_record_key, region, _hoodie_partition_path")
    assert {r[2] for r in rows} <= {"apac", "eu", "us"}
    keys = [r[0] for r in rows]
    expected = t.tag(keys, [r[2] for r in rows], using=method)
    assert expected["file"].null_count == 0
    named = t.tag(keys, [f"region={r[1]}" for r in rows], using=method)
    assert named.select(["key", "partition", "file"]).equals(expected.select(["key", "partition", "file"]))


@pytest.mark.parametrize("method", METHODS[:2])
def test_a_real_non_partitioned_hudi_table_takes_null_partitions(
    hudi_tables: dict[str, Path], tmp_path: Path, method: Literal["auto", "bloom", "record"]
) -> None:
    t = open_table(hudi_tables["v9_txns_nonpart_meta"], index_path=tmp_path / "idx")
    t.build(record_index=True, progress=False)
    keys = sorted({r[0] for r in _live_rows(t, "_hoodie_record_key")})
    everywhere = t.tag(keys, using=method)
    assert everywhere["file"].null_count == 0
    for partitions in ([None] * len(keys), [""] * len(keys)):
        result = t.tag(keys, partitions, using=method)
        assert result["file"].to_pylist() == everywhere["file"].to_pylist()


def test_an_empty_table_takes_any_partition(copy_table: Callable[[str], Path]) -> None:
    """No files: every key is an insert whatever its partition; the partition is given back."""
    t = open_table(copy_table("v8_empty"))
    t.build(record_index=True, progress=False)
    for method in METHODS[:2]:
        result = t.tag(["a", "b"], [None, ""], using=method)
        assert result["file"].null_count == 2 and result["partition"].to_pylist() == ["", ""]
