"""``index_store.datagen.tpch``: TPC-H generation and the file layouts the demo and the benchmarks rely on."""

from __future__ import annotations

import itertools
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_store.datagen.tpch import generate, write_files

SCALE = 0.01
FILES = 20
SUMS = (
    "count(*), sum(l_orderkey), sum(l_extendedprice), min(l_shipdate), max(l_shipdate), "
    "count(DISTINCT l_comment), count(DISTINCT (l_orderkey, l_linenumber))"
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return generate(SCALE, tmp_path_factory.mktemp("tpch"))


def _summary(glob: str, hive: bool = False) -> tuple[object, ...]:
    con = duckdb.connect()
    row = con.execute(f"SELECT {SUMS} FROM read_parquet('{glob}', hive_partitioning = {hive})").fetchone()
    assert row is not None
    return tuple(row)


def test_generate_is_cached(source: dict[str, Path]) -> None:
    assert set(source) == {"lineitem", "orders"}
    stamps = {name: p.stat().st_mtime_ns for name, p in source.items()}
    again = generate(SCALE, source["lineitem"].parent.parent)
    assert again == source
    assert {name: p.stat().st_mtime_ns for name, p in again.items()} == stamps
    assert pq.ParquetFile(source["orders"]).metadata.num_rows == 15_000


@pytest.mark.parametrize(
    ("order_by", "hive_by"), [("l_shipdate", None), (None, None), ("l_shipdate", "l_shipmode")]
)
def test_rows_preserved_and_plain_strings(
    source: dict[str, Path], tmp_path: Path, order_by: str | None, hive_by: str | None
) -> None:
    paths = write_files(source["lineitem"], tmp_path, FILES, order_by=order_by, hive_by=hive_by)
    assert paths == sorted(paths)
    assert abs(len(paths) - FILES) <= 7  # hive: one rounding per partition
    assert _summary(f"{tmp_path}/**/*.parquet", hive=hive_by is not None) == _summary(str(source["lineitem"]))
    for path in paths:
        schema = pq.read_schema(path)
        assert not [f.name for f in schema if f.type in (pa.string_view(), pa.binary_view())]
        assert schema.field("l_quantity").type == pa.decimal128(15, 2)
        assert schema.field("l_receiptdate").type == pa.date32()


def test_clustered_files_are_ordered(source: dict[str, Path], tmp_path: Path) -> None:
    paths = write_files(source["lineitem"], tmp_path, FILES)
    assert len(paths) == FILES
    assert [p.name for p in paths] == [f"part-{i:05d}.parquet" for i in range(FILES)]
    ranges = []
    for path in paths:
        dates = pq.read_table(path, columns=["l_shipdate"])["l_shipdate"]
        assert dates.to_pylist() == sorted(dates.to_pylist())
        ranges.append((min(dates.to_pylist()), max(dates.to_pylist())))
    for (_, hi), (lo, _) in itertools.pairwise(ranges):
        assert hi <= lo
    sizes = [pq.ParquetFile(p).metadata.num_rows for p in paths]
    assert max(sizes) - min(sizes) <= 1


def test_random_layout_differs_from_clustered(source: dict[str, Path], tmp_path: Path) -> None:
    clustered = write_files(source["lineitem"], tmp_path / "c", FILES)
    shuffled = write_files(source["lineitem"], tmp_path / "r", FILES, order_by=None, seed=1)
    again = write_files(source["lineitem"], tmp_path / "r2", FILES, order_by=None, seed=1)
    other = write_files(source["lineitem"], tmp_path / "r3", FILES, order_by=None, seed=2)

    def span(path: Path) -> int:
        dates = pq.read_table(path, columns=["l_shipdate"])["l_shipdate"].cast(pa.int32()).to_pylist()
        return max(dates) - min(dates)

    # Clustered: each file covers ~1/20 of the ~7 years; shuffled: nearly all of them.
    assert max(span(p) for p in clustered) < 400
    assert min(span(p) for p in shuffled) > 2000
    assert pq.read_table(shuffled[0]).equals(pq.read_table(again[0]))  # the seed decides
    assert not pq.read_table(shuffled[0]).equals(pq.read_table(other[0]))


def test_hive_layout(source: dict[str, Path], tmp_path: Path) -> None:
    paths = write_files(source["lineitem"], tmp_path, FILES, hive_by="l_shipmode")
    folders = {p.parent.name for p in paths}
    assert folders == {
        f"l_shipmode={m}" for m in ["AIR", "FOB", "MAIL", "RAIL", "REG%20AIR", "SHIP", "TRUCK"]
    }
    for path in paths:
        assert path.name.startswith("part-") and path.parent.parent == tmp_path
        assert "l_shipmode" not in pq.read_schema(path).names
        dates = pq.read_table(path, columns=["l_shipdate"])["l_shipdate"].to_pylist()
        assert dates == sorted(dates)
    # DuckDB reads the value back from the folder name, URL-decoded, with the right counts.
    glob = f"{tmp_path}/**/*.parquet"
    by_mode = duckdb.sql(
        f"SELECT l_shipmode, count(*) FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY ALL"
    ).fetchall()
    expected = duckdb.sql(
        f"SELECT l_shipmode, count(*) FROM read_parquet('{source['lineitem']}') GROUP BY ALL"
    ).fetchall()
    assert sorted(by_mode) == sorted(expected)
    # Files per partition follow its size: every partition gets about a seventh of them.
    per_folder = {f: sum(p.parent.name == f for p in paths) for f in folders}
    assert all(2 <= n <= 4 for n in per_folder.values()), per_folder


def test_rejects_no_files(source: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="n_files"):
        write_files(source["lineitem"], tmp_path, 0)
