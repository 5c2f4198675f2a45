"""``IndexedTable.tag``: every answer checked against DuckDB reading every key of every file."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from index_store import (
    DuplicateKeyError,
    IndexCorruptError,
    IndexStaleError,
    RecordKeyError,
    open_table,
)
from index_store.tagging import tag_stats

METHODS = ["bloom", "record"]


def _write(path: Path, table: pa.Table, row_group_size: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)


def _plain_table(
    root: Path, files: int = 12, rows: int = 300, clustered: bool = True, seed: int = 0
) -> np.ndarray:
    """``files`` files of ``rows`` unique ids each (sorted runs when clustered); returns all ids.

    Ids are zero-padded text, so that their order as keys (text) is their numeric order."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(files * rows * 3)[: files * rows] if not clustered else np.arange(files * rows) * 3
    for i in range(files):
        chunk = ids[i * rows : (i + 1) * rows]
        _write(
            root / f"part-{i:03d}.parquet",
            pa.table({"id": _ids(chunk), "v": pa.array(chunk % 7, pa.int32())}),
            row_group_size=64,
        )
    return ids


def _ids(values: np.ndarray) -> pa.StringArray:
    return pa.array([f"{v:08d}" for v in values], pa.string())


def _oracle(root: Path, key_sql: str, hive: bool = False) -> dict[str, list[str]]:
    """key -> files holding it, from DuckDB reading every file (the naive way)."""
    rows = duckdb.sql(
        f"SELECT {key_sql} AS k, filename FROM read_parquet('{root}/**/*.parquet', filename=true, "
        f"hive_partitioning={'true' if hive else 'false'})"
    ).fetchall()
    out: dict[str, list[str]] = {}
    for key, name in rows:
        out.setdefault(key, []).append(os.path.normpath(name))
    return out


def _check(result: pa.Table, oracle: dict[str, list[str]]) -> None:
    for key, file in zip(result["key"].to_pylist(), result["file"].to_pylist(), strict=True):
        where = oracle.get(key, [])
        if where:
            assert file is not None and os.path.normpath(file) in where, (key, file, where)
        else:
            assert file is None, (key, file)


def _probe_keys(present: list[str], absent: list[str], rng: np.random.Generator) -> list[str]:
    keys = present + absent + present[: len(present) // 3]  # duplicates in the batch, too
    return [keys[i] for i in rng.permutation(len(keys))]


@pytest.mark.parametrize("clustered", [True, False])
@pytest.mark.parametrize("method", METHODS)
def test_plain_table_simple_key(tmp_path: Path, clustered: bool, method: str) -> None:
    ids = _plain_table(tmp_path, clustered=clustered)
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=method == "record", progress=False)
    rng = np.random.default_rng(1)
    present = _ids(rng.choice(ids, 200, replace=False)).to_pylist()
    absent = [
        *_ids(np.setdiff1d(rng.integers(0, ids.max() + 10, 400), ids)[:150]).to_pylist(),
        "-1",
        "x",
        " ",
    ]
    keys = _probe_keys(present, absent, rng)
    result = t.tag(keys, using=method)  # type: ignore[arg-type]
    assert result["key"].to_pylist() == keys
    _check(result, _oracle(tmp_path, "id"))
    stats = tag_stats(result)
    assert stats.updates == sum(1 for k in keys if k in set(present))
    assert stats.inserts == len(keys) - stats.updates
    assert stats.method == method
    if method == "bloom":
        assert stats.after_bloom <= stats.after_range
        assert stats.false_positives == stats.after_bloom - stats.updates
        if clustered:  # ranges are disjoint: each present key meets one file
            assert stats.after_range <= len(keys)
    else:
        assert stats.files_read == 0


@pytest.mark.parametrize("method", METHODS)
def test_composite_key_from_key_columns(tmp_path: Path, method: str) -> None:
    for i in range(4):
        a = np.arange(i * 50, (i + 1) * 50)
        _write(
            tmp_path / f"f{i}.parquet",
            pa.table({"a": pa.array(a % 13, pa.int32()), "b": pa.array([f"s{x}" for x in a]), "n": a}),
        )
    t = open_table(tmp_path)
    t.build(record_key=["a", "b"], record_index=method == "record", progress=False)
    batch = pa.table({"a": pa.array([3, 5, 0, 12], pa.int32()), "b": ["s3", "s5", "s999", "s12"]})
    result = t.tag(batch, using=method)  # type: ignore[arg-type]
    assert result["key"].to_pylist() == ["a:3,b:s3", "a:5,b:s5", "a:0,b:s999", "a:12,b:s12"]
    _check(result, _oracle(tmp_path, "'a:' || a || ',b:' || b"))
    assert result["file"].is_null().to_pylist() == [False, False, True, False]


