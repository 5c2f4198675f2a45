"""``hudi-index tag``, ``check`` and the record key parts of ``build`` and ``stats``: the real CLI on
small plain tables and on the real Hudi tables, every answer compared with ``IndexedTable.tag``."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

import adapters.cli as cli
import adapters.cli.keys as cli_keys
from index_store import open_table
from index_store.tagging import tag_stats


def _ids(values: np.ndarray | range) -> list[str]:
    return [f"{v:04d}" for v in values]


@pytest.fixture
def keyed(tmp_path: Path) -> Path:
    """A hive table (region=eu, region=us) of 6 files, 10 keys each: ``id`` text (``0000``..),
    ``n`` its number and ``tag`` a second key column; ids of a file are 100 apart from the next."""
    root = tmp_path / "t"
    for region, base in (("eu", 0), ("us", 1000)):
        (root / f"region={region}").mkdir(parents=True)
        for i in range(3):
            ids = np.arange(base + i * 100, base + i * 100 + 10)
            data = pa.table(
                {"id": _ids(ids), "n": ids, "tag": [f"t{v % 3}" for v in ids], "x": np.linspace(0, 1, 10)}
            )
            pq.write_table(data, root / f"region={region}" / f"f{i}.parquet")
    return root


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def _tag(capsys: pytest.CaptureFixture[str], table: Path, *args: str) -> tuple[int, str, str]:
    return run(capsys, "tag", str(table), *args)


def _out(tmp_path: Path, capsys: pytest.CaptureFixture[str], table: Path, *args: str) -> pa.Table:
    """The result ``tag --out`` wrote (the command must succeed)."""
    out = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}.parquet"
    code, stdout, err = _tag(capsys, table, *args, "--out", str(out))
    assert code == 0, err
    assert f"to {out}" in stdout
    return pq.read_table(out)


def _same(got: pa.Table, expected: pa.Table) -> None:
    assert got.column_names == ["key", "partition", "file", "file_id"]
    assert got.to_pylist() == expected.to_pylist()


# ------------------------------------------------------------------------------ build and stats


def test_build_with_record_key_and_stats_show_the_key_information(
    keyed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "build", str(keyed), "--record-key", "id", "--record-index", "--key-fpp", "0.001"
    )
    assert code == 0, err
    assert "record key: id (simple key generator); with a record index" in out
    config = open_table(keyed).snapshot().config
    assert (config.key_fields, config.record_index, config.key_fpp) == (("id",), True, 0.001)

    code, out, err = run(capsys, "stats", str(keyed))
    assert code == 0 and err == "", err
    assert "record key: id (simple key generator)\n" in out
    assert "record index: on, 60 entries in 1 index file\n" in out
    assert "key filters: SIMPLE x 6; " in out
    code, out, _ = run(capsys, "stats", str(keyed), "--json")
    key = json.loads(out)["record_key"]
    assert key["fields"] == ["id"] and key["column"] is None and key["generator"] == "simple"
    assert key["record_index"] is True and key["record_index_entries"] == 60
    assert key["key_filters"]["types"] == {"SIMPLE": 6} and key["key_filters"]["files_without"] == 0
    assert key["key_filters"]["bytes"] > 0

    run(capsys, "build", str(keyed), "--record-key", "id,tag", "--no-record-index")
    code, out, _ = run(capsys, "stats", str(keyed))
    assert "record key: id, tag (complex key generator)\n" in out and "record index: off\n" in out
    run(capsys, "build", str(keyed), "--no-record-key")  # a plain build keeps the key
    code, out, _ = run(capsys, "stats", str(keyed), "--json")
    assert "record key" not in run(capsys, "stats", str(keyed))[1] and json.loads(out)["record_key"] is None


def test_build_refuses_record_key_options_that_do_not_fit(
    keyed: Path, copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "build", str(keyed), "--record-index")
    assert code == 2 and "--record-index needs the record key" in err and "--record-key" in err
    hudi = copy_table("v9_txns_simple_meta")
    code, _, err = run(capsys, "build", str(hudi), "--record-key", "account_id")
    assert code == 2 and err.count("\n") == 1
    assert "a Hudi table declares its own record key (hoodie.table.recordkey.fields: txn_id)" in err
    for bad in ("a,,b", "", "a,a"):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["build", str(keyed), "--record-key", bad])
        assert exit_.value.code == 2
    capsys.readouterr()


def test_stats_of_a_hudi_table_names_the_footer_filters(
    copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_table("v9_txns_simple_meta")
    run(capsys, "build", str(root), "--record-index")
    code, out, _ = run(capsys, "stats", str(root))
    assert code == 0
    assert "record key: txn_id (simple key generator), stored in _hoodie_record_key\n" in out
    assert "key filters: DYNAMIC_V0 (Hudi footer) x 5; " in out
    code, out, _ = run(capsys, "stats", str(root), "--json")
    assert json.loads(out)["record_key"]["key_filters"]["types"] == {"DYNAMIC_V0": 5}
    # Without meta fields the filters are built here, from the key field.
    root = copy_table("v8_simplekeygen_hivestyle_no_metafields")
    run(capsys, "build", str(root))
    assert "key filters: SIMPLE x 3; " in run(capsys, "stats", str(root))[1]


# ------------------------------------------------------------------------------------- tagging


def test_tag_from_parquet_csv_and_stdin(
    keyed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(keyed), "--record-key", "id")
    keys = ["0000", "0105", "9999", "1201", "0105", "007"]
    expected = open_table(keyed).tag(keys)

    pq.write_table(pa.table({"id": keys, "other": range(6)}), tmp_path / "keys.parquet")
    code, out, err = _tag(capsys, keyed, "--keys", str(tmp_path / "keys.parquet"))
    assert code == 0, err
    assert out.startswith("4 updates, 2 inserts (6 keys from the key field id)\n")
    assert "tagged globally with key ranges and bloom filters over 6 files:" in out
    assert "key ranges" in out and "bloom filters" in out and "read keys" in out and "total " in out
    _same(_out(tmp_path, capsys, keyed, "--keys", str(tmp_path / "keys.parquet")), expected)

    # CSV columns are text: 007 stays 007 (an insert), not the number 7.
    (tmp_path / "keys.csv").write_text("other,id\n" + "".join(f"{i},{k}\n" for i, k in enumerate(keys)))
    _same(_out(tmp_path, capsys, keyed, "--keys", str(tmp_path / "keys.csv")), expected)
    # A file of another name is sniffed: parquet by its magic bytes, else CSV.
    (tmp_path / "keys.dat").write_bytes((tmp_path / "keys.parquet").read_bytes())
    _same(_out(tmp_path, capsys, keyed, "--keys", str(tmp_path / "keys.dat")), expected)

    _stdin(monkeypatch, "".join(k + "\r\n" for k in keys))
    code, out, _ = _tag(capsys, keyed, "--keys", "-")
    assert code == 0 and out.startswith("4 updates, 2 inserts (6 keys from standard input)\n")
    _stdin(monkeypatch, "\n".join(keys))  # no newline at the end
    _same(_out(tmp_path, capsys, keyed, "--keys", "-"), expected)
    _stdin(monkeypatch, "")
    assert _tag(capsys, keyed, "--keys", "-")[1].startswith("0 updates, 0 inserts (0 keys")


def test_key_strings_from_a_named_column(
    keyed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(keyed), "--record-key", "id,tag")
    t = open_table(keyed)
    encoded = ["id:0000,tag:t0", "id:0101,tag:t2", "id:0101,tag:t0", "id:1209,tag:t0"]
    expected = t.tag(encoded)
    assert expected["file"].null_count == 1
    path = tmp_path / "k.parquet"
    pq.write_table(pa.table({"k": encoded, "id": ["x"] * 4}), path)
    _same(_out(tmp_path, capsys, keyed, "--keys", str(path), "--key-col", "k"), expected)
    for column in ("key", "_hoodie_record_key"):  # taken without --key-col
        pq.write_table(pa.table({column: encoded}), path)
        code, out, _ = _tag(capsys, keyed, "--keys", str(path))
        assert code == 0 and f"from column {column!r}" in out
        _same(_out(tmp_path, capsys, keyed, "--keys", str(path)), expected)


def test_composite_key_encoded_from_its_columns(
    keyed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(keyed), "--record-key", "n,tag")
    n = [0, 101, 101, 1209, 55]
    tags = ["t0", "t2", "t0", "t0", "t1"]
    expected = open_table(keyed).tag(pa.table({"n": n, "tag": tags}))
    assert expected["key"].to_pylist()[:2] == ["n:0,tag:t0", "n:101,tag:t2"]
    assert expected["file"].null_count == 2
    pq.write_table(pa.table({"tag": tags, "n": n}), tmp_path / "k.parquet")
    _same(_out(tmp_path, capsys, keyed, "--keys", str(tmp_path / "k.parquet")), expected)
    # From CSV the numbers are text, which encodes the same.
    (tmp_path / "k.csv").write_text("n,tag\n" + "".join(f"{a},{b}\n" for a, b in zip(n, tags, strict=True)))
    code, out, _ = _tag(capsys, keyed, "--keys", str(tmp_path / "k.csv"))
    assert code == 0 and "(5 keys from the key fields n, tag)" in out
    _same(_out(tmp_path, capsys, keyed, "--keys", str(tmp_path / "k.csv")), expected)


def test_per_partition_tagging(keyed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(keyed), "--record-key", "id", "--record-index")
    keys = ["0000", "0000", "1105", "1105", "4242"]
    parts = ["region=eu", "region=us", "region=us", "region=eu", "region=eu"]
    t = open_table(keyed)
    for using in ("bloom", "record"):
        expected = t.tag(keys, parts, using=using)  # type: ignore[arg-type]
        assert [f is not None for f in expected["file"].to_pylist()] == [True, False, True, False, False]
        pq.write_table(pa.table({"id": keys, "p": parts}), tmp_path / "k.parquet")
        args = ("--keys", str(tmp_path / "k.parquet"), "--partition-col", "p", "--using", using)
        _same(_out(tmp_path, capsys, keyed, *args), expected)
        code, out, _ = _tag(capsys, keyed, *args)
        assert code == 0 and "2 updates, 3 inserts" in out and "tagged per partition" in out
    # Globally, the partition column is each file's partition.
    glob = _out(tmp_path, capsys, keyed, "--keys", str(tmp_path / "k.parquet"))
    assert glob["partition"].to_pylist() == ["region=eu", "region=eu", "region=us", "region=us", None]


def test_out_and_json_match_the_library_with_either_method(
    keyed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(keyed), "--record-key", "id", "--record-index")
    rng = np.random.default_rng(1)
    keys = _ids(rng.integers(0, 1300, 500))
    pq.write_table(pa.table({"id": keys}), tmp_path / "k.parquet")
    t = open_table(keyed)
    expected = t.tag(keys, using="bloom")
    assert expected["file"].null_count not in (0, len(keys))
    for using in ("auto", "bloom", "record"):
        got = _out(tmp_path, capsys, keyed, "--keys", str(tmp_path / "k.parquet"), "--using", using)
        _same(got, expected)
        assert tag_stats(got).method == ("bloom" if using == "bloom" else "record")  # stats travel along
        code, out, err = _tag(
            capsys, keyed, "--keys", str(tmp_path / "k.parquet"), "--using", using, "--json"
        )
        assert code == 0 and err == "" and out.count("\n") == 1
        stats = json.loads(out)
        assert stats["method"] == tag_stats(got).method and stats["keys"] == 500
        assert stats["updates"] == 500 - expected["file"].null_count and stats["out"] is None
        assert stats["total_seconds"] >= stats["tag_seconds"] > 0
    code, out, _ = _tag(capsys, keyed, "--keys", str(tmp_path / "k.parquet"), "--using", "record")
    assert "with the record index" in out and "record index  " in out


def test_chunked_tagging_gives_the_same_result(
    keyed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a terminal keys are tagged in chunks, for the progress bar: the result is unchanged."""
    run(capsys, "build", str(keyed), "--record-key", "id", "--record-index")
    rng = np.random.default_rng(2)
    keys = _ids(rng.integers(0, 1300, 200))
    parts = [["region=eu", "region=us"][i] for i in rng.integers(0, 2, 200)]
    pq.write_table(pa.table({"id": keys, "p": parts}), tmp_path / "k.parquet")
    t = open_table(keyed)
    monkeypatch.setattr(cli_keys, "TAG_CHUNK", 7)
    monkeypatch.setattr(cli_keys, "_show_progress", lambda: True)
    for using in ("bloom", "record"):
        for extra, partitions in (((), None), (("--partition-col", "p"), parts)):
            expected = t.tag(keys, partitions, using=using)  # type: ignore[arg-type]
            got = _out(
                tmp_path, capsys, keyed, "--keys", str(tmp_path / "k.parquet"), "--using", using, *extra
            )
            _same(got, expected)
            whole, chunked = tag_stats(expected), tag_stats(got)
            assert (chunked.keys, chunked.updates, chunked.inserts, chunked.files) == (
                whole.keys,
                whole.updates,
                whole.inserts,
                whole.files,
            )


