"""Tagging on Spark (``adapters.spark.tag``) gives the answers of the local ``IndexedTable.tag``,
and a Spark-built index with record keys is the local one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mor_oracle import scenario, written_keys
from pyspark.sql import SparkSession

from adapters.spark import build_index, tag, tag_with_stats
from adapters.spark.build import compute_keys_on_spark
from index_store import (
    DuplicateKeyError,
    IndexedTable,
    IndexStaleError,
    PartitionPathError,
    RecordKeyError,
    open_table,
)
from index_store.builder import compute_file_keys
from index_store.partitions import read_record_index
from index_store.tagging import tag_stats

FILES, ROWS = 12, 1000


def _ids(values: np.ndarray) -> list[str]:
    return [f"{v:08d}" for v in values]


def _plain(root: Path, clustered: bool) -> np.ndarray:
    """``FILES`` files of ``ROWS`` unique zero-padded ids (sorted runs when clustered)."""
    rng = np.random.default_rng(7)
    n = FILES * ROWS
    ids = np.arange(n) * 3 if clustered else rng.permutation(n * 3)[:n]
    root.mkdir(parents=True)
    for i in range(FILES):
        chunk = ids[i * ROWS : (i + 1) * ROWS]
        data = pa.table({"id": _ids(chunk), "v": pa.array(chunk % 7, pa.int32())})
        pq.write_table(data, root / f"part-{i:03d}.parquet", row_group_size=250)
    return ids


def _probe(present: Sequence[str], absent: Sequence[str], seed: int = 3) -> list[str]:
    """Half present, half absent, some twice, shuffled."""
    keys = [*present, *absent, *present[:100]]
    return [keys[i] for i in np.random.default_rng(seed).permutation(len(keys))]


def _same_as_local(
    spark: SparkSession,
    t: IndexedTable,
    columns: dict[str, pa.Array | list],
    local_keys: pa.Table | list[str],
    local_parts: list[str] | None = None,
    methods: Sequence[str] = ("bloom", "record"),
    **kwargs: str | list[str],
) -> list[str | None]:
    """Tags a DataFrame of ``columns`` on Spark with each method: its ``_file`` and ``_file_id`` of
    each row must be what the local ``tag`` says of ``local_keys`` (and ``local_parts``). Returns
    the files."""
    n = len(next(iter(columns.values())))
    df = spark.createDataFrame(pa.table({"row": pa.array(np.arange(n)), **columns}))
    files: list[str | None] | None = None
    for method in methods:
        local = t.tag(local_keys, local_parts, using=method)  # type: ignore[arg-type]
        expected = list(zip(local["file"].to_pylist(), local["file_id"].to_pylist(), strict=True))
        assert files is None or [f for f, _ in expected] == files
        files = [f for f, _ in expected]
        result, stats = tag_with_stats(spark, t, df, using=method, **kwargs)  # type: ignore[arg-type]
        assert result.columns == [*df.columns, "_file", "_file_id"]
        got: list[tuple[str | None, str | None]] = [(None, None)] * n
        rows = result.select("row", "_file", "_file_id").collect()
        assert len(rows) == n
        for r in rows:
            got[r["row"]] = (r["_file"], r["_file_id"])
        assert got == expected, (method, sum(a != b for a, b in zip(got, expected, strict=True)))
        parts: list[str | None] = list(local_parts) if local_parts is not None else [None] * n
        found = zip(local["key"].to_pylist(), parts, files, strict=True)
        assert stats.method == method
        assert stats.updates == len({(k, p) for k, p, f in found if f is not None})
    assert files is not None
    return files


@pytest.fixture(scope="module")
def plain_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[IndexedTable, np.ndarray]]:
    out = {}
    for kind in ("clustered", "random"):
        root = tmp_path_factory.mktemp(kind) / "t"
        ids = _plain(root, clustered=kind == "clustered")
        t = open_table(root)
        t.build(record_key="id", record_index=True, progress=False)
        out[kind] = (t, ids)
    return out


@pytest.mark.parametrize("kind", ["clustered", "random"])
def test_plain_tables_tag_as_locally(
    spark: SparkSession, plain_tables: dict[str, tuple[IndexedTable, np.ndarray]], kind: str
) -> None:
    t, ids = plain_tables[kind]
    rng = np.random.default_rng(11)
    present = _ids(rng.choice(ids, 5000, replace=False))
    absent = _ids(np.setdiff1d(np.arange(ids.max() + 6000), ids)[-5000:])
    odd = ["x", "-1", " "] if kind == "random" else ["x", "-1", "y"]
    keys = _probe(present, [*absent[:-3], *odd])
    # clustered: the key field "id" encoded on the executors; random: a column of encoded keys
    columns = {"id": keys} if kind == "clustered" else {"k": keys, "other": pa.array(np.ones(len(keys)))}
    key_cols = {} if kind == "clustered" else {"key_cols": ["k"]}
    files = _same_as_local(spark, t, columns, keys, **key_cols)
    assert sum(f is not None for f in files) == 5100 and len(keys) == 10100


def test_hive_table_per_partition_with_a_composite_key(spark: SparkSession, tmp_path: Path) -> None:
    """Keys (a, b) repeat across the two partitions: per partition each is found in its own."""
    rng = np.random.default_rng(5)
    for region in ("eu", "us"):
        for i in range(4):
            a = rng.permutation(np.arange(i * 2000, (i + 1) * 2000))[:1500]
            data = pa.table({"a": pa.array(a, pa.int32()), "b": [f"s{x % 97}" for x in a], "n": a})
            (tmp_path / f"region={region}").mkdir(exist_ok=True)
            pq.write_table(data, tmp_path / f"region={region}" / f"f{i}.parquet", row_group_size=400)
    t = open_table(tmp_path)
    t.build(record_key=["a", "b"], record_index=True, progress=False)
    rows = pa.concat_tables(
        [
            pq.read_table(os.path.join(t.root, f.path), columns=["a", "b"]).append_column(
                "part", pa.array([f.partition] * pq.read_metadata(os.path.join(t.root, f.path)).num_rows)
            )
            for f in t.reader.list_files()
        ]
    )
    present = rows.take(rng.choice(rows.num_rows, 5000, replace=False))
    # absent: keys no file has, and present keys asked in the other partition (when not there too)
    absent_a = pa.array(rng.integers(10_000, 20_000, 2500), pa.int32())
    missing = pa.table(
        {"a": absent_a, "b": [f"s{x % 97}" for x in absent_a.to_pylist()], "part": ["region=eu"] * 2500}
    )
    moved = rows.take(rng.choice(rows.num_rows, 2500, replace=False))
    other = pa.array(["region=us" if p == "region=eu" else "region=eu" for p in moved["part"].to_pylist()])
    moved = moved.set_column(2, "part", other)
    probe = pa.concat_tables([present, missing, moved])
    files = _same_as_local(
        spark,
        t,
        {"a": probe["a"], "b": probe["b"], "part": probe["part"]},
        probe.select(["a", "b"]),
        probe["part"].to_pylist(),
        partition_col="part",
    )
    assert len(files) == 10_000 and sum(f is not None for f in files) >= 5000
    df = spark.createDataFrame(probe.select(["a", "b"]))
    for method in ("bloom", "record"):  # globally, a key in both partitions has no one file
        with pytest.raises(DuplicateKeyError, match="more than one live data file"):
            tag(spark, t, df, using=method, on_duplicate="error")


def _hudi_rows(t: IndexedTable, columns: list[str]) -> pa.Table:
    tables = []
    for f in t.reader.list_files():
        data = pq.read_table(os.path.join(t.root, f.path), columns=columns)
        tables.append(data.append_column("part", pa.array([f.partition] * data.num_rows, pa.string())))
    return pa.concat_tables(tables)


@pytest.mark.parametrize(
    ("name", "methods"),
    [("v9_txns_complex_meta", ("bloom", "record")), ("v6_simplekeygen_hivestyle_no_metafields", ("bloom",))],
)
def test_real_hudi_table_tags_as_locally(
    spark: SparkSession, copy_table: Callable[[str], Path], name: str, methods: tuple[str, ...]
) -> None:
    """Keys encoded from the key fields on the executors; Hudi's stored key column (or the fields,
    without meta fields) read to verify; per partition."""
    t = open_table(copy_table(name))
    t.build(record_index=True, progress=False)
    spec = t.reader.record_key_spec()  # type: ignore[attr-defined]
    assert spec is not None
    rows = _hudi_rows(t, list(spec.fields))
    key_type = rows.schema.field(spec.fields[0]).type
    absent = pa.array(
        [str(10_000 + i) for i in range(10_000)] if pa.types.is_string(key_type) else range(10_000, 20_000),
        key_type,
    )
    extra = {f: absent if i == 0 else pa.repeat(rows[f][0], 10_000) for i, f in enumerate(spec.fields)}
    probe = pa.concat_tables([rows, pa.table({**extra, "part": pa.repeat(rows["part"][0], 10_000)})])
    files = _same_as_local(
        spark,
        t,
        {f: probe[f] for f in [*spec.fields, "part"]},
        probe.select(list(spec.fields)),
        probe["part"].to_pylist(),
        methods=methods,
        partition_col="part",
    )
    assert sum(f is not None for f in files) == rows.num_rows


def test_bad_input_and_a_stale_index(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": ["1", "2", "3"], "n": [1, 2, 3]}), root / "a.parquet")
    pq.write_table(pa.table({"id": ["3", "4"], "n": [3, 4]}), root / "b.parquet")
    t = open_table(root)
    t.build(record_key="id", record_index=True, progress=False)
    df = spark.createDataFrame(pa.table({"id": pa.array(["1", None], pa.string()), "n": [1, 2]}))
    with pytest.raises(RecordKeyError, match="'nope'"):
        tag(spark, t, df.withColumnRenamed("id", "nope"))
    with pytest.raises(RecordKeyError, match="'k'"):
        tag(spark, t, df, key_cols=["k"])
    with pytest.raises(RecordKeyError, match="not the key strings"):
        tag(spark, t, df, key_cols=["n"])
    for key_cols, using in ((None, "bloom"), (["id"], "record")):
        with pytest.raises(RecordKeyError, match="null"):
            tag(spark, t, df, key_cols=key_cols, using=using)  # type: ignore[arg-type]
    two = spark.createDataFrame(pa.table({"id": ["1", "3"]}))
    with pytest.raises(DuplicateKeyError, match="'3'"):
        tag(spark, t, two, using="bloom", on_duplicate="error")
    empty = spark.createDataFrame(pa.table({"k": ["1", ""]}))
    with pytest.raises(RecordKeyError, match="record keys of a batch of 'k' are empty"):
        tag(spark, t, empty, key_cols=["k"])
    pq.write_table(pa.table({"id": ["9"], "n": [9]}), root / "c.parquet")
    with pytest.raises(IndexStaleError, match="1 file not in the index"):
        tag(spark, t, two)


def _record_keys(t: IndexedTable) -> pa.Table:
    live = t.snapshot().live
    return pa.concat_tables([pq.read_table(t.index_root / rel) for rel in live["record_keys"]])


def _record_index(t: IndexedTable) -> pa.Table:
    rows = read_record_index(t.index_root, t.snapshot().live["record_index"])
    return rows.sort_by([("key", "ascending"), ("file_idx", "ascending")])


def test_spark_build_with_record_keys_is_the_local_build(
    spark: SparkSession,
    plain_tables: dict[str, tuple[IndexedTable, np.ndarray]],
    tmp_path: Path,
) -> None:
    source = plain_tables["random"][0]
    root = tmp_path / "t"
    shutil.copytree(source.root, root, ignore=shutil.ignore_patterns(".hoodie"))
    local = open_table(root, index_path=tmp_path / "local")
    local.build(record_key="id", record_index=True, key_fpp=1e-4, progress=False)
    on_spark = open_table(root, index_path=tmp_path / "spark")
    build_index(spark, on_spark, record_key="id", record_index=True, key_fpp=1e-4, files_per_task=5)
    assert local.snapshot().config == on_spark.snapshot().config
    assert _record_keys(local).equals(_record_keys(on_spark))
    assert _record_index(local).equals(_record_index(on_spark))
    assert _record_index(local).num_rows == FILES * ROWS
    live = on_spark.snapshot().live  # written by the tasks: one file per group of 5 files
    assert (len(live["record_keys"]), len(live["files"]), len(live["record_index"])) == (3, 3, 1)


@pytest.mark.parametrize("with_keys", [False, True])
def test_keys_computed_on_spark_are_the_local_ones(
    spark: SparkSession, hudi_tables: dict[str, Path], with_keys: bool
) -> None:
    """Hudi's footer filters (kept bit-exact) and, without meta fields, filters built from the keys."""
    for name in ("v9_txns_simple_meta", "v6_simplekeygen_hivestyle_no_metafields"):
        t = open_table(hudi_tables[name])
        spec = t.reader.record_key_spec()  # type: ignore[attr-defined]
        assert spec is not None
        files = t.reader.list_files()
        local = compute_file_keys(t.root, files, spec, 1e-5, with_keys, progress=False)
        remote = compute_keys_on_spark(spark, 2, t.root, files, spec, 1e-5, with_keys)
        assert remote.min_key.equals(local.min_key) and remote.max_key.equals(local.max_key)
        assert [f.to_bytes() if f else None for f in remote.filters] == [
            f.to_bytes() if f else None for f in local.filters
        ]
        assert [f.type_code if f else None for f in remote.filters] == [
            f.type_code if f else None for f in local.filters
        ]
        if with_keys:
            assert remote.keys is not None and local.keys is not None
            assert remote.keys.equals(local.keys)
        else:
            assert remote.keys is None


