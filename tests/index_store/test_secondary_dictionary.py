"""The secondary index's global term dictionary (``index_store.secondary.dictionary``).

Its entries are DuckDB's ``GROUP BY key, file`` over the data after build, update + build and
compact; ``count``/``exists`` of an exactly indexed leaf come from it without opening an index
file; estimates of =, IN and ranges are exact; a stale dictionary is read past per file (right
answers), a corrupt one raises ``IndexCorruptError`` (or is read past with ``on_corrupt="scan"``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_expr import Expression, col
from index_store import IndexCorruptError, IndexedTable, open_table
from index_store.partitions import secondary_dict
from index_store.partitions.secondary_dict import DICTIONARY, DictionaryMeta, write_dictionary
from index_store.secondary import UseRules, dictionary
from index_store.secondary.dictionary import Dictionary, load_dictionaries

FORCE = UseRules(max_predicates=100, by_cost=False)


def _write(root: Path, name: str, seed: int, n: int = 400) -> None:
    rng = np.random.default_rng(seed)
    a = pa.array([None if i % 17 == 0 else int(v) for i, v in enumerate(rng.integers(0, 40, n))], pa.int64())
    words = np.array(["red", "Blue", "green", "tea", "pot"])
    s = [f"{words[i % 5]} {words[(i * 3 + seed) % 5]}" for i in range(n)]
    pq.write_table(pa.table({"a": a, "s": pa.array(s), "u": pa.array(range(n), pa.int64())}), root / name)


@pytest.fixture
def table(tmp_path: Path) -> IndexedTable:
    root = tmp_path / "t"
    root.mkdir()
    for k in range(3):
        _write(root, f"f{k}.parquet", k)
    t = open_table(root)
    t.build(progress=False)
    t.create_index("a")
    t.create_index("s", index_type="term")
    t.build_index(progress=False)
    return t


def _dictionaries(t: IndexedTable) -> dict[tuple[str, str], Dictionary]:
    return load_dictionaries(t.index_root, t.snapshot().live.get(DICTIONARY, ()))


def _entries(t: IndexedTable, key: tuple[str, str]) -> set[tuple[object, str, int]]:
    """The dictionary's (key, base file path, rows) of one column, for the live files."""
    d = _dictionaries(t)[key]
    files = t.secondary._load().files
    path_of = dict(zip(files["file_idx"].to_pylist(), files["path"].to_pylist(), strict=True))
    table = pq.read_table(d.path)
    return {
        (k, path_of[f], r)
        for k, f, r in zip(
            table["key"].to_pylist(), table["file_idx"].to_pylist(), table["rows"].to_pylist(), strict=True
        )
        if f in path_of
    }


def _truth(root: Path) -> set[tuple[object, str, int]]:
    rows = duckdb.sql(
        "SELECT a, parse_filename(filename), count(*) "
        f"FROM read_parquet('{root}/*.parquet', filename = true) GROUP BY ALL"
    ).fetchall()
    return {(a, f, n) for a, f, n in rows}


def _count(root: Path, expr: Expression) -> int:
    return int(
        duckdb.sql(f"SELECT count(*) FROM read_parquet('{root}/*.parquet') WHERE {expr}").fetchall()[0][0]
    )


def test_entries_are_the_group_by_after_build_update_compact(table: IndexedTable) -> None:
    root = Path(table.root)
    assert _entries(table, ("value", "a")) == _truth(root)
    _write(root, "f3.parquet", 3)
    (root / "f0.parquet").unlink()
    table.update(added=["f3.parquet"], removed=["f0.parquet"], progress=False)
    table.build_index(progress=False)
    assert _entries(table, ("value", "a")) == _truth(root)
    before = len(pq.read_table(_dictionaries(table)[("value", "a")].path))
    (root / "f1.parquet").unlink()
    table.update(removed=["f1.parquet"], progress=False)  # the dictionary still lists f1's keys
    assert _entries(table, ("value", "a")) == _truth(root)
    table.compact()
    assert _entries(table, ("value", "a")) == _truth(root)
    # Compaction dropped the entries of the file no longer live.
    assert len(pq.read_table(_dictionaries(table)[("value", "a")].path)) < before
    terms = _entries(table, ("term", "s"))
    assert {k for k, _, _ in terms} == {"red", "blue", "green", "tea", "pot"}