@pytest.mark.parametrize("method", METHODS)
def test_per_partition_and_global_tagging(tmp_path: Path, method: str) -> None:
    for p in ("p=a", "p=b"):
        for i in range(3):
            ids = np.arange(i * 100, (i + 1) * 100) + (0 if p == "p=a" else 250)
            _write(tmp_path / p / f"f{i}.parquet", pa.table({"id": pa.array(ids, pa.int64())}))
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=method == "record", progress=False)
    # 250..299 are in both partitions: per partition each is found where asked
    keys = ["10", "260", "260", "299", "320", "999"]
    parts = ["p=a", "p=a", "p=b", "p=b", "p=a", "p=b"]
    result = t.tag(keys, parts, using=method)  # type: ignore[arg-type]
    files = [None if f is None else os.path.relpath(f, tmp_path) for f in result["file"].to_pylist()]
    assert files == ["p=a/f0.parquet", "p=a/f2.parquet", "p=b/f0.parquet", "p=b/f0.parquet", None, None]
    assert result["partition"].to_pylist() == parts
    # globally, a key held by two files is tagged in both (Hudi's bloom index), or refused
    with pytest.raises(DuplicateKeyError, match="260"):
        t.tag(["260"], using=method, on_duplicate="error")  # type: ignore[arg-type]
    both = t.tag(["10", "260"], using=method)  # type: ignore[arg-type]
    pairs = zip(both["key"].to_pylist(), both["file"].to_pylist(), strict=True)
    assert [(k, os.path.relpath(f, tmp_path)) for k, f in pairs] == [
        ("10", "p=a/f0.parquet"),
        ("260", "p=a/f2.parquet"),
        ("260", "p=b/f0.parquet"),
    ]
    assert both["partition"].to_pylist() == ["p=a", "p=a", "p=b"]
    assert (tag_stats(both).updates, tag_stats(both).several_files) == (2, 1)
    result = t.tag(["10", "520", "999"], using=method)  # type: ignore[arg-type]
    assert [None if f is None else os.path.relpath(f, tmp_path) for f in result["file"].to_pylist()] == [
        "p=a/f0.parquet",
        "p=b/f2.parquet",
        None,
    ]
    assert result["partition"].to_pylist() == ["p=a", "p=b", None]


@pytest.mark.parametrize("method", METHODS)
def test_tagging_follows_updates(tmp_path: Path, method: str) -> None:
    ids = _plain_table(tmp_path, files=5, rows=100)
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=method == "record", progress=False)
    # keys move: file 0 is rewritten without its first half, which goes to a new file; file 4 is deleted
    moved = ids[:50]
    _write(
        tmp_path / "part-000.parquet",
        pa.table({"id": _ids(ids[50:100]), "v": pa.array(np.zeros(50, np.int32))}),
    )
    _write(
        tmp_path / "new.parquet",
        pa.table({"id": _ids(moved), "v": pa.array(np.zeros(50, np.int32))}),
    )
    (tmp_path / "part-004.parquet").unlink()
    keys = _ids(np.concatenate([moved[:5], ids[50:55], ids[400:405], ids[200:205]])).to_pylist()
    with pytest.raises(IndexStaleError, match="sync"):
        t.tag(keys, using=method)  # type: ignore[arg-type]
    result = t.tag(keys, using=method, sync=True)  # type: ignore[arg-type]
    _check(result, _oracle(tmp_path, "id"))
    assert [os.path.basename(f) for f in result["file"].to_pylist()[:10]] == ["new.parquet"] * 5 + [
        "part-000.parquet"
    ] * 5
    assert result["file"].to_pylist()[10:15] == [None] * 5  # deleted with their file
    t.compact()
    _check(t.tag(keys, using=method), _oracle(tmp_path, "id"))  # type: ignore[arg-type]


def test_a_file_deleted_behind_the_index_is_never_named(tmp_path: Path) -> None:
    ids = _plain_table(tmp_path, files=3, rows=50)
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=True, progress=False)
    (tmp_path / "part-001.parquet").unlink()
    for method in METHODS:
        result = t.tag(_ids(ids[50:60]), using=method)  # type: ignore[arg-type]
        assert result["file"].null_count == 10


