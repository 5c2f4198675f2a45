"""``hudi-index layout`` and ``cluster`` (DuckDB): the report, the picture, the re-clustered copy and
every refusal, on real parquet files."""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb.cluster import cluster
from hudi_expr import col
from index_store import open_table
from index_store.clustering import ClusterError
from tests.adapters.cli_run import run

ROWS = 6_000
Capture = pytest.CaptureFixture[str]
FILES = 12


def _write_random(root: Path, seed: int = 3) -> Path:
    """Two independent uniform columns (and a string and a date), in files of random rows."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    rows = [
        {
            "a": rng.randrange(1_000),
            "b": None if rng.random() < 0.02 else rng.randrange(5_000),
            "s": rng.choice(["x", "é", "zz", "ab"]) + str(rng.randrange(50)) if rng.random() < 0.9 else None,
            "d": None,
        }
        for _ in range(ROWS)
    ]
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("s", pa.string()), ("d", pa.date32())])
    per = ROWS // FILES
    for i in range(FILES):
        part = rows[i * per : (i + 1) * per]
        pq.write_table(pa.Table.from_pylist(part, schema=schema), root / f"f{i:02d}.parquet")
    return root


def _write_staircase(root: Path) -> Path:
    root.mkdir(parents=True)
    for i in range(10):
        pq.write_table(
            pa.table({"k": pa.array(range(i * 100, i * 100 + 100), pa.int64())}), root / f"p{i}.parquet"
        )
    return root


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# ----------------------------------------------------------------------------------------- layout


def test_layout_tells_a_staircase_from_a_random_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stairs = _write_staircase(tmp_path / "stairs")
    shuffled = _write_random(tmp_path / "random")
    for folder in (stairs, shuffled):
        open_table(folder).build(progress=False)
    good = open_table(stairs).layout(["k"]).to_pylist()[0]
    assert good["files"] == 10 and good["point_kept"] == pytest.approx(0.1)
    bad = open_table(shuffled).layout(["a"]).to_pylist()[0]
    assert bad["point_kept"] > 0.9  # every file spans almost every value of a
    code, out, _ = run(capsys, "layout", str(stairs), "--where", "k = 250", "--where", "k >= 0")
    assert code == 0
    assert "--where k = 250: kept 1 of 10 files (10.0%)" in out
    assert "--where k >= 0: kept 10 of 10 files (100.0%)" in out
    code, out, _ = run(capsys, "layout", str(stairs), "--json")
    assert code == 0 and json.loads(out)["columns"][0]["column"] == "k"


def test_layout_plot_is_a_png_of_the_expected_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = _write_random(tmp_path / "t")
    open_table(table).build(progress=False)
    picture = tmp_path / "layout.png"
    code, _, err = run(capsys, "layout", str(table), "--columns", "a,s", "--plot", str(picture))
    assert code == 0, err
    assert _png_size(picture) == (1200, 600)  # one 600x600 panel per column, at 100 dpi
    open_table(table).plot_layout("d", tmp_path / "empty.png")  # a column of NULLs only: still drawn
    assert _png_size(tmp_path / "empty.png") == (600, 600)
    wide = tmp_path / "wide"
    wide.mkdir()
    pq.write_table(pa.table({f"c{i}": [i, i + 1] for i in range(7)}), wide / "f.parquet")
    open_table(wide).build(progress=False)
    code, _, err = run(capsys, "layout", str(wide), "--plot", str(tmp_path / "wide.png"))
    assert code == 2 and "--plot draws at most 6 columns: give them with --columns" in err
    assert not (tmp_path / "wide.png").exists()


def test_layout_refuses_an_unknown_column_and_an_unbuilt_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = _write_staircase(tmp_path / "t")
    code, _, err = run(capsys, "layout", str(table))
    assert code != 0 and "build" in err  # no index yet: says how to get one
    open_table(table).build(progress=False)
    code, _, err = run(capsys, "layout", str(table), "--columns", "nope")
    assert code != 0 and "nope" in err


# ---------------------------------------------------------------------------------------- cluster


def _rows(folder: Path) -> str:
    return f"(SELECT a, b, s, d FROM read_parquet('{folder}/*.parquet'))"


@pytest.mark.parametrize("strategy", ["linear", "zorder", "hilbert"])
def test_cluster_keeps_every_row_and_narrows_two_column_queries(tmp_path: Path, strategy: str) -> None:
    source = _write_random(tmp_path / "src")
    before = _snapshot(source)
    size_mb = sum(f.stat().st_size for f in source.glob("*.parquet")) / 1024 / 1024
    result = cluster(source, tmp_path / "out", ["a", "b"], strategy, target_file_mb=size_mb / 16)
    out = Path(result.out)
    assert _snapshot(source) == before  # the source is never written to (not even an index)
    assert result.rows == ROWS and 15 <= result.files <= 17
    con = duckdb.connect()
    for left, right in ((source, out), (out, source)):
        assert con.sql(f"SELECT count(*) FROM ({_rows(left)} EXCEPT ALL {_rows(right)})").fetchall() == [(0,)]
    counts = [pq.read_metadata(p).num_rows for p in sorted(out.glob("*.parquet"))]
    assert all(n == counts[0] for n in counts[:-1]) and sum(counts) == ROWS
    assert not list(tmp_path.glob(".out.staging-*"))
    copy = open_table(out)
    both = (col("a") >= 400) & (col("a") < 450) & (col("b") >= 1_000) & (col("b") < 1_250)
    kept = copy.prune(both).kept
    if strategy == "linear":
        assert kept <= 3  # sorted by a first: a's 5% range is in one or two files
    else:
        assert kept <= result.files // 2
    unclustered = open_table(source, index_path=tmp_path / "source-index")
    unclustered.build(progress=False)
    assert unclustered.prune(both).kept == FILES  # random: every file
    rows = result.after.to_pylist()
    assert [r["column"] for r in rows] == ["a", "b"]
    assert rows[0]["point_kept"] < result.before.to_pylist()[0]["point_kept"]


def test_cluster_refusals_leave_nothing_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hudi_tables: dict[str, Path]
) -> None:
    source = _write_random(tmp_path / "src")
    before = _snapshot(source)
    with pytest.raises(ClusterError, match=r"no column 'nope'.*its columns: a, b, s, d"):
        cluster(source, tmp_path / "out", ["a", "nope"])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("taken")
    with pytest.raises(ClusterError, match="exists and is not an empty folder"):
        cluster(source, tmp_path / "full", ["a"])
    hudi = tmp_path / "hudi"
    shutil.copytree(hudi_tables["v6_nonpartitioned"], hudi)
    with pytest.raises(ClusterError, match="is a Hudi table: use Hudi's clustering"):
        cluster(hudi, tmp_path / "out", ["id"])
    with pytest.raises(ClusterError, match="unknown strategy 'spiral'"):
        cluster(source, tmp_path / "out", ["a"], "spiral")
    code, _, err = run(capsys, "cluster", str(source), "--by", "a,zz", "--out", str(tmp_path / "o2"))
    assert code == 2 and "no column 'zz'" in err
    assert _snapshot(source) == before
    assert not (tmp_path / "out").exists() and not (tmp_path / "o2").exists()
    assert not [p for p in tmp_path.iterdir() if "staging" in p.name]


def test_a_full_disk_mid_way_leaves_no_table(tmp_path: Path) -> None:
    """A file size limit (RLIMIT_FSIZE, the kernel's EFBIG: what a full disk looks like to a writer)
    stops the copy mid-way: the command fails and leaves neither ``out`` nor its staging folder."""
    source = _write_random(tmp_path / "src")
    out = tmp_path / "out"
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
        from adapters.cli import main
        sys.exit(main(["cluster", {str(source)!r}, "--by", "a,b", "--out", {str(out)!r},
                       "--target-file-mb", "0.2"]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=os.getcwd(), timeout=300
    )
    assert done.returncode == 1, done.stderr
    assert "disk full or a file size limit" in done.stderr and "nothing was left" in done.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if "staging" in p.name]


def test_a_hive_partitioned_source_keeps_its_partition_values_as_columns(tmp_path: Path) -> None:
    source = tmp_path / "hive"
    for region in ("eu", "us"):
        folder = source / f"region={region}"
        folder.mkdir(parents=True)
        for i in range(3):
            pq.write_table(pa.table({"k": [i * 10 + j for j in range(10)]}), folder / f"f{i}.parquet")
    result = cluster(source, tmp_path / "out", ["region", "k"], "zorder", target_file_mb=0.001)
    con = duckdb.connect()
    before = f"(SELECT region, k FROM read_parquet('{source}/*/*.parquet', hive_partitioning = true))"
    after = f"(SELECT region, k FROM read_parquet('{result.out}/*.parquet'))"
    for left, right in ((before, after), (after, before)):
        assert con.sql(f"SELECT count(*) FROM ({left} EXCEPT ALL {right})").fetchall() == [(0,)]
    assert result.rows == 60 and [r["column"] for r in result.after.to_pylist()] == ["region", "k"]
