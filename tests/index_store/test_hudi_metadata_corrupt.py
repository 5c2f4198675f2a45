"""A damaged HFile of Hudi's metadata table on the tag and secondary index paths: ``tag`` refuses
with a typed error (never calls a key new), ``count`` / ``read`` / ``select`` keep files and read
them (still equal DuckDB over the hudi-rs snapshot), the note saying why. Real table copies."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_expr import col
from index_store import open_table
from index_store.errors import HFileCorruptError, MetadataTableError

hudi = pytest.importorskip("hudi")

TABLE = "v9_txns_simple_meta"


def _corrupt(root: Path, partition: str) -> int:
    """Every HFile data block of ``partition`` (base files and log blocks) loses its magic."""
    damaged = 0
    for path in (root / ".hoodie" / "metadata" / partition).iterdir():
        data = path.read_bytes()
        if b"DATABLK*" in data:
            path.write_bytes(data.replace(b"DATABLK*", b"XXXXXXXX"))
            damaged += 1
    return damaged


def _snapshot(root: Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTable(str(root)).read())


def _expected(snapshot: pa.Table, where: str) -> list[str]:
    con = duckdb.connect()
    con.register("snap", snapshot)
    return [
        r[0] for r in con.execute(f"SELECT _hoodie_record_key FROM snap WHERE {where} ORDER BY 1").fetchall()
    ]


def test_tag_from_a_damaged_record_index_is_a_typed_error(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(TABLE)
    keys = _snapshot(root)["_hoodie_record_key"].to_pylist()[:5]
    assert open_table(root, source="hudi").tag([*keys, "new-key"]).num_rows == 6
    assert _corrupt(root, "record_index") > 0
    with pytest.raises(MetadataTableError, match=r"record index .* does not read") as info:
        open_table(root, source="hudi").tag([*keys, "new-key"])
    assert isinstance(info.value.__cause__, HFileCorruptError)


@pytest.mark.parametrize("partition", ["record_index", "secondary_index_merchant_idx"])
def test_secondary_paths_over_a_damaged_partition_read_the_files(
    partition: str, copy_table: Callable[[str], Path]
) -> None:
    root = copy_table(TABLE)
    snapshot = _snapshot(root)
    assert _corrupt(root, partition) > 0
    table = open_table(root)
    expr, where = col("merchant_name") == "Amazon", "merchant_name = 'Amazon'"
    expected = _expected(snapshot, where)
    assert expected
    assert table.count(expr) == len(expected)
    got = table.read(expr, ["_hoodie_record_key", "merchant_name"])
    assert sorted(got["_hoodie_record_key"].to_pylist()) == expected
    assert table._from_hudi_secondary(expr) is None  # nothing proven from the damaged partition
    keys = []  # candidate rows: every matching row among them
    for path, positions in table.row_ids(expr).items():
        keys += (
            pq.read_table(path, columns=["_hoodie_record_key"])
            .take(positions)["_hoodie_record_key"]
            .to_pylist()
        )
    assert set(expected) <= set(keys)
    if partition.startswith("secondary"):
        assert "does not read" in table.prune(expr).explain()
