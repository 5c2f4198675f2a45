"""Merge-on-read tables for the tagging tests: what hudi-rs (``hudi.HudiTable``, the Hudi
project's own reader) says of a table's snapshot (the live record keys, each with its partition
and file group), every key a table's slices were ever written, and a written table exercising
updates, deletes and inserts in logs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import hudi
import pyarrow as pa
import pyarrow.parquet as pq

from index_store.datagen.hudi_mor import DeltaCommit, MorTable, write_mor_table
from index_store.hudi_log import RECORD_KEY, scan_log_files
from index_store.record_key import RecordKeySpec
from index_store.tables.hudi import HudiTable

START = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)

Holders = dict[tuple[str, str], set[str]]  # (key, partition) -> file ids


def hudi_rs_holders(root: Path, spec: RecordKeySpec) -> Holders:
    """The live keys hudi-rs reads, with their partition and file group. Its rows name their file
    (``_hoodie_file_name``: a base file's name, or a bare file id for a row from a log file); a
    table without meta fields is read slice by slice through hudi-rs's file group reader."""
    rs = hudi.HudiTable(str(root))
    out: Holders = {}
    batches = rs.read()
    if not batches:
        return out
    rows = pa.Table.from_batches(batches)
    if "_hoodie_file_name" in rows.column_names:
        columns = ("_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name")
        for key, part, name in zip(*(rows[c].to_pylist() for c in columns), strict=True):
            out.setdefault((key, part), set()).add(name.split("_")[0])
        return out
    reader = rs.create_file_group_reader_with_options()
    for s in rs.get_file_slices():
        assert s.base_file_name, "a slice of log files only: read it with meta fields"
        batch = reader.read_file_slice_from_paths(
            s.base_file_relative_path(), s.log_files_relative_paths(), hudi.HudiReadOptions()
        )
        for key in spec.keys_of(pa.Table.from_batches([batch])).to_pylist():
            out.setdefault((key, s.partition_path), set()).add(s.file_id)
    return out


def written_keys(root: Path, table: HudiTable) -> set[tuple[str, str]]:
    """(key, partition) of every record ever written to a live slice: base rows, and log records
    of every block (valid or not, deletes too)."""
    spec = table.record_key_spec()
    assert spec is not None
    out: set[tuple[str, str]] = set()
    for s in table.file_slices():
        if s.base is not None:
            keys = spec.keys_of(pq.read_table(root / s.base.path, columns=list(spec.read_columns)))
            out |= {(k, s.partition) for k in keys.to_pylist()}
        if s.logs:
            scan = scan_log_files([root / f.path for f in s.logs], lambda _i: True, key_spec=spec)
            out |= {(k, s.partition) for k in scan.records.column(RECORD_KEY).to_pylist()}
    return out


def rows(ids: list[int], version: int = 0, *, ts: int | None = None) -> pa.Table:
    """Rows of keys ``ids`` (partitioned by ``region``), ``version`` in their values, ordering
    value ``ts`` (default: ``version``)."""
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([("eu", "us", "apac")[i % 3] for i in ids]),
            "ts": pa.array([version if ts is None else ts] * len(ids), pa.int64()),
            "name": pa.array([f"item {i} v{version}" for i in ids]),
        }
    )


def scenario(root: Path, version: int, ordering_field: str | None) -> MorTable:
    """Base files of 60 keys in 6 groups; updates and deletes in logs, inserts into logs and into
    groups of log files only, re-inserts after a delete, an update losing on its ordering value,
    and a pending and a rolled-back commit whose records must not count."""
    return write_mor_table(
        root,
        rows(list(range(60))),
        record_key="id",
        partition_by="region",
        ordering_field=ordering_field,
        file_groups=6,
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(updates=rows(list(range(0, 60, 4)), 1), inserts=rows([100, 101], 1), deletes=[5, 6]),
            DeltaCommit(inserts=rows([103, 104, 105], 2), insert_into="logs"),
            DeltaCommit(inserts=rows([200, 201, 202, 203], 2), insert_into="log_only"),
            DeltaCommit(updates=rows([100, 7, 201], 3), deletes=[103, 8, 0, 202]),
            DeltaCommit(updates=rows([9, 10], 4), deletes=[11], state="rolled_back"),
            DeltaCommit(inserts=rows([5, 103, 202], 5), updates=rows([12], 6, ts=-1)),
            DeltaCommit(updates=rows([13], 7), deletes=[14, 201], state="pending"),
        ],
    )
