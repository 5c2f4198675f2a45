"""Secondary indexes (RFC-51) on ``IndexedTable``: layout on disk, definitions and building, when the
index is used, reading selected rows, and a real Hudi table (DuckDB's ``file_row_number`` as oracle).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from adapters.duckdb import register_macros
from hudi_expr import Expression, col
from index_store import IndexDefinitionError, IndexedTable, UseRules, open_table
from index_store.secondary.cost import stored_costs
from index_store.secondary.format import IndexFile

ROWS = 60  # per file


def _file_table(k: int, n: int = ROWS) -> pa.Table:
    """Rows of file ``k``: ``a`` int64 (7 values, nulls), ``s`` 3 strings, ``d`` dates, ``t`` text,
    ``f`` float64, ``u`` an unindexed int64."""
    words = ["Hello World", "hello, there", "World-wide web", None, "naïve café"]
    return pa.table(
        {
            "a": pa.array([None if i % 11 == 0 else (i + k) % 7 - 3 for i in range(n)], pa.int64()),
            "s": pa.array([["x", "y", "zz"][(i + k) % 3] for i in range(n)], pa.string()),
            "d": pa.array(
                [dt.date(2024, 1, 1) + dt.timedelta(days=(i * 3 + k) % 10) for i in range(n)], pa.date32()
            ),
            "t": pa.array([words[(i + k) % len(words)] for i in range(n)], pa.string()),
            "f": pa.array([i / 4 for i in range(n)], pa.float64()),
            "u": pa.array([i % 5 for i in range(n)], pa.int64()),
        }
    )


def _make(root: Path, files: int = 3, **write: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for k in range(files):
        pq.write_table(_file_table(k), root / f"f{k}.parquet", **write)
    return root


@pytest.fixture
def table(tmp_path: Path) -> IndexedTable:
    t = open_table(_make(tmp_path / "t"))
    t.build(progress=False)
    return t


def _index_files(index_root: Path, kind: str) -> list[str]:
    """Every index file of ``kind`` on disk (relative to the index root)."""
    top = index_root / kind
    return sorted(p.relative_to(index_root).as_posix() for p in top.rglob("*.idx")) if top.is_dir() else []


def _live(t: IndexedTable, kind: str) -> list[str]:
    return sorted(t.snapshot().live.get(kind, ()))


def _truth(t: IndexedTable, expr: Expression) -> dict[str, list[int]]:
    """DuckDB's matching row positions per file, over every parquet file of the table on disk."""
    files = sorted(os.path.join(t.root, f.path) for f in t.reader.list_files())
    listing = ", ".join(f"'{f}'" for f in files)
    sql = (
        f"SELECT filename, file_row_number FROM read_parquet([{listing}], filename = true, "
        f"file_row_number = true, hive_partitioning = false, union_by_name = true) WHERE {expr} ORDER BY ALL"
    )
    out: dict[str, list[int]] = {}
    for f, r in _duckdb().execute(sql).fetchall():
        out.setdefault(f, []).append(r)
    return out


def _duckdb() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    register_macros(con)  # contains_term
    return con


def _ids(t: IndexedTable, expr: Expression) -> dict[str, list[int]]:
    return {p: ids.to_pylist() for p, ids in t.row_ids(expr).items()}


def _all_rows(t: IndexedTable) -> dict[str, list[int]]:
    return {os.path.join(t.root, f.path): list(range(ROWS)) for f in t.reader.list_files()}


# --------------------------------------------------------------------------------------- layout

LAYOUT = re.compile(r"^(value|term)/(\d{20})/([^/]+)/[0-9a-f]{32}\.idx$")


def test_one_index_file_per_type_and_base_file_under_its_instant(table: IndexedTable) -> None:
    table.create_index(["a", "s"])
    table.create_index("d", name="dates")
    table.create_index("t", index_type="term")
    version = table.build_index(progress=False)
    assert version is not None
    for kind, columns in (("value", {"a", "s", "d"}), ("term", {"t"})):
        on_disk = _index_files(table.index_root, kind)
        assert on_disk == _live(table, kind)
        assert len(on_disk) == 3  # one per base file, every column of the type in it
        stems = set()
        for rel in on_disk:
            m = LAYOUT.match(rel)
            assert m, rel
            assert (m[1], int(m[2])) == (kind, version)
            stems.add(m[3])
            opened = IndexFile(table.index_root / rel)
            assert opened.kind == kind
            assert set(opened.layout) == columns
            assert opened.info.path == f"{m[3]}.parquet"  # file id: the base file name's stem
            assert opened.info.row_count == ROWS
        assert stems == {"f0", "f1", "f2"}
    staging = table.index_root / ".staging"
    assert not staging.exists() or not any(staging.iterdir())


