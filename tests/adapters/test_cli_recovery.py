"""``hudi-index`` when something is wrong: a corrupt index (``build --rebuild``, the query warning),
a table or index the user cannot write, an empty table, and folders that are not a table.

Read-only cases run the CLI in a subprocess that file permissions apply to: as the current user
when not root, else as uid 65534, else (when that user cannot run the interpreter, e.g. a venv
under ``/root``) as root without the capabilities that bypass file permissions.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

NOBODY = 65534
SETPRIV_DROP = "--bounding-set=-dac_override,-dac_read_search"


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(4):
        pq.write_table(pa.table({"id": np.arange(i * 100, i * 100 + 10)}), root / f"f{i}.parquet")
    return root


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# ------------------------------------------------------------------------------ corrupt index


def test_build_rebuild_moves_a_corrupt_index_aside(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    entry = table / ".hoodie" / ".index" / "timeline" / f"{1:020d}.json"
    entry.write_text("{not json")
    code, _, err = run(capsys, "prune", str(table), "--where", "id < 5")
    assert code == 1 and "hudi-index build --rebuild" in one_line(err)
    code, out, err = run(capsys, "build", str(table), "--rebuild")
    assert code == 0, err
    assert "moved the old index aside to" in out and "built index version 1: 4 files" in out
    [aside] = [p for p in table.rglob(".index.broken-*")]
    assert (aside / "timeline" / entry.name).read_text() == "{not json"
    # The table stays a plain table: nothing but the index is left in its .hoodie folder.
    code, out, err = run(capsys, "prune", str(table), "--where", "id < 5")
    assert code == 0 and "kept 1 of 4 files" in out, err
    code, out, _ = run(capsys, "files", str(table))
    assert code == 0 and len(out.splitlines()) == 4


def test_a_plain_build_repairs_a_corrupt_timeline(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    (table / ".hoodie" / ".index" / "timeline" / f"{1:020d}.json").write_text("garbage")
    code, out, err = run(capsys, "build", str(table))
    assert code == 0 and "built index version 2" in out, err
    code, out, _ = run(capsys, "prune", str(table), "--where", "id >= 300")
    assert code == 0 and "kept 1 of 4 files" in out


def test_query_on_an_unreadable_index_warns_once_in_one_line(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "build", str(table))
    for f in (table / ".hoodie" / ".index" / "column_stats").iterdir():
        f.write_bytes(b"garbage")
    code, out, err = run(capsys, "query", str(table), "SELECT count(*) AS n FROM t WHERE id < 5", "--csv")
    assert code == 0, err
    assert out.splitlines() == ['"n"', "5"]
    warnings = [line for line in err.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("hudi-index query: warning: t: the index is unreadable, every file is read")
    assert "hudi-index build --rebuild" in warnings[0]
    assert "IndexUnusedWarning" not in err and "warnings.warn" not in err
    assert "t: kept 4 of 4 files" in err


def test_keep_all_on_corrupt_says_why_on_stderr(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "build", str(table))
    for f in (table / ".hoodie" / ".index" / "column_stats").iterdir():
        f.write_bytes(b"garbage")
    code, out, err = run(capsys, "files", str(table), "--where", "id < 5", "--keep-all-on-corrupt")
    assert code == 0 and len(out.splitlines()) == 4
    assert one_line(err).startswith("hudi-index files: warning: the index is unreadable, every file is kept")


# ------------------------------------------------------------------------------- empty table


def test_an_empty_folder_is_an_empty_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = run(capsys, "build", str(empty))
    assert code == 0 and "0 files" in out
    code, out, err = run(capsys, "prune", str(empty), "--where", "id = 1")
    assert code == 0 and "the table has no data files" in out and "kept 0 of 0 files" in out, err
    code, out, err = run(capsys, "files", str(empty), "--where", "id = 1")
    assert code == 0 and out == ""
    assert one_line(err) == "hudi-index files: note: the table has no data files"
    code, out, err = run(capsys, "query", str(empty), "SELECT * FROM empty WHERE id = 1")
    assert code == 0 and out == ""
    assert "has no data files: the query returns no rows" in one_line(err)
    code, out, _ = run(capsys, "stats", str(empty))
    assert code == 0 and "0 files" in out


# ------------------------------------------------------------------------- not a table at all


def test_a_folder_holding_a_hudi_table_is_named(
    copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_table("mor_avro_v9_txns_simple_nometa")
    code, _, err = run(capsys, "build", str(root.parent))
    line = one_line(err)
    assert code == 1 and line.startswith("hudi-index build: error:")
    assert f"{root.parent} holds a Hudi table at {root.name}" in line
    assert not (root.parent / ".hoodie").exists()


def test_a_partition_folder_of_a_merge_on_read_table_is_named(
    copy_table: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_table("mor_avro_v9_txns_simple_nometa")
    partition = root / "region=apac"
    code, _, err = run(capsys, "build", str(partition))
    line = one_line(err)
    assert code == 1 and f"{partition} is inside the Hudi table at {root}" in line
    assert not (partition / ".hoodie").exists()
    code, _, err = run(capsys, "build", str(root))  # the table itself is indexed
    assert code == 0 and (root / ".hoodie" / ".index").is_dir() and not (partition / ".hoodie").exists()


# ------------------------------------------------------------------------ read-only tables


@dataclass
class Unprivileged:
    """Runs ``hudi-index`` in a subprocess that cannot write where file permissions say so."""

    prefix: list[str] = field(default_factory=list)  # e.g. setpriv dropping capabilities
    options: dict[str, Any] = field(default_factory=dict)  # e.g. user=65534 for subprocess.run

    def run(self, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [*self.prefix, sys.executable, "-m", "adapters.cli", *args]
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, **self.options)


def _probe(runner: Unprivileged) -> str | None:
    """None if ``runner`` can start the interpreter, else why not. Only starting it is probed: a
    CLI that then fails to import must fail the tests, not skip them."""
    argv = [*runner.prefix, sys.executable, "-c", "pass"]
    try:
        done = subprocess.run(argv, cwd="/", capture_output=True, text=True, timeout=300, **runner.options)
    except OSError as exc:  # e.g. the interpreter lies under a folder that user cannot enter
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1]


@pytest.fixture(scope="module")
def unprivileged() -> Unprivileged:
    if os.geteuid() != 0:
        return Unprivileged()  # file permissions apply to us already
    nobody = Unprivileged(options={"user": NOBODY, "group": NOBODY, "extra_groups": []})
    failure = _probe(nobody)
    if failure is None:
        return nobody
    why = [f"as uid {NOBODY}: {failure}"]
    # Root without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH obeys permission bits like anyone else.
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        why.append("as root without the capabilities that bypass permissions: setpriv is not installed")
    else:
        dropped = Unprivileged(prefix=[setpriv, SETPRIV_DROP, "--"])
        failure = _probe(dropped)
        if failure is None:
            return dropped
        why.append(f"with {setpriv} {SETPRIV_DROP}: {failure}")
    pytest.skip(f"cannot run {sys.executable} where file permissions apply ({'; '.join(why)})")


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A fresh folder every user can enter (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="hudi-index-readonly-"))
    folder.chmod(0o755)
    yield folder
    _set_writable(folder, True)
    shutil.rmtree(folder)


def _set_writable(root: Path, writable: bool) -> None:
    """Make every folder and file under ``root`` (itself included) writable or read-only to all."""
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        if writable:
            path.chmod(mode | stat.S_IWUSR)
        else:
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def test_build_on_a_read_only_table_says_to_use_index_path(
    table: Path, scratch: Path, unprivileged: Unprivileged
) -> None:
    copy = Path(shutil.copytree(table, scratch / "t"))
    _set_writable(copy, False)
    done = unprivileged.run(scratch, "build", str(copy))
    assert done.returncode == 1, done.stderr
    line = one_line(done.stderr)
    assert line.startswith("hudi-index build: error: cannot write the index at")
    assert "--index-path DIR" in line and "Traceback" not in done.stderr
    assert not (copy / ".hoodie").exists()
    elsewhere = scratch / "indexes"
    elsewhere.mkdir(mode=0o777)
    elsewhere.chmod(0o777)
    done = unprivileged.run(scratch, "build", str(copy), "--index-path", str(elsewhere / "t"))
    assert done.returncode == 0 and "4 files" in done.stdout, done.stderr
    done = unprivileged.run(
        scratch, "files", str(copy), "--index-path", str(elsewhere / "t"), "--where", "id<5"
    )
    assert done.returncode == 0 and done.stdout.splitlines() == [str(copy / "f0.parquet")], done.stderr


def test_compact_and_clean_on_a_read_only_index_fail_in_one_line(
    table: Path, scratch: Path, unprivileged: Unprivileged, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = Path(shutil.copytree(table, scratch / "t"))
    for _ in range(2):  # the first build's files are unreferenced after the second: clean has work
        assert run(capsys, "build", str(copy))[0] == 0
    _set_writable(copy, False)
    for args in (["compact", str(copy)], ["clean", str(copy), "--retention", "0"]):
        done = unprivileged.run(scratch, *args)
        assert done.returncode == 1, done.stderr
        line = one_line(done.stderr)
        assert line.startswith(
            f"hudi-index {args[0]}: error: cannot write the index at {copy}/.hoodie/.index"
        )
        assert "--index-path" in line
    done = unprivileged.run(scratch, "prune", str(copy), "--where", "id >= 300")  # reading needs no write
    assert done.returncode == 0 and "kept 1 of 4 files" in done.stdout, done.stderr


def test_an_unreadable_folder_in_the_table_is_one_line(
    table: Path, scratch: Path, unprivileged: Unprivileged
) -> None:
    copy = Path(shutil.copytree(table, scratch / "t"))
    hidden_from_us = copy / "region=secret"
    hidden_from_us.mkdir()
    shutil.move(copy / "f3.parquet", hidden_from_us / "f3.parquet")
    hidden_from_us.chmod(0)
    try:
        done = unprivileged.run(scratch, "build", str(copy), "--index-path", str(scratch / "index"))
    finally:
        hidden_from_us.chmod(0o755)
    assert done.returncode == 1, done.stderr
    assert one_line(done.stderr) == f"hudi-index build: error: {hidden_from_us}: Permission denied"
