"""``hudi-index build``: a rebuild keeps the index's configuration unless an option changes it; a
folder that is not a table is refused (exit 2, one line, nothing written); and every command that
takes a column takes names with dots, spaces, quotes, non-ASCII letters and SQL keywords."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

from index_store import open_table

FILES = 4


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """``FILES`` files: ``id`` i*100 + 0, 2, ... 98 (ranges that never overlap), ``city``."""
    root = tmp_path / "t"
    root.mkdir()
    for i in range(FILES):
        ids = list(range(i * 100, i * 100 + 100, 2))
        cities = [f"c{(i + j) % 7}" for j in range(len(ids))]
        pq.write_table(pa.table({"id": ids, "city": cities}), root / f"f{i}.parquet")
    return root


def _config(root: Path) -> tuple[object, ...]:
    c = open_table(root).snapshot().config
    return c.bloom_columns, c.fpp, c.key_fields, c.record_index, tuple(d.name for d in c.secondary_indexes)


# ------------------------------------------------------------------------- keeping the config


def test_build_and_rebuild_keep_the_configuration(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = str(table)
    code, out, err = run(
        capsys, "build", t, "--record-key", "id", "--record-index", "--bloom", "city", "--fpp", "0.02"
    )
    assert code == 0, err
    assert run(capsys, "index", "create", t, "--columns", "city")[0] == 0
    assert run(capsys, "index", "build", t)[0] == 0
    configured = _config(table)
    assert configured == (("city",), 0.02, ("id",), True, ("idx_value_city",))
    for extra in ([], ["--rebuild"]):
        code, out, err = run(capsys, "build", t, *extra)
        assert code == 0, err
        assert (
            "bloom filters: city" in out
            and "record key: id (simple key generator); with a record index" in out
        )
        assert f"secondary index idx_value_city (value on city): {FILES} of {FILES} files indexed" in out
        assert _config(table) == configured
        code, out, _ = run(capsys, "index", "list", t, "--json")
        assert [(r["name"], r["complete"]) for r in json.loads(out)] == [("idx_value_city", True)]
        code, out, err = run(capsys, "tag", t, "--keys", str(_keys(table)), "--json")
        assert code == 0 and json.loads(out)["method"] == "record", err


def _keys(table: Path) -> Path:
    path = table.parent / "keys.csv"
    path.write_text("id\n102\n103\n")
    return path


def test_options_change_one_setting_each(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = str(table)
    assert run(capsys, "build", t, "--record-key", "id", "--record-index", "--bloom", "city")[0] == 0
    code, out, err = run(capsys, "build", t, "--no-record-index")
    assert code == 0 and "record key: id (simple key generator); no record index" in out, err
    assert _config(table) == (("city",), 0.01, ("id",), False, ())
    assert run(capsys, "build", t, "--bloom", "id", "--record-index")[0] == 0  # --bloom replaces the list
    assert _config(table) == (("id",), 0.01, ("id",), True, ())
    code, out, _ = run(capsys, "build", t, "--no-bloom")
    assert code == 0 and "bloom filters" not in out and _config(table) == ((), 0.01, ("id",), True, ())
    code, out, _ = run(capsys, "build", t, "--no-record-key")
    assert code == 0 and "record key" not in out and _config(table) == ((), 0.01, (), False, ())
    code, _, err = run(capsys, "build", t, "--record-index")
    assert code == 2 and "--record-index needs the record key" in _one_line(err)
    with pytest.raises(SystemExit):
        run(capsys, "build", t, "--bloom", "id", "--no-bloom")  # not both
    capsys.readouterr()


def test_a_rebuild_refuses_a_secondary_index_on_a_dropped_column(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = str(table)
    assert run(capsys, "build", t)[0] == 0
    assert run(capsys, "index", "create", t, "--columns", "city")[0] == 0
    for f in table.glob("*.parquet"):
        pq.write_table(pq.read_table(f).drop_columns(["city"]), f)
    code, _, err = run(capsys, "build", t, "--rebuild")
    line = _one_line(err)
    assert (
        code == 2 and "idx_value_city" in line and f"hudi-index index drop {t} --name idx_value_city" in line
    )
    assert not list(table.glob(".hoodie/.index.broken-*"))  # nothing moved aside either


# ------------------------------------------------------------------------------ not a table


def test_a_folder_with_no_parquet_file_is_not_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo"
    typo.mkdir()
    (typo / "readme.txt").write_text("hello")
    for extra in ([], ["--rebuild"], ["--record-key", "id", "--record-index"]):
        code, out, err = run(capsys, "build", str(typo), *extra)
        assert code == 2 and out == ""
        assert _one_line(err) == (
            f"hudi-index build: error: {typo} is not a table: it holds no parquet data file and no Hudi "
            "table (.hoodie/hoodie.properties), only other files (readme.txt); check the path (an "
            "empty table is a folder with no files at all)"
        )
        assert [p.name for p in typo.iterdir()] == ["readme.txt"]
    code, _, err = run(capsys, "sync", str(typo))
    assert code == 2 and "is not a table" in _one_line(err)


# ---------------------------------------------------------------------------- column names

ODD = ["a.b", "my col", 'q"uote', "it's", "é", "select"]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    """Columns whose names SQL must quote, values i*100 + 0, 2, ... 98 in file i."""
    root = tmp_path / "odd"
    root.mkdir()
    for i in range(FILES):
        values = pa.array(range(i * 100, i * 100 + 100, 2), pa.int64())
        pq.write_table(pa.table(dict.fromkeys(ODD, values)), root / f"f{i}.parquet")
    return root


def test_every_command_takes_odd_column_names(
    odd: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = str(odd)
    for name in ODD:
        code, out, err = run(capsys, "build", t, "--bloom", name, "--record-key", name, "--record-index")
        assert code == 0 and "built index version" in out, err
        for value, kept in ((102, 1), (101, 0)):  # 101 is in range: only the bloom filter prunes it
            code, out, err = run(capsys, "files", t, "--where", f"{_quoted(name)} = {value}")
            assert code == 0 and len(out.splitlines()) == kept, (name, err)
        keys = tmp_path / "keys.parquet"
        pq.write_table(pa.table({name: ["102", "101"]}), keys)
        code, out, err = run(capsys, "tag", t, "--keys", str(keys), "--key-col", name, "--json")
        assert code == 0, err
        assert (json.loads(out)["updates"], json.loads(out)["inserts"]) == (1, 1), name
        code, out, err = run(capsys, "stats", t, "--columns", name, "--json")
        assert code == 0 and json.loads(out)["columns"][name]["max"] == "398", err
    for name in ODD:
        code, out, err = run(capsys, "index", "create", t, "--columns", name)
        assert code == 0, err
    statement = f"CREATE INDEX both_ ON '{t}' ({_quoted('a.b')}, {_quoted('select')})"
    code, out, err = run(capsys, "sql", statement)
    assert code == 0, err
    code, out, err = run(capsys, "index", "build", t)
    assert code == 0 and out.count(f"{FILES} of {FILES} files indexed") == len(ODD) + 1, out
    code, out, err = run(capsys, "build", t, "--rebuild")  # every definition kept and built again
    assert code == 0 and out.count(f"{FILES} of {FILES} files indexed") == len(ODD) + 1, err
    code, out, err = run(capsys, "layout", t, "--columns", ",".join(ODD), "--json")
    assert code == 0, err
    code, out, err = run(capsys, "cluster", t, "--by", ",".join(ODD), "--out", str(tmp_path / "c"))
    assert code == 0 and f"by {', '.join(ODD)}" in out, err
    assert sorted(open_table(tmp_path / "c").stats(ODD).columns) == sorted(ODD)