def test_custom_index_root_holds_the_index_files(tmp_path: Path) -> None:
    root = _make(tmp_path / "t", files=2)
    t = open_table(root, index_path=tmp_path / "elsewhere")
    t.build(progress=False)
    t.create_index("a")
    version = t.build_index(progress=False)
    files = _index_files(tmp_path / "elsewhere", "value")
    assert [LAYOUT.match(f)[2] for f in files] == [f"{version:020d}"] * 2  # type: ignore[index]
    assert not (root / ".hoodie").exists()
    assert _ids(t, col("a") == 1) == _truth(t, col("a") == 1)


def test_a_new_column_of_a_type_rebuilds_that_types_files_only(table: IndexedTable) -> None:
    table.create_index("a")
    table.create_index("t", index_type="term")
    table.build_index(progress=False)
    term_before, value_before = _live(table, "term"), _live(table, "value")
    table.create_index("u", name="more")
    assert {s.name: s.files_indexed for s in table.indexes()} == {
        "idx_value_a": 3,
        "idx_term_t": 3,
        "more": 0,
    }
    table.build_index(progress=False)
    assert _live(table, "term") == term_before
    value_after = _live(table, "value")
    assert len(value_after) == 3 and not set(value_after) & set(value_before)
    for rel in value_after:
        assert set(IndexFile(table.index_root / rel).layout) == {"a", "u"}
    assert all(s.complete for s in table.indexes())
    expr = (col("u") == 2) & (col("a") == 1)
    assert _ids(table, expr) == _truth(table, expr)


# ------------------------------------------------------------------------ definitions, building


def test_create_build_and_progress_counts(table: IndexedTable) -> None:
    created = table.create_index(["a", "s"])
    table.create_index("t", index_type="term", name="words")
    status = {s.name: s for s in table.indexes()}
    assert status["idx_value_a_s"].created == created
    assert status["idx_value_a_s"].columns == ("a", "s")
    assert [(s.files_indexed, s.live_files, s.complete) for s in status.values()] == [(0, 3, False)] * 2
    assert table.build_index(progress=False) is not None
    assert [(s.files_indexed, s.live_files) for s in table.indexes()] == [(3, 3)] * 2
    assert table.build_index(progress=False) is None  # nothing to do

    pq.write_table(_file_table(3), Path(table.root) / "f3.parquet")
    table.update(added=["f3.parquet"], progress=False)
    assert [(s.files_indexed, s.live_files, s.complete) for s in table.indexes()] == [(3, 4, False)] * 2
    # Until built, the new file's rows are all candidates.
    expr = col("a") == 2
    ids = _ids(table, expr)
    assert ids[os.path.join(table.root, "f3.parquet")] == list(range(ROWS))

    value_before, term_before = _live(table, "value"), _live(table, "term")
    version = table.build_index("idx_value_a_s", progress=False)  # incremental, one index
    new_value = sorted(set(_live(table, "value")) - set(value_before))
    assert len(new_value) == 1 and new_value[0].startswith(f"value/{version:020d}/f3/")
    assert _live(table, "term") == term_before
    assert {s.name: s.files_indexed for s in table.indexes()} == {"idx_value_a_s": 4, "words": 3}
    assert _ids(table, expr) == _truth(table, expr)
    table.build_index(progress=False)
    assert all(s.complete for s in table.indexes())

    # "all" rebuilds every file of every index, under one new instant.
    everything = table.build_index(strategy="all", progress=False)
    assert everything is not None
    for kind in ("value", "term"):
        assert {LAYOUT.match(r)[2] for r in _live(table, kind)} == {f"{everything:020d}"}  # type: ignore[index]
        assert len(_live(table, kind)) == 4
    assert _ids(table, expr) == _truth(table, expr)
    assert table.build_index(progress=False) is None


def test_build_index_refusals(table: IndexedTable) -> None:
    with pytest.raises(IndexDefinitionError, match="no secondary index"):
        table.build_index(progress=False)
    table.create_index("a", name="ia")
    with pytest.raises(IndexDefinitionError, match="no secondary index named 'nope'"):
        table.build_index("nope", progress=False)
    with pytest.raises(ValueError, match="strategy"):
        table.build_index(strategy="some", progress=False)  # type: ignore[arg-type]
    with pytest.raises(IndexDefinitionError, match="exists already"):
        table.create_index("s", name="ia")
    with pytest.raises(IndexDefinitionError, match="no secondary index named 'nope'"):
        table.drop_index("nope")


