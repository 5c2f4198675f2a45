"""``cluster`` with no ``--target-file-mb``: about as many files as the source, and at least 4 per core
(of 1 MiB or more), never one file for a whole table (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb.cluster import cluster
from index_store import open_table
from index_store.clustering import available_cores, default_file_count
from tests.adapters.cli_run import run

MIB = 1024 * 1024


def test_default_file_count() -> None:
    # One 33 MB file on 2 cores: 8 files of about 4 MB, not one of 33.
    assert default_file_count([33 * MIB], cores=2) == 8
    # As many files as the source when it has more than 4 per core.
    assert default_file_count([MIB] * 40, cores=2) == 40
    # A small source keeps its file count: no files under 1 MiB just to reach 4 per core.
    assert default_file_count([10_000] * 3, cores=16) == 3
    assert default_file_count([3 * MIB + 5], cores=16) == 3
    assert default_file_count([100], cores=4) == 1
    assert default_file_count([33 * MIB]) == min(4 * available_cores(), 33)


def test_cli_default_keeps_the_source_file_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "src"
    source.mkdir()
    rng = np.random.default_rng(1)
    for i in range(5):
        pq.write_table(
            pa.table({"a": rng.integers(0, 1000, 2000), "b": rng.integers(0, 1000, 2000)}),
            source / f"f{i}.parquet",
        )
    code, out, err = run(
        capsys, "cluster", str(source), "--by", "a,b", "--out", str(tmp_path / "c"), "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["rows"] == 10_000
    assert report["files"] == 5  # 128 MB used to make one file
    assert len(open_table(tmp_path / "c").reader.list_files()) == 5
    with pytest.raises(SystemExit):
        run(capsys, "cluster", "--help")
    assert "as many files as the source" in " ".join(capsys.readouterr().out.split())


def test_one_large_file_is_split_for_parallel_reads(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    rng = np.random.default_rng(2)
    table = pa.table({"a": rng.integers(0, 2**62, 800_000), "b": rng.integers(0, 2**62, 800_000)})
    pq.write_table(table, source / "big.parquet", compression="none")
    size = (source / "big.parquet").stat().st_size
    assert size > 12 * MIB
    expected = default_file_count([size])
    assert expected == min(4 * available_cores(), size // MIB) > 1
    result = cluster(source, tmp_path / "c", ["a"], "linear")
    assert result.rows == 800_000
    assert result.files == expected
    # An explicit size still wins.
    assert cluster(source, tmp_path / "d", ["a"], "linear", target_file_mb=1000).files == 1
