"""Merge-on-read tables for the merged-read tests, and their oracle: hudi-rs (``hudi.HudiTable``,
the Hudi project's own reader) reading the same table.

``written_tables`` writes, with ``index_store.datagen.hudi_mor``, tables whose slices cover what a
merged read must get right: updates and deletes in log files, inserts into new base files and into
existing logs, a file group of log files only, a rolled-back and a pending delta commit, no
partitions and no ordering field, table versions 6, 8 and 9. Rows are compared as multisets of
values normalized to text (timestamps as UTC microseconds), on the columns both sides return.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import hudi
import pyarrow as pa
import pyarrow.compute as pc

from index_store.datagen.hudi_mor import DeltaCommit, MorTable, write_mor_table

START = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
REGIONS = ("eu", "us", "apac")


def rows(ids: list[int], version: int = 0) -> pa.Table:
    """Rows of several types, with nulls; ``version`` changes the values (an update) and is the
    ordering value ``ts``."""

    def pick(i: int, value: Any, every: int) -> Any:
        return None if (i + version) % every == 0 else value

    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([REGIONS[i % 3] for i in ids]),
            "ts": pa.array([version] * len(ids), pa.int64()),
            "qty": pa.array([pick(i, i * 10 + version, 4) for i in ids], pa.int32()),
            "price": pa.array([pick(i, i * 1.25 + version, 5) for i in ids], pa.float64()),
            "name": pa.array([pick(i, f"item {i} v{version}", 3) for i in ids], pa.string()),
            "day": pa.array([pick(i, dt.date(2024, 1, 1) + dt.timedelta(i + version), 6) for i in ids]),
            "at": pa.array(
                [pick(i, START + dt.timedelta(hours=i, seconds=version), 7) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "amount": pa.array(
                [pick(i, decimal.Decimal(f"{i}.{version:03d}"), 4) for i in ids], pa.decimal128(12, 3)
            ),
        }
    )


def _updates_and_deletes(root: Path, version: int) -> MorTable:
    """Base files clustered by id, then updates, deletes and inserts (in log files and in a new base
    file) touching the groups of the lowest ids and the new ones: the others have no log file."""
    return write_mor_table(
        root,
        rows(list(range(600))),
        record_key="id",
        partition_by="region",
        ordering_field="ts",
        file_groups=12,
        cluster_by="id",
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(updates=rows(list(range(0, 200, 7)), 1), inserts=rows([700, 701], 1), deletes=[5, 6]),
            DeltaCommit(
                updates=rows(list(range(0, 100, 3)), 2), inserts=rows([702, 703, 704], 2), insert_into="logs"
            ),
            DeltaCommit(deletes=[702, 8, 0, 300]),
        ],
    )


def _log_only_groups(root: Path, version: int) -> MorTable:
    """File groups of log files only (inserts written to logs, as the bucket index does), one of
    them emptied by a delete."""
    return write_mor_table(
        root,
        rows(list(range(30))),
        record_key="id",
        partition_by="region",
        ordering_field="ts",
        file_groups=3,
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(inserts=rows([40, 41, 42, 43, 44], 1), insert_into="log_only"),
            DeltaCommit(updates=rows([40, 1], 2), deletes=[41, 2]),
        ],
    )


def _failed_commits(root: Path, version: int) -> MorTable:
    """A rolled-back and a pending delta commit (table version 6 keeps their blocks in log files of
    committed slices; hudi-rs skips them by the timeline), no partitions, no ordering field."""
    table = write_mor_table(
        root,
        rows(list(range(40))),
        record_key="id",
        file_groups=2,
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(updates=rows([1, 2, 3], 5), deletes=[4]),
            DeltaCommit(updates=rows([2, 9], 7), inserts=rows([50], 7), deletes=[10], state="rolled_back"),
            DeltaCommit(updates=rows([1], 2), inserts=rows([4], 2)),
        ],
    )
    table.append(DeltaCommit(updates=rows([3, 11], 9), deletes=[12], state="pending"))
    return table


WRITTEN: dict[str, Callable[[Path], MorTable]] = {
    "updates_deletes_v9": lambda root: _updates_and_deletes(root, 9),
    "updates_deletes_v6": lambda root: _updates_and_deletes(root, 6),
    "log_only_v8": lambda root: _log_only_groups(root, 8),
    "log_only_v6": lambda root: _log_only_groups(root, 6),
    "failed_commits_v6": lambda root: _failed_commits(root, 6),
    "failed_commits_v9": lambda root: _failed_commits(root, 9),
}


def hudi_rs_rows(root: Path | str, query_type: str = "snapshot") -> pa.Table:
    """hudi-rs's read of the table at ``root``: its snapshot, or with ``query_type=
    "read_optimized"`` its base files only."""
    table = hudi.HudiTable(str(root))
    options = hudi.HudiReadOptions()
    if query_type == "read_optimized":
        options = options.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    batches = table.read(options)
    if not batches:
        return pa.schema(table.get_schema_with_meta_fields()).empty_table()
    return pa.Table.from_batches(batches)


def filtered(snapshot: pa.Table, condition: str) -> pa.Table:
    """``snapshot``'s rows where the SQL ``condition`` is TRUE, as DuckDB decides it."""
    con = duckdb.connect()
    try:
        con.register("expected", snapshot)
        return con.sql(f"SELECT * FROM expected WHERE {condition}").to_arrow_table()
    finally:
        con.close()


def condition_for(snapshot: pa.Table) -> str:
    """A SQL filter ``column >= median`` on a numeric (else string) data column of ``snapshot``."""
    numeric = [f for f in snapshot.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
    strings = [f for f in snapshot.schema if pa.types.is_string(f.type)]
    for field in numeric + strings:
        values = sorted(v for v in snapshot.column(field.name).to_pylist() if v is not None)
        if field.name.startswith("_hoodie") or not values:
            continue
        pivot = values[len(values) // 2]
        literal = str(pivot) if field in numeric else "'" + pivot.replace("'", "''") + "'"
        return f'"{field.name}" >= {literal}'
    raise AssertionError("no column to filter on")


def normalized_values(column: pa.ChunkedArray) -> list[Any]:
    """A column's values in one spelling: timestamps as UTC microseconds, integers of any width
    and decimals as text, nested values by their repr."""
    t = column.type
    if pa.types.is_dictionary(t):
        column, t = column.cast(t.value_type), t.value_type
    if pa.types.is_timestamp(t):  # the same instant in any unit and zone
        column = pc.cast(column, pa.timestamp("us", tz="UTC") if t.tz else pa.timestamp("us"))
        return column.cast(pa.int64()).to_pylist()
    if pa.types.is_nested(t):
        return [repr(v) for v in column.to_pylist()]
    if pa.types.is_primitive(t) or pa.types.is_decimal(t):  # one spelling across integer widths
        return column.cast(pa.string()).to_pylist()
    return column.to_pylist()


def assert_same_rows(ours: pa.Table, expected: pa.Table) -> None:
    """The same rows, as multisets, on the columns both have (at least the data columns)."""
    columns = [c for c in expected.column_names if c in ours.column_names]
    data = [c for c in expected.column_names if not c.startswith("_hoodie")]
    assert set(data) <= set(columns), (ours.column_names, expected.column_names)
    assert ours.num_rows == expected.num_rows
    mine = Counter(zip(*[normalized_values(ours.column(c)) for c in columns], strict=True))
    theirs = Counter(zip(*[normalized_values(expected.column(c)) for c in columns], strict=True))
    assert mine == theirs
