"""An index written by an earlier release opens and prunes as a fresh build does.

``tests/data/index_format_1`` holds a table and the index the release of issue 10 wrote for it (a
build, then an update that added one file and removed another);
``tests/data/generate_index_format_1.py`` says how.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from hudi_expr import Expression, col
from index_store import open_table

FIXTURE = Path(__file__).parents[1] / "data" / "index_format_1" / "table"

PREDICATES: list[Expression] = [
    col("id") == 1005,
    col("id") == 5001,
    col("id") < 50,
    (col("id") >= 200) & (col("id") < 210),
    col("name") == "n01101",
    col("name").is_null(),
    col("name").starts_with("la"),
    col("x") > 2.5,
    col("x").is_nan(),
    col("d") >= dt.date(2024, 10, 1),
    col("price") > 11,
    col("p") == "a",
    ~(col("id") > 100) | (col("name") == "late"),
]


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Path, Path]:
    """The checked-in table with its old index, and a copy of the data indexed afresh."""
    old = Path(shutil.copytree(FIXTURE, tmp_path / "old"))
    fresh = Path(shutil.copytree(FIXTURE, tmp_path / "fresh", ignore=shutil.ignore_patterns(".hoodie")))
    open_table(fresh).build(bloom_columns=["id", "name"], progress=False)
    return old, fresh


@pytest.mark.parametrize("expr", PREDICATES, ids=str)
def test_an_old_index_prunes_as_a_fresh_one(tables: tuple[Path, Path], expr: Expression) -> None:
    old, fresh = tables

    def kept(root: Path) -> set[str]:
        return {
            Path(f).relative_to(root).as_posix()
            for f in open_table(root).prune(expr, verify_files=False).files
        }

    assert kept(old) == kept(fresh)
    matching = duckdb.sql(
        f"SELECT DISTINCT filename FROM read_parquet('{old}/**/*.parquet', hive_partitioning = true, "
        f"can_have_nan = true, filename = true) WHERE {expr}"
    ).fetchall()
    assert {Path(f).relative_to(old).as_posix() for (f,) in matching} <= kept(old)


def test_an_old_index_in_a_fresh_checkout_keeps_every_file_until_sync(tables: tuple[Path, Path]) -> None:
    """A clone or copy gives the data files new modification times: nothing can be trusted."""
    old, _ = tables
    for path in old.rglob("*.parquet"):  # as a checkout writes them: now
        os.utime(path)
    t = open_table(old)
    assert t.snapshot().version == 2
    result = t.prune(col("id") == 1005)
    assert result.kept == result.total == 6 and len(result.changed_files) == 6
    t.sync()
    assert [Path(f).name for f in open_table(old).prune(col("id") == 1005).files] == ["f0.parquet"]