def test_keys_above_the_basic_multilingual_plane(tmp_path: Path) -> None:
    # Java orders U+1F600 (a surrogate pair, 0xD83D...) below U+FF21; code point order the reverse.
    groups = [["\uff21", "\U0001f600"], ["a\U0001f600", "a\uffff"], ["b", "c"]]
    for i, g in enumerate(groups):
        _write(tmp_path / f"f{i}.parquet", pa.table({"k": pa.array(g, pa.string())}))
    t = open_table(tmp_path)
    t.build(record_key="k", progress=False)
    keys = [k for g in groups for k in g] + ["\U0001f601", "\ue000", "a\U00010000"]
    result = t.tag(keys, using="bloom")
    _check(result, _oracle(tmp_path, "k"))
    assert result["file"].null_count == 3


def test_empty_input_and_empty_table(tmp_path: Path) -> None:
    _plain_table(tmp_path, files=2, rows=10)
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=True, progress=False)
    for method in METHODS:
        result = t.tag([], using=method)  # type: ignore[arg-type]
        assert result.num_rows == 0 and result.schema.names == ["key", "partition", "file", "file_id"]
    empty = tmp_path / "empty"
    empty.mkdir()
    e = open_table(empty)
    e.build(record_key="id", record_index=True, progress=False)
    assert e.tag(["1", "2"])["file"].null_count == 2  # no files: all inserts


def test_bad_input(tmp_path: Path) -> None:
    _plain_table(tmp_path, files=2, rows=10)
    t = open_table(tmp_path)
    t.build(progress=False)
    with pytest.raises(RecordKeyError, match="record_key"):
        t.tag(["1"])
    t.build(record_key="id", progress=False)
    with pytest.raises(RecordKeyError, match="2 of 3 record keys are null"):
        t.tag(pa.array(["1", None, None]))
    with pytest.raises(RecordKeyError, match="strings"):
        t.tag(pa.array([1, 2]))
    with pytest.raises(RecordKeyError, match="nope"):
        t.tag(pa.table({"nope": [1]}))
    with pytest.raises(RecordKeyError, match="2 entries for 1 keys"):
        t.tag(["1"], ["a", "b"])
    with pytest.raises(RecordKeyError, match="record index"):
        t.tag(["1"], using="record")
    with pytest.raises(ValueError, match="using"):
        t.tag(["1"], using="hash")  # type: ignore[arg-type]
    with pytest.raises(RecordKeyError, match="record_key must name"):
        open_table(tmp_path).build(record_key=[], progress=False)
    with pytest.raises(RecordKeyError, match="needs a record key"):  # the index's key dropped
        open_table(tmp_path).build(record_key=False, record_index=True, progress=False)
    with pytest.raises(RecordKeyError, match="'nope' is not a column of data file"):
        open_table(tmp_path).build(record_key=["id", "nope"], progress=False)
    _write(tmp_path / "floats" / "f.parquet", pa.table({"x": [1.5, 2.5, 3.5]}))
    with pytest.raises(RecordKeyError, match="type double"):  # Java prints doubles its own way
        open_table(tmp_path / "floats").build(record_key=["x"], progress=False)