def test_drop_index_then_compact_and_clean_delete_its_files(table: IndexedTable) -> None:
    table.create_index("a")
    table.create_index("t", index_type="term")
    version = table.build_index(progress=False)
    value_files = _live(table, "value")
    term_files = _live(table, "term")
    expr = col("a") == 1
    assert table.select(expr).use.used

    table.drop_index("idx_value_a")
    assert [s.name for s in table.indexes()] == ["idx_term_t"]
    assert _live(table, "value") == []
    assert _index_files(table.index_root, "value") == value_files  # kept for older readers
    selection = table.select(expr)
    assert not selection.use.used
    assert "no predicate on an indexed column" in selection.explain()
    ids = _ids(table, expr)
    assert ids == {p: rows for p, rows in _all_rows(table).items() if p in ids}
    assert set(ids) >= set(_truth(table, expr))

    table.compact()
    deleted = table.clean(retention_seconds=0)
    assert set(value_files) <= set(deleted)
    assert _index_files(table.index_root, "value") == []
    assert not (table.index_root / "value" / f"{version:020d}").exists()  # the instant folder too
    assert _index_files(table.index_root, "term") == term_files == _live(table, "term")
    word = col("t").contains_term("world")
    assert table.count(word) == len(table.read(word)) > 0
    assert table.select(word).use.used


def test_dropping_one_of_two_definitions_keeps_the_shared_files(table: IndexedTable) -> None:
    table.create_index("a", name="ia")
    table.create_index("s", name="is_")
    table.build_index(progress=False)
    files = _live(table, "value")
    table.drop_index("ia")
    assert _live(table, "value") == files  # they hold s too
    assert not table.select(col("a") == 1).use.used
    assert table.select(col("s") == "x").use.used
    table.compact()
    table.clean(retention_seconds=0)
    assert _index_files(table.index_root, "value") == files
    expr = (col("s") == "zz") & (col("a") == 1)
    got, want = _ids(table, expr), _truth(table, expr)
    assert all(set(want[p]) <= set(got[p]) for p in want)
    assert table.count(expr) == sum(len(v) for v in want.values())


# ------------------------------------------------------------------------------------- the rules


def test_rules_decide_when_the_index_pays_and_explain_why(table: IndexedTable) -> None:
    table.create_index(["a", "s", "d", "u"])
    table.build_index(progress=False)
    # Constants under which lookups cost nothing: the index is chosen whenever it reads less.
    free = dataclasses.replace(
        stored_costs("pyarrow"), lookup_file=0.0, lookup_row=0.0, read_file=1.0, scan_file=1.0, decode_unit=1
    )
    cheap = UseRules(costs=free)

    selective = col("a") == 2
    used = table.select(selective, cheap)
    assert used.use.used and used.exact
    assert used.explain().startswith("secondary index used: at most")
    assert "estimated cost: index" in used.explain()

    # Lookups that cost more than reading the candidates: pruning alone is chosen.
    dear = table.select(selective, UseRules(costs=dataclasses.replace(free, lookup_file=1e6)))
    assert not dear.use.used and not dear.exact
    assert "alone is cheaper" in dear.explain() or "plain scan is cheaper" in dear.explain()

    # Most rows may match and a read decodes whole files around them: the index saves nothing.
    whole_files = UseRules(costs=dataclasses.replace(free, decode_unit=1_000_000, lookup_file=1.0))
    broad = table.select(col("a").is_not_null(), whole_files)
    assert not broad.use.used
    assert "is cheaper" in broad.explain()

    # More than max_predicates indexed leaves: too many lookups.
    ten = (col("a") == -3) & (col("s") == "x")
    for k in range(-2, 2):  # no two of these leaves merge into one
        ten = ten | ((col("a") == k) & (col("u") == k + 2))
    at_limit = table.select(ten, UseRules(by_cost=False))
    assert at_limit.use.indexed_leaves == 10 and at_limit.use.used
    many = ten & (col("d") != dt.date(2024, 1, 2))
    crowded = table.select(many, cheap)
    assert crowded.use.indexed_leaves == 11
    assert not crowded.use.used
    assert "11 indexed predicates, more than 10" in crowded.explain()
    assert table.select(many, UseRules(max_predicates=11, by_cost=False)).use.used

    # Without rules (row_ids) the index is always used; and read() answers the same either way.
    assert table.select(col("a").is_not_null()).use.used
    for expr in (selective, col("a").is_not_null(), many):
        want = _read_all(table).filter(expr.bind(table.snapshot().schema).to_pyarrow())
        for rules in (cheap, UseRules(), None):
            assert _rows(table.read(expr, rules=rules)) == _rows(want)


