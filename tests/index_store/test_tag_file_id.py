"""``tag`` reports beside each file its ``file_id``: the Hudi file group holding the key on the
real copy-on-write tables (the oracle: hudi-rs's ``get_file_slices()``, and ``_hoodie_file_name``
where the rows carry it), the file name's stem on plain tables, named as the secondary index
names the files it indexes; for every method and both ``on_duplicate`` modes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import hudi
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hudi_data import COW_TABLES

from index_store import DuplicateKeyError, open_table
from index_store.partitions import read_files
from index_store.partitions.secondary import MANIFEST, read_manifest
from index_store.secondary.build import file_id_of
from index_store.tables.file_ids import hudi_file_ids, stem_file_ids
from index_store.tables.hudi_files import parse_base, parse_log_file_name

METHODS: list[Literal["bloom", "record"]] = ["bloom", "record"]
NON_EMPTY = [t for t in COW_TABLES if "empty" not in t]

Located = tuple[str | None, str | None]  # (file name, file id)


def test_file_ids_of_names() -> None:
    """The vectorized rules against the secondary index's own (``file_id_of``) and Hudi's name
    parsers, on awkward names."""
    plain = [
        "part-00001.snappy.parquet",
        "a/b/data file.parquet",
        "x=1/.hidden.parquet",
        "noext",
        "été/naïve.parquet",
        "a/b.c.d",
        "tab\there.parquet",
    ]
    assert stem_file_ids(pa.array(plain)).to_pylist() == [file_id_of(p, None) for p in plain]
    base = "p=1/3e93c8a9-fda0-4e8a-91dc-b4ade7dab76d-0_1-27-53_20260307162557587.parquet"
    log = "p=1/.3e93c8a9-fda0-4e8a-91dc-b4ade7dab76d-0_20260307162604102.log.1_0-52-126"
    names = [base, log, "part-0.parquet"]
    parsed_base, parsed_log = parse_base(os.path.basename(base)), parse_log_file_name(os.path.basename(log))
    assert parsed_base is not None and parsed_log is not None
    assert hudi_file_ids(pa.array(names)).to_pylist() == [parsed_base.file_id, parsed_log.file_id, "part-0"]


def _hudi_rs_holders(
    root: Path, key_of: Callable[[pa.Table], pa.Array]
) -> dict[tuple[str, str], set[Located]]:
    """(key, partition) -> (base file name, file group id) of every live row, as hudi-rs lists the
    latest file slices; where the rows carry ``_hoodie_file_name``, its file id is the slice's."""
    holders: dict[tuple[str, str], set[Located]] = {}
    for s in hudi.HudiTable(str(root)).get_file_slices():
        rows = pq.read_table(root / s.base_file_relative_path())
        if "_hoodie_file_name" in rows.column_names:
            written = pc.unique(rows["_hoodie_file_name"]).drop_null().to_pylist()
            assert {name.split("_")[0] for name in written} <= {s.file_id}
        for key in key_of(rows).to_pylist():
            holders.setdefault((key, s.partition_path), set()).add((s.base_file_name, s.file_id))
    return holders


def _tagged(result: pa.Table, by_partition: bool) -> dict[tuple[str, str | None], set[Located]]:
    out: dict[tuple[str, str | None], set[Located]] = {}
    columns = (result[c].to_pylist() for c in ("key", "partition", "file", "file_id"))
    for key, part, file, file_id in zip(*columns, strict=True):
        name = None if file is None else os.path.basename(file)
        out.setdefault((key, part if by_partition else None), set()).add((name, file_id))
    return out


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", NON_EMPTY)
def test_a_real_cow_table_tags_each_key_with_its_file_group(
    name: str, method: Literal["bloom", "record"], copy_table: Callable[[str], Path]
) -> None:
    root = copy_table(name)
    t = open_table(root)
    t.build(progress=False, record_index=method == "record")
    spec = t.reader.record_key_spec()
    assert spec is not None
    holders = _hudi_rs_holders(root, spec.keys_of)
    assert holders
    pairs = sorted(holders)
    keys = [k for k, _ in pairs] + ["no-such-key"]
    parts = [p for _, p in pairs] + [pairs[0][1]]
    expected = {**holders, ("no-such-key", pairs[0][1]): {(None, None)}}

    result = t.tag(keys, parts, using=method)
    assert result.column_names == ["key", "partition", "file", "file_id"]
    assert _tagged(result, by_partition=True) == expected
    everywhere: dict[tuple[str, str | None], set[Located]] = {}
    for (key, _), located in expected.items():
        everywhere.setdefault((key, None), set()).update(located)
    assert _tagged(t.tag(keys, using=method), by_partition=False) == everywhere

    several = [kp for kp, located in holders.items() if len(located) > 1]
    if several:  # Hudi's insert wrote the key twice: strictness refuses, naming it
        with pytest.raises(DuplicateKeyError, match=repr(several[0][0])):
            t.tag([several[0][0]], [several[0][1]], using=method, on_duplicate="error")
    else:
        strict = t.tag(keys, parts, using=method, on_duplicate="error")
        assert strict.select(["file", "file_id"]).equals(result.select(["file", "file_id"]))


def _write_plain(root: Path) -> dict[str, list[str]]:
    """A hive-partitioned plain table with awkward file names; file -> its keys (key 7 twice)."""
    files = {
        "region=eu/part-00000.snappy.parquet": ["1", "2", "7"],
        "region=eu/data file.parquet": ["3", "4"],
        "region=us/x.y.z.parquet": ["5", "6", "7"],
    }
    for rel, ids in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": ids, "n": [int(i) for i in ids]}), root / rel)
    return files


@pytest.mark.parametrize("method", METHODS)
def test_a_plain_table_tags_each_key_with_the_secondary_index_name_of_its_file(
    method: Literal["bloom", "record"], tmp_path: Path
) -> None:
    files = _write_plain(tmp_path)
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=True, progress=False)
    t.create_index("n", index_type="value")
    t.build_index()
    # The secondary index files each base file's index under <type>/<version>/<file id>/.
    snap = t.snapshot()
    manifest = read_manifest(t.index_root, snap.live[MANIFEST])
    listed = read_files(t.index_root, snap.live["files"], ["file_idx", "path"])
    path_of = dict(zip(listed["file_idx"].to_pylist(), listed["path"].to_pylist(), strict=True))
    folder = {
        path_of[i]: rel.split("/")[2]
        for i, rel in zip(manifest["file_idx"].to_pylist(), manifest["index_file"].to_pylist(), strict=True)
    }
    assert sorted(folder.values()) == ["data_file", "part-00000", "x"]

    keys = ["1", "3", "5", "7", "8"]
    result = t.tag(keys, using=method)
    rows = list(zip(*(result[c].to_pylist() for c in ("key", "file", "file_id")), strict=True))
    prefix = str(tmp_path) + os.sep
    found = [(k, prefix + rel, folder[rel]) for k in keys for rel, ids in files.items() if k in ids]
    expected = [*found, ("8", None, None)]
    assert sorted(rows, key=repr) == sorted(expected, key=repr)
    assert [k for k, *_ in rows] == ["1", "3", "5", "7", "7", "8"]  # input order, 7 once per file
    with pytest.raises(DuplicateKeyError, match="'7'"):
        t.tag(keys, using=method, on_duplicate="error")
    strict = t.tag(keys[:3], ["region=eu", "eu", "us"], using=method, on_duplicate="error")
    assert strict["file_id"].to_pylist() == ["part-00000", "data_file", "x"]