@pytest.mark.parametrize(
    "expr",
    [
        col("a") == 7,
        col("a").isin([1, 2, 99]),
        (col("a") >= 10) & (col("a") < 20),
        col("a") > 35,
        col("a").is_null(),
    ],
)
def test_count_and_exists_without_reading_an_index_file(table: IndexedTable, expr: Expression) -> None:
    root = Path(table.root)
    truth = _count(root, expr)
    assert table.secondary.dictionary_count(expr) == truth
    # The per-file index files gone: the answer cannot have come from them.
    for f in (table.index_root / "value").rglob("*.idx"):
        f.write_bytes(b"not an index file")
    fresh = open_table(root)
    assert fresh.count(expr) == truth
    assert fresh.exists(expr) == (truth > 0)


@pytest.mark.parametrize(
    "expr",
    [
        col("a") == 7,
        col("a").isin([1, 2, 99]),
        (col("a") >= 10) & (col("a") <= 12),
        col("s").contains_term("tea"),
    ],
)
def test_estimates_are_exact(table: IndexedTable, expr: Expression) -> None:
    root = Path(table.root)
    sql = str(expr).replace("contains_term(s, 'tea')", "regexp_matches(lower(s), '\\btea\\b')")
    truth = _count(root, sql)  # type: ignore[arg-type]
    choice = table.select(expr, FORCE).use.choice
    assert choice is not None
    assert choice.selected_upper == truth
    assert choice.selected_expected == truth


def test_a_file_indexed_after_the_dictionary_is_answered_per_file(table: IndexedTable) -> None:
    root = Path(table.root)
    _write(root, "f9.parquet", 9)
    table.update(added=["f9.parquet"], progress=False)  # no index file for it yet
    expr = col("a") == 7
    assert table.secondary.dictionary_count(expr) is None
    assert table.count(expr) == _count(root, expr)


@pytest.mark.parametrize("column", ["a", "s"])
def test_counts_from_a_dictionary_of_many_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str
) -> None:
    # Three entries a row group: a key's entries straddle group boundaries, and a lookup picks
    # its groups by their key bounds (integer and string keys, = and IN, present and absent).
    monkeypatch.setattr(secondary_dict, "ROW_GROUP_ENTRIES", 3)
    root = tmp_path / "t"
    root.mkdir()
    for k in range(4):
        _write(root, f"f{k}.parquet", k, n=60)
    t = open_table(root)
    t.build(progress=False)
    t.create_index(column)
    t.build_index(progress=False)
    d = _dictionaries(t)[("value", column)]
    assert pq.ParquetFile(d.path).metadata.num_row_groups > 5
    values = duckdb.sql(f"SELECT DISTINCT {column} FROM read_parquet('{root}/*.parquet')").fetchall()
    keys = sorted(v for (v,) in values if v is not None)
    absent = -1 if column == "a" else "absent"
    for expr in [
        *(col(column) == k for k in keys),
        col(column) == absent,
        col(column).isin([*keys[:3], absent]),
    ]:
        assert t.secondary.dictionary_count(expr) == _count(root, expr), str(expr)


def test_a_count_from_the_dictionary_reads_no_statistics(table: IndexedTable) -> None:
    # The lookup is exact over every live file: pruning by statistics and blooms first would only
    # cost (it is most of the time of a one-key count).
    asked: list[object] = []
    stats = table.stats

    def spy(*args: object, **kwargs: object) -> object:
        asked.append(args)
        return stats(*args, **kwargs)  # type: ignore[arg-type]

    table.stats = spy  # type: ignore[method-assign]
    expr = col("a") == 7
    assert table.count(expr) == _count(Path(table.root), expr)
    assert table.exists(col("a") == 12345) is False
    assert asked == []