Located = tuple[str | None, str | None]  # (file, file id)


def _files_by_row(result: Any) -> dict[int, set[Located]]:
    """row -> the ``(_file, _file_id)`` of each output row of that input row."""
    out: dict[int, set[Located]] = {}
    for r in result.select("row", "_file", "_file_id").collect():
        out.setdefault(r["row"], set()).add((r["_file"], r["_file_id"]))
    return out


def _local_by_key(local: pa.Table, per_partition: bool) -> dict[tuple[str, str | None], set[Located]]:
    """(key, its partition, or None globally) -> the (file, file id) of its rows in a local result."""
    out: dict[tuple[str, str | None], set[Located]] = {}
    columns = (local[c].to_pylist() for c in ("key", "partition", "file", "file_id"))
    for k, p, f, i in zip(*columns, strict=True):
        out.setdefault((k, p if per_partition else None), set()).add((f, i))
    return out


def test_a_key_in_two_files_repeats_its_row_once_per_file(
    spark: SparkSession, hudi_tables: dict[str, Path], tmp_path: Path
) -> None:
    """v9_timebasedkeygen_nonhivestyle holds TXN-001 (and TXN-003) in two live files of a partition:
    each row of such a key comes once per file, as locally; strictness refuses when asked."""
    t = open_table(hudi_tables["v9_timebasedkeygen_nonhivestyle"], index_path=tmp_path / "idx")
    t.build(record_index=True, progress=False)
    rows = _hudi_rows(t, ["_hoodie_record_key"])
    keys = [*rows["_hoodie_record_key"].to_pylist(), "TXN-404"]
    parts = [*rows["part"].to_pylist(), rows["part"][0].as_py() + "/"]  # a trailing slash is the same
    df = spark.createDataFrame(pa.table({"row": pa.array(np.arange(len(keys))), "k": keys, "part": parts}))
    for method in ("bloom", "record"):
        for partition_col, local_parts in ((None, None), ("part", parts)):
            local = t.tag(keys, local_parts, using=method)  # type: ignore[arg-type]
            assert tag_stats(local).several_files > 0
            result, stats = tag_with_stats(
                spark,
                t,
                df,
                key_cols=["k"],
                partition_col=partition_col,
                using=method,  # type: ignore[arg-type]
            )
            assert result.count() == local.num_rows
            by_key = _local_by_key(local, partition_col is not None)
            where = [p.rstrip("/") for p in parts] if partition_col else [None] * len(keys)
            got = _files_by_row(result)
            assert got == {i: by_key[(k, p)] for i, (k, p) in enumerate(zip(keys, where, strict=True))}
            assert any(len(f) == 2 for f in got.values())
            assert stats.several_files == len({k for (k, _), f in by_key.items() if len(f) > 1})
            with pytest.raises(DuplicateKeyError, match=r"'TXN-00[13]'"):
                tag(
                    spark,
                    t,
                    df,
                    key_cols=["k"],
                    partition_col=partition_col,
                    using=method,
                    on_duplicate="error",
                )


