"""Indexes of the real Hudi copy-on-write tables: built from their footers, pruning checked by DuckDB."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hudi_data import COW_TABLES, MOR_TABLES

from hudi_expr import Expression, col
from hudi_expr.stats import leaf_columns
from hudi_expr.types import is_comparable_type
from index_store import open_table

NON_EMPTY = [t for t in COW_TABLES if "empty" not in t]


def _predicates(
    con: duckdb.DuckDBPyConnection, files: list[str], name: str, t: pa.DataType
) -> list[Expression]:
    """Predicates on one column built from values the table really holds (so some must match)."""
    listing = ", ".join(f"'{f}'" for f in files)
    sql_name = ".".join(f'"{p}"' for p in name.split("."))
    source = f"read_parquet([{listing}], union_by_name = true, can_have_nan = true)"
    values = con.sql(
        f"SELECT DISTINCT {sql_name} AS v FROM {source} WHERE {sql_name} IS NOT NULL ORDER BY v LIMIT 3"
    ).to_arrow_table()["v"]
    out: list[Expression] = [col(name).is_null(), col(name).is_not_null()]
    for v in (values[i] for i in range(len(values))):
        if isinstance(v, (dict, list)):
            continue
        out += [col(name) == v, col(name) > v, col(name) <= v, ~(col(name) == v)]
        if isinstance(v, str) and v:
            out.append(col(name).starts_with(v[:2]))
    return out


@pytest.mark.parametrize("name", NON_EMPTY)
def test_index_of_a_real_hudi_table_prunes_soundly(name: str, copy_table: Callable[[str], Path]) -> None:
    root = copy_table(name)
    table = open_table(root)
    table.build(progress=False)
    live = sorted(f.path for f in table.reader.list_files())
    stats = table.stats()
    assert sorted(stats.files.to_pylist()) == live
    con = duckdb.connect()
    files = [os.path.join(root, p) for p in live]
    listing = ", ".join(f"'{f}'" for f in files)
    stored = set(leaf_columns(stats.schema)) - set(table.reader.partition_schema().names)
    checked = pruned = 0
    for column, t in leaf_columns(stats.schema).items():
        if column not in stored or not is_comparable_type(t):
            continue
        for expr in _predicates(con, files, column, t):
            kept = set(table.prune(expr).files)
            # union_by_name: a file lacking the column reads it as NULL, as engines do.
            source = f"read_parquet([{listing}], filename = true, union_by_name = true, can_have_nan = true)"
            matching = con.execute(f"SELECT DISTINCT filename FROM {source} WHERE {expr}").fetchall()
            missed = {f for (f,) in matching} - kept
            assert not missed, (name, str(expr), missed)
            checked += 1
            pruned += len(kept) < len(files)
    assert checked > 10
    if len(files) > 1:
        assert pruned > 0, "some predicate on a multi-file table should prune"


@pytest.mark.parametrize("name", [t for t in NON_EMPTY if "txns" in t])
def test_record_key_bloom_filters_find_each_key(name: str, copy_table: Callable[[str], Path]) -> None:
    root = copy_table(name)
    table = open_table(root)
    table.build(progress=False)
    key = table.reader.record_key_field()
    assert key is not None
    con = duckdb.connect()
    for f in table.reader.list_files():
        path = os.path.join(root, f.path)
        keys = [r[0] for r in con.execute(f"SELECT \"{key}\" FROM read_parquet('{path}')").fetchall()]
        for k in keys[:5]:
            assert path in table.prune(col(key) == k).files, (k, f.path)
    stats = table.stats([key])
    # _hoodie_record_key: Hudi's footer filters; a key column without meta fields: a bloom filter
    assert stats.column(key).membership or stats.column(key).bloom is not None


@pytest.mark.parametrize("name", ["v6_empty", "v8_empty"])
def test_empty_tables_index_to_nothing(name: str, copy_table: Callable[[str], Path]) -> None:
    table = open_table(copy_table(name))
    table.build(progress=False)
    assert table.stats().num_files == 0
    assert table.sync() is None


@pytest.mark.parametrize("name", MOR_TABLES)
def test_merge_on_read_tables_open_and_index_every_file(name: str, copy_table: Callable[[str], Path]) -> None:
    """Each base file and log file of the latest slices gets an entry; a log file's keys and
    statistics are not read yet (tagging reads its records: tests/index_store/test_tag_mor.py)."""
    table = open_table(copy_table(name))
    assert table.reader.read_as == "slices"
    table.build(progress=False)
    listed = sorted(f.path for s in table.reader.file_slices() for f in s.files)
    indexed = table.stats([])
    assert sorted(indexed.files.to_pylist()) == listed and table.freshness().current
    logs = [i for i, p in enumerate(indexed.files.to_pylist()) if "/." in "/" + p]
    assert all(indexed.row_count[i].as_py() is None for i in logs)


def test_replaced_file_groups_never_come_back(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_overwrite")
    table = open_table(root)
    table.build(progress=False)
    everything = table.prune(col("txn_id").is_not_null())
    assert everything.kept == len(table.reader.list_files()) == 3
    on_disk = {str(p) for p in root.rglob("*.parquet") if ".hoodie" not in p.parts}
    assert len(on_disk) > 3  # replaced groups' files are still there, but never returned
