"""What the built-in readers answer when asked their capabilities, and the format registry.

Callers (the index, the CLI, the DuckDB and Spark adapters) ask these instead of testing which
format a reader is; each answer here is what the branch it replaced decided.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_store.errors import TableFormatError, UnsupportedTableError
from index_store.tables import (
    FORMATS,
    FileSlice,
    FormatRegistry,
    OpenOptions,
    Partitioning,
    PlainParquetTable,
    TableReaderBase,
    list_files,
    listing,
    open_reader,
    require_table,
)
from index_store.tables.plain import PLAIN_FORMAT
from index_store.tables.refused import DELTA_FORMAT


def test_a_plain_directory_is_read_by_a_glob_with_hive_columns(tmp_path: Path) -> None:
    for region in ("eu", "us"):
        (tmp_path / f"region={region}").mkdir()
        pq.write_table(pa.table({"x": [1]}), tmp_path / f"region={region}/f.parquet")
    reader = open_reader(tmp_path)
    assert reader.read_as == "glob" and not reader.record_key_declared
    assert reader.partitioning() == Partitioning(folders=True, hive_style=True, fields=None)
    assert reader.folder_columns() == ["region"]
    assert reader.timeline_dir is None and reader.record_key_spec() is None
    assert reader.file_slices() == [FileSlice(f.path, f.partition, f) for f in reader.list_files()]
    assert listing(reader) is listing(reader)  # kept while nothing changed
    assert list_files(reader, stat=True) == reader.list_files()


def test_a_flat_directory_has_no_folder_columns(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "f.parquet")
    assert open_reader(tmp_path).folder_columns() == []


@pytest.mark.parametrize(
    ("name", "hive_style", "fields"),
    [
        ("v6_simplekeygen_hivestyle_no_metafields", True, ("byteField",)),
        ("v6_simplekeygen_nonhivestyle", False, ("byteField",)),
        ("v6_nonpartitioned", True, ()),  # hive-style said, no partition field
    ],
)
def test_a_hudi_table_is_read_by_its_file_list(
    hudi_tables: dict[str, Path], name: str, hive_style: bool, fields: tuple[str, ...]
) -> None:
    reader = open_reader(hudi_tables[name])
    assert reader.read_as == "files" and reader.record_key_declared
    assert reader.folder_columns() == []  # the base files store the partition columns
    partitioning = reader.partitioning()
    assert (partitioning.hive_style, partitioning.fields) == (hive_style, fields)
    assert reader.timeline_dir is not None and os.path.isdir(reader.timeline_dir)
    spec = reader.record_key_spec()
    assert spec is not None and spec.fields
    slices = reader.file_slices()
    assert [s.base for s in slices] == reader.list_files() and all(s.logs == () for s in slices)
    groups = [(f.partition, f.file_group) for f in reader.list_files()]
    assert [(s.partition, s.file_id) for s in slices] == groups


def test_require_table_asks_the_reader_for_stray_files(tmp_path: Path) -> None:
    (tmp_path / "notes.csv").write_text("a,b\n")
    reader = open_reader(tmp_path)
    with pytest.raises(TableFormatError, match=r"notes\.csv"):
        require_table(reader, reader.list_files())

    class Empty(TableReaderBase):
        root = str(tmp_path)

        def list_files(self) -> list:  # type: ignore[type-arg]
            return []

    require_table(Empty(), [])  # a format without stray files: an empty table


def test_defaults_of_a_reader_that_says_only_its_files(tmp_path: Path) -> None:
    class Minimal(TableReaderBase):
        kind = "minimal"
        root = str(tmp_path)

        def list_files(self) -> list:  # type: ignore[type-arg]
            return []

    reader = Minimal()
    assert reader.read_as == "files" and not reader.record_key_declared
    assert reader.partitioning() == Partitioning() and reader.folder_columns() == []
    assert reader.partition_schema() == pa.schema([]) and reader.latest_instant() is None
    assert reader.record_key_field() is None and reader.record_key_spec() is None
    assert reader.timeline_dir is None and reader.stray_files() == [] and reader.file_slices() == []
    assert reader.listing().files == ()


def test_the_registry_asks_formats_in_order(tmp_path: Path) -> None:
    assert FORMATS.names() == ("hudi", "delta", "iceberg", "parquet")
    (tmp_path / "_delta_log").mkdir()
    assert FORMATS.detect(str(tmp_path)) is DELTA_FORMAT
    with pytest.raises(UnsupportedTableError, match="Delta Lake"):
        FORMATS.open(str(tmp_path), OpenOptions())
    registry = FormatRegistry(fallback=PLAIN_FORMAT)
    assert isinstance(registry.open(str(tmp_path), OpenOptions()), PlainParquetTable)
    with pytest.raises(ValueError, match="registered already"):
        FORMATS.register(DELTA_FORMAT)
    with pytest.raises(ValueError, match="registered already"):
        registry.register(PLAIN_FORMAT)
