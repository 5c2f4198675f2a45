"""The ``record_index`` partition: record key -> data file, Arrow IPC shards sorted by key hash.

Real files under tmp_path; every lookup is checked against a brute-force dict of what was written.
Files are written in format v2 (4 KiB pages of records) unless a test asks for v1 (the older
columns layout, still read).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hudi_expr import FileStats, hash_keys
from index_store.config import IndexConfig
from index_store.errors import IndexCorruptError, RecordKeyError
from index_store.partitions.base import Batch, FileKeys, LiveIndex
from index_store.partitions.record_index import (
    KEYS_PER_SHARD,
    MAX_SHARDS,
    METADATA_KEY,
    PAGE_ROWS,
    PAGES_SCHEMA,
    RECORD_INDEX_FORMAT,
    RECORD_INDEX_SCHEMA,
    RecordIndexPartition,
    RecordLookup,
    _search_pages,
    default_shards,
    lookup_record_keys,
    read_record_index,
    write_record_index,
)
from index_store.tables.base import DataFile


def _uuids(rng: np.random.Generator, n: int) -> list[str]:
    return [str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**62, size=n)]


def _batch(keys: Sequence[str | None], files: Sequence[int], file_idx: Sequence[int]) -> Batch:
    """A commit of data files numbered ``file_idx`` whose keys are ``keys`` (``files``: the
    position of each key's data file in the batch)."""
    n = len(file_idx)
    paths = [f"f{i}.parquet" for i in file_idx]
    table = pa.table({"key": pa.array(keys, pa.string()), "file": pa.array(files, pa.int32())})
    nulls = pa.nulls(n, pa.string())
    return Batch(
        files=[DataFile(path=p, size=1) for p in paths],
        file_idx=np.asarray(file_idx, dtype=np.int64),
        version=1,
        stats=FileStats(paths, [1] * n, {}, pa.schema([])),
        record_keys=FileKeys(min_key=nulls, max_key=nulls, filters=[None] * n, keys=table),
    )


def _live_index(live: Sequence[str], file_idx: Sequence[int], record_index: bool = True) -> LiveIndex:
    files = pa.table({"file_idx": pa.array(sorted(file_idx), pa.int64())})
    return LiveIndex(
        files=files,
        live={"record_index": list(live)},
        schema=pa.schema([]),
        config=IndexConfig(record_index=record_index),
        version=9,
    )


def _as_dict(found: RecordLookup) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for pos, idx in zip(found.key_pos.tolist(), found.file_idx.tolist(), strict=True):
        out[pos].append(idx)
    return {k: sorted(v) for k, v in out.items()}


def _expected(stored: dict[str, list[int]], probe: Sequence[str | None]) -> dict[int, list[int]]:
    return {i: sorted(stored[k]) for i, k in enumerate(probe) if k is not None and k in stored}


def _check(found: RecordLookup) -> None:
    assert found.key_pos.dtype == np.int64 and found.file_idx.dtype == np.int64
    assert np.all(np.diff(found.key_pos) >= 0)  # sorted by key position


def test_lookup_equals_a_dict_over_several_commits(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    part = RecordIndexPartition(shards=4)
    stored: dict[str, list[int]] = defaultdict(list)
    live: list[str] = []
    all_keys: list[str] = []
    next_idx = 0
    for commit in range(3):
        keys = _uuids(rng, 3000)
        if commit:  # some keys again, in a newer file (a rewrite of an older file)
            keys += list(rng.choice(all_keys, 500, replace=False))
        n_files = 5
        files = rng.integers(0, n_files, size=len(keys))
        file_idx = np.arange(next_idx, next_idx + n_files)
        next_idx += n_files
        rel = part.write(tmp_path, _batch(keys, files.tolist(), file_idx.tolist()))
        assert rel is not None and rel.startswith("record_index/") and rel.endswith(".idx")
        live.append(rel)
        for k, f in zip(keys, files.tolist(), strict=True):
            stored[k].append(int(file_idx[f]))
        all_keys += keys
    twice = [k for k, v in stored.items() if len(v) > 1]
    assert len(twice) >= 900
    absent = _uuids(np.random.default_rng(2), 1000)
    present = list(rng.choice(list(stored), 2000))  # with repeats: duplicate input keys
    probe: list[str | None] = [*present, *absent, None, present[0], None, present[0]]
    rng.shuffle(probe)
    found = lookup_record_keys(tmp_path, live, pa.array(probe, pa.string()))
    _check(found)
    assert _as_dict(found) == _expected(stored, probe)
    assert found.files_opened == 3
    assert 0 < found.bytes_read <= sum((tmp_path / rel).stat().st_size for rel in live)
    # A key in two files: both entries.
    one = lookup_record_keys(tmp_path, live, pa.array([twice[0]]))
    assert sorted(one.file_idx.tolist()) == sorted(stored[twice[0]]) and len(one.file_idx) == 2
    # Everything written reads back.
    rows = read_record_index(tmp_path, live)
    assert rows.schema.names == ["key", "file_idx"]
    back: dict[str, list[int]] = defaultdict(list)
    for k, i in zip(rows["key"].to_pylist(), rows["file_idx"].to_pylist(), strict=True):
        back[k].append(i)
    assert {k: sorted(v) for k, v in back.items()} == {k: sorted(v) for k, v in stored.items()}


def test_keys_of_any_string_layout_and_none_or_null_only(tmp_path: Path) -> None:
    keys = _uuids(np.random.default_rng(3), 200)
    rel = write_record_index(tmp_path, pa.array(keys), np.arange(200))
    probe = [keys[5], "nope", keys[7]]
    want = {0: [5], 2: [7]}
    for array in (
        pa.array(probe, pa.string()),
        pa.array(probe, pa.large_string()),
        pa.array(probe, pa.string_view()),
        pa.array(probe).dictionary_encode(),
        pa.chunked_array([probe[:1], probe[1:]]),
    ):
        assert _as_dict(lookup_record_keys(tmp_path, [rel], array)) == want
    nothing = lookup_record_keys(tmp_path, [rel], pa.array([None, None], pa.string()))
    assert len(nothing.key_pos) == 0 and nothing.files_opened == 0 and nothing.bytes_read == 0
    assert len(lookup_record_keys(tmp_path, [rel], pa.array([], pa.string())).key_pos) == 0
    assert len(lookup_record_keys(tmp_path, [], pa.array(probe)).key_pos) == 0
    with pytest.raises(RecordKeyError, match="strings"):
        lookup_record_keys(tmp_path, [rel], pa.array([1, 2]))


@pytest.mark.parametrize("version", [1, 2])
def test_lookup_opens_only_the_batches_its_keys_fall_in(tmp_path: Path, version: int) -> None:
    keys = _uuids(np.random.default_rng(4), 5000)
    rel = write_record_index(
        tmp_path, pa.array(keys), np.arange(5000), shards=8, batch_rows=300, version=version
    )
    meta = json.loads(pa.ipc.open_file(tmp_path / rel).schema.metadata[METADATA_KEY])
    assert meta["shards"] == 8 and len(meta["shard_batches"]) == 8
    n_batches = len(meta["batch_rows"])
    assert n_batches > 16 and max(meta["batch_rows"]) <= 300 and sum(meta["batch_rows"]) == 5000
    one = lookup_record_keys(tmp_path, [rel], pa.array([keys[123]]))
    assert one.file_idx.tolist() == [123] and one.files_opened == 1
    size = (tmp_path / rel).stat().st_size
    metadata = len(pa.ipc.open_file(tmp_path / rel).schema.metadata[METADATA_KEY])
    every = lookup_record_keys(tmp_path, [rel], pa.array(keys))
    assert every.key_pos.tolist() == list(range(5000)) and every.file_idx.tolist() == list(range(5000))
    if version == 1:
        # the metadata, then a few pages of one batch: the hash's page, the key's string, its file_idx
        assert metadata < one.bytes_read <= metadata + 6 * 4096 < size
        assert metadata + 4096 * (size // 4096 - 2) <= every.bytes_read <= metadata + size  # every page
        return
    # v2: the key's page (its hash, file id and key in one record), the next one if its run
    # started at a page's first row; every lookup: each page once (pages are 4 KiB-aligned)
    assert metadata + 4096 <= one.bytes_read <= metadata + 2 * 4096
    per_page = meta["layout"]["records_per_page"]
    pages = sum(-(-rows // per_page) for rows in meta["batch_rows"])
    assert every.bytes_read == metadata + 4096 * pages < size


def test_hash_collisions_never_match_the_wrong_key(tmp_path: Path) -> None:
    keys = ["alpha", "beta", "gamma", "delta", "alpha"]
    real = hash_keys(pa.array(keys))[0]
    # Every key stored under the hash of "alpha": lookups of beta, gamma, delta probe that run.
    forced = np.full(len(keys), real[0], dtype=np.uint64)
    rel = write_record_index(tmp_path, pa.array(keys), np.array([10, 11, 12, 13, 14]), hashes=forced)
    found = lookup_record_keys(tmp_path, [rel], pa.array(["alpha", "beta", "zeta"]))
    assert _as_dict(found) == {0: [10, 14]}
    # "beta" stored under its own hash too, colliding with "epsilon" (stored under beta's hash).
    keys2 = ["beta", "epsilon", "omega"]
    hashes2 = np.array([real[1], real[1], hash_keys(pa.array(["omega"]))[0][0]], dtype=np.uint64)
    rel2 = write_record_index(tmp_path, pa.array(keys2), np.array([20, 21, 22]), hashes=hashes2)
    found = lookup_record_keys(tmp_path, [rel, rel2], pa.array(["beta", "epsilon", "omega", "alpha"]))
    assert _as_dict(found) == {0: [20], 2: [22], 3: [10, 14]}


def test_a_run_of_equal_hashes_is_never_split_across_batches(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    keys = _uuids(rng, 1000)
    hashes = hash_keys(pa.array(keys))[0]
    # 50 keys share the hash of keys[0]; batches of 7 rows must keep them in one batch.
    hashes[1:50] = hashes[0]
    rel = write_record_index(tmp_path, pa.array(keys), np.arange(1000), hashes=hashes, batch_rows=7)
    meta = json.loads(pa.ipc.open_file(tmp_path / rel).schema.metadata[METADATA_KEY])
    assert max(meta["batch_rows"]) >= 50
    found = lookup_record_keys(tmp_path, [rel], pa.array([keys[0], *keys[50:]]))
    assert found.key_pos.tolist() == list(range(951)) and found.file_idx.tolist() == [0, *range(50, 1000)]


def test_compact_keeps_the_rows_of_live_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    part = RecordIndexPartition()
    keys_a, keys_b = _uuids(rng, 400), _uuids(rng, 400)
    rel_a = part.write(tmp_path, _batch(keys_a, [0] * 200 + [1] * 200, [0, 1]))
    # File 1 rewritten as file 2 (same keys), file 3 new.
    rel_b = part.write(tmp_path, _batch(keys_a[200:] + keys_b, [0] * 200 + [1] * 400, [2, 3]))
    assert rel_a and rel_b
    index = _live_index([rel_a, rel_b], [0, 2, 3])
    assert RecordIndexPartition().compact(tmp_path, _live_index([rel_a, rel_b], [0, 2, 3], False)) is None
    rel = part.compact(tmp_path, index)
    assert rel is not None and rel not in (rel_a, rel_b)
    rows = read_record_index(tmp_path, [rel])
    got = dict(zip(rows["key"].to_pylist(), rows["file_idx"].to_pylist(), strict=True))
    want = {k: 0 for k in keys_a[:200]} | {k: 2 for k in keys_a[200:]} | {k: 3 for k in keys_b}
    assert got == want and len(rows) == 800  # keys_a[200:] of dead file 1 dropped
    found = lookup_record_keys(tmp_path, [rel], pa.array(keys_a))
    assert found.file_idx.tolist() == [0] * 200 + [2] * 200
    # Nothing live: one empty file.
    empty = part.compact(tmp_path, _live_index([rel], []))
    assert empty is not None and len(read_record_index(tmp_path, [empty])) == 0
    none_live = part.compact(tmp_path, _live_index([], [0]))
    assert none_live is not None and len(read_record_index(tmp_path, [none_live])) == 0


def test_an_empty_batch_and_a_batch_without_keys(tmp_path: Path) -> None:
    part = RecordIndexPartition()
    no_keys = _batch([], [], [])
    no_keys = Batch(no_keys.files, no_keys.file_idx, 1, no_keys.stats)
    assert part.write(tmp_path, no_keys) is None
    fk = FileKeys(pa.array([], pa.string()), pa.array([], pa.string()), [])
    assert part.write(tmp_path, Batch([], np.zeros(0, np.int64), 1, no_keys.stats, record_keys=fk)) is None
    rel = part.write(tmp_path, _batch([], [], []))
    assert rel is not None
    assert len(read_record_index(tmp_path, [rel])) == 0
    found = lookup_record_keys(tmp_path, [rel], pa.array(["a"]))
    assert len(found.key_pos) == 0 and found.files_opened == 1
    assert found.bytes_read <= (tmp_path / rel).stat().st_size  # its footer, nothing else
    # Null keys are not stored; a key naming a file outside the batch is an error.
    rel = part.write(tmp_path, _batch(["a", None, "b"], [0, 0, 1], [7, 8]))
    assert rel is not None
    assert read_record_index(tmp_path, [rel]).sort_by("key").to_pylist() == [
        {"key": "a", "file_idx": 7},
        {"key": "b", "file_idx": 8},
    ]
    with pytest.raises(ValueError, match="outside"):
        part.write(tmp_path, _batch(["a"], [2], [7, 8]))


def test_shard_counts(tmp_path: Path) -> None:
    assert default_shards(0) == 1 and default_shards(KEYS_PER_SHARD) == 1
    assert default_shards(KEYS_PER_SHARD + 1) == 2 and default_shards(6 * KEYS_PER_SHARD) == 8
    assert default_shards(10**15) == MAX_SHARDS
    for bad in (0, 3, MAX_SHARDS * 2):
        with pytest.raises(ValueError, match="power of two"):
            RecordIndexPartition(shards=bad)
    keys = _uuids(np.random.default_rng(7), 300)
    for shards in (1, 2, 64, MAX_SHARDS):
        rel = write_record_index(tmp_path, pa.array(keys), np.arange(300), shards=shards)
        meta = json.loads(pa.ipc.open_file(tmp_path / rel).schema.metadata[METADATA_KEY])
        assert meta["shards"] == shards
        assert lookup_record_keys(tmp_path, [rel], pa.array(keys[::-1])).file_idx.tolist() == list(
            range(299, -1, -1)
        )


# ---------------------------------------------------------------------------------------------
# Corrupt files


def _rewrite(
    path: Path,
    meta_change: Callable[[dict[str, Any]], object] | None = None,
    batches_change: Callable[[list[pa.RecordBatch]], list[pa.RecordBatch]] | None = None,
) -> None:
    """Rewrite a record index file with its metadata and/or batches changed."""
    with pa.ipc.open_file(path) as reader:
        meta = json.loads(reader.schema.metadata[METADATA_KEY])
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    if meta_change:
        meta_change(meta)
    if batches_change:
        batches = batches_change(batches)
    plain = PAGES_SCHEMA if batches and batches[0].schema.equals(PAGES_SCHEMA) else RECORD_INDEX_SCHEMA
    schema = plain.with_metadata({METADATA_KEY: json.dumps(meta).encode()})
    data = pa.BufferOutputStream()
    with pa.ipc.new_file(data, schema) as writer:
        for b in batches:
            writer.write_batch(b)
    path.write_bytes(data.getvalue().to_pybytes())


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def written(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, str, list[str]]:
    keys = _uuids(np.random.default_rng(8), 2000)
    rel = write_record_index(
        tmp_path, pa.array(keys), np.arange(2000), shards=2, batch_rows=500, version=request.param
    )
    return tmp_path, rel, keys


@pytest.fixture
def written_v1(tmp_path: Path) -> tuple[Path, str, list[str]]:
    keys = _uuids(np.random.default_rng(8), 2000)
    rel = write_record_index(tmp_path, pa.array(keys), np.arange(2000), shards=2, batch_rows=500, version=1)
    return tmp_path, rel, keys


def _version(root: Path, rel: str) -> int:
    with pa.ipc.open_file(root / rel) as reader:
        return 2 if reader.schema.remove_metadata().equals(PAGES_SCHEMA) else 1


def _corrupt(root: Path, rel: str, keys: list[str], match: str) -> None:
    with pytest.raises(IndexCorruptError, match=match) as info:
        lookup_record_keys(root, [rel], pa.array(keys))
    assert info.value.path == str(root / rel)
    with pytest.raises(IndexCorruptError, match=match):
        read_record_index(root, [rel])


def test_missing_truncated_or_garbage_files(written: tuple[Path, str, list[str]]) -> None:
    root, rel, keys = written
    _corrupt(root, "record_index/gone.idx", keys, "does not exist")
    path = root / rel
    data = path.read_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 9):
        path.write_bytes(data[:cut])
        _corrupt(root, rel, keys, "not an Arrow IPC file")
    path.write_bytes(b"x" * len(data))
    _corrupt(root, rel, keys, "not an Arrow IPC file")
    path.write_bytes(data)
    other = root / "record_index" / "other.idx"
    with pa.ipc.new_file(other, pa.schema([("key", pa.string())])) as w:
        w.write_batch(pa.record_batch([pa.array(["a"])], names=["key"]))
    _corrupt(root, "record_index/other.idx", keys, "unexpected schema")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda m: m.update(format="something.else"), "format"),
        (lambda m: m.update(shards=3), "shard count"),
        (lambda m: m.update(shards=4), "shard batch ranges"),
        (lambda m: m.update(rows=m["rows"] + 1), "row counts"),
        (lambda m: m["batch_rows"].pop(), "record batches but"),
        (lambda m: m["batch_first"].reverse(), "sorted and disjoint|shard"),
        (lambda m: m.update(batch_last=[-1] * len(m["batch_last"])), "out of range"),
        (lambda m: m.update(batch_first=["x"] * len(m["batch_first"])), "out of range"),
        (lambda m: m.update(shard_batches=[[0, 1], [1, len(m["batch_rows"])]]), "another shard"),
        (lambda m: m.pop("shard_batches"), "metadata"),
        (lambda m: m.update(fences="not base64!"), "base64"),
        (lambda m: m.update(fences=m["fences"][:-12]), "bytes of fences"),
        (lambda m: m.update(page_rows=7), "page_rows"),
        (lambda m: m.update(fences=_reversed_fences(m["fences"])), "fences of record batch"),
    ],
)
def test_bad_metadata(
    written: tuple[Path, str, list[str]], change: Callable[[dict[str, Any]], object], match: str
) -> None:
    root, rel, keys = written
    _rewrite(root / rel, meta_change=change)
    _corrupt(root, rel, keys, match)


def _reversed_fences(text: str) -> str:
    fences = np.frombuffer(base64.b64decode(text), dtype="<u8")[::-1]
    return base64.b64encode(fences.tobytes()).decode()


def test_files_without_page_fences_are_searched_whole(written_v1: tuple[Path, str, list[str]]) -> None:
    """Files written before page fences were recorded: the same answers, the whole column searched."""
    root, rel, keys = written_v1
    before = lookup_record_keys(root, [rel], pa.array([*keys[::3], "absent"]))
    _rewrite(root / rel, meta_change=lambda m: (m.pop("fences"), m.pop("page_rows")))
    after = lookup_record_keys(root, [rel], pa.array([*keys[::3], "absent"]))
    assert after.key_pos.tolist() == before.key_pos.tolist()
    assert after.file_idx.tolist() == before.file_idx.tolist()


def test_no_metadata_or_not_json(written: tuple[Path, str, list[str]]) -> None:
    root, rel, keys = written
    with pa.ipc.open_file(root / rel) as reader:
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    plain = PAGES_SCHEMA if _version(root, rel) == 2 else RECORD_INDEX_SCHEMA
    for metadata, match in ((None, "no record index metadata"), ({METADATA_KEY: b"{nope"}, "bad record")):
        schema = plain.with_metadata(metadata) if metadata else plain
        with pa.ipc.new_file(root / rel, schema) as writer:
            for b in batches:
                writer.write_batch(b.replace_schema_metadata(schema.metadata))
        _corrupt(root, rel, keys, match)


def test_an_unsorted_shard(written: tuple[Path, str, list[str]]) -> None:
    root, rel, keys = written
    if _version(root, rel) == 2:
        meta = json.loads(pa.ipc.open_file(root / rel).schema.metadata[METADATA_KEY])
        per_page = meta["layout"]["records_per_page"]

        def reverse_hashes(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
            # In the first page of batch 1, reverse the middle hashes (the batch's ends agree).
            pages = np.frombuffer(batches[1].column(0).buffers()[1], np.uint8).reshape(-1, 4096).copy()
            hashes = pages[0, : 8 * per_page].view("<u8")
            hashes[1:-1] = hashes[1:-1][::-1].copy()
            array = pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(4096), len(pages), [None, pa.py_buffer(pages)]
            )
            return [batches[0], pa.record_batch([array], schema=batches[1].schema), *batches[2:]]

        _rewrite(root / rel, batches_change=reverse_hashes)
        _corrupt(root, rel, keys, "not sorted")
        return

    def shuffle_inside(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
        # Keep each batch's first and last row (the metadata still agrees), reverse the middle.
        b = batches[1]
        order = np.r_[0, np.arange(b.num_rows - 2, 0, -1), b.num_rows - 1]
        return [batches[0], b.take(pa.array(order)), *batches[2:]]

    _rewrite(root / rel, batches_change=shuffle_inside)
    _corrupt(root, rel, keys, "not sorted")


def test_a_batch_that_disagrees_with_the_metadata(written: tuple[Path, str, list[str]]) -> None:
    root, rel, keys = written

    def drop_last_row(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
        return [batches[0].slice(0, batches[0].num_rows - 1), *batches[1:]]

    _rewrite(root / rel, batches_change=drop_last_row)
    _corrupt(root, rel, keys, "rows, not|pages for")


def test_string_offsets_out_of_bounds(written_v1: tuple[Path, str, list[str]]) -> None:
    root, rel, keys = written_v1

    def bad_offsets(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
        b = batches[0]
        key = b.column(1)
        _, offsets, data = key.buffers()
        off = np.frombuffer(offsets, dtype=np.int32).copy()
        off[1:-1] = off[-1] + 1_000_000  # past the data; the last offset (checked cheaply) intact
        broken = pa.StringArray.from_buffers(len(key), pa.py_buffer(off.tobytes()), data)
        return [pa.record_batch([b.column(0), broken, b.column(2)], schema=b.schema), *batches[1:]]

    _rewrite(root / rel, batches_change=bad_offsets)
    _corrupt(root, rel, keys, "offsets out of bounds|Offset invariant")


def test_page_search_equals_searchsorted_with_runs_longer_than_a_page() -> None:
    """The page-wise search finds what a whole-column ``searchsorted`` finds, left and right,
    also for runs of one hash over several 4 KiB pages (512 hashes each) and for hashes outside."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        values = np.sort(
            rng.integers(0, int(rng.integers(2, 40)), int(rng.integers(1, 3000))).astype(np.uint64)
        )
        fences = values[::PAGE_ROWS]
        queries = rng.integers(0, 45, 300).astype(np.uint64)
        lo, hi = _search_pages(values, fences, queries)
        assert np.array_equal(lo, np.searchsorted(values, queries, "left"))
        assert np.array_equal(hi, np.searchsorted(values, queries, "right"))


# ---------------------------------------------------------------------------------------------
# Format v2: pages of records


def _meta(root: Path, rel: str) -> dict[str, Any]:
    return json.loads(pa.ipc.open_file(root / rel).schema.metadata[METADATA_KEY])


def test_v1_and_v2_files_answer_alike_side_by_side(tmp_path: Path) -> None:
    """An index written before format v2 stays readable, alone or next to v2 files."""
    rng = np.random.default_rng(11)
    keys = _uuids(rng, 4000)
    old = write_record_index(tmp_path, pa.array(keys[:2500]), np.arange(2500), version=1)
    new = write_record_index(tmp_path, pa.array(keys[2000:]), np.arange(2000, 4000) + 10_000)
    assert (
        _meta(tmp_path, old)["format"].endswith("v1")
        and _meta(tmp_path, new)["format"] == RECORD_INDEX_FORMAT
    )
    stored: dict[str, list[int]] = defaultdict(list)
    for k, i in zip(keys[:2500], range(2500), strict=True):
        stored[k].append(i)
    for k, i in zip(keys[2000:], range(12_000, 14_000), strict=True):
        stored[k].append(i)
    probe = [*rng.choice(keys, 1500).tolist(), *_uuids(rng, 300), None]
    found = lookup_record_keys(tmp_path, [old, new], pa.array(probe, pa.string()))
    _check(found)
    assert _as_dict(found) == _expected(stored, probe)
    table = read_record_index(tmp_path, [old, new])
    assert sorted(zip(table["key"].to_pylist(), table["file_idx"].to_pylist(), strict=True)) == sorted(
        (k, i) for k, v in stored.items() for i in v
    )


def test_a_file_of_an_unknown_format_is_refused_with_a_rebuild_hint(tmp_path: Path) -> None:
    keys = _uuids(np.random.default_rng(12), 100)
    rel = write_record_index(tmp_path, pa.array(keys), np.arange(100))
    _rewrite(tmp_path / rel, meta_change=lambda m: m.update(format="hudi_expr.record_index.v9"))
    with pytest.raises(IndexCorruptError, match=r"does not read.*Rebuild the index"):
        lookup_record_keys(tmp_path, [rel], pa.array(keys))


@pytest.mark.parametrize("n_files", [3, 70_000, 5_000_000_000])
def test_v2_round_trip_with_narrow_or_wide_file_ids(tmp_path: Path, n_files: int) -> None:
    rng = np.random.default_rng(13)
    keys = [f"key-{i}" for i in rng.permutation(3000)]
    file_idx = rng.integers(0, n_files, 3000)
    rel = write_record_index(tmp_path, pa.array(keys), file_idx, batch_rows=700)
    layout = _meta(tmp_path, rel)["layout"]
    assert layout["file_width"] == (2 if n_files < 1 << 16 else 4 if n_files < 1 << 32 else 8)
    assert layout["codec"] == "raw" and layout["key_width"] == max(len(k) for k in keys)
    probe = [*keys[::7], "key-", "key-1x", "absent"]
    found = lookup_record_keys(tmp_path, [rel], pa.array(probe))
    assert found.key_pos.tolist() == list(range(len(keys[::7])))
    assert found.file_idx.tolist() == file_idx[::7].tolist()
    table = read_record_index(tmp_path, [rel])
    assert dict(zip(table["key"].to_pylist(), table["file_idx"].to_pylist(), strict=True)) == dict(
        zip(keys, file_idx.tolist(), strict=True)
    )


def test_v2_pages_are_page_aligned_and_uuid_keys_packed(tmp_path: Path) -> None:
    keys = _uuids(np.random.default_rng(14), 3000)
    rel = write_record_index(tmp_path, pa.array(keys), np.arange(3000), shards=4, batch_rows=600)
    assert _meta(tmp_path, rel)["layout"]["codec"] == "uuid"
    with pa.memory_map(str(tmp_path / rel)) as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            column = reader.get_batch(i).column(0)
            assert (
                (column.buffers()[1].address - source.address) % 4096 == 0
                if hasattr(source, "address")
                else True
            )
            assert column.buffers()[1].address % 4096 == 0  # the map starts at a page boundary
    # A key that is not a canonical lowercase UUID string cannot be stored: absent, not an error.
    probe = [keys[5], keys[5].upper(), keys[6].replace("-", ""), keys[7] + " ", "", keys[8]]
    found = lookup_record_keys(tmp_path, [rel], pa.array(probe))
    assert found.key_pos.tolist() == [0, 5] and found.file_idx.tolist() == [5, 8]
    assert read_record_index(tmp_path, [rel])["key"].to_pylist() != []
    assert sorted(read_record_index(tmp_path, [rel])["key"].to_pylist()) == sorted(keys)


def test_v2_long_keys_go_to_the_overflow_heap(tmp_path: Path) -> None:
    rng = np.random.default_rng(15)
    keys = [("é" * int(rng.integers(0, 90))) + f"#{i}" for i in range(2000)]
    keys += ["x" * 5000, "x" * 4999 + "y", ""]
    file_idx = np.arange(len(keys))
    rel = write_record_index(tmp_path, pa.array(keys), file_idx, batch_rows=400)
    meta = _meta(tmp_path, rel)
    assert meta["layout"]["key_width"] == 64 and meta["heap_bytes"] > 10_000
    # Long keys must match in full: same length, one byte apart, or a prefix of a stored key.
    probe = [*keys, "x" * 5000 + "y", "x" * 4999 + "z", keys[0][:-1], "é" * 89]
    found = lookup_record_keys(tmp_path, [rel], pa.array(probe))
    assert found.key_pos.tolist() == list(range(len(keys)))
    assert found.file_idx.tolist() == file_idx.tolist()
    one = lookup_record_keys(tmp_path, [rel], pa.array(["x" * 5000]))
    assert one.file_idx.tolist() == [len(keys) - 3]
    # its page, and the 5,000 bytes of the heap (two or three pages)
    assert len(json.dumps(meta)) + 3 * 4096 <= one.bytes_read <= len(json.dumps(meta)) + 5 * 4096
    table = read_record_index(tmp_path, [rel])
    assert dict(zip(table["key"].to_pylist(), table["file_idx"].to_pylist(), strict=True)) == dict(
        zip(keys, file_idx.tolist(), strict=True)
    )


def test_v2_runs_of_one_hash_across_pages(tmp_path: Path) -> None:
    """One key in many rows (several files) over several pages and page starts, and keys sharing
    a hash: every row of the key found, the others told apart by their strings."""
    rng = np.random.default_rng(16)
    keys = _uuids(rng, 3000)
    keys[100:700] = [keys[100]] * 600  # a run of 600 rows: several pages of 141 records
    hashes = hash_keys(pa.array(keys))[0]
    hashes[1001] = hashes[1000]  # keys[1001] stored under keys[1000]'s hash: never its match
    rel = write_record_index(tmp_path, pa.array(keys), np.arange(3000), hashes=hashes)
    probe = [keys[100], keys[1000], keys[1001], keys[2999], *_uuids(rng, 50)]
    found = lookup_record_keys(tmp_path, [rel], pa.array(probe))
    assert _as_dict(found) == {0: list(range(100, 700)), 1: [1000], 3: [2999]}
    others = [k for i, k in enumerate(keys) if not 100 < i < 700 and i != 1001]
    every = lookup_record_keys(tmp_path, [rel], pa.array(others))
    assert len(every.key_pos) == len(others) + 599 and set(every.file_idx.tolist()) == set(range(3000)) - {
        1001
    }


def test_v2_empty_and_single(tmp_path: Path) -> None:
    empty = write_record_index(tmp_path, pa.array([], pa.string()), np.zeros(0, np.int64))
    assert lookup_record_keys(tmp_path, [empty], pa.array(["a"])).key_pos.tolist() == []
    assert read_record_index(tmp_path, [empty]).num_rows == 0
    only_empty_key = write_record_index(tmp_path, pa.array([""]), np.array([7]))
    assert _meta(tmp_path, only_empty_key)["layout"]["key_width"] == 0
    found = lookup_record_keys(tmp_path, [empty, only_empty_key], pa.array(["", "a", None], pa.string()))
    assert found.key_pos.tolist() == [0] and found.file_idx.tolist() == [7]
    assert read_record_index(tmp_path, [only_empty_key])["key"].to_pylist() == [""]