def _read_all(t: IndexedTable) -> pa.Table:
    return pa.concat_tables(
        pq.read_table(os.path.join(t.root, f.path))
        for f in sorted(t.reader.list_files(), key=lambda f: f.path)
    )


def _rows(table: pa.Table) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r.values()) for r in table.to_pylist())


# --------------------------------------------------------------------------------------- reading


def test_read_with_columns_and_row_groups(tmp_path: Path) -> None:
    t = open_table(_make(tmp_path / "t", row_group_size=7))  # many row groups per file
    t.build(progress=False)
    t.create_index(["a", "s"])
    t.build_index(progress=False)
    expr = (col("a") == -3) & (col("s") != "y")
    force = UseRules(by_cost=False)
    out = t.read(expr, columns=["u", "s"], rules=force)
    assert out.column_names == ["u", "s"]  # the predicate's column a is not returned
    want = _read_all(t).filter(expr.bind(t.snapshot().schema).to_pyarrow()).select(["u", "s"])
    assert _rows(out) == _rows(want) and len(want) > 0
    assert t.read(col("a") == 99, columns=["a"]).num_rows == 0
    assert t.read(col("a") == 99, columns=["a"]).schema == pa.schema([pa.field("a", pa.int64())])
    with pytest.raises(IndexDefinitionError, match="no column 'nope'"):
        t.read(expr, columns=["nope"])


def test_read_on_a_hive_partitioned_table_returns_partition_columns(tmp_path: Path) -> None:
    root = tmp_path / "t"
    for k, region in enumerate(["eu", "us", "eu"]):
        folder = root / f"region={region}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(_file_table(k), folder / f"f{k}.parquet")
    t = open_table(root)
    t.build(progress=False)
    with pytest.raises(IndexDefinitionError, match=r"'region'.*partition column"):
        t.create_index("region")
    t.create_index(["a", "s"])
    t.build_index(progress=False)
    force = UseRules(by_cost=False)
    everything = pa.concat_tables(
        pq.read_table(root / f"region={r}" / f"f{k}.parquet").append_column("region", pa.array([r] * ROWS))
        for k, r in enumerate(["eu", "us", "eu"])
    )
    for expr in (
        col("a") == 1,
        (col("a") == 1) & (col("region") == "eu"),
        (col("s") == "x") | (col("region") == "us"),
    ):
        out = t.read(expr, rules=force)
        assert "region" in out.column_names
        want = everything.filter(expr.bind(everything.schema).to_pyarrow())
        assert _rows(out.select(want.column_names)) == _rows(want)
        assert t.count(expr) == len(want)
    ids = _ids(t, (col("a") == 1) & (col("region") == "us"))
    assert list(ids) == [str(root / "region=us" / "f1.parquet")]
    assert _ids(t, col("a") == 1) == _truth(t, col("a") == 1)


def test_count_and_exists_with_and_without_unindexed_leaves(table: IndexedTable) -> None:
    table.create_index(["a", "s"])
    table.create_index("t", index_type="term")
    table.build_index(progress=False)
    everything = _read_all(table)
    schema = table.snapshot().schema
    cases = [
        col("a") == 1,  # exact from the index
        (col("a") == 1) & (col("u") == 2),  # an unindexed leaf: read the candidates
        (col("a") == 1) | (col("u") == 2),
        col("t").contains_term("hello"),
        col("t").starts_with("World"),  # term index candidates, checked by reading
        col("t").contains("wide w"),
        (col("a") == 9) & (col("u") == 1),  # nothing
        col("s") == "nope",
        ~(col("s") == "x") & col("f").is_not_null(),
    ]
    for expr in cases:
        n = len(everything.filter(expr.bind(schema).to_pyarrow()))
        assert table.count(expr) == n, str(expr)
        assert table.exists(expr) == (n > 0), str(expr)
        assert sum(len(v) for v in _truth(table, expr).values()) == n
    exact = table.select(col("a") == 1)
    assert exact.exact and "rows selected by the index" in exact.explain()
    assert not table.select((col("a") == 1) & (col("u") == 2)).exact
    assert not table.select(col("t").starts_with("World")).exact
    assert table.select(col("t").contains_term("hello")).exact


