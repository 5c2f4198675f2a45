"""The index never causes a wrong answer (issue 10): files rewritten in place, index files seen by
users' globs, registered views that go stale, hidden files, corrupt or missing indexes, empty tables.

Each test would fail on the code before the fix: the answers are checked against DuckDB (or
Spark) reading the table's files directly.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb import IndexUnusedWarning, plan, register, sql
from adapters.pyarrow import from_pyarrow
from hudi_expr import Translation, col
from index_store import IndexCorruptError, IndexNotBuiltError, open_table
from index_store.tables import TableFormatError


def _write(path: Path, keys: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Plain encoding, no compression: the same number of same-width values gives the same size.
    data = pa.table({"k": pa.array(keys, pa.int64()), "s": [f"v{k}" for k in keys]})
    pq.write_table(data, path, compression="none", use_dictionary=False)


def _table(root: Path, files: int = 4) -> Path:
    for i in range(files):
        _write(root / f"f{i}.parquet", [i * 10 + j for j in range(5)])
    return root


def _bump_mtime(path: Path, seconds: int = 5) -> None:
    """Move the file's modification time on, as a later write would (a write within one tick of the
    previous one may keep it: see README, "coarse modification times")."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + seconds * 1_000_000_000))


def _duckdb_count(root: Path, where: str, glob: str = "*.parquet") -> int:
    query = f"SELECT count(*) FROM read_parquet('{root}/{glob}', can_have_nan = true) WHERE {where}"
    return int(duckdb.sql(query).fetchall()[0][0])


def _sql_count(root: Path, where: str) -> int:
    con = duckdb.connect()
    register(con, "t", root)
    return int(sql(con, f"SELECT count(*) FROM t WHERE {where}").fetchall()[0][0])


# ------------------------------------------------------------------ 1. files rewritten in place