def test_stale_index_is_refused_unless_synced(
    keyed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(keyed), "--record-key", "id")
    pq.write_table(
        pa.table({"id": ["5000"], "n": [5000], "tag": ["t0"], "x": [0.0]}),
        keyed / "region=us" / "new.parquet",
    )
    for command in ("tag", "check"):
        if command == "tag":
            _stdin(monkeypatch, "5000\n")
        code, out, err = run(capsys, command, str(keyed), *(("--keys", "-") if command == "tag" else ()))
        assert code == 2 and out == "" and err.count("\n") == 1
        assert (
            f"hudi-index {command}: error: the index of {keyed} is stale (1 file not in the index): " in err
        )
        assert f"run hudi-index sync {keyed}, or pass --sync" in err
    _stdin(monkeypatch, "5000\n")
    code, out, err = _tag(capsys, keyed, "--keys", "-", "--sync")
    assert code == 0 and out.startswith("1 update, 0 inserts (1 key from standard input)"), err
    # The index kept elsewhere: the advice names it.
    other = tmp_path / "idx"
    run(capsys, "build", str(keyed), "--record-key", "id", "--index-path", str(other))
    os.remove(keyed / "region=us" / "new.parquet")
    pq.write_table(
        pa.table({"id": ["6000"], "n": [6000], "tag": ["t0"], "x": [0.0]}), keyed / "region=us" / "n2.parquet"
    )
    code, _, err = run(capsys, "check", str(keyed), "--index-path", str(other))
    assert code == 2 and f"run hudi-index sync {keyed} --index-path {other}, or pass --sync" in err
    assert "1 file not in the index, 1 file deleted" in err
    code, out, _ = run(capsys, "check", str(keyed), "--index-path", str(other), "--sync")
    assert code == 0 and out == "record keys are unique across 7 files\n"