def test_row_ids_leave_out_files_without_candidates(table: IndexedTable) -> None:
    table.create_index("s")
    table.build_index(progress=False)
    assert table.row_ids(col("s") == "nope") == {}
    ids = table.row_ids(col("s") == "x")
    assert all(v.type == pa.uint64() for v in ids.values())
    assert {p: v.to_pylist() for p, v in ids.items()} == _truth(table, col("s") == "x")


def test_value_index_on_every_supported_type(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    n = 40
    data = pa.table(
        {
            "i8": pa.array([i % 5 - 2 for i in range(n)], pa.int8()),
            "u32": pa.array([i % 4 for i in range(n)], pa.uint32()),
            "b": pa.array([None if i % 7 == 0 else i % 2 == 0 for i in range(n)], pa.bool_()),
            "dec": pa.array([Decimal(i % 6) / 4 for i in range(n)], pa.decimal128(10, 2)),
            "ts": pa.array([dt.datetime(2024, 1, 1, i % 3) for i in range(n)], pa.timestamp("us")),
            "bin": pa.array([bytes([i % 3]) * (i % 2 + 1) for i in range(n)], pa.binary()),
            "s": pa.array([["ab", "abc", "b", None][i % 4] for i in range(n)], pa.string()),
        }
    )
    pq.write_table(data.slice(0, 25), root / "f0.parquet")
    pq.write_table(data.slice(25), root / "f1.parquet")
    t = open_table(root)
    t.build(progress=False)
    t.create_index(data.column_names)
    t.build_index(progress=False)
    cases = [
        col("i8") == -2,
        col("i8").isin([0, 1]),
        col("u32") >= 2,
        col("b") == True,  # noqa: E712
        col("b").is_null(),
        ~(col("b") == False),  # noqa: E712
        col("dec") == Decimal("0.25"),
        col("dec") > Decimal("0.5"),
        col("ts") == dt.datetime(2024, 1, 1, 1),
        col("ts") < dt.datetime(2024, 1, 1, 2),
        col("bin") == b"\x01\x01",
        col("bin").isin([b"\x00", b"\x02\x02"]),
        col("s").starts_with("ab"),
        ~col("s").starts_with("ab"),
        col("s").is_not_null() & (col("s") != "b"),
        col("s").isin(["b", "abc"]) | (col("i8") < 0),
    ]
    for expr in cases:
        assert _ids(t, expr) == _truth(t, expr), str(expr)
        assert t.select(expr).exact, str(expr)


def test_a_file_written_before_the_column_existed_indexes_it_as_nulls(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    old = _file_table(0).select(["a", "s"])
    pq.write_table(old, root / "f0.parquet")
    pq.write_table(_file_table(1).select(["a", "s", "u"]), root / "f1.parquet")
    t = open_table(root)
    t.build(progress=False)
    t.create_index(["u", "a"])
    t.build_index(progress=False)
    f0, f1 = str(root / "f0.parquet"), str(root / "f1.parquet")
    assert _ids(t, col("u").is_null()) == {f0: list(range(ROWS))}
    assert _ids(t, col("u") == 1) == _truth(t, col("u") == 1)
    assert f0 not in _truth(t, col("u") == 1)
    assert _ids(t, (col("u") == 1) | (col("a") == 0)) == _truth(t, (col("u") == 1) | (col("a") == 0))
    assert t.count(col("u").is_null() & (col("a") == 0)) == sum(1 for v in old["a"].to_pylist() if v == 0)
    out = t.read(col("u").is_null(), columns=["u", "a"])
    assert out.num_rows == ROWS and out["u"].null_count == ROWS
    assert f1 in _ids(t, col("u").is_not_null())


def test_dense_row_sets_and_many_index_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from index_store.secondary import format as fmt

    monkeypatch.setattr(fmt, "ROW_GROUP_ENTRIES", 50)  # several row groups per indexed column
    root = tmp_path / "t"
    root.mkdir()
    n = 3000
    pq.write_table(
        pa.table(
            {
                "few": pa.array([i % 3 for i in range(n)], pa.int64()),  # dense: bitmaps
                "many": pa.array([(i * 7919) % 997 for i in range(n)], pa.int64()),  # sparse: lists
                "s": pa.array([f"k{(i * 31) % 401:04d}" if i % 13 else None for i in range(n)], pa.string()),
            }
        ),
        root / "big.parquet",
        row_group_size=512,
    )
    t = open_table(root)
    t.build(progress=False)
    t.create_index(["few", "many", "s"])
    t.build_index(progress=False)
    (rel,) = t.snapshot().live["value"]
    opened = IndexFile(t.index_root / rel)
    assert opened.layout["few"][1] - opened.layout["few"][0] == 1
    assert opened.layout["many"][1] - opened.layout["many"][0] == 20  # 997 keys, 50 per group
    bitmaps = pq.read_table(t.index_root / rel, columns=["bitmap"])["bitmap"]
    assert 0 < bitmaps.null_count < len(bitmaps)
    cases = [
        col("few") == 1,
        col("few") != 2,
        col("many") == 500,
        col("many").isin([3, 996, 2000]),
        (col("many") >= 990) | (col("many") < 2),
        (col("few") == 0) & (col("many") > 900),
        col("s").starts_with("k03"),
        col("s") == "k0400",
        col("s").is_null() & (col("few") == 2),
        ~(col("s") > "k0100") & (col("many") <= 10),
    ]
    for expr in cases:
        assert _ids(t, expr) == _truth(t, expr), str(expr)
        assert t.count(expr) == sum(len(v) for v in _truth(t, expr).values()), str(expr)
    force = UseRules(by_cost=False)
    expr = col("many") == 500
    want = pq.read_table(root / "big.parquet").filter(expr.bind(t.snapshot().schema).to_pyarrow())
    assert _rows(t.read(expr, rules=force)) == _rows(want)


# ------------------------------------------------------------------------------ a real Hudi table


def test_value_index_on_a_real_hudi_table(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v6_complexkeygen_hivestyle")
    t = open_table(root)
    t.build(progress=False)
    columns = ["id", "name", "isActive", "intField", "longField", "decimalField", "dateField", "binaryField"]
    columns += ["timestampField", "_hoodie_record_key"]
    t.create_index(columns)
    t.create_index("name", index_type="term")
    version = t.build_index(progress=False)
    listing = t.reader.list_files()
    groups = {f.file_group for f in listing}
    for kind in ("value", "term"):
        ids = set()
        for rel in _live(t, kind):
            m = LAYOUT.match(rel)
            assert m and int(m[2]) == version
            ids.add(m[3])
        assert ids == groups  # Hudi's file group ids
    files = sorted(str(root / f.path) for f in listing)
    source = ", ".join(f"'{f}'" for f in files)
    con = _duckdb()
    values = con.execute(
        "SELECT DISTINCT name, intField, decimalField, dateField, epoch_us(timestampField) "
        f"FROM read_parquet([{source}]) ORDER BY ALL"
    ).fetchall()
    assert len(values) >= 3
    predicates: list[Expression] = [col("isActive") == True, col("binaryField").is_not_null()]  # noqa: E712
    for name, int_field, dec, date, micros in values:
        ts = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
        predicates += [
            col("timestampField") == ts,
            col("timestampField") >= ts,
            col("name") == name,
            col("name").starts_with(name[:1]),
            col("intField") > int_field,
            col("decimalField") <= dec,
            ~(col("dateField") == date),
            (col("name") == name) | (col("intField") < int_field),
            col("name").contains_term(name.lower()),
        ]
    checked = 0
    for expr in predicates:
        sql = (
            f"SELECT filename, file_row_number FROM read_parquet([{source}], filename = true, "
            f"file_row_number = true, hive_partitioning = false) WHERE {expr} ORDER BY ALL"
        )
        want: dict[str, list[int]] = {}
        for f, r in con.execute(sql).fetchall():
            want.setdefault(f, []).append(r)
        assert _ids(t, expr) == want, str(expr)
        assert t.count(expr) == sum(len(v) for v in want.values())
        checked += bool(want)
    assert checked > len(predicates) // 2
    # Hudi writes the partition fields into its base files: they are stored columns, indexable.
    t.create_index("byteField")
    t.build_index(progress=False)
    out = t.read(col("byteField") == 10, columns=["name", "byteField"])
    assert out.column_names == ["name", "byteField"]
    assert sorted(out["name"].to_pylist()) == ["Alice", "Carol"]
    assert pc.all(pc.equal(out["byteField"], 10)).as_py()
