"""The cost-based choice of the secondary index (``index_store.secondary.cost``): bounds on the
rows a predicate selects, the path chosen per purpose, and the readers of selected rows."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_expr import Expression, col
from index_store import IndexedTable, UseRules, open_table
from index_store.secondary.cost import Costs, Work, choose, costs_for, stored_costs, use_costs
from index_store.secondary.read import PyarrowRows, register_row_reader, row_reader

FILES, ROWS = 8, 6_000


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> IndexedTable:
    """Files of an unclustered integer key ``k`` (0..19,999, ~2 rows per key and file) in several
    row groups, with a value index on ``k``."""
    root = tmp_path_factory.mktemp("cost") / "t"
    root.mkdir()
    rng = np.random.default_rng(7)
    for i in range(FILES):
        k = rng.integers(0, 20_000, ROWS)
        v = rng.integers(0, 1_000, ROWS)
        data = pa.table({"k": k, "v": v, "s": pa.array([f"r{x}" for x in v])})
        pq.write_table(data, root / f"f{i}.parquet", row_group_size=1_000)
    t = open_table(root)
    t.build(progress=False)
    t.create_index("k")
    t.build_index(progress=False)
    return t


def _truth(t: IndexedTable, expr: Expression) -> int:
    data = pa.concat_tables(pq.read_table(p) for p in sorted(Path(t.root).glob("*.parquet")))
    return data.filter(expr.bind(t.snapshot().schema).to_pyarrow()).num_rows


@pytest.fixture
def constants() -> Iterator[None]:
    """Restore the process's constants after a test that sets its own."""
    before = {r: costs_for(r) for r in ("pyarrow", "duckdb")}
    yield
    for c in before.values():
        use_costs(c)


def test_range_estimate_comes_from_the_files_bounds(table: IndexedTable) -> None:
    # The demo's bug: BETWEEN was guessed as a third of the rows (per leaf, then the smaller).
    expr = (col("k") >= 100) & (col("k") <= 300)
    true = _truth(table, expr)
    choice = table.select(expr, UseRules(by_cost=False)).use.choice
    assert choice is not None
    assert choice.selected_upper >= true  # an upper bound, as the choice needs
    assert 0.5 * true <= choice.selected_expected <= 2 * true  # uniform keys: close to the truth
    assert choice.selected_expected < FILES * ROWS / 10


@pytest.mark.parametrize(
    "expr",
    [
        col("k") == 5,
        col("k").isin([1, 2, 3, 19_999]),
        col("k") < 50,
        (col("k") > 10_000) & (col("k") <= 10_040),
        (col("k") == 7) | (col("k") >= 19_990),
        col("k").is_not_null() & (col("v") == 3),
        col("k") != 3,
    ],
)
def test_upper_bound_is_never_below_the_true_count(table: IndexedTable, expr: Expression) -> None:
    choice = table.select(expr, UseRules(by_cost=False)).use.choice
    assert choice is not None and choice.selected_upper >= _truth(table, expr)


def test_choice_flips_to_reading_when_the_bound_is_large(table: IndexedTable) -> None:
    point = table.select(col("k") == 5, UseRules(columns=3, reader="pyarrow"))
    broad = table.select(col("k") >= 0, UseRules(columns=3, reader="pyarrow"))
    assert point.use.choice is not None and broad.use.choice is not None
    assert point.use.choice.selected_upper < broad.use.choice.selected_upper
    assert not broad.use.used  # every row may match: lookups only add to the read
    assert broad.use.choice.path == "scan"  # statistics keep every file: pruning is a plain scan
    assert "is cheaper" in broad.explain() and "estimated cost" in broad.explain()


def test_count_follows_its_estimate(table: IndexedTable, constants: None) -> None:
    expr = col("k").isin([11, 12])
    true = _truth(table, expr)
    # Lookups that cost nothing: the count comes from the index alone.
    use_costs(dataclasses.replace(costs_for(row_reader().name), lookup_file=0.0, lookup_row=0.0))
    rules = table.secondary.rules_for("count", expr)
    chosen = table.select(expr, rules).use
    assert chosen.used and chosen.choice is not None and chosen.choice.index_ms <= chosen.choice.pruning_ms
    assert table.count(expr) == true
    # Lookups dearer than reading the column: count reads, and never takes the slower path.
    use_costs(dataclasses.replace(costs_for(row_reader().name), lookup_file=1e6))
    rules = table.secondary.rules_for("count", expr)
    refused = table.select(expr, rules).use
    assert not refused.used and refused.choice is not None
    assert refused.choice.index_ms > refused.choice.pruning_ms
    assert table.count(expr) == true
    assert table.exists(expr) == (true > 0)


def test_choose_prices_counts_without_reads() -> None:
    c = stored_costs("pyarrow")
    n = np.full(10, 100_000.0)
    work = Work("count", n, np.zeros(10, dtype=bool), 16, 1, 0, 10, int(n.sum()))
    upper = np.full(10, 5.0)
    alone = choose(c, work, upper, upper, lookups=10, lookup_rows=float(n.sum()), exact=True)
    assert alone.path == "index" and alone.decoded_rows == 0
    # Not exact (a leaf the index does not answer): the count reads the selected rows too.
    read = choose(c, work, upper, upper, lookups=10, lookup_rows=float(n.sum()), exact=False)
    assert read.index_ms > alone.index_ms and read.decoded_rows > 0
    # Rows: reading around each selected row costs a row group per row.
    rows = choose(c, dataclasses.replace(work, purpose="rows"), upper, upper, 10, float(n.sum()), True)
    assert rows.decoded_rows == float(np.minimum(n, upper * c.decode_unit).sum())


