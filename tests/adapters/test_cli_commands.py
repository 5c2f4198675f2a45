"""``hudi-index`` as users of other data tools expect it: ``--version``, defaults in ``--help``,
long predicates from a file or stdin, SQL literals in ``stats``, JSON lines, ``update``, ``files``
for ``xargs``, and the table named after its folder in ``query``."""

from __future__ import annotations

import datetime as dt
import decimal
import errno
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

from adapters.cli import main

HUDI_INDEX = str(Path(sys.executable).parent / "hudi-index")


def kept(table: Path, *paths: str) -> list[str]:
    return sorted(str(table / p) for p in paths)


# ---------------------------------------------------------------------------- help and version


def test_version_is_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"hudi-index {metadata.version('hudi-index')}\n"


def help_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--help"])
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width


def test_help_is_for_users_and_shows_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys)
    assert "queries read only the files that may hold matching rows" in text
    assert "package" not in text and "adapter" not in text  # not notes on where the code lives
    for command in (
        "build",
        "sync",
        "update",
        "prune",
        "files",
        "query",
        "stats",
        "tag",
        "check",
        "compact",
        "clean",
    ):
        assert f" {command} " in text
    assert "bloom filter false-positive rate (default: the index's, else 0.01)" in help_of(capsys, "build")
    assert "(default: 3600.0)" in help_of(capsys, "clean")
    assert "(default: TABLE/.hoodie/.index)" in help_of(capsys, "prune")
    assert "@FILE reads it from a file, - from standard input" in help_of(capsys, "files")
    assert "(default: the index's, else 1e-06)" in help_of(capsys, "build")
    assert "--using {auto,bloom,record}" in help_of(capsys, "tag")
    assert "(default: 10)" in help_of(capsys, "check")


def test_bad_option_values_are_refused_by_the_parser(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["build", str(table), "--fpp", "2"])
    assert exit_.value.code == 2 and "must be between 0 and 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["clean", str(table), "--retention", "-1"])
    assert exit_.value.code == 2 and "must be 0 or more seconds" in capsys.readouterr().err


# ------------------------------------------------------------------------------ long predicates


def wide_or(n: int) -> str:
    """``id = ... OR ...`` with ``n`` terms, one of which (1105) is in region=us/f1.parquet."""
    return " OR ".join(f"id = {v}" for v in [*range(100_000, 100_000 + n - 1), 1105])


