"""The on-disk index: build, reopen, update, sync, compact, clean, and pruning through it."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_expr import ColumnStats, FileStats, col, might_match
from index_store import CommitConflictError, IndexedTable, IndexNotBuiltError, open_table
from index_store.partitions import read_column_stats, row_groups_holding, write_column_stats
from index_store.timeline import Commit, IndexTimeline


def _all_types(i: int, n: int = 50) -> pa.Table:
    rng = np.random.default_rng(i)
    base = i * 1000
    x = rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    return pa.table(
        {
            "id": pa.array(np.arange(base, base + n), pa.int64()),
            "i8": pa.array(rng.integers(-128, 128, n), pa.int8()),
            "u64": pa.array(rng.integers(0, 2**63, n, dtype=np.uint64) * 2, pa.uint64()),
            "f32": pa.array(x.astype(np.float32)),
            "f64": pa.array(x),
            "dec": pa.array(
                [decimal.Decimal(f"{v:.2f}") for v in x * 100 if not math.isnan(v)]
                + [None] * int(np.isnan(x).sum()),
                pa.decimal128(9, 2),
            ),
            "big": pa.array([decimal.Decimal(f"{v}.5") for v in range(base, base + n)], pa.decimal256(45, 1)),
            "s": pa.array([f"k{i:03d}-{j:03d}-é" for j in range(n)]),
            "b": pa.array([bytes([i, j]) for j in range(n)]),
            "flag": pa.array(rng.random(n) < 0.5),
            "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i * 10 + j % 10) for j in range(n)]),
            "ts": pa.array(np.arange(n, dtype=np.int64) * 10**9 + i * 10**12, pa.timestamp("ns")),
            "tz": pa.array(np.arange(n, dtype=np.int64) + i * 10**9, pa.timestamp("us", tz="UTC")),
            "st": pa.array([{"x": j, "y": None if j % 7 == 0 else f"y{j}"} for j in range(base, base + n)]),
        }
    )


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(8):
        pq.write_table(_all_types(i), root / f"part-{i}.parquet")
    return root


def _footer_truth(root: Path, paths: list[str]) -> FileStats:
    """What the index must hold: footer stats plus NaN counts computed from the data."""
    stats = FileStats.from_parquet([str(root / p) for p in paths])
    for c in ("f32", "f64"):
        counts = [pc.sum(pc.is_nan(pq.read_table(root / p, columns=[c])[c])).as_py() for p in paths]
        stats = stats.with_column(c, nan_count=pa.array(counts, pa.int64()))
    return stats


def test_build_then_reopen_gives_identical_stats_for_every_type(table_dir: Path) -> None:
    open_table(table_dir).build(bloom_columns=["id", "s"], progress=False)
    reopened = open_table(table_dir)  # a new object reads everything back from disk
    stats = reopened.stats()
    paths = stats.files.to_pylist()
    assert sorted(paths) == [f"part-{i}.parquet" for i in range(8)]
    truth = _footer_truth(table_dir, paths)
    for name, expected in truth.columns.items():
        got = stats.column(name)
        assert got is not None, name
        for attr in ("min", "max", "null_count", "nan_count"):
            assert getattr(got, attr).equals(getattr(expected, attr)), (name, attr)
    assert stats.row_count.to_pylist() == [50] * 8
    # Bloom filters come back and answer for the values of their own file only.
    bloom = stats.column("id").bloom
    assert bloom is not None
    position = paths.index("part-3.parquet")
    assert bloom.might_contain(pa.scalar(3007))[position]
    assert might_match(col("id") == 3007, stats).to_pylist() == [p == "part-3.parquet" for p in paths]


def test_prune_matches_duckdb_and_reads_only_used_columns(table_dir: Path) -> None:
    table = open_table(table_dir)
    table.build(progress=False)
    con = duckdb.connect()
    checks = {
        "id BETWEEN 2010 AND 3020": col("id").between(2010, 3020),
        "s >= 'k005'": col("s") >= "k005",
        "st.x = 7042": col("st.x") == 7042,
        "d < DATE '2020-01-25'": col("d") < dt.date(2020, 1, 25),
        "NOT (id < 6000) AND flag": ~(col("id") < 6000) & (col("flag") == True),  # noqa: E712
    }
    for sql, expr in checks.items():
        result = table.prune(expr)
        kept = {os.path.basename(f) for f in result.files}
        for i in range(8):
            name = f"part-{i}.parquet"
            hits = con.execute(
                f"SELECT count(*) FROM read_parquet('{table_dir / name}', can_have_nan = true) WHERE {sql}"
            ).fetchone()[0]
            assert name in kept or hits == 0, (sql, name)
        assert result.kept < 8, sql
    loaded = table._loaded
    assert loaded is not None
    # Only the columns predicates used were read into memory.
    assert set(loaded.columns) == {"id", "s", "st.x", "d", "flag"}


def test_two_columns_of_a_200_column_index_read_a_small_fraction(tmp_path: Path) -> None:
    n, width = 2_000, 200
    names = [f"c{j:03d}" for j in range(width)]
    schema = pa.schema([(c, pa.int64()) for c in names])
    lo = np.arange(n, dtype=np.int64) * 10
    columns = {
        c: ColumnStats(
            pa.array(lo + j), pa.array(lo + j + 9), pa.array(np.zeros(n, np.int64)), pa.nulls(n, pa.int64())
        )
        for j, c in enumerate(names)
    }
    stats = FileStats(
        pa.array([f"f{i}.parquet" for i in range(n)]), pa.array(np.full(n, 10)), columns, schema
    )
    rel = write_column_stats(tmp_path, np.arange(n), pa.array([""] * n), stats)
    pf = pq.ParquetFile(tmp_path / rel)
    groups = row_groups_holding(pf, ["c007", "c150"])
    assert pf.metadata.num_row_groups >= width
    assert len(groups) <= 4, groups  # a small fraction of the partition is read
    back = read_column_stats(tmp_path, [rel], schema, ["c007", "c150"], np.arange(n))
    assert set(back) == {"c007", "c150"}
    assert back["c150"].max.equals(columns["c150"].max)
    assert back["c007"].min.equals(columns["c007"].min)


def test_update_sync_and_files_behind_the_index_back(table_dir: Path) -> None:
    table = open_table(table_dir)
    v1 = table.build(progress=False)
    # Added behind its back: not in the index, so always kept.
    pq.write_table(_all_types(20), table_dir / "late.parquet")
    late = table.prune(col("id") == 20005)
    assert [os.path.basename(f) for f in late.files] == ["late.parquet"]
    assert late.unknown_files and "not in the index" in late.explain()
    # Deleted behind its back: never returned, even though the index still lists it.
    os.remove(table_dir / "part-2.parquet")
    gone = table.prune(col("id") == 2001)
    assert [os.path.basename(f) for f in gone.files] == ["late.parquet"]  # still unknown, so kept
    assert table.prune(col("id") == 2001, verify_files=False).kept == 1  # the index alone lists it
    v2 = table.sync()
    assert v2 == v1 + 1
    assert table.sync() is None  # nothing left to do
    paths = table.stats().files.to_pylist()
    assert "late.parquet" in paths and "part-2.parquet" not in paths
    assert table.prune(col("id") == 20005, verify_files=False).kept == 1
    # A file rewritten in place is re-indexed (its old entry replaced, not duplicated).
    pq.write_table(_all_types(30, n=60), table_dir / "part-4.parquet")
    table.sync()
    stats = table.stats()
    assert stats.files.to_pylist().count("part-4.parquet") == 1
    assert might_match(col("id") == 30055, stats).true_count == 1


def test_update_rejects_what_the_index_does_not_hold(table_dir: Path) -> None:
    table = open_table(table_dir)
    with pytest.raises(IndexNotBuiltError, match="run build"):
        table.update(added=["part-1.parquet"])
    table.build(progress=False)
    with pytest.raises(CommitConflictError, match="does not hold"):
        table.update(removed=["nope.parquet"])
    with pytest.raises(FileNotFoundError, match="not live data files"):
        table.update(added=["nope.parquet"])


def test_schema_evolution_keeps_files_without_the_new_column(table_dir: Path) -> None:
    table = open_table(table_dir)
    table.build(progress=False)
    newer = _all_types(40).append_column("extra", pa.array(np.arange(50), pa.int32()))
    pq.write_table(newer, table_dir / "newer.parquet")
    table.update(added=["newer.parquet"])
    result = table.prune(col("extra") == 1000)
    # The old files know nothing about "extra": unknown means may match; the new one is pruned.
    assert result.kept == 8
    assert "newer.parquet" not in {os.path.basename(f) for f in result.files}


def test_compact_and_clean_keep_the_same_answers(table_dir: Path) -> None:
    table = open_table(table_dir)
    table.build(bloom_columns=["id"], progress=False)
    for i in range(3):
        pq.write_table(_all_types(50 + i), table_dir / f"more-{i}.parquet")
        table.update(added=[f"more-{i}.parquet"])
    os.remove(table_dir / "part-0.parquet")  # a writer deletes the file, then tells the index
    table.update(removed=["part-0.parquet"])
    before = table.stats()
    version = table.compact()
    snap = table.snapshot()
    assert snap.checkpoint_version == version
    assert all(len(files) == 1 for files in snap.live.values() if files)  # unkeyed: no record_keys
    after = open_table(table_dir).stats()
    assert sorted(after.files.to_pylist()) == sorted(before.files.to_pylist())
    order = pc.sort_indices(after.files)
    reference = pc.sort_indices(before.files)
    for name, cs in before.columns.items():
        assert after.column(name).min.take(order).equals(cs.min.take(reference)), name
    deleted = table.clean(retention_seconds=0)
    assert deleted, "the pre-compaction files and timeline entries are garbage now"
    assert len(IndexTimeline(table.index_root).versions()) == 1
    assert open_table(table_dir).prune(col("id") == 51003).kept == 1
    # Files younger than the retention are never deleted.
    assert table.clean(retention_seconds=3600) == []


def test_index_path_outside_the_table(table_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "idx"
    table = open_table(table_dir, index_path=elsewhere)
    table.build(progress=False)
    assert (elsewhere / "timeline").is_dir()
    assert not (table_dir / ".hoodie").exists()
    assert open_table(table_dir, index_path=elsewhere).prune(col("id") < 1000).kept == 1


def _lose_one_race_to(table: IndexedTable, rival: Callable[[], object]) -> None:
    """Make ``table``'s next commit lose its first race: ``rival`` commits just before it."""
    create = table.timeline.create
    fired = []

    def racing_create(commit: Commit) -> bool:
        if not fired:
            fired.append(rival())
        return create(commit)

    table.timeline.create = racing_create  # type: ignore[method-assign]


def test_a_lost_race_retries_unless_the_winner_touched_the_same_files(table_dir: Path) -> None:
    table = open_table(table_dir)
    table.build(progress=False)
    pq.write_table(_all_types(60), table_dir / "other.parquet")
    pq.write_table(_all_types(61, n=70), table_dir / "part-5.parquet")  # rewritten in place
    # The rival indexes an unrelated file first; re-indexing part-5 still lands, on the next version.
    rival = open_table(table_dir)
    _lose_one_race_to(table, lambda: rival.update(added=["other.parquet"]))
    version = table.update(added=["part-5.parquet"])
    assert version == 3 and IndexTimeline(table.index_root).versions()[-1] == 3
    stats = open_table(table_dir).stats(["id"])
    assert {"other.parquet", "part-5.parquet"} <= set(stats.files.to_pylist())
    assert stats.files.to_pylist().count("part-5.parquet") == 1
    # Now the rival removes the very file we are about to remove: a clear conflict, not a retry.
    os.remove(table_dir / "part-6.parquet")
    _lose_one_race_to(table, lambda: rival.update(removed=["part-6.parquet"]))
    with pytest.raises(CommitConflictError, match=r"changed the same data files.*part-6\.parquet"):
        table.update(removed=["part-6.parquet"])