def test_exists_without_the_index_is_priced_until_the_first_match() -> None:
    # DuckDB alone stops at the first match: with many matches in the first file, reading
    # without the index costs a fraction of the files, and an inexact EXISTS is not sent to the
    # index on the whole read's price.
    c = stored_costs("duckdb")
    n = np.full(20, 300_000.0)
    work = Work("exists", n, np.zeros(20, dtype=bool), 16, 1, 0, 20, int(n.sum()))
    many = np.full(20, 500.0)
    early = choose(c, work, many, many, lookups=20, lookup_rows=float(n.sum()), exact=False)
    whole = choose(c, dataclasses.replace(work, purpose="count"), many, many, 20, float(n.sum()), False)
    assert early.pruning_ms < whole.pruning_ms / 10
    assert early.path != "index"
    # No match expected anywhere: the whole read is what it costs.
    none = np.zeros(20)
    empty = choose(c, work, none, none, lookups=20, lookup_rows=float(n.sum()), exact=False)
    assert empty.pruning_ms == pytest.approx(
        choose(
            c, dataclasses.replace(work, purpose="count"), none, none, 20, float(n.sum()), False
        ).pruning_ms
    )


def test_more_than_ten_predicates_is_still_a_rule(table: IndexedTable) -> None:
    many = (col("k") == 0) & (col("v") == 0)
    for i in range(1, 11):  # eleven leaves on k (the ANDs keep them from merging into one IN)
        many = many | ((col("k") == i) & (col("v") == i))
    use = table.select(
        many, UseRules(costs=dataclasses.replace(stored_costs("pyarrow"), lookup_file=0.0))
    ).use
    assert not use.used and "more than 10" in use.reason


def test_readers_agree_and_say_what_they_decode(table: IndexedTable) -> None:
    duck = pytest.importorskip("adapters.duckdb.rowreader")
    expr = col("k").isin([5, 6, 7]) | (col("v") == 999)  # v is not indexed: an inexact selection
    before = row_reader()
    try:
        for e in (col("k").isin([5, 6, 7]), expr):
            force = UseRules(by_cost=False)
            answers = []
            for reader in (PyarrowRows(), duck.DuckDBRows()):
                register_row_reader(reader)
                answers.append(table.read(e, rules=force).sort_by([("k", "ascending"), ("v", "ascending")]))
                selection = table.select(e, force)
                assert f"({reader.name} reader)" in selection.explain()
                assert "rows a read decodes" in selection.explain()
            assert answers[0].equals(answers[1])
            assert answers[0].num_rows == _truth(table, e)
    finally:
        register_row_reader(before)
    selection = table.select(col("k") == 5, UseRules(by_cost=False))
    from index_store.secondary.api import read_jobs

    jobs = read_jobs(selection)
    # pyarrow decodes whole 1,000-row groups; DuckDB its vectors, never more than whole files.
    assert 0 < PyarrowRows().decoded(jobs) <= sum(j.row_count for j in jobs)
    assert duck.DuckDBRows().decoded(jobs) <= sum(j.row_count for j in jobs)


def test_calibrate_measures_positive_constants(tmp_path: Path) -> None:
    from index_store.secondary.cost import calibrate

    measured = calibrate("pyarrow", tmp_path)
    assert measured.origin == "calibrated" and measured.reader == "pyarrow"
    assert all(getattr(measured, f) > 0 for f in ("lookup_file", "scan_file", "value", "filter_value"))
    assert isinstance(measured, Costs)


def test_rows_read_whole_are_filtered_whole_by_a_pushdown_reader() -> None:
    # The large layout's ``l_suppkey = X AND l_shipmode = 'AIR'``: the selected rows lie in every
    # block, so DuckDB reads each file whole and its WHERE tests every row, as pruning alone does;
    # the index then only adds its lookups and must not be chosen (it was, 401 vs 407 ms).
    c = stored_costs("duckdb")
    n = np.full(4, 150_000.0)
    work = Work("rows", n, np.zeros(4, dtype=bool), 16, 2, 0, 4, int(n.sum()))
    everywhere = np.full(4, 150.0)  # 150 x 4,096 > 150,000: every row decoded
    choice = choose(c, work, everywhere, everywhere, lookups=4, lookup_rows=float(n.sum()), exact=True)
    assert choice.decoded_rows == float(n.sum())
    assert choice.path != "index" and choice.index_ms > choice.pruning_ms
    # A few rows of big files: read by row number, the WHERE tests only the rows around them
    # (not every row, as pruning's read does); the index wins.
    big = np.full(4, 3_000_000.0)
    work = dataclasses.replace(work, row_counts=big, total_rows=int(big.sum()))
    few = np.full(4, 2.0)
    assert choose(c, work, few, few, lookups=4, lookup_rows=float(big.sum()), exact=True).path == "index"