def test_where_from_a_file(table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    predicate = tmp_path / "where.sql"
    predicate.write_text(wide_or(10_000))
    code, out, err = run(capsys, "files", str(table), "--where", f"@{predicate}")
    assert code == 0, err
    assert out.splitlines() == kept(table, "region=us/f1.parquet")
    code, out, _ = run(capsys, "prune", str(table), "--where", f"@{predicate}")
    assert code == 0 and "kept 1 of 6 files" in out
    assert max(len(line) for line in out.splitlines()) < 300  # the 140 kB predicate is abbreviated
    code, _, err = run(capsys, "prune", str(table), "--where", f"@{tmp_path / 'missing.sql'}")
    assert code == 2 and "cannot read" in err and "missing.sql" in err
    query = tmp_path / "query.sql"
    query.write_text("SELECT count(*) AS n FROM t WHERE id >= 1100")
    code, out, err = run(capsys, "query", str(table), f"@{query}", "--csv")
    assert code == 0 and out.splitlines() == ['"n"', "20"] and "t: kept 2 of 6 files" in err


def test_where_from_stdin_past_the_argument_limit(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    predicate = wide_or(10_000)
    with pytest.raises(OSError) as too_long:  # what a user meets passing it as an argument
        subprocess.run([HUDI_INDEX, "files", str(table), "--where", predicate], check=False)
    assert too_long.value.errno == errno.E2BIG
    done = subprocess.run(
        [HUDI_INDEX, "files", str(table), "--where", "-"], input=predicate, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == kept(table, "region=us/f1.parquet") and done.stderr == ""
    query = f"SELECT count(*) AS n FROM t WHERE {wide_or(1_000)}"
    done = subprocess.run(
        [HUDI_INDEX, "query", str(table), "-", "--csv"], input=query, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.splitlines() == ['"n"', "1"], done.stderr
    assert "t: kept 1 of 6 files" in done.stderr
    done = subprocess.run(
        [HUDI_INDEX, "prune", str(table), "--where", "-", "--json"], input="", capture_output=True, text=True
    )
    assert (
        done.returncode == 2 and done.stderr == "hudi-index prune: error: --where -: the predicate is empty\n"
    )


# ------------------------------------------------------------------------------------ stats


def test_stats_prints_sql_literals_and_nan_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "typed"
    root.mkdir()
    schema = pa.schema(
        [
            ("d", pa.date32()),
            ("s", pa.string()),
            ("ts", pa.timestamp("us")),
            ("amount", pa.decimal128(38, 2)),
            ("f", pa.float64()),
            ("nothing", pa.int64()),
        ]
    )
    rows = [
        {
            "d": dt.date(1995, 3, 1),
            "s": "it's",
            "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901),
            "amount": decimal.Decimal("12345678901234567890.25"),
            "f": float("nan"),
            "nothing": None,
        },
        {
            "d": dt.date(1998, 12, 1),
            "s": "a",
            "ts": dt.datetime(2024, 1, 1),
            "amount": decimal.Decimal("-0.10"),
            "f": 2.5,
            "nothing": None,
        },
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema), root / "a.parquet")
    pq.write_table(pa.Table.from_pylist(rows[1:], schema), root / "b.parquet")
    run(capsys, "build", str(root))
    code, out, err = run(capsys, "stats", str(root))
    assert code == 0, err
    lines = {line.split()[0]: line.strip() for line in out.splitlines()[1:]}
    assert lines["d"] == (
        "d date32[day]: min DATE '1995-03-01', max DATE '1998-12-01' (known for 2 of 2); "
        "nulls 0 (known for 2 of 2)"
    )
    assert "min 'a', max 'it''s'" in lines["s"]
    assert (
        "min TIMESTAMP '2024-01-01 00:00:00.000000', max TIMESTAMP '2024-01-02 03:04:05.678901'"
        in lines["ts"]
    )
    assert "min -0.10, max 12345678901234567890.25" in lines["amount"]
    assert lines["f"].startswith("f double: min 2.5, max 2.5") and lines["f"].endswith(
        "NaNs 1 (known for 2 of 2)"
    )
    assert "min NULL, max NULL (known for 0 of 2); nulls 3 (known for 2 of 2)" in lines["nothing"]
    code, out, _ = run(capsys, "stats", str(root), "--columns", "d", "f", "--json")
    assert code == 0 and out.endswith("}\n")
    stats = json.loads(out)
    assert stats["files"] == 2 and list(stats["columns"]) == ["d", "f"]
    assert stats["columns"]["d"]["min"] == "DATE '1995-03-01'" and stats["columns"]["f"]["nan_count"] == 1


# --------------------------------------------------------------------------------------- json


def test_every_json_output_is_one_line_ending_in_a_newline(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    for args in (
        ["prune", str(table), "--where", "id >= 1100", "--json"],
        ["files", str(table), "--where", "id >= 1100", "--json"],
        ["files", str(table), "--json"],
        ["stats", str(table), "--json"],
    ):
        code, out, err = run(capsys, *args)
        assert code == 0 and err == "", err
        assert out.endswith("\n") and out.count("\n") == 1, args
        json.loads(out)
    run(capsys, "build", str(table), "--record-key", "id")
    keys = table.parent / "keys.csv"
    keys.write_text("key\n1\n2000\n")
    for args in (
        ["stats", str(table), "--json"],
        ["tag", str(table), "--keys", str(keys), "--json"],
        ["check", str(table), "--json"],
    ):
        code, out, err = run(capsys, *args)
        assert code == 0 and err == "", err
        assert out.endswith("\n") and out.count("\n") == 1, args
        json.loads(out)


# ------------------------------------------------------------------------- update and files


def test_update_records_added_and_removed_files(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    pq.write_table(
        pa.table({"id": np.arange(5000, 5010), "x": np.zeros(10)}), table / "region=us" / "f9.parquet"
    )
    os.remove(table / "region=eu" / "f0.parquet")
    monkeypatch.chdir(tmp_path)
    # From the current folder (what a shell completes), and relative to the table.
    code, out, err = run(
        capsys, "update", "t", "--added", "t/region=us/f9.parquet", "--removed", "region=eu/f0.parquet"
    )
    assert code == 0 and out == "updated: index version 2 (1 added, 1 removed)\n", err
    code, out, err = run(capsys, "prune", "t", "--where", "id >= 5000", "--json")
    result = json.loads(out)
    assert result["files"] == kept(table, "region=us/f9.parquet") and result["total"] == 6
    assert result["unknown_files"] == [] and result["notes"] == []
    code, _, err = run(capsys, "update", "t", "--added", "region=us/nope.parquet")
    assert code == 2 and "not live data files" in err
    code, _, err = run(capsys, "update", "t")
    assert code == 2 and "--added" in err


@pytest.mark.parametrize(
    "args",
    [["update", "--added", "region=us/f0.parquet"], ["compact"], ["stats"], ["files"]],
)
def test_commands_before_build_say_to_build(
    table: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, args[0], str(table), *args[1:])
    assert code == 2 and out == ""
    message = f"{table} has no index yet: run build first (hudi-index build {table})"
    assert err == f"hudi-index {args[0]}: error: {message}\n"
    assert not (table / ".hoodie").exists()


def test_stats_of_an_unknown_column_is_an_error(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    code, _, err = run(capsys, "stats", str(table), "--columns", "id", "nope")
    assert code == 2 and "unknown column 'nope'; the index has id, x, region" in err


def test_files_prints_only_kept_paths_and_notes_go_to_stderr(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    code, out, err = run(capsys, "files", str(table))
    assert code == 0 and err == ""
    assert out.splitlines() == [str(p) for p in sorted(table.rglob("*.parquet")) if ".hoodie" not in p.parts]
    pq.write_table(pa.table({"id": [7], "x": [0.0]}), table / "region=eu" / "new.parquet")
    # Rewritten in place: same name, other rows (and another size).
    pq.write_table(pa.table({"id": [7, 8], "x": [0.0, 1.0]}), table / "region=us" / "f2.parquet")
    code, out, err = run(capsys, "files", str(table), "--where", "id = 7 AND abs(x) < 1")
    assert code == 0
    assert out.splitlines() == kept(table, "region=eu/f0.parquet", "region=us/f2.parquet") + kept(
        table, "region=eu/new.parquet"
    )
    assert err.splitlines() == [
        "hudi-index files: note: not used for pruning (kept as TRUE): abs(x) < 1",
        "hudi-index files: note: 1 file not in the index kept: run sync to index them",
        "hudi-index files: note: 1 file changed since the index was built, kept: run sync",
    ]
    done = subprocess.run(
        f"{HUDI_INDEX} files {table} --where 'id = 7' | xargs -n1 basename",
        shell=True,
        capture_output=True,
        text=True,
    )
    assert sorted(done.stdout.split()) == ["f0.parquet", "f2.parquet", "new.parquet"], done.stderr


def test_prune_reports_changed_and_unknown_files_and_unused_parts_once(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    pq.write_table(pa.table({"id": [1105], "x": [0.0]}), table / "region=eu" / "f0.parquet")
    code, out, _ = run(capsys, "prune", str(table), "--where", "id = 1105 AND abs(x) < 1")
    assert code == 0
    assert out.count("not used for pruning (kept as TRUE): abs(x) < 1") == 1
    assert "1 file changed since the index was built, kept: run sync" in out
    assert "kept 2 of 6 files" in out
    code, out, _ = run(capsys, "prune", str(table), "--where", "id = 1105", "--json")
    assert json.loads(out)["changed_files"] == kept(table, "region=eu/f0.parquet")


# ------------------------------------------------------------------------------ query names


def test_query_names_the_table_after_its_folder_quoted_when_needed(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = table.rename(tmp_path / "my-tbl")
    run(capsys, "build", str(folder))
    query = 'SELECT count(*) AS n FROM "my-tbl" WHERE id >= 1100'
    code, out, err = run(capsys, "query", str(folder), query, "--csv")
    assert code == 0, err
    assert out.splitlines() == ['"n"', "20"]
    assert 'hudi-index query: note: the table is named "my-tbl" in the query, quoted' in err
    assert "my-tbl: kept 2 of 6 files" in err
    code, _, err = run(capsys, "query", str(folder), "SELECT count(*) FROM t")
    assert code == 2 and "hudi-index query: error: Catalog Error: Table with name t does not exist" in err
    monkeypatch.chdir(folder)
    code, out, err = run(capsys, "query", ".", query, "--csv")
    assert code == 0 and out.splitlines() == ['"n"', "20"], err


def test_query_of_a_plain_folder_name_needs_no_quotes(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    code, out, err = run(capsys, "query", str(table), "SELECT count(*) AS n FROM t", "--csv")
    assert code == 0 and out.splitlines() == ['"n"', "60"]
    assert "note" not in err


def test_query_errors_are_one_line(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    for query, code, message in [
        ("SELEC 1", 2, "Parser Error"),
        ("SELECT * FROM read_parquet('/nonexistent/*.parquet')", 1, "IO Error"),
    ]:
        got, _, err = run(capsys, "query", str(table), query)
        assert got == code and message in err and len(err.splitlines()) == 1, err


def test_a_reader_that_goes_away_ends_files_quietly(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    argv = [HUDI_INDEX, "files", str(table)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # gone before the CLI has started: like `hudi-index files t | head -0`
        err = proc.stderr.read()
    assert proc.returncode == 1 and err == b""