def test_a_file_the_dictionary_lacks_is_left_out_by_statistics(table: IndexedTable) -> None:
    # f9 has no index file yet, so the dictionary cannot answer for it; its statistics rule it
    # out of "a = 7", and the dictionary still answers (pruning is the fallback, not the start).
    root = Path(table.root)
    pq.write_table(
        pa.table({"a": pa.array([100, 200], pa.int64()), "s": ["x", "y"], "u": [0, 1]}), root / "f9.parquet"
    )
    table.update(added=["f9.parquet"], progress=False)
    expr = col("a") == 7
    assert table.secondary.dictionary_count(expr) == _count(root, expr)
    assert table.secondary.dictionary_count(col("a") == 100) is None  # f9 may hold it: not answered
    assert table.count(col("a") == 100) == 1


def test_a_stale_dictionary_is_never_a_wrong_answer(table: IndexedTable) -> None:
    root = Path(table.root)
    d = _dictionaries(table)[("value", "a")]
    wrong = pq.read_table(d.path)
    wrong = wrong.set_column(2, "rows", pa.array(np.asarray(wrong["rows"]) * 5, pa.int64()))
    # Entries that claim other index files (another manifest version): not trusted for any file.
    stale = DictionaryMeta("value", "a", d.meta.file_idx, d.meta.version + 1000)
    rel = write_dictionary(table.index_root, wrong, stale)
    (table.index_root / rel).replace(d.path)
    fresh = open_table(root)
    for expr in (col("a") == 7, col("a").isin([3, 4])):
        assert fresh.secondary.dictionary_count(expr) is None
        assert fresh.count(expr) == _count(root, expr)
        choice = fresh.select(expr, FORCE).use.choice
        assert choice is not None and choice.selected_upper >= _count(root, expr)


def test_a_corrupt_dictionary_raises(table: IndexedTable) -> None:
    d = _dictionaries(table)[("value", "a")]
    d.path.write_bytes(b"PAR1 garbage")
    fresh = open_table(table.root)
    with pytest.raises(IndexCorruptError):
        fresh.count(col("a") == 7)
    selection = open_table(table.root).select(col("a") == 7, FORCE, on_corrupt="scan")
    assert any("dictionary" in note for note in selection.corrupt)
    assert sum(len(ids) for ids in selection.row_ids().values()) == _count(Path(table.root), col("a") == 7)


def test_drop_index_retires_its_dictionary(table: IndexedTable) -> None:
    name = next(s.name for s in table.indexes() if s.index_type == "term")
    table.drop_index(name)
    assert set(_dictionaries(table)) == {("value", "a")}


@pytest.mark.parametrize("cache_bytes", [64 << 20, 1])
@pytest.mark.parametrize("column", ["a", "d", "t", "s"])
def test_point_lookups_by_binary_search_and_from_the_group_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str, cache_bytes: int
) -> None:
    # Integer, date and timestamp keys are found by binary search in each row group's sorted keys
    # (strings by a hash lookup); groups stay decoded for the next lookup (or leave at once with a
    # 1-byte cache). Counts against DuckDB's, asked twice: from the file, then from the cache.
    monkeypatch.setattr(secondary_dict, "ROW_GROUP_ENTRIES", 4)
    monkeypatch.setattr(dictionary, "GROUP_CACHE_BYTES", cache_bytes)
    root = tmp_path / "t"
    root.mkdir()
    rng = np.random.default_rng(5)
    for k in range(4):
        a = rng.integers(0, 30, 80)
        a_col = pa.array([None if i % 13 == 0 else int(v) for i, v in enumerate(a)], pa.int64())
        pq.write_table(
            pa.table(
                {
                    "a": a_col,
                    "d": pc.cast(pc.cast(a_col, pa.int32()), pa.date32()),
                    "t": pc.cast(pc.multiply(a_col, 1_000_000), pa.timestamp("us")),
                    "s": pc.cast(a_col, pa.string()),
                }
            ),
            root / f"f{k}.parquet",
        )
    t = open_table(root)
    t.build(progress=False)
    t.create_index(column)
    t.build_index(progress=False)
    keys = [
        v
        for (v,) in duckdb.sql(f"SELECT DISTINCT {column} FROM read_parquet('{root}/*.parquet')").fetchall()
        if v is not None
    ]
    keys.sort()
    absent = {"a": -1, "d": dt.date(1960, 1, 1), "t": dt.datetime(1960, 1, 1), "s": "absent"}[column]
    exprs = [
        *(col(column) == k for k in keys),
        col(column) == absent,
        col(column).isin([keys[0], keys[0], keys[-1], absent]),
        col(column).isin(keys[1:4]),
    ]
    for expr in exprs + exprs:
        assert t.secondary.dictionary_count(expr) == _count(root, expr), str(expr)
    d = t.secondary._dictionaries(t.secondary._load(), "raise", [])[("value", column)]
    # A key asked twice: each entry once.
    for k in keys[:3]:
        once, twice = d._points(pa.array([k]), None), d._points(pa.array([k, k]), None)
        assert once[0].tolist() == twice[0].tolist() and once[1].tolist() == twice[1].tolist()
    md = d._pf.metadata
    holding_keys = sum(md.row_group(g).column(0).statistics.has_min_max for g in range(md.num_row_groups))
    # Every group holding a key was read once; groups of NULL keys only, never.
    assert len(d._cache) == (0 if cache_bytes == 1 else holding_keys)


