"""Secondary index postings: the entries written (keys, counts, row lists, bitmaps) read back as
exactly the rows given, for empty, single-row, dense and largest row ids; integer keys (ranked by
value) match a plain reference; the batch build writes
byte-identical files to one file at a time; index files of format 1 still read, unknown formats
are refused asking for a rebuild.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_expr import BloomFilter, Expression, col
from index_store import IndexCorruptError, open_table
from index_store.secondary.build import FileTask, _index_files, index_file_bytes_for, index_files_bytes_for
from index_store.secondary.format import (
    BLOOM_FPP,
    FORMAT,
    META_KEY,
    ROW_GROUP_ENTRIES,
    FileInfo,
    IndexFile,
    entries_by_file,
    entries_of,
    index_file_bytes,
)
from index_store.secondary.rowsets import DENSE_FRACTION, decode_bitmap


def _written(
    tmp_path: Path, keys: pa.Array, rows: np.ndarray, row_count: int, name: str = "x.idx"
) -> IndexFile:
    block = entries_of(keys, rows, row_count)
    content, _ = index_file_bytes("value", FileInfo("f.parquet", 1, None, row_count), {"k": block})
    path = tmp_path / name
    path.write_bytes(content)
    return IndexFile(path)


def _mask(handle: IndexFile, expr: Expression, key_type: pa.DataType) -> np.ndarray:
    return handle.rows("k", expr.bind(pa.schema([pa.field("k", key_type)])))


def _expected(keys: list[object], rows: np.ndarray, row_count: int, wanted: object) -> np.ndarray:
    mask = np.zeros(row_count, dtype=bool)
    for k, r in zip(keys, rows, strict=True):
        if k == wanted:
            mask[r] = True
    return mask


CASES: dict[str, tuple[int, list[int | None] | None]] = {
    # name: (row_count, keys per row position)
    "empty file": (0, []),
    "every key null": (5, [None] * 5),
    "single rows": (6, [10, 11, 12, 13, 14, 15]),
    "max row id": (3_000_000, None),  # two keys at the last rows, the rest null (built below)
    "dense run": (1_000, [7 if i < 600 else i - 600 for i in range(1_000)]),
    "one key everywhere": (256, [1] * 256),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()])
def test_entries_round_trip(tmp_path: Path, case: str, key_type: pa.DataType) -> None:
    row_count, keys = CASES[case]
    if keys is None:
        keys = [None] * (row_count - 2) + [5, 9]
    values = pa.array(
        [None if k is None else (k if key_type == pa.int64() else f"k{k}") for k in keys], key_type
    )
    rows = np.arange(row_count, dtype=np.int64)
    handle = _written(tmp_path, values, rows, row_count)
    py = values.to_pylist()
    for wanted in [*sorted({v for v in py if v is not None}, key=str)[:5], py[0] if py else None]:
        if wanted is None:
            got = _mask(handle, col("k").is_null(), key_type)
            assert np.array_equal(got, np.array([v is None for v in py], dtype=bool))
            continue
        got = _mask(handle, col("k") == wanted, key_type)
        assert np.array_equal(got, _expected(py, rows, row_count, wanted)), wanted
    counts = handle.counts["k"]
    assert counts["pairs"] + counts["null_rows"] == row_count


def test_dense_keys_are_bitmaps_and_sparse_ones_lists(tmp_path: Path) -> None:
    row_count = 4_096
    dense = np.arange(0, row_count, 2)  # half the rows
    keys = pa.array(np.where(np.isin(np.arange(row_count), dense), 1, np.arange(row_count) + 10))
    block = entries_of(keys, np.arange(row_count), row_count)
    first = block.slice(0, 1).to_pylist()[0]
    assert first["key"] == 1 and first["rows"] is None and first["bitmap"] is not None
    assert first["count"] * DENSE_FRACTION >= row_count
    assert all(r["bitmap"] is None and r["rows"] == [r["key"] - 10] for r in block.slice(1).to_pylist())
    handle = _written(tmp_path, keys, np.arange(row_count), row_count)
    assert np.array_equal(np.flatnonzero(_mask(handle, col("k") == 1, pa.int64())), dense)


def test_repeated_pairs_are_stored_once_and_rows_sorted() -> None:
    keys = pa.array(["b", "a", "b", "a", None, None], pa.string())
    rows = np.array([3, 2, 3, 0, 1, 4])
    block = entries_of(keys, rows, 5)
    assert block.select(["key", "count", "rows"]).to_pylist() == [
        {"key": "a", "count": 2, "rows": [0, 2]},
        {"key": "b", "count": 1, "rows": [3]},
        {"key": None, "count": 2, "rows": [1, 4]},
    ]
    # Dictionary-encoded keys with a repeated dictionary value: the same entries.
    encoded = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1, None, None]), pa.array(["b", "a", "b"]))
    assert entries_of(encoded, rows, 5).equals(block)


def test_entries_by_file_are_each_files_entries() -> None:
    rng = np.random.default_rng(3)
    row_counts = [0, 50, 1, 200]
    files = np.concatenate([np.full(n, f) for f, n in enumerate(row_counts)]).astype(np.int64)
    rows = np.concatenate([np.arange(n) for n in row_counts]).astype(np.int64)
    keys = pa.array([None if x < 5 else f"v{x % 17}" for x in rng.integers(0, 100, len(rows))], pa.string())
    batch = entries_by_file(keys, files, rows, row_counts)
    for f, n in enumerate(row_counts):
        alone = entries_of(keys.filter(pa.array(files == f)), rows[files == f], n)
        assert batch[f].equals(alone), f


@pytest.mark.parametrize(
    "per_file",
    [
        [["cbc"], ["cbc"]],  # one key, once in each of two files: codes [0, 0]
        [["q"] * 3, ["cbc"], ["cbc"]],
        [["a"], [None]],
        [[None], [None]],
        [["a", "b"], ["a"]],
        [["b"], ["a"], [None]],
    ],
)
def test_entries_by_file_of_few_keys(per_file: list[list[str | None]]) -> None:
    # Layouts where the entries' key codes look like "every distinct key once, in order".
    files = np.concatenate([np.full(len(v), f) for f, v in enumerate(per_file)]).astype(np.int64)
    rows = np.concatenate([np.arange(len(v)) for v in per_file]).astype(np.int64)
    keys = pa.array([k for v in per_file for k in v], pa.string())
    batch = entries_by_file(keys, files, rows, [len(v) for v in per_file])
    for f, values in enumerate(per_file):
        alone = entries_of(pa.array(values, pa.string()), np.arange(len(values)), len(values))
        assert batch[f].equals(alone), (f, batch[f].to_pylist())


@settings(max_examples=300)  # a few ms each: the ci profile's 2,000 would take a minute
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", None]), max_size=4), min_size=1, max_size=5))
def test_entries_by_file_equal_each_files_alone(per_file: list[list[str | None]]) -> None:
    # Few keys over few small files: the layouts where one batch's shortcuts can go wrong.
    test_entries_by_file_of_few_keys(per_file)


def _reference_entries(keys: list[int | None], rows: list[int]) -> list[tuple[int | None, list[int]]]:
    """Each distinct key (ascending, null last) with its sorted distinct rows, in plain Python."""
    by_key: dict[int | None, set[int]] = {}
    for k, r in zip(keys, rows, strict=True):
        by_key.setdefault(k, set()).add(r)
    order = sorted(k for k in by_key if k is not None) + ([None] if None in by_key else [])
    return [(k, sorted(by_key[k])) for k in order]


@pytest.mark.parametrize(
    ("data_type", "low", "high"),
    [
        (pa.int8(), -128, 127),
        (pa.int32(), -5, 5),
        (pa.int64(), -(2**63), -(2**63) + 40),  # ranked by value, from the least int64
        (pa.int64(), 2**63 - 40, 2**63 - 1),
        (pa.int64(), -(2**63), 2**63 - 1),  # a range too wide to rank by value: ranked by sorting
        (pa.uint32(), 0, 2**32 - 1),
        (pa.uint64(), 2**64 - 30, 2**64 - 1),
    ],
)
def test_integer_keys_entries_match_a_plain_reference(data_type: pa.DataType, low: int, high: int) -> None:
    rng = np.random.default_rng(7)
    row_counts = [0, 90, 1, 300]
    per_file = [
        [
            None if rng.random() < 0.1 else int(rng.choice([low, high, low + (high - low) // 3]))
            for _ in range(n)
        ]
        for n in row_counts
    ]
    per_file[3][:100] = [low + 1] * 100  # a dense key: stored as a bitmap
    files = np.concatenate([np.full(n, f) for f, n in enumerate(row_counts)]).astype(np.int64)
    rows = np.concatenate([np.arange(n) for n in row_counts]).astype(np.int64)
    keys = pa.array([k for v in per_file for k in v], data_type)
    batch = entries_by_file(keys, files, rows, row_counts)
    for f, values in enumerate(per_file):
        block = batch[f]
        assert block.schema.field("key").type == data_type
        got = [
            (r["key"], r["rows"] if r["bitmap"] is None else decode_bitmap(r["bitmap"]).tolist())
            for r in block.to_pylist()
        ]
        assert got == _reference_entries(values, list(range(len(values)))), f
        assert block["count"].to_pylist() == [len(r) for _, r in got]


@pytest.mark.parametrize("key_type", [pa.string(), pa.large_string(), pa.binary()])
def test_nearly_unique_keys_ranked_by_sorting_match_a_plain_reference(key_type: pa.DataType) -> None:
    # Enough keys, nearly all distinct, for the ranks to come from sorting every key rather than
    # from a dictionary; with repeats, nulls, an empty key, non-ASCII and a key prefixing another.
    rng = np.random.default_rng(11)
    row_counts = [9_000, 12_000]
    pool = [f"k{int(x)}" for x in rng.integers(0, 10**9, 20_000)] + ["", "k", "k1", "é", "\x00"]
    per_file = [
        [None if rng.random() < 0.05 else pool[int(rng.integers(0, len(pool)))] for _ in range(n)]
        for n in row_counts
    ]
    per_file[1][:3] = ["k1", "k1", "k"]
    files = np.concatenate([np.full(n, f) for f, n in enumerate(row_counts)]).astype(np.int64)
    rows = np.concatenate([np.arange(n) for n in row_counts]).astype(np.int64)
    flat = [k for v in per_file for k in v]
    keys = pa.array(flat, pa.string()).cast(key_type)
    batch = entries_by_file(keys, files, rows, row_counts)
    for f, values in enumerate(per_file):
        got = [(r["key"], r["rows"]) for r in batch[f].to_pylist()]
        ref = _reference_entries(values, list(range(len(values))))  # type: ignore[arg-type]
        if key_type == pa.binary():
            ref = [(None if k is None else str(k).encode(), r) for k, r in ref]
        assert got == ref, f
        # A file alone (the sort path too) and a few of its keys (a dictionary) give the same entries.
        alone = entries_of(keys.filter(pa.array(files == f)), rows[files == f], row_counts[f])
        assert alone.equals(batch[f].combine_chunks())


def test_a_key_in_several_small_files_counts_in_each(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    for i, values in enumerate([["q"] * 3, ["cbc"], ["cbc"]]):
        pq.write_table(pa.table({"s": pa.array(values, pa.string())}), root / f"f{i}.parquet")
    t = open_table(root)
    t.build(progress=False)
    t.create_index("s")
    t.build_index(progress=False)
    assert t.count(col("s") == "cbc") == 2
    assert t.count(col("s").is_null()) == 0
    assert len(t.read(col("s") == "cbc")) == 2


def _table(root: Path, files: int = 4) -> None:
    root.mkdir()
    for k in range(files):
        n = 40 + k
        pq.write_table(
            pa.table(
                {
                    "a": pa.array([None if i % 7 == 0 else (i * 3 + k) % 11 for i in range(n)], pa.int64()),
                    "s": pa.array([f"Word{i % 5} other, {'é' if k == 2 else 'e'}{i % 3}" for i in range(n)]),
                }
            ),
            root / f"f{k}.parquet",
        )


def test_batch_build_writes_the_same_bytes_as_one_file_at_a_time(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    tasks = []
    for i, path in enumerate(sorted(root.glob("*.parquet"))):
        pf = pq.ParquetFile(path)
        for kind, column in (("value", "a"), ("value", "s"), ("term", "s")):
            t = pf.schema_arrow.field(column).type
            tasks.append(
                FileTask(
                    kind, path.name, path.stat().st_size, None, pf.metadata.num_rows, i, None, (column,), (t,)
                )
            )
    batch = index_files_bytes_for(str(root), tasks)
    alone = [index_file_bytes_for(str(root), task) for task in tasks]
    assert [content for content, _ in batch] == [content for content, _ in alone]
    # The blooms, from keys hashed for the whole batch, are those of each file's keys alone.
    for task, (content, counts) in zip(tasks, batch, strict=True):
        (column,) = task.columns
        keys = pq.read_table(io.BytesIO(content), columns=[column])[column].drop_null()
        bloom = BloomFilter.for_entries(max(len(keys), 1), BLOOM_FPP)
        bloom.add_all(keys)
        assert counts[column]["bloom"] == bloom.to_bytes()


def test_batch_dictionary_rows_are_the_files_entries_in_key_then_file_order(tmp_path: Path) -> None:
    # The rows a batch gives the table-level dictionary: each file's (key, rows) entries, ordered
    # by key (nulls last), then file, as the dictionary stores them.
    root = tmp_path / "t"
    _table(root)
    for kind, column in (("value", "a"), ("value", "s"), ("term", "s")):
        tasks = []
        for i, path in enumerate(sorted(root.glob("*.parquet"))):
            pf = pq.ParquetFile(path)
            t = pf.schema_arrow.field(column).type
            tasks.append(
                FileTask(kind, path.name, 1, None, pf.metadata.num_rows, 10 + i, None, (column,), (t,))
            )
        results, dictionary = _index_files(str(root), tasks)
        got = dictionary[(kind, column)].to_pylist()
        expected = []
        for task, (content, _) in zip(tasks, results, strict=True):
            entries = pq.read_table(io.BytesIO(content), columns=[column, "count"]).to_pylist()
            expected += [{"key": e[column], "file_idx": task.file_idx, "rows": e["count"]} for e in entries]
        # Nulls last: a null key sorts by (True, 0, file), any other by (False, key, file).
        in_dictionary_order = sorted(
            expected, key=lambda r: (r["key"] is None, 0 if r["key"] is None else r["key"], r["file_idx"])
        )
        assert got == in_dictionary_order


def test_batch_build_bytes_with_bitmaps_row_groups_two_columns_and_a_missing_one(tmp_path: Path) -> None:
    # Bitmaps (a key in most rows), more entries than a row group holds, two columns in one index
    # file, and a file without one of them: each batched file is still its one-file build's bytes.
    root = tmp_path / "t"
    root.mkdir()
    n = ROW_GROUP_ENTRIES + 500
    for k in range(3):
        columns = {
            "id": pa.array(np.arange(n) * 3 + k, pa.int64()),
            "mode": pa.array([["AIR", "RAIL", "SHIP"][i % 3] if i % 5 else "AIR" for i in range(n)]),
        }
        if k == 1:
            del columns["mode"]
        pq.write_table(pa.table(columns), root / f"f{k}.parquet")
    types = (pa.int64(), pa.string())
    tasks = [
        FileTask("value", p.name, p.stat().st_size, None, n, i, None, ("id", "mode"), types)
        for i, p in enumerate(sorted(root.glob("*.parquet")))
    ]
    batch = index_files_bytes_for(str(root), tasks)
    alone = [index_file_bytes_for(str(root), task) for task in tasks]
    assert [content for content, _ in batch] == [content for content, _ in alone]
    assert [counts for _, counts in batch] == [counts for _, counts in alone]
    first = pq.ParquetFile(io.BytesIO(batch[0][0]))
    assert first.metadata.num_row_groups >= 3  # id's entries span two row groups, mode's one
    both = first.read(columns=["mode", "bitmap"])
    modes = both.filter(pc.is_valid(both["mode"]))
    assert modes["bitmap"].null_count < len(modes)  # AIR, RAIL and SHIP each cover a quarter or more
    assert batch[1][1]["mode"]["null_rows"] == n  # the file without the column: all null


def _as_format_1(path: Path) -> None:
    """Rewrite an index file as format 1 wrote it: the same entries, keys PLAIN, ``format`` 1."""
    pf = pq.ParquetFile(path)
    meta = json.loads(pf.metadata.metadata[META_KEY])
    meta["format"] = 1
    sink = io.BytesIO()
    with pq.ParquetWriter(
        sink,
        pf.schema_arrow,
        compression="zstd",
        use_dictionary=False,
        column_encoding={"count": "DELTA_BINARY_PACKED", "rows.list.element": "DELTA_BINARY_PACKED"},
        write_page_checksum=True,
    ) as writer:
        for g in range(pf.metadata.num_row_groups):  # the same row groups: the layout names them
            writer.write_table(pf.read_row_group(g))
        writer.add_key_value_metadata({META_KEY: json.dumps(meta).encode()})
    path.write_bytes(sink.getvalue())


def test_format_1_index_files_still_answer(tmp_path: Path) -> None:
    assert FORMAT == 2
    root = tmp_path / "t"
    _table(root)
    tables = []
    for index_path in (None, tmp_path / "format-2"):
        t = open_table(root, index_path=index_path)
        t.build(progress=False)
        t.create_index(["a", "s"])
        t.build_index(progress=False)
        tables.append(t)
    old, new = tables
    # The first index's files rewritten as format 1 before anything reads them (files are
    # immutable: readers cache what they opened).
    idx_files = list((old.index_root / "value").rglob("*.idx"))
    assert idx_files
    for path in idx_files:
        written = path.read_bytes()
        _as_format_1(path)
        assert path.read_bytes() != written
        assert json.loads(pq.ParquetFile(path).metadata.metadata[META_KEY])["format"] == 1
    old = open_table(root)
    for e in [col("a") == 3, col("s") == "Word1 other, e0", col("a").is_null(), col("a") >= 8]:
        assert old.row_ids(e) == new.row_ids(e), e
        assert old.count(e) == new.count(e), e


def test_an_unknown_format_is_refused_asking_for_a_rebuild(tmp_path: Path) -> None:
    handle = _written(tmp_path, pa.array([1, 2]), np.arange(2), 2)
    pf = pq.ParquetFile(handle.path)
    meta = json.loads(pf.metadata.metadata[META_KEY])
    meta["format"] = FORMAT + 1
    table = pf.read().replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    pq.write_table(table, handle.path)
    with pytest.raises(
        IndexCorruptError, match=r"format 3.*rebuild the index with build_index\(strategy='all'\)"
    ):
        IndexFile(handle.path)