def test_bad_input_is_one_line_and_exit_2(
    keyed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def error(*args: str, stdin: str | None = None) -> str:
        if stdin is not None:
            _stdin(monkeypatch, stdin)
        code, out, err = _tag(capsys, keyed, *args)
        assert (
            code == 2 and out == "" and err.startswith("hudi-index tag: error: ") and err.count("\n") == 1
        ), err
        return err

    assert "has no index yet: run build first" in error("--keys", "-", stdin="1\n")
    run(capsys, "build", str(keyed))
    err = error("--keys", "-", stdin="1\n")
    assert f"the index of {keyed} holds no record keys" in err
    assert f"hudi-index build {keyed} --record-key 'COLUMN[,COLUMN...]'" in err
    run(capsys, "build", str(keyed), "--record-key", "id")
    err = error("--keys", "-", "--using", "record", stdin="1\n")
    assert (
        f"has no record index: build it with one (hudi-index build {keyed} --record-key id --record-index)"
        in err
    )
    assert "or tag with --using bloom" in err

    missing = tmp_path / "nope.parquet"
    assert f"--keys {missing}: no such file" in error("--keys", str(missing))
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    assert "not a readable parquet or CSV file" in error("--keys", str(tmp_path / "bad.parquet"))
    (tmp_path / "empty.csv").write_text("")
    assert "not a readable parquet or CSV file" in error("--keys", str(tmp_path / "empty.csv"))

    pq.write_table(
        pa.table({"id": ["0001", None, "0003"], "k": ["a", "b", None], "p": [1, 2, 3]}),
        tmp_path / "k.parquet",
    )
    keys = str(tmp_path / "k.parquet")
    assert f"--key-col 'kk' is not a column of {keys}; its columns are id, k, p" in error(
        "--keys", keys, "--key-col", "kk"
    )
    assert "--partition-col 'pp' is not a column" in error("--keys", keys, "--partition-col", "pp")
    assert "--partition-col 'p' of" in error("--keys", keys, "--partition-col", "p")  # not strings
    assert "--key-col 'p' of" in error("--keys", keys, "--key-col", "p")
    # Null keys: a null key field, a null key string.
    assert "record key field 'id' is null in 1 of 3 rows" in error("--keys", keys)
    assert "1 of 3 record keys are null" in error("--keys", keys, "--key-col", "k")
    (tmp_path / "k.csv").write_text('k,o\na,1\n,2\n"",3\n')  # an empty cell is null, "" the empty string
    assert "1 of 3 record keys are null" in error("--keys", str(tmp_path / "k.csv"), "--key-col", "k")
    # Key columns missing.
    pq.write_table(pa.table({"user": ["a"]}), tmp_path / "u.parquet")
    err = error("--keys", str(tmp_path / "u.parquet"))
    assert "lacks the record key field id (the table's key is id); its columns are user" in err
    assert "--key-col COLUMN" in err

    err = error("--keys", "-", "--partition-col", "p", stdin="1\n")
    assert "--partition-col needs a parquet or CSV keys file" in err
    assert "line 2 of standard input is empty" in error("--keys", "-", stdin="1\n\n2\n")
    assert "--out" in error("--keys", "-", "--out", str(tmp_path / "no" / "out.parquet"), stdin="1\n")


def test_a_key_in_two_files_fails_tagging_and_check_lists_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "t"
    for part, name, ids in (("p=a", "f1", [1, 2, 3]), ("p=a", "f2", [3, 4]), ("p=b", "f3", [4, 5])):
        (root / part).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": ids}), root / part / f"{name}.parquet")
    for record_index in ((), ("--record-index",)):
        run(capsys, "build", str(root), "--record-key", "id", *record_index)
        code, out, err = run(capsys, "check", str(root))
        assert code == 1, err
        lines = out.splitlines()
        assert (
            lines[0]
            == "2 record keys are held by more than one live data file (of 3 files); 1 within a partition"
        )
        assert lines[1] == f"  '3': {root}/p=a/f1.parquet (p=a), {root}/p=a/f2.parquet (p=a)"
        assert lines[2] == f"  '4': {root}/p=a/f2.parquet (p=a), {root}/p=b/f3.parquet (p=b)"
        code, out, _ = run(capsys, "check", str(root), "--limit", "1")
        assert code == 1 and out.splitlines()[-1] == "  ... and 1 more (--limit N shows more)"
        code, out, _ = run(capsys, "check", str(root), "--json", "--limit", "1")
        result = json.loads(out)
        assert code == 1 and (result["files"], result["duplicate_keys"], result["within_a_partition"]) == (
            3,
            2,
            1,
        )
        assert result["duplicates"] == [
            {
                "key": "3",
                "files": [f"{root}/p=a/f1.parquet", f"{root}/p=a/f2.parquet"],
                "within_a_partition": True,
            }
        ]
        _stdin(monkeypatch, "1\n3\n")
        code, out, err = run(capsys, "tag", str(root), "--keys", "-", "--on-duplicate", "error")
        assert code == 1 and out == "" and err.count("\n") == 1
        assert (
            "record keys are in more than one live data file" in err
            and "'3'" in err
            and "hudi-index check" in err
        )
        _stdin(monkeypatch, "1\n3\n")  # by default, as Hudi: each copy is tagged
        code, out, err = run(capsys, "tag", str(root), "--keys", "-")
        assert code == 0 and out.startswith("2 updates, 0 inserts (2 keys from standard input)\n"), err
        assert "1 key is in more than one live file: a row per file (each copy is updated)" in out
        rows = [line.split() for line in out.splitlines() if line.startswith("3 ")]
        assert rows == [
            ["3", "p=a", "p=a/f1.parquet", "f1", "update"],
            ["3", "p=a", "p=a/f2.parquet", "f2", "update"],
        ]
        # Per partition, 4 is unique: only 3 is not.
        pq.write_table(pa.table({"id": ["4", "4", "1"], "p": ["p=a", "p=b", "p=a"]}), tmp_path / "k.parquet")
        code, out, err = run(
            capsys, "tag", str(root), "--keys", str(tmp_path / "k.parquet"), "--partition-col", "p"
        )
        assert code == 0 and out.startswith("3 updates, 0 inserts"), err

    os.remove(root / "p=a" / "f2.parquet")
    code, out, _ = run(capsys, "check", str(root), "--sync")
    assert code == 0 and out == "record keys are unique across 2 files\n"
    code, out, _ = run(capsys, "check", str(root), "--json")
    assert code == 0 and json.loads(out) == {
        "files": 2,
        "duplicate_keys": 0,
        "within_a_partition": 0,
        "duplicates": [],
    }


def test_check_without_record_keys_says_how_to_build(keyed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(keyed))
    code, _, err = run(capsys, "check", str(keyed))
    assert code == 2 and "holds no record keys" in err and "--record-key" in err


# ---------------------------------------------------------------------------- real Hudi tables


@pytest.mark.parametrize(
    "name", ["v6_complexkeygen_hivestyle", "v9_txns_simple_meta", "v8_simplekeygen_hivestyle_no_metafields"]
)
def test_tag_a_real_hudi_table_from_its_own_rows(
    name: str, copy_table: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every row of every live base file, given by its key fields (as CSV text) with its
    partition: each is an update in its own file; each changed key is an insert."""
    root = copy_table(name)
    code, out, err = run(capsys, "build", str(root), "--record-index")
    assert code == 0, err
    t = open_table(root)
    config = t.snapshot().config
    fields = list(config.key_fields)
    rows = []
    for f in t.reader.list_files():
        data = pq.read_table(os.path.join(t.root, f.path), columns=fields)
        for row in data.to_pylist():
            rows.append(
                {
                    **{k: str(v) for k, v in row.items()},
                    "part": f.partition,
                    "file": os.path.join(t.root, f.path),
                    "file_id": f.file_group,
                }
            )
    assert all(r["file_id"] for r in rows)  # the Hudi file id the listing parsed from the name
    absent = {**rows[0], fields[0]: rows[0][fields[0]] + "-absent", "file": None, "file_id": None}
    rows.append(absent)
    lines = [",".join([*fields, "part"])] + [",".join([*(r[k] for k in fields), r["part"]]) for r in rows]
    (tmp_path / "k.csv").write_text("\n".join(lines) + "\n")
    table_of_keys = pa.table({k: [r[k] for r in rows] for k in fields})
    parts = [r["part"] for r in rows]
    for using in ("bloom", "record"):
        args = ("--keys", str(tmp_path / "k.csv"), "--partition-col", "part", "--using", using)
        got = _out(tmp_path, capsys, root, *args)
        _same(got, t.tag(table_of_keys, parts, using=using))  # type: ignore[arg-type]
        files = [None if f is None else os.path.normpath(f) for f in got["file"].to_pylist()]
        assert files == [r["file"] for r in rows]
        assert got["file_id"].to_pylist() == [r["file_id"] for r in rows]
        code, out, _ = _tag(capsys, root, *args)
        assert out.startswith(f"{len(rows) - 1} updates, 1 insert ")


def test_check_finds_the_duplicate_keys_of_a_real_hudi_table(
    copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_table("v9_timebasedkeygen_epochmillis")  # Hudi's insert wrote TXN-001 twice
    run(capsys, "build", str(root))
    expected = open_table(root).duplicate_keys()
    code, out, _ = run(capsys, "check", str(root))
    assert code == 1
    assert out.startswith(
        "1 record key is held by more than one live data file (of 7 files); 1 within a partition\n"
    )
    assert "  'TXN-001': " in out and out.count(".parquet (2024/01/15/09)") == expected.num_rows == 2
    root = copy_table("v9_txns_simple_meta")
    run(capsys, "build", str(root))
    code, out, _ = run(capsys, "check", str(root))
    assert code == 0 and out == "record keys are unique across 5 files\n"


def test_keys_of_an_unknown_encoding_are_taken_as_stored(
    copy_table: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A single-field ComplexKeyGenerator table of version 6 wrote either ``id:1`` or ``1``: the
    key field cannot be encoded, the stored ``_hoodie_record_key`` is used instead."""
    root = copy_table("v6_nonpartitioned")
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(
        props.read_text().replace("keygen.NonpartitionedKeyGenerator", "keygen.ComplexKeyGenerator")
    )
    run(capsys, "build", str(root))
    assert open_table(root).snapshot().config.key_generator == "unknown"
    (data_file,) = [f.path for f in open_table(root).reader.list_files()]
    rows = pq.read_table(root / data_file, columns=["id", "_hoodie_record_key"])
    pq.write_table(rows, tmp_path / "k.parquet")
    code, out, err = _tag(capsys, root, "--keys", str(tmp_path / "k.parquet"))
    assert (
        code == 0
        and f"{rows.num_rows} updates, 0 inserts" in out
        and "from column '_hoodie_record_key'" in out
    )
    pq.write_table(rows.select(["id"]), tmp_path / "k.parquet")
    code, out, err = _tag(capsys, root, "--keys", str(tmp_path / "k.parquet"))
    assert code == 2 and out == "" and "cannot encode record keys from the fields ['id']" in err


def test_tag_prints_each_keys_file_without_out(
    keyed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --out the rows are printed (key, partition, file relative to the table, file id,
    status),
    at most ``TAG_SHOWN`` of them and a note of the rest; --json prints only the statistics."""
    run(capsys, "build", str(keyed), "--record-key", "id")
    _stdin(monkeypatch, "0105\n9999\n1201\n")
    code, out, err = _tag(capsys, keyed, "--keys", "-")
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("key ") and "status" in line)
    assert lines[header].split()[:5] == ["key", "partition", "file", "file_id", "status"]
    assert f"(files in {keyed})" in lines[header]
    assert [line.split() for line in lines[header + 1 : header + 4]] == [
        ["0105", "region=eu", "region=eu/f1.parquet", "f1", "update"],
        ["9999", "-", "-", "-", "insert"],
        ["1201", "region=us", "region=us/f2.parquet", "f2", "update"],
    ]
    assert lines[header + 4].startswith("total ")
    monkeypatch.setattr(cli_keys, "TAG_SHOWN", 2)
    _stdin(monkeypatch, "0105\n9999\n1201\n0000\n")
    lines = _tag(capsys, keyed, "--keys", "-")[1].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("key ") and "status" in line)
    assert lines[header + 3] == "... and 2 more rows (--out FILE writes them all)"
    _stdin(monkeypatch, "0105\n")
    code, out, _ = _tag(capsys, keyed, "--keys", "-", "--json")
    assert code == 0 and out.count("\n") == 1 and json.loads(out)["updates"] == 1


def test_partition_values_in_other_forms_and_bad_ones(
    keyed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The partition column may hold bare values (``eu`` on a ``region=`` table) or paths with a
    trailing slash: the same tags as the table's paths, written normalized; a value that cannot
    be mapped fails in one line (exit 2), an empty key too."""
    run(capsys, "build", str(keyed), "--record-key", "id", "--record-index")
    keys = ["0000", "0105", "1201", "1201", "4242"]
    canonical = ["region=eu", "region=eu", "region=us", "region=eu", "region=jp"]
    expected = open_table(keyed).tag(keys, canonical)
    assert [f is None for f in expected["file"].to_pylist()] == [False, False, False, True, True]
    for given in (["eu", "region=eu/", "us", "eu/", "jp"], canonical):
        pq.write_table(pa.table({"id": keys, "p": given}), tmp_path / "k.parquet")
        for using in ("bloom", "record"):
            got = _out(
                tmp_path,
                capsys,
                keyed,
                "--keys",
                str(tmp_path / "k.parquet"),
                "--partition-col",
                "p",
                "--using",
                using,
            )
            _same(got, expected)
    pq.write_table(pa.table({"id": keys[:2], "p": ["eu", "country=eu"]}), tmp_path / "bad.parquet")
    code, out, err = _tag(capsys, keyed, "--keys", str(tmp_path / "bad.parquet"), "--partition-col", "p")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "hudi-index tag: error: 1 partition value maps to no partition path" in err
    assert "'country=eu': level 1 'country=eu' names another key than the table's 'region'" in err
    (tmp_path / "empty.csv").write_text('id,k\n0000,0000\n"",""\n')  # quoted empty cells: empty strings
    code, out, err = _tag(capsys, keyed, "--keys", str(tmp_path / "empty.csv"))
    assert code == 2 and "record key field 'id' is empty in 1 of 2 rows" in err
    code, out, err = _tag(capsys, keyed, "--keys", str(tmp_path / "empty.csv"), "--key-col", "k")
    assert code == 2 and "1 of 2 record keys are empty: a Hudi record key is never empty" in err


def test_null_partitions_of_a_non_partitioned_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array([5, 6], pa.int64())}), root / "a.parquet")
    run(capsys, "build", str(root), "--record-key", "id", "--record-index")
    (tmp_path / "k.csv").write_text("id,p\n6,\n5,\n12345,\n")  # empty unquoted cells: nulls
    for using in ("bloom", "record"):
        got = _out(
            tmp_path,
            capsys,
            root,
            "--keys",
            str(tmp_path / "k.csv"),
            "--partition-col",
            "p",
            "--using",
            using,
        )
        assert [f is not None for f in got["file"].to_pylist()] == [True, True, False]
        assert got["partition"].to_pylist() == ["", "", ""]


