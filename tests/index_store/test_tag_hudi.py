"""Tagging keys of the real Hudi tables: every key found in its live base file, absent keys never,
per partition and globally, with and without Hudi's meta fields; the oracle is DuckDB."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi_data import COW_TABLES

from hudi_expr import col
from index_store import DuplicateKeyError, open_table
from index_store.partitions import read_record_keys
from index_store.record_key import RecordKeySpec
from index_store.tagging import tag_stats

NON_EMPTY = [t for t in COW_TABLES if "empty" not in t]


def _key_sql(spec: RecordKeySpec) -> str:
    """The record key as SQL, written independently of ``RecordKeySpec.encode``."""
    if spec.column is not None:
        return f'"{spec.column}"'
    if spec.generator == "simple":
        return f'CAST("{spec.fields[0]}" AS VARCHAR)'
    parts = [
        f"'{f}:' || COALESCE(NULLIF(CAST(\"{f}\" AS VARCHAR), ''), CASE WHEN \"{f}\" IS NULL "
        "THEN '__null__' ELSE '__empty__' END)"
        for f in spec.fields
    ]
    return " || ',' || ".join(parts)


def _oracle(t, spec: RecordKeySpec) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    """(key, partition, absolute file) of every row of every live base file."""
    files = t.reader.list_files()
    if not files:
        return []
    by_path = {os.path.join(t.root, f.path): f.partition for f in files}
    listing = ", ".join(f"'{p}'" for p in by_path)
    rows = duckdb.sql(
        f"SELECT {_key_sql(spec)}, filename FROM read_parquet([{listing}], filename = true, "
        "hive_partitioning = false, union_by_name = true)"
    ).fetchall()
    return [(k, by_path[os.path.normpath(f)], os.path.normpath(f)) for k, f in rows]


def _grouped(result: pa.Table, by_partition: bool) -> dict[tuple[str, str | None], set[str | None]]:
    """(key, partition or None) -> the files of its rows (None: an insert)."""
    out: dict[tuple[str, str | None], set[str | None]] = {}
    for k, p, f in zip(*(result[c].to_pylist() for c in ("key", "partition", "file")), strict=True):
        out.setdefault((k, p if by_partition else None), set()).add(
            None if f is None else os.path.normpath(f)
        )
    return out


@pytest.mark.parametrize("method", ["bloom", "record"])
@pytest.mark.parametrize("name", NON_EMPTY)
def test_every_key_of_a_real_hudi_table_is_tagged(
    name: str, method: str, copy_table: Callable[[str], Path]
) -> None:
    t = open_table(copy_table(name))
    t.build(progress=False, record_index=method == "record")
    spec = t.reader.record_key_spec()
    assert spec is not None
    rows = _oracle(t, spec)
    assert rows
    in_partition: dict[tuple[str, str], set[str]] = {}
    for k, p, f in rows:
        in_partition.setdefault((k, p), set()).add(f)
    twice = [kp for kp, where in in_partition.items() if len(where) > 1]
    if twice:  # Hudi's insert operation can write a key twice: strictness refuses it when asked
        with pytest.raises(DuplicateKeyError, match=repr(twice[0][0])):
            t.tag([twice[0][0]], [twice[0][1]], using=method, on_duplicate="error")  # type: ignore[arg-type]
    # Every (key, partition) once, and absent keys: each copy of a key is a row of its own.
    pairs = list(in_partition)
    keys = [k for k, _ in pairs] + ["no such key", pairs[0][0] + "x", "~"]
    parts = [p for _, p in pairs] + [pairs[0][1]] * 3
    result = t.tag(keys, parts, using=method)  # type: ignore[arg-type]
    expected: dict[tuple[str, str | None], set[str | None]] = {kp: set(in_partition[kp]) for kp in pairs}
    expected.update({(k, p): {None} for k, p in zip(keys[-3:], parts[-3:], strict=True)})
    assert _grouped(result, by_partition=True) == expected
    assert result.num_rows == sum(len(v) for v in expected.values())
    assert result["key"].to_pylist() == [
        k for k, p in zip(keys, parts, strict=True) for _ in expected[(k, p)]
    ]
    stats = tag_stats(result)
    assert (stats.updates, stats.inserts, stats.several_files) == (len(pairs), 3, len(twice))

    holders: dict[str, set[str]] = {}
    for k, _, f in rows:
        holders.setdefault(k, set()).add(f)
    unique = sorted(holders)
    if any(len(where) > 1 for where in holders.values()):  # globally: every file holding the key
        with pytest.raises(DuplicateKeyError):
            t.tag(unique, using=method, on_duplicate="error")  # type: ignore[arg-type]
    result = t.tag([*unique, "no such key"], using=method)  # type: ignore[arg-type]
    wanted: dict[tuple[str, str | None], set[str | None]] = {(k, None): set(holders[k]) for k in unique}
    assert _grouped(result, by_partition=False) == {**wanted, ("no such key", None): {None}}


@pytest.mark.parametrize("name", NON_EMPTY)
def test_build_takes_footer_filters_and_bounds_as_hudi_wrote_them(
    name: str, copy_table: Callable[[str], Path]
) -> None:
    t = open_table(copy_table(name))
    t.build(progress=False)
    snap = t.snapshot()
    files = t.reader.list_files()
    loaded = t._load()
    filters = read_record_keys(t.index_root, snap.live["record_keys"], loaded.file_idx)
    by_path = dict(zip(loaded.paths.to_pylist(), range(len(loaded.paths)), strict=True))
    for f in files:
        i = by_path[f.path]
        meta = pq.ParquetFile(os.path.join(t.root, f.path)).metadata.metadata or {}
        stored = filters.bloom_types[i].as_py()
        if b"org.apache.hudi.bloomfilter" in meta:
            assert stored == meta.get(b"hoodie_bloom_filter_type_code", b"SIMPLE").decode()
            if b"hoodie_min_record_key" in meta:
                assert filters.min_key[i].as_py() == meta[b"hoodie_min_record_key"].decode()
                assert filters.max_key[i].as_py() == meta[b"hoodie_max_record_key"].decode()
            else:  # an empty base file: an empty filter and no bounds
                assert pq.ParquetFile(os.path.join(t.root, f.path)).metadata.num_rows == 0
                assert (filters.min_key[i].as_py(), filters.max_key[i].as_py()) == (None, None)
        else:  # no meta fields: the filter was built from the key generator's fields
            assert "no_metafields" in name
            assert stored == "SIMPLE"
            assert filters.min_key[i].as_py() is not None


@pytest.mark.parametrize("name", [t for t in COW_TABLES if "empty" in t])
def test_empty_hudi_tables_tag_everything_as_inserts(name: str, copy_table: Callable[[str], Path]) -> None:
    t = open_table(copy_table(name))
    t.build(progress=False, record_index=True)
    for method in ("bloom", "record"):
        assert t.tag(["a", "b"], using=method)["file"].null_count == 2  # type: ignore[arg-type]


def test_a_corrupt_footer_filter_is_not_trusted(copy_table: Callable[[str], Path]) -> None:
    """A base file whose footer filter is garbage: its keys are read instead, none is lost."""
    root = copy_table("v6_nonpartitioned")
    t = open_table(root)
    victim = os.path.join(root, t.reader.list_files()[0].path)
    table = pq.read_table(victim)
    meta = dict(pq.ParquetFile(victim).metadata.metadata or {})
    meta[b"org.apache.hudi.bloomfilter"] = b"not base64 at all!"
    pq.write_table(table.replace_schema_metadata(meta), victim)
    t.build(progress=False)
    keys = table["_hoodie_record_key"].to_pylist()
    result = t.tag(keys)
    assert [os.path.normpath(f) for f in result["file"].to_pylist()] == [os.path.normpath(victim)] * len(keys)


@pytest.mark.parametrize("name", [t for t in NON_EMPTY if "no_metafields" not in t])
def test_pruning_on_the_record_key_uses_hudis_footer_filters(
    name: str, copy_table: Callable[[str], Path]
) -> None:
    """``_hoodie_record_key = k`` prunes with the footer filters (read at build, no key column
    read): a key inside a file's key range but not in it is dropped by the filter."""
    t = open_table(copy_table(name))
    t.build(progress=False)
    assert "_hoodie_record_key" not in t.snapshot().config.bloom_columns  # no second bloom filter
    assert t.stats(["_hoodie_record_key"]).column("_hoodie_record_key").membership
    con = duckdb.connect()
    for f in t.reader.list_files():
        path = os.path.normpath(os.path.join(t.root, f.path))
        keys = sorted(
            r[0] for r in con.execute(f"SELECT _hoodie_record_key FROM read_parquet('{path}')").fetchall()
        )
        for k in keys[:3]:
            assert path in [os.path.normpath(p) for p in t.prune(col("_hoodie_record_key") == k).files]
        if len(keys) >= 2 and keys[0] + "\x01" < keys[1]:  # inside the range, in no file
            absent = keys[0] + "\x01"
            assert path not in [
                os.path.normpath(p) for p in t.prune(col("_hoodie_record_key") == absent).files
            ]
