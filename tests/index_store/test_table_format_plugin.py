"""A table format defined only here plugs in: one reader class, one format, one ``FORMATS.register``.

The "manifest" format keeps the names of its live files in ``_live.txt``; the folder also holds
files the manifest dropped (as Delta and Hudi folders do), so reading every file would be wrong.
The reader says only what differs from ``TableReaderBase``'s defaults, and the index, tagging,
``explain`` and DuckDB read it without any branch on its kind.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb import plan, register
from hudi_expr import col
from index_store import open_table
from index_store.tables import FORMATS, DataFile, FileSlice, OpenOptions, TableReaderBase, open_reader

MANIFEST = "_live.txt"


class ManifestTable(TableReaderBase):
    """The files ``_live.txt`` names; everything else is the defaults (read by file list)."""

    kind = "manifest"

    def __init__(self, root: str) -> None:
        self.root = root

    def list_files(self) -> list[DataFile]:
        with open(os.path.join(self.root, MANIFEST)) as f:
            names = sorted(line.strip() for line in f if line.strip())
        stats = [os.stat(os.path.join(self.root, name)) for name in names]
        return [DataFile(n, s.st_size, mtime_ns=s.st_mtime_ns) for n, s in zip(names, stats, strict=True)]


class ManifestFormat:
    """Recognises a folder holding ``_live.txt``."""

    name = "manifest"

    def detect(self, root: str) -> bool:
        return os.path.isfile(os.path.join(root, MANIFEST))

    def open(self, root: str, options: OpenOptions) -> ManifestTable:
        return ManifestTable(root)


@pytest.fixture
def registered() -> Iterator[None]:
    FORMATS.register(ManifestFormat())
    yield
    FORMATS.unregister("manifest")


def _write_manifest(root: Path, names: list[str]) -> None:
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text("".join(n + "\n" for n in names))
    tmp.replace(root / MANIFEST)  # renamed in: the folder's time moves, as a commit log's does


def _table(root: Path) -> None:
    """Four live files of ten keys each (0..39), and a dropped file holding keys 1000..1009."""
    root.mkdir()
    for i in range(4):
        ids = pa.array(range(i * 10, i * 10 + 10), pa.int64())
        pq.write_table(
            pa.table({"id": ids, "v": pa.array([f"v{x}" for x in ids.to_pylist()])}), root / f"f{i}.parquet"
        )
    ids = pa.array(range(1000, 1010), pa.int64())
    pq.write_table(pa.table({"id": ids, "v": pa.array(["old"] * 10)}), root / "dropped.parquet")
    _write_manifest(root, [f"f{i}.parquet" for i in range(4)])


def test_the_format_is_found_through_the_registry(registered: None, tmp_path: Path) -> None:
    _table(tmp_path / "t")
    reader = open_reader(tmp_path / "t")
    assert isinstance(reader, ManifestTable) and reader.kind == "manifest"
    assert "manifest" in FORMATS.names()
    assert [f.path for f in reader.list_files()] == [f"f{i}.parquet" for i in range(4)]
    assert reader.file_slices() == [FileSlice(f.path, "", f) for f in reader.list_files()]  # no log files
    assert reader.read_as == "files" and reader.timeline_dir is None and not reader.record_key_declared


def test_unregistered_the_folder_is_plain_parquet(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    assert open_reader(tmp_path / "t").kind == "parquet"


def test_build_prune_tag_and_explain(registered: None, tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    t = open_table(root)
    t.build(record_key="id", progress=False)
    assert t.snapshot().config.table_kind == "manifest"
    result = t.prune(col("id") >= 25)
    assert sorted(os.path.basename(f) for f in result.files) == ["f2.parquet", "f3.parquet"]
    assert result.total == 4  # the dropped file is no file of the table
    assert result.explain().splitlines() == [
        "kept 2 of 4 files (2 skipped) for: id >= 25",
        "         2 skipped by id >= 25  (alone it rules out 2)",
    ]
    tagged = t.tag(["5", "37", "1003", "99"])
    files = [os.path.basename(f) if f else None for f in tagged["file"].to_pylist()]
    assert files == ["f0.parquet", "f3.parquet", None, None]  # 1003 lives only in the dropped file


def test_duckdb_reads_only_the_listed_files(registered: None, tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    open_table(root).build(progress=False)
    con = duckdb.connect()
    register(con, "t", root)
    assert con.sql("SELECT count(*), max(id) FROM t").fetchall() == [(40, 39)]
    p = plan(con, "SELECT id FROM t WHERE id >= 25 ORDER BY id")
    assert [row[0] for row in p.relation().fetchall()] == list(range(25, 40))
    [table] = p.tables
    assert (table.kept, table.total) == (2, 4)
    _write_manifest(root, ["f0.parquet", "dropped.parquet"])  # a new commit: the view follows it
    assert con.sql("SELECT count(*), max(id) FROM t").fetchall() == [(20, 1009)]