def test_partition_values_map_to_the_tables_paths_on_spark(spark: SparkSession, tmp_path: Path) -> None:
    """The local rule on the executors: bare values and trailing slashes find their keys, a new
    partition holds inserts, null is a non-partitioned table's partition, a value that cannot be
    mapped is a PartitionPathError."""
    root = tmp_path / "t"
    for region, ids in (("apac", ["1", "2"]), ("eu", ["3"])):
        (root / f"region={region}").mkdir(parents=True)
        pq.write_table(pa.table({"id": ids}), root / f"region={region}" / "f.parquet")
    t = open_table(root)
    t.build(record_key="id", record_index=True, progress=False)
    keys = ["1", "2", "3", "3", "1"]
    given = ["apac", "region=apac/", "eu/", "jp", "region=eu"]
    df = spark.createDataFrame(pa.table({"row": pa.array(np.arange(5)), "id": keys, "p": given}))
    for method in ("bloom", "record"):
        local = t.tag(keys, given, using=method)  # type: ignore[arg-type]
        assert local["partition"].to_pylist() == [
            "region=apac",
            "region=apac",
            "region=eu",
            "region=jp",
            "region=eu",
        ]
        got = _files_by_row(tag(spark, t, df, partition_col="p", using=method))  # type: ignore[arg-type]
        located = zip(local["file"].to_pylist(), local["file_id"].to_pylist(), strict=True)
        assert got == {i: {pair} for i, pair in enumerate(located)}
        assert [(None, None) in got[i] for i in range(5)] == [False, False, False, True, True]
        assert {i for pair in got.values() for _, i in pair} == {"f", None}  # the file name's stem
        bad = spark.createDataFrame(pa.table({"id": ["1"], "p": ["country=apac"]}))
        with pytest.raises(
            PartitionPathError, match="'country=apac': level 1 'country=apac' names another key"
        ):
            tag(spark, t, bad, partition_col="p", using=method).collect()  # type: ignore[arg-type]

    flat = tmp_path / "flat"
    flat.mkdir()
    pq.write_table(pa.table({"id": pa.array([5, 6], pa.int64())}), flat / "a.parquet")
    f = open_table(flat)
    f.build(record_key="id", record_index=True, progress=False)
    df = spark.createDataFrame(
        pa.table(
            {
                "row": pa.array(np.arange(3)),
                "id": pa.array([6, 5, 12345], pa.int64()),
                "p": pa.nulls(3, pa.string()),
            }
        )
    )
    for method in ("bloom", "record"):
        got = _files_by_row(tag(spark, f, df, partition_col="p", using=method))  # type: ignore[arg-type]
        a = (str(flat / "a.parquet"), "a")
        assert got == {0: {a}, 1: {a}, 2: {(None, None)}}


