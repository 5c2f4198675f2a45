"""``hudi-index metadata`` (a partition of Hudi's own metadata table printed) and what ``stats``
and ``prune`` say of the metadata table, on copies of the real tables."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_run import run

from index_store.hudi_metadata import HudiMetadataTable


def test_stats_name_the_partitions_and_those_used(
    copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_table("v9_txns_simple_meta")
    code, out, _ = run(capsys, "stats", str(root))
    assert code == 0
    assert out.startswith("no index built\nHudi metadata table: in step; partitions column_stats, files,")
    assert (
        "  used: column_stats (prune), record_index (tag), "
        "secondary_index_merchant_idx (prune, rows (= and IN)), "
        "secondary_index_txn_date_idx (prune, rows (= and IN))\n" in out
    )
    run(capsys, "build", str(root))
    code, out, _ = run(capsys, "stats", str(root), "--json")
    summary = json.loads(out)["hudi_metadata"]
    assert summary["used"] == {
        "column_stats": "prune",
        "record_index": "tag",
        "secondary_index_merchant_idx": "prune, rows (= and IN)",
        "secondary_index_txn_date_idx": "prune, rows (= and IN)",
    }
    assert "secondary_index_merchant_idx" in summary["partitions"]
    code, _, err = run(capsys, "stats", str(root), "--source", "own")
    assert code == 0 and not err


def test_prune_without_build_names_the_metadata_table(
    copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_table("v9_txns_simple_meta")
    code, out, _ = run(capsys, "prune", str(root), "--where", "amount > 1000")
    assert code == 0
    assert "kept 2 of 5 files" in out
    # Two files by their partition's bounds first, the third by its own statistics.
    assert "Hudi metadata table (partition_stats) 2, Hudi metadata table (column_stats) 1" in out
    code, _, err = run(capsys, "prune", str(root), "--where", "amount > 1000", "--source", "own")
    assert code == 2 and "no index yet" in err
    shutil.rmtree(root / ".hoodie" / "metadata")
    code, _, err = run(capsys, "prune", str(root), "--where", "amount > 1000", "--source", "hudi")
    assert code == 2 and "no Hudi metadata table" in err


def test_metadata_prints_a_partition_filtered(
    copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_table("v9_txns_simple_meta")
    code, out, _ = run(
        capsys, "metadata", str(root), "--partition", "record_index", "--where", "record_key = 'TXN-001'"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["record_key", "partition", "file_id", "instant", "position"]
    assert lines[1].split()[:2] == ["TXN-001", "region=us"] and lines[-1] == "(1 records)"
    code, out, _ = run(
        capsys, "metadata", str(root), "--partition", "column_stats", "--where", "amount.min > 100", "--json"
    )
    got = json.loads(out)
    every = HudiMetadataTable(root).column_stats(["amount"]).to_pylist()
    assert sorted(r["file_name"] for r in got) == sorted(
        r["file_name"] for r in every if r["amount"] is not None and r["amount"]["min"] > 100
    )
    code, out, _ = run(
        capsys,
        "metadata",
        str(root),
        "--partition",
        "secondary_index_merchant_idx",
        "--where",
        "secondary_key = 'Spotify'",
    )
    assert out.splitlines()[1].split() == ["Spotify", "TXN-018"]
    code, _, err = run(capsys, "metadata", str(root), "--partition", "nope")
    assert code == 2 and "not a metadata partition" in err
    code, _, err = run(capsys, "metadata", str(root), "--partition", "bloom_filters")
    assert code == 1 and "bloom_filters" in err  # the table has none: a one-line error


def test_tag_without_build_uses_hudis_record_index(
    copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = copy_table("v9_txns_complex_meta")
    keys = tmp_path / "keys.csv"
    keys.write_text("txn_id,account_id\nTXN-001,ACC-A\nTXN-9,ACC-Z\n")
    code, out, _ = run(capsys, "tag", str(root), "--keys", str(keys))
    assert code == 0
    assert out.startswith("1 update, 1 insert (2 keys from the key fields txn_id, account_id)\n")
    assert "with Hudi's record index (its metadata table; one location per key)" in out
    code, out, _ = run(capsys, "tag", str(root), "--keys", str(keys), "--json")
    assert json.loads(out)["locations"] == "one"