def test_corrupt_key_index_file(tmp_path: Path) -> None:
    _plain_table(tmp_path, files=2, rows=10)
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=True, progress=False)
    for folder, method in (("record_keys", "bloom"), ("record_index", "record")):
        (victim,) = (t.index_root / folder).iterdir()
        saved = victim.read_bytes()
        victim.write_bytes(saved[: len(saved) // 2])
        fresh = open_table(tmp_path)
        with pytest.raises(IndexCorruptError):
            fresh.tag(["3"], using=method)  # type: ignore[arg-type]
        victim.write_bytes(saved)


def test_duplicate_key_in_two_files_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", pa.table({"id": [1, 2, 3]}))
    _write(tmp_path / "b.parquet", pa.table({"id": [3, 4]}))
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=True, progress=False)
    for method in METHODS:
        with pytest.raises(DuplicateKeyError, match="'3'"):
            t.tag(["1", "3"], using=method, on_duplicate="error")  # type: ignore[arg-type]
        assert t.tag(["1", "4"], using=method)["file"].null_count == 0  # type: ignore[arg-type]


def test_copy_is_independent_of_the_source(tmp_path: Path) -> None:
    """An index built elsewhere (--index-path) tags the same as one inside the table."""
    src = tmp_path / "t"
    ids = _plain_table(src, files=3, rows=20)
    shutil.copytree(src, tmp_path / "u")
    a = open_table(src)
    a.build(record_key="id", progress=False)
    b = open_table(tmp_path / "u", index_path=tmp_path / "idx")
    b.build(record_key="id", progress=False)
    keys = _ids(ids[::7])
    assert [os.path.basename(f) for f in a.tag(keys)["file"].to_pylist()] == [
        os.path.basename(f) for f in b.tag(keys)["file"].to_pylist()
    ]


def test_duplicate_keys_are_listed(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", pa.table({"id": [1, 2, 3]}))
    _write(tmp_path / "b.parquet", pa.table({"id": [3, 4, 2]}))
    _write(tmp_path / "c.parquet", pa.table({"id": [5]}))
    for record_index in (False, True):
        t = open_table(tmp_path)
        t.build(record_key="id", record_index=record_index, progress=False)
        dup = t.duplicate_keys()
        names = [os.path.basename(f) for f in dup["file"].to_pylist()]
        assert sorted(zip(dup["key"].to_pylist(), names, strict=True)) == [
            ("2", "a.parquet"),
            ("2", "b.parquet"),
            ("3", "a.parquet"),
            ("3", "b.parquet"),
        ]


def test_record_index_shards_are_configurable(tmp_path: Path) -> None:
    ids = _plain_table(tmp_path, files=3, rows=50)
    t = open_table(tmp_path)
    with pytest.raises(ValueError, match="power of two"):
        t.build(record_key="id", record_index=True, record_index_shards=3, progress=False)
    t.build(record_key="id", record_index=True, record_index_shards=4, progress=False)
    (shard_file,) = (t.index_root / "record_index").iterdir()
    meta = json.loads(ipc.open_file(shard_file).schema.metadata[b"record_index"])
    assert meta["shards"] == 4
    assert t.snapshot().config.record_index_shards == 4
    assert t.tag(_ids(ids[:5]), using="record")["file"].null_count == 0


@pytest.mark.parametrize("composite", [False, True])
def test_integer_keys_are_held_to_the_fields_min_max(tmp_path: Path, composite: bool) -> None:
    """As text, numeric keys of consecutive files overlap ("10" < "9"); by number they do not."""
    for i in range(10):
        ids = np.arange(i * 100, (i + 1) * 100) - 300
        columns = {"id": pa.array(ids, pa.int64()), "n": pa.array(ids % 3, pa.int8())}
        _write(tmp_path / f"f{i}.parquet", pa.table(columns))
    t = open_table(tmp_path)
    t.build(record_key=["id", "n"] if composite else "id", progress=False)
    values = [-300, -1, 0, 7, 99, 100, 650, 699, 5000, -301]
    if composite:
        keys = [f"id:{v},n:{v % 3}" for v in values] + ["id:007,n:1", "id:__null__,n:0", "id:1,n:2"]
        oracle = _oracle(tmp_path, "'id:' || id || ',n:' || n")
    else:
        keys = [str(v) for v in values] + ["007", "-0", "99999999999999999999", "x"]
        oracle = _oracle(tmp_path, "CAST(id AS VARCHAR)")
    result = t.tag(keys, using="bloom")
    _check(result, oracle)
    stats = tag_stats(result)
    assert stats.updates == 8
    # each key meets at most the one file whose numbers cover it (text ranges overlap everywhere)
    assert stats.after_range <= len(keys)


def test_verification_reads_only_the_row_groups_that_may_hold_a_key(tmp_path: Path) -> None:
    """Keys stored in one string column (Hudi's _hoodie_record_key): a row group is read only when
    its min/max (UTF-8 bytes, unsigned) admit a wanted key, and every wanted key in the file is found."""
    from index_store.record_key import RecordKeySpec
    from index_store.tagging.verify import _lookup_file

    stored = sorted([f"k{i:03d}" for i in range(100)] + ["\u00e9a", "\u00e9b", "\U0001f600"], key=str.encode)
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"_hoodie_record_key": stored}), path, row_group_size=10)
    spec = RecordKeySpec((), "_hoodie_record_key", "unknown")
    groups = [stored[i : i + 10] for i in range(0, len(stored), 10)]
    for wanted in (["k005", "k055", "nope"], ["\u00e9b", "k000"], ["\U0001f600"], ["a", "zz"], ["k0055"]):
        found, read, _ = _lookup_file(str(path), pa.array(wanted, pa.string()), spec)
        assert sorted(found.tolist()) == [i for i, k in enumerate(wanted) if k in stored]
        admitting = [g for g in groups if any(g[0].encode() <= k.encode() <= g[-1].encode() for k in wanted)]
        assert read == len(admitting)