@pytest.mark.parametrize("ordered", [True, False])
def test_a_one_integer_key_lookup_finds_its_entries_in_any_key_order(tmp_path: Path, ordered: bool) -> None:
    # `key = literal` on an integer key is searched without an arrow array of the key; a file
    # whose keys are out of order (written by another tool) is hashed with one made then.
    entries = pa.table(
        {
            "key": pa.array([5, 1, 5, 3, 5], pa.int64()),
            "file_idx": pa.array([0, 1, 2, 2, 3], pa.int64()),
            "rows": pa.array([2, 1, 4, 1, 7], pa.int64()),
        }
    )
    meta = DictionaryMeta("value", "a", np.arange(4), np.ones(4, dtype=np.int64))
    rel = write_dictionary(tmp_path, entries, meta)
    if not ordered:
        footer = pq.ParquetFile(tmp_path / rel).metadata.metadata
        written = pq.read_table(tmp_path / rel)
        pq.write_table(written.take([4, 0, 1, 3, 2]).replace_schema_metadata(footer), tmp_path / rel)
    d = Dictionary(tmp_path, rel)
    assert (d._read([0])[0].keys is None) != ordered
    bound = (col("a") == 5).bind(pa.schema([("a", pa.int64())]))
    assert d._one_integer(bound) is not None
    found = d.lookup(bound, np.array([3, 0, 1, 2]), np.ones(4, dtype=bool))
    assert found.rows.tolist() == [7.0, 2.0, 0.0, 4.0]


def test_only_ascending_numbers_are_binary_searched() -> None:
    # A group whose keys are not in the dictionary's order is hashed, never binary searched:
    # searching unsorted keys would miss entries.
    assert dictionary._ascending_numbers(pa.chunked_array([[1, 2, 2, 5, None]])) is not None
    assert dictionary._ascending_numbers(pa.chunked_array([[1, 3, 2]])) is None
    assert dictionary._ascending_numbers(pa.chunked_array([[1, None, 2]])) is None
    assert dictionary._ascending_numbers(pa.chunked_array([["a", "b"]])) is None
    table = pa.table({"key": [3, 1, 2, 1], "file_idx": [0, 1, 2, 3], "rows": [1, 1, 1, 1]})
    group = dictionary._Group.of(table, "x")
    assert group.positions(pa.array([1])) is None
    ordered = dictionary._Group.of(table.sort_by("key"), "x")
    assert ordered.positions(np.array([1, 2])).tolist() == [0, 1, 2]
    hit = pc.is_in(table["key"], value_set=pa.array([1]))
    assert np.flatnonzero(hit.to_numpy(zero_copy_only=False)).tolist() == [1, 3]
