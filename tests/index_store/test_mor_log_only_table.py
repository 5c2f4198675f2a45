"""A merge-on-read table with no base file at all (issue 23's bad inputs): every file group log
files only, as the bucket index writes a table. Its first delta commit writes log files
(``write_mor_table(insert_into="log_only")``), or writes nothing and the next one the log files.

Against hudi-rs (``hudi.HudiTable``): its slices are hudi-rs's, the index builds, pruning keeps
every slice holding a matching row of hudi-rs's snapshot (DuckDB deciding matches), tagging finds
keys in log files (nothing for a deleted key), and reads return hudi-rs's rows."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import duckdb
import hudi
import pytest
from mor_oracle import hudi_rs_holders
from mor_tables import START, assert_same_rows, hudi_rs_rows, rows

from hudi_expr import AlwaysTrue, Expression, col
from index_store import open_table
from index_store.datagen.hudi_mor import DeltaCommit, MorTable, write_mor_table
from index_store.tables import HudiTable

Slice = tuple[str, str, str | None, tuple[str, ...]]  # partition, file id, base file, log files
LATER = [
    DeltaCommit(inserts=rows([20, 21, 22], 1), insert_into="log_only"),  # new groups of log files
    DeltaCommit(updates=rows([1, 20], 2), deletes=[3, 21], inserts=rows([23], 2), insert_into="logs"),
]


def log_only_table(root: Path, version: int, first: Literal["logs", "empty"]) -> MorTable:
    """Keys 0-11 in the first commit's log files (``"logs"``), or a first commit of no rows and
    keys 0-11 in the next one's (``"empty"``); then more groups, updates, deletes and inserts."""
    first_rows = rows(list(range(12)))
    commits = LATER
    if first == "empty":
        commits = [DeltaCommit(inserts=first_rows, insert_into="log_only"), *LATER]
        first_rows = first_rows.slice(0, 0)
    return write_mor_table(
        root,
        first_rows,
        record_key="id",
        partition_by="region",
        ordering_field="ts",
        insert_into="log_only",
        table_version=version,
        start=START,
        commits=commits,
    )


def rs_slices(root: Path) -> list[Slice]:
    return sorted(
        (s.partition_path, s.file_id, s.base_file_name or None, tuple(s.log_file_names))
        for s in hudi.HudiTable(str(root)).get_file_slices()
    )


def our_slices(root: Path) -> list[Slice]:
    return sorted(
        (
            s.partition,
            s.file_id,
            os.path.basename(s.base.path) if s.base else None,
            tuple(os.path.basename(f.path) for f in s.logs),
        )
        for s in HudiTable(root).file_slices()
    )


PREDICATES: list[Expression] = [
    col("id") == 20,
    col("id") >= 10,
    col("id").isin([1, 3, 23]),
    col("region") == "eu",
    col("qty") > 50,
    col("name").is_null(),
    ~(col("price") < 5.0),
]


@pytest.mark.parametrize("first", ["logs", "empty"])
@pytest.mark.parametrize("version", [6, 8, 9])
def test_a_table_of_log_files_only(tmp_path: Path, version: int, first: Literal["logs", "empty"]) -> None:
    written = log_only_table(tmp_path / "t", version, first)
    root = written.root
    assert not list(root.rglob("*.parquet"))
    slices = our_slices(root)
    assert slices == rs_slices(root)
    assert len(slices) == 6 and all(s[2] is None and s[3] for s in slices)

    t = open_table(root)
    assert t.reader.read_as == "slices"
    t.build(progress=False, record_index=True)
    snapshot = hudi_rs_rows(root)
    assert_same_rows(snapshot, written.expected)
    group_of_row = list(
        zip(
            snapshot["_hoodie_partition_path"].to_pylist(),
            snapshot["_hoodie_file_name"].to_pylist(),
            strict=True,
        )
    )
    con = duckdb.connect()
    con.register("snap", snapshot)
    pruned = 0
    for expr in PREDICATES:
        result = t.prune(expr)
        kept = {(s.partition, s.file_id) for s in result.file_slices}
        matching = con.sql(
            f"SELECT _hoodie_partition_path, _hoodie_file_name FROM snap WHERE {expr}"
        ).fetchall()
        assert set(matching) <= kept, expr  # a log record names its file group, not a file
        assert all(s.base_file is None for s in result.file_slices)
        pruned += len(kept) < len(slices)
        assert_same_rows(t.read(expr), con.sql(f"SELECT * FROM snap WHERE {expr}").to_arrow_table())
    assert pruned >= 3, "log files' statistics prune slices"
    assert set(group_of_row) <= {(s[0], s[1]) for s in slices}
    assert_same_rows(t.read(AlwaysTrue()), snapshot)
    assert t.count(col("id") < 12) == len([i for i in snapshot["id"].to_pylist() if i < 12])
    told = t.explain(col("id") < 12, "count").splitlines()  # the slices kept, as the read prunes
    assert (
        told[0].startswith("count: the kept file slices read")
        and told[1:] == str(t.prune(col("id") < 12, on_corrupt="keep_all").explain()).splitlines()
    )

    spec = t.reader.record_key_spec()
    assert spec is not None
    holders = hudi_rs_holders(root, spec)
    last_log = {s[1]: os.path.join(root, s[0], s[3][-1]) for s in slices}
    keys = [str(k) for k in (*range(12), 20, 21, 22, 23, 99)]
    for using in ("record", "bloom"):
        result = t.tag(keys, using=using)
        assert result["key"].to_pylist() == keys
        got = dict(
            zip(
                keys,
                zip(result["partition"].to_pylist(), result["file_id"].to_pylist(), strict=True),
                strict=True,
            )
        )
        expected = {
            k: next(((p, i) for (key, p), ids in holders.items() if key == k for i in ids), (None, None))
            for k in keys
        }
        assert got == expected, using
        assert {k for k, (_, i) in got.items() if i is None} == {"3", "21", "99"}  # deleted, never written
        files = [f for f in result["file"].to_pylist() if f is not None]
        assert files == [last_log[i] for i in result["file_id"].to_pylist() if i is not None]