def test_a_file_rewritten_in_place_with_another_size_is_kept(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    _write(root / "f0.parquet", [999, 1000, 1001])
    _bump_mtime(root / "f0.parquet")
    result = t.prune(col("k") == 999)
    assert str(root / "f0.parquet") in result.files
    assert result.changed_files == [str(root / "f0.parquet")]
    assert "1 file changed since the index was built, kept: run sync" in result.explain()
    assert _sql_count(root, "k = 999") == _duckdb_count(root, "k = 999") == 1


def test_a_same_size_rewrite_is_caught_by_its_modification_time(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    before = (root / "f0.parquet").stat().st_size
    _write(root / "f0.parquet", [5, 6, 7, 8, 9])  # k = 7 is in no indexed file's range
    assert (root / "f0.parquet").stat().st_size == before  # the same size: only mtime tells
    _bump_mtime(root / "f0.parquet")
    assert str(root / "f0.parquet") in t.prune(col("k") == 7).files
    assert _sql_count(root, "k = 7") == 1


def test_a_file_renamed_over_an_indexed_one_is_kept(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    elsewhere = tmp_path / "staging" / "new.parquet"
    _write(elsewhere, [999, 998, 997, 996, 995])
    _bump_mtime(elsewhere, 10)
    os.replace(elsewhere, root / "f2.parquet")
    assert t.prune(col("k") == 999).changed_files == [str(root / "f2.parquet")]
    assert _sql_count(root, "k = 999") == 1


def test_sync_indexes_a_rewritten_file_again(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    _write(root / "f0.parquet", [999, 998, 997, 996, 995])
    _bump_mtime(root / "f0.parquet")
    assert t.sync() is not None
    result = t.prune(col("k") == 999)
    assert result.files == [str(root / "f0.parquet")]
    assert result.changed_files == []
    assert t.sync() is None  # nothing changed since


def test_an_index_without_modification_times_keeps_every_file_until_sync(tmp_path: Path) -> None:
    """Indexes written before modification times were recorded cannot tell a rewrite: unknown."""
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    for rel in t.snapshot().live["files"]:
        path = t.index_root / rel
        pq.write_table(pq.read_table(path).drop_columns(["mtime"]), path)
    fresh = open_table(root)
    result = fresh.prune(col("k") == 1)
    assert len(result.files) == 4 and len(result.changed_files) == 4
    fresh.sync()
    assert fresh.prune(col("k") == 1).files == [str(root / "f0.parquet")]


def test_spark_read_keeps_a_rewritten_file(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from adapters.spark import read

    root = _table(tmp_path / "t")
    open_table(root).build()
    _write(root / "f3.parquet", [999, 998, 997, 996, 995])
    _bump_mtime(root / "f3.parquet")
    assert read(spark, str(root), where="k = 999").count() == 1


# ------------------------------------------------------------- 2. index files are not data files


def test_building_the_index_changes_no_glob_over_the_table(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    (root / "part=a").mkdir()
    before = {g: _duckdb_count(root, "true", g) for g in ("*.parquet", "**/*.parquet")}
    where_before = _duckdb_count(root, "k > 3", "**/*.parquet")
    t = open_table(root)
    t.build(bloom_columns=["k"])
    t.compact()
    assert {g: _duckdb_count(root, "true", g) for g in before} == before
    assert _duckdb_count(root, "k > 3", "**/*.parquet") == where_before
    index_files = [p for p in t.index_root.rglob("*") if p.is_file() and "timeline" not in p.parts]
    assert index_files and all(p.suffix == ".idx" for p in index_files)
    assert all(pq.ParquetFile(p).metadata.num_rows >= 0 for p in index_files)  # still parquet inside


def test_spark_recursive_read_is_the_same_before_and_after_build(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = _table(tmp_path / "t")

    def count() -> int:
        return spark.read.option("recursiveFileLookup", "true").parquet(str(root)).count()

    before = count()
    open_table(root).build(bloom_columns=["k"])
    assert count() == before == 20


def test_an_index_written_with_parquet_names_still_opens_and_compacts_to_new_names(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build(bloom_columns=["k"])
    expected = t.prune(col("k") == 12).files
    # Rewrite the index as the previous release named it: *.parquet files, listed so in the timeline.
    for path in list(t.index_root.rglob("*.idx")):
        path.rename(path.with_suffix(".parquet"))
    for entry in (t.index_root / "timeline").glob("*.json"):
        entry.write_text(entry.read_text().replace(".idx", ".parquet"))
    old = open_table(root)
    assert old.prune(col("k") == 12).files == expected
    old.compact()
    old.clean(retention_seconds=0)
    assert not list(old.index_root.rglob("*.parquet"))
    assert open_table(root).prune(col("k") == 12).files == expected


# ---------------------------------------------------------------- 3. the registered view is live


def test_the_registered_view_reads_files_added_and_deleted_since(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    open_table(root).build()
    con = duckdb.connect()
    register(con, "o", root)
    assert con.sql("SELECT count(*) FROM o").fetchall()[0] == (20,)
    _write(root / "f9.parquet", [90, 91])
    assert con.sql("SELECT count(*) FROM o").fetchall()[0] == (22,)
    (root / "f0.parquet").unlink()
    assert con.sql("SELECT count(*) FROM o").fetchall()[0] == (17,)
    # sql() prunes the same live table: the new file is unknown to the index and read.
    assert sql(con, "SELECT count(*) FROM o WHERE k = 91").fetchall()[0] == (1,)


def test_the_registered_view_of_a_hive_table_is_live_and_typed(tmp_path: Path) -> None:
    root = tmp_path / "h"
    for part in ("a", "b"):
        _write(root / f"p={part}" / "f.parquet", [1, 2, 3])
    _write(root / "_temporary" / "0" / "x.parquet", [7])
    open_table(root).build()
    con = duckdb.connect()
    register(con, "h", root)
    assert con.sql("SELECT p, count(*) FROM h GROUP BY p ORDER BY p").fetchall() == [("a", 3), ("b", 3)]
    _write(root / "p=c" / "f.parquet", [4])
    _write(root / "p=c" / "_x.parquet", [5])
    assert con.sql("SELECT p, count(*) FROM h GROUP BY p ORDER BY p").fetchall() == [
        ("a", 3),
        ("b", 3),
        ("c", 1),
    ]


def test_the_registered_view_of_a_hudi_table_follows_its_timeline(
    copy_table: Callable[[str], Path],
) -> None:
    """An insert-overwrite commit replaces every file group: the view must switch to the new ones
    when the commit completes, without registering again."""
    root = copy_table("v6_simplekeygen_nonhivestyle_overwritetable")
    hoodie = root / ".hoodie"
    completed = sorted(hoodie.glob("*.replacecommit"))
    assert completed, "the table's last commit is an insert overwrite"
    parked = root.parent / completed[-1].name
    shutil.move(completed[-1], parked)  # as if the overwrite had not completed yet
    t = open_table(root)
    t.build()
    before = {f.path for f in t.reader.list_files()}
    con = duckdb.connect()
    register(con, "h", t)
    expected_before = duckdb.sql(
        f"SELECT count(*) FROM read_parquet({[str(root / p) for p in sorted(before)]})"
    ).fetchall()[0]
    assert con.sql("SELECT count(*) FROM h").fetchall()[0] == expected_before
    shutil.move(parked, completed[-1])  # the overwrite completes
    after = sorted(f.path for f in open_table(root).reader.list_files())
    assert set(after) != before
    expected_after = duckdb.sql(
        f"SELECT count(*) FROM read_parquet({[str(root / p) for p in after]})"
    ).fetchall()[0]
    assert con.sql("SELECT count(*) FROM h").fetchall()[0] == expected_after


# ------------------------------------------------------------------------------ 4. hidden files


def test_hidden_files_are_not_data_anywhere(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from adapters.spark import read

    root = _table(tmp_path / "t", files=2)
    _write(root / "_x.parquet", [500])
    _write(root / ".y.parquet", [500])
    _write(root / "_staging" / "z.parquet", [500])
    t = open_table(root)
    t.build()
    assert all(os.path.basename(f)[0] not in "._" for f in t.prune(col("k") == 500).files)
    assert t.prune(col("k") == 500).total == 2
    con = duckdb.connect()
    register(con, "t", root)
    assert con.sql("SELECT count(*) FROM t WHERE k = 500").fetchall()[0] == (0,)
    assert sql(con, "SELECT count(*) FROM t WHERE k = 500").fetchall()[0] == (0,)
    assert read(spark, str(root), where="k = 500").count() == 0
    assert spark.read.parquet(str(root)).filter("k = 500").count() == 0  # Spark's own rule agrees


# ------------------------------------------------------- 5. a corrupt index has a way out


def _corrupt_newest_entry(root: Path) -> None:
    entries = sorted((root / ".hoodie" / ".index" / "timeline").glob("*.json"))
    entries[-1].write_text("{not json")


def test_a_corrupt_timeline_is_repaired_by_build(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    t.update(added=[], removed=["f3.parquet"])
    _corrupt_newest_entry(root)
    with pytest.raises(IndexCorruptError, match="hudi-index build --rebuild"):
        open_table(root).prune(col("k") == 1)
    open_table(root).build()  # a build never reads the index it replaces
    assert open_table(root).prune(col("k") == 1).files == [str(root / "f0.parquet")]


def test_rebuild_moves_a_broken_index_aside(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    shutil.rmtree(t.index_root / "files")  # the index files are gone: nothing in it can be used
    with pytest.raises(IndexCorruptError):
        open_table(root).prune(col("k") == 1)
    open_table(root).build(rebuild=True)
    aside = [p.name for p in (root / ".hoodie").iterdir() if p.name.startswith(".index.broken-")]
    assert len(aside) == 1
    assert open_table(root).prune(col("k") == 1).files == [str(root / "f0.parquet")]


def test_plan_says_when_an_unreadable_index_made_it_read_every_file(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    con = duckdb.connect()
    register(con, "t", root)
    for rel in t.snapshot().live["column_stats"]:
        (t.index_root / rel).write_bytes(b"PAR1 not really")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planned = plan(con, "SELECT count(*) FROM t WHERE k = 1")
    assert any(issubclass(w.category, IndexUnusedWarning) for w in caught)
    [table] = planned.tables
    assert table.used == () and table.kept == table.total == 4
    assert "k = 1  (the index is unreadable)" in table.not_used
    assert "the index is unreadable, every file is read" in str(planned)
    assert planned.relation().fetchall()[0] == (1,)


# ---------------------------------------------------------------------------- 7. empty tables


def test_an_empty_table_is_a_valid_table(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    t = open_table(root)
    with pytest.raises(IndexNotBuiltError, match="run build first"):
        t.prune(col("k") == 1)
    t.build()
    result = t.prune(col("k") == 1)
    assert result.files == [] and result.total == 0
    assert "the table has no data files" in result.explain()
    _write(root / "f.parquet", [1])
    result = open_table(root).prune(col("k") == 1)
    assert result.files == [str(root / "f.parquet")] and "run sync" in result.explain()


# ------------------------------------------------- 9. prune takes an adapter's translation


def test_prune_accepts_a_translation_and_explains_what_was_not_used(tmp_path: Path) -> None:
    import pyarrow.compute as pc

    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    translation = from_pyarrow((pc.field("k") == 12) & (pc.utf8_length(pc.field("s")) > 1))
    assert isinstance(translation, Translation)
    result = t.prune(translation)
    assert result.files == [str(root / "f1.parquet")]
    assert translation.not_used and all(part in result.explain() for part in translation.not_used)


# ------------------------------------------------------- 10. folders that are not one table


def test_a_folder_inside_a_hudi_table_is_refused(hudi_tables: dict[str, Path]) -> None:
    root = hudi_tables["mor_avro_v9_txns_simple_nometa"]
    partitions = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert partitions
    with pytest.raises(TableFormatError, match="inside the Hudi table"):
        open_table(partitions[0])


def test_a_folder_holding_a_hudi_table_is_refused(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    shutil.copytree(hudi_tables["v6_nonpartitioned"], tmp_path / "lake" / "orders")
    with pytest.raises(TableFormatError, match="holds a Hudi table at orders"):
        open_table(tmp_path / "lake").build()


def test_the_timeline_entry_names_index_files_relative_to_the_index_root(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    t.build()
    entry = json.loads(sorted((t.index_root / "timeline").glob("*.json"))[-1].read_text())
    for files in entry["added"].values():
        assert all((t.index_root / rel).is_file() and rel.endswith(".idx") for rel in files)


def test_a_query_over_a_corrupt_timeline_reads_every_file_and_says_so(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    open_table(root).build()
    _corrupt_newest_entry(root)
    con = duckdb.connect()
    register(con, "t", root)  # the view needs no index
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planned = plan(con, "SELECT count(*) FROM t WHERE k = 12")
    assert any(issubclass(w.category, IndexUnusedWarning) for w in caught)
    [table] = planned.tables
    assert table.used == () and table.not_used == ("k = 12  (the index is unreadable)",)
    assert planned.relation().fetchall() == [(1,)]