def _mor_probe(t: IndexedTable) -> tuple[list[str], list[str]]:
    """Every key written to the table's slices (live or deleted) with its partition, and a key
    never written per partition."""
    written = sorted(written_keys(Path(t.root), t.reader))  # type: ignore[arg-type]
    parts = sorted({p for _, p in written})
    asked = written + [(f"never-{i}", p) for i, p in enumerate(parts)]
    return [k for k, _ in asked], [p for _, p in asked]


@pytest.mark.parametrize("name", ["mor_avro_v9_timebasedkeygen_nonhivestyle", "written"])
def test_merge_on_read_tables_tag_as_locally(
    spark: SparkSession, copy_table: Callable[[str], Path], tmp_path: Path, name: str
) -> None:
    """The slices decide inside the tasks as locally: deleted keys are inserts, keys of groups of
    log files only are found there, a key in two groups (TXN-001) comes once per group."""
    root = copy_table(name) if name != "written" else scenario(tmp_path / "t", 9, "ts").root
    t = open_table(root)
    t.build(record_index=True, progress=False)
    keys, parts = _mor_probe(t)
    df = spark.createDataFrame(pa.table({"row": pa.array(np.arange(len(keys))), "k": keys, "part": parts}))
    for method in ("bloom", "record"):
        for partition_col, local_parts in ((None, None), ("part", parts)):
            local = t.tag(keys, local_parts, using=method)  # type: ignore[arg-type]
            result, stats = tag_with_stats(
                spark,
                t,
                df,
                key_cols=["k"],
                partition_col=partition_col,
                using=method,  # type: ignore[arg-type]
            )
            by_key = _local_by_key(local, partition_col is not None)
            where = parts if partition_col else [None] * len(keys)
            got = _files_by_row(result)
            assert got == {i: by_key[(k, p)] for i, (k, p) in enumerate(zip(keys, where, strict=True))}
            assert stats.slices_read > 0 and stats.updates == tag_stats(local).updates
            inserts = sum(f == {(None, None)} for f in got.values())
            assert 0 < inserts < len(keys)
