"""What ``IndexedTable.build`` keeps and refuses: a rebuild keeps the index's configuration (bloom
columns, record key, record index, secondary indexes) unless an argument changes it; a folder
that is not a table is refused with nothing written; column names are taken as the schema has
them first (``"a.b"`` may be one top-level column), then as paths into structs."""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_expr import col
from index_store import (
    IndexConfig,
    IndexDefinitionError,
    IndexedTable,
    NotATableError,
    RecordKeyError,
    TableFormatError,
    open_table,
)
from index_store.tagging import tag_stats

FILES = 4


def _write(root: Path, with_city: bool = True) -> None:
    """``FILES`` files: ``id`` i*100 + 0, 2, ... 98 (ranges that never overlap), ``city``."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(FILES):
        ids = list(range(i * 100, i * 100 + 100, 2))
        data = {"id": ids}
        if with_city:
            data["city"] = [f"c{(i + j) % 7}" for j in range(len(ids))]  # type: ignore[misc]
        pq.write_table(pa.table(data), root / f"f{i}.parquet")


def _configured(root: Path) -> IndexedTable:
    """A table built with every setting changed from its default, and a secondary index built."""
    _write(root)
    t = open_table(root)
    t.build(
        bloom_columns=["city"],
        fpp=0.02,
        record_key="id",
        record_index=True,
        key_fpp=1e-5,
        record_index_shards=2,
        progress=False,
    )
    t.create_index(["city"])
    t.build_index(progress=False)
    return t


def _settings(config: IndexConfig) -> tuple[object, ...]:
    return (
        config.bloom_columns,
        config.fpp,
        config.key_fields,
        config.key_fpp,
        config.record_index,
        config.record_index_shards,
        tuple((d.name, d.columns, d.index_type) for d in config.secondary_indexes),
    )


# ------------------------------------------------------------------------- keeping the config


@pytest.mark.parametrize("rebuild", [False, True])
def test_a_build_without_arguments_keeps_and_builds_the_whole_configuration(
    tmp_path: Path, rebuild: bool
) -> None:
    t = _configured(tmp_path / "t")
    before = _settings(t.snapshot().config)
    t.build(rebuild=rebuild, progress=False)
    again = open_table(tmp_path / "t")
    config = again.snapshot().config
    assert _settings(config) == before
    assert [(s.name, s.files_indexed, s.live_files) for s in again.indexes()] == [
        ("idx_value_city", FILES, FILES)
    ]
    result = again.tag(["102", "103"])  # auto: the record index, still there
    assert tag_stats(result).method == "record"
    assert result["file"].to_pylist() == [str(tmp_path / "t" / "f1.parquet"), None]
    # The bloom filters on city are there too: a city no file holds is pruned by them.
    assert again.prune(col("city") == "c0x").kept == 0


def test_each_argument_changes_its_setting_only(tmp_path: Path) -> None:
    t = _configured(tmp_path / "t")
    t.build(record_index=False, progress=False)
    config = t.snapshot().config
    assert config.key_fields == ("id",) and not config.record_index and config.bloom_columns == ("city",)
    assert config.record_index_shards is None
    t.build(bloom_columns=[], fpp=0.05, progress=False)
    config = t.snapshot().config
    assert config.bloom_columns == () and config.fpp == 0.05 and config.key_fields == ("id",)
    t.build(bloom_columns=["id"], record_index=True, progress=False)
    config = t.snapshot().config
    assert config.bloom_columns == ("id",) and config.record_index and config.key_fpp == 1e-5
    t.build(record_key=False, progress=False)  # no record key: no record index either
    config = t.snapshot().config
    assert config.key_fields == () and not config.record_index and config.bloom_columns == ("id",)
    assert [d.name for d in config.secondary_indexes] == ["idx_value_city"]
    with pytest.raises(RecordKeyError, match="needs a record key"):
        t.build(record_index=True, progress=False)


def test_a_definition_whose_column_is_gone_stops_the_build_before_anything_is_written(
    tmp_path: Path,
) -> None:
    t = _configured(tmp_path / "t")
    version = t.snapshot().version
    for f in (tmp_path / "t").glob("*.parquet"):
        f.unlink()
    _write(tmp_path / "t", with_city=False)
    with pytest.raises(IndexDefinitionError, match=r"idx_value_city.*'city'.*hudi-index index drop"):
        t.build(bloom_columns=[], progress=False)
    assert t.snapshot().version == version
    t.drop_index("idx_value_city")
    t.build(bloom_columns=[], progress=False)
    assert t.snapshot().config.secondary_indexes == ()


def test_a_corrupt_newest_entry_keeps_the_configuration_of_the_one_before(tmp_path: Path) -> None:
    t = _configured(tmp_path / "t")
    before = _settings(t.snapshot().config)
    newest = max((tmp_path / "t" / ".hoodie" / ".index" / "timeline").glob("*.json"))
    newest.write_text("{not json")
    with pytest.warns(UserWarning, match="unreadable: the configuration of version"):
        t.build(progress=False)
    assert _settings(open_table(tmp_path / "t").snapshot().config) == before


# ------------------------------------------------------------------------------ not a table


@pytest.mark.parametrize("layout", [["readme.txt"], ["docs/readme.txt", "data.csv"]])
@pytest.mark.parametrize("rebuild", [False, True])
def test_a_folder_without_parquet_files_but_other_files_is_not_a_table(
    tmp_path: Path, layout: list[str], rebuild: bool
) -> None:
    root = tmp_path / "typo"
    for rel in layout:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("not data")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    with pytest.raises(NotATableError, match=r"is not a table: it holds no parquet data file") as info:
        open_table(root).build(rebuild=rebuild, progress=False)
    assert isinstance(info.value, TableFormatError) and isinstance(info.value, ValueError)
    assert layout[0] in str(info.value)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before  # nothing written
    with pytest.raises(NotATableError):
        open_table(root).sync()
    # An empty table is one: no files, only hidden ones, empty folders, or an empty parquet file
    # (a write in progress).
    for i, content in enumerate([[], ["_SUCCESS"], [".DS_Store"], ["empty/"], ["w.parquet"]]):
        empty = tmp_path / f"empty{i}"
        empty.mkdir()
        for name in content:
            if name.endswith("/"):
                (empty / name).mkdir()
            else:
                (empty / name).write_bytes(b"")
        t = open_table(empty)
        assert t.build(progress=False) == 1, content
        assert t.prune(col("id") == 1).total == 0


# ---------------------------------------------------------------------------- column names

ODD = ["a.b", "my col", 'q"uote', "it's", "é", "select"]


def _odd_table(root: Path) -> None:
    """Columns named as SQL must quote them, a top-level ``s.x`` beside a struct ``s``, values
    i*100 + 0, 2, ... 98 in file i (a lookup of an odd value is in range but absent)."""
    root.mkdir()
    for i in range(FILES):
        values = pa.array(range(i * 100, i * 100 + 100, 2), pa.int64())
        columns = {name: values for name in ODD}
        columns["s.x"] = values
        columns["s"] = pa.StructArray.from_arrays([values], ["y"])
        pq.write_table(pa.table(columns), root / f"f{i}.parquet")


def test_bloom_columns_are_named_as_the_schema_has_them_then_as_paths(tmp_path: Path) -> None:
    _odd_table(tmp_path / "t")
    t = open_table(tmp_path / "t")
    t.build(bloom_columns=[*ODD, "s.x", "s.y"], progress=False)
    assert t.snapshot().config.bloom_columns == (*ODD, "s.x", "s.y")
    stats = t.stats([*ODD, "s.x", "s.y"])
    for name in [*ODD, "s.x", "s.y"]:
        assert stats.column(name).bloom is not None, name  # type: ignore[union-attr]
        assert stats.column(name).min.to_pylist() == [0, 100, 200, 300], name  # type: ignore[union-attr]
        assert t.prune(col(name) == 102).kept == 1, name
        assert t.prune(col(name) == 101).kept == 0, name  # in range: only the bloom filter prunes it
    with pytest.raises(TableFormatError, match="not columns of the table"):
        t.build(bloom_columns=["s.z"], progress=False)


def test_record_keys_and_secondary_indexes_take_odd_names(tmp_path: Path) -> None:
    _odd_table(tmp_path / "t")
    t = open_table(tmp_path / "t")
    for name in ODD:
        t.build(record_key=name, record_index=True, progress=False)
        result = t.tag(["102", "101"])
        assert result["file"].to_pylist() == [str(tmp_path / "t" / "f1.parquet"), None], name
    for name in ODD:
        t.create_index([name])
    t.create_index(["s.x", "a.b"], name="two")
    with pytest.raises(IndexDefinitionError, match="nested struct fields are not supported"):
        t.create_index(["s.y"])
    t.build_index(progress=False)
    assert all(s.complete for s in t.indexes())
    for name in [*ODD, "s.x"]:
        assert t.count(col(name) == 102) == 1, name
        assert t.read(col(name) == 302, columns=[name, "s.x"]).to_pylist() == [{name: 302, "s.x": 302}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.build(progress=False)  # and a rebuild builds them all again
    assert all(s.complete for s in t.indexes()) and len(t.indexes()) == len(ODD) + 1