def test_tag_a_merge_on_read_table(
    copy_table: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key deleted in a log file is an insert, a key updated in one is in its file group; the
    file slice stage is reported (the decisions themselves: tests/index_store/test_tag_mor.py)."""
    root = copy_table("mor_avro_v9_timebasedkeygen_nonhivestyle")  # TXN-002 deleted, TXN-003 updated
    code, _, err = run(capsys, "build", str(root), "--record-index")
    assert code == 0, err
    keys = ["TXN-002", "TXN-003", "TXN-404"]
    pq.write_table(pa.table({"k": keys}), tmp_path / "k.parquet")
    for using in ("bloom", "record"):
        args = ("--keys", str(tmp_path / "k.parquet"), "--key-col", "k", "--using", using)
        got = _out(tmp_path, capsys, root, *args)
        _same(got, open_table(root).tag(keys, using=using))  # type: ignore[arg-type]
        assert got["file_id"].to_pylist() == [None, "3f9cc880-1bdc-4f80-9715-78467c6404ce-0", None]
        code, out, _ = _tag(capsys, root, *args)
        assert code == 0 and out.startswith("1 update, 2 inserts")
        # Decided from the log records the index stores: no slice read (tests/index_store/
        # test_tag_log_records.py), and the stage still reported.
        assert re.search(r"file slices +0 slices, 0 log files", out), out
