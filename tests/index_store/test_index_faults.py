"""Faults: corrupt index files, writers killed mid-commit, and concurrent writers (real processes)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import settings

from hudi_expr import col
from index_store import IndexCorruptError, open_table
from index_store.timeline import IndexTimeline

REPO = Path(__file__).resolve().parents[2]


def _write(root: Path, name: str, start: int, n: int = 20) -> None:
    pq.write_table(pa.table({"id": np.arange(start, start + n), "v": np.arange(n) * 0.5}), root / name)


@pytest.fixture
def built(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(5):
        _write(root, f"f{i}.parquet", i * 100)
    open_table(root).build(bloom_columns=["id"], progress=False)
    return root


# ----------------------------------------------------------------------------------- corruption


def _index_file(root: Path, partition: str) -> Path:
    snap = open_table(root).snapshot()
    return open_table(root).index_root / snap.live[partition][0]


@pytest.mark.parametrize("partition", ["files", "column_stats", "bloom_filters"])
@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_index_parquet_names_the_file(built: Path, partition: str, damage: str) -> None:
    target = _index_file(built, partition)
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\x00garbage" * 50)
    table = open_table(built)
    expr = col("id") == 110  # uses the id bloom filter too
    with pytest.raises(IndexCorruptError) as info:
        table.prune(expr)
    assert target.name in str(info.value)
    # Told to, prune keeps everything instead of failing (never a wrong answer).
    fallback = open_table(built).prune(expr, on_corrupt="keep_all")
    assert fallback.kept == 5 and "unreadable" in fallback.explain()


def test_timeline_entry_pointing_at_a_missing_file(built: Path) -> None:
    target = _index_file(built, "column_stats")
    target.unlink()
    with pytest.raises(IndexCorruptError, match="does not exist"):
        open_table(built).prune(col("id") > 5)


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00", b'{"format": 1}', b"[]"])
def test_garbage_timeline_entry(built: Path, content: bytes) -> None:
    bad = IndexTimeline(open_table(built).index_root).path(2)
    bad.write_bytes(content)
    with pytest.raises(IndexCorruptError) as info:
        open_table(built).prune(col("id") > 5)
    assert bad.name in str(info.value)


def test_leftover_temporary_files_are_ignored(built: Path) -> None:
    table = open_table(built)
    (table.index_root / "timeline" / ".tmp-deadbeef.json").write_text("{half a comm")
    (table.index_root / "column_stats" / "orphan.parquet").write_bytes(b"partial")
    assert table.prune(col("id") == 110).kept == 1
    assert {"timeline/.tmp-deadbeef.json", "column_stats/orphan.parquet"} <= set(
        table.clean(retention_seconds=0)
    )


# ------------------------------------------------------------------------------- killed writers

_WRITER = textwrap.dedent(
    """
    import os, sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
    from index_store import open_table
    root, log = sys.argv[1], sys.argv[2]
    start = int(sys.argv[3])
    table = open_table(root)
    print("ready", flush=True)
    for k in range(start, start + 1000):
        name = f"w{k}.parquet"
        # ids from 10**6 up: disjoint from the fixture files' ids
        data = pa.table({"id": np.arange(10**6 + k * 10, 10**6 + k * 10 + 10), "v": np.ones(10)})
        # Published atomically, as data writers do (a hidden temp file, then a rename): a kill
        # here must not leave a torn data file, which a later build would rightly refuse.
        tmp = os.path.join(root, "." + name + ".tmp")
        pq.write_table(data, tmp)
        os.replace(tmp, os.path.join(root, name))
        if k % 7 == 3:
            version, op = table.sync(), "sync"
        elif k % 11 == 5:
            version, op = table.build(progress=False), "build"
        else:
            version, op = table.update(added=[name]), "update"
        with open(log, "a") as f:  # only after the commit call returned: it is durable
            f.write(f"{version} {name}\\n")
            f.flush()
            os.fsync(f.fileno())
    """
)


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-c", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def _kill_rounds() -> int:
    """Writers the SIGKILL test kills: 50 under the ``deep`` hypothesis profile, 10 otherwise (``ci``)."""
    return 50 if settings.get_current_profile_name() == "deep" else 10


def test_sigkill_at_random_points_never_loses_a_commit(built: Path, tmp_path: Path) -> None:
    rounds = _kill_rounds()
    log = tmp_path / "landed.log"
    log.touch()
    rng = random.Random(1234)
    kills = 0
    for round_ in range(rounds):
        worker = _spawn(_WRITER, str(built), str(log), str(round_ * 1000))
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready", worker.stderr.read() if worker.stderr else ""
        time.sleep(rng.uniform(0.0, 0.4))
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert worker.returncode == -signal.SIGKILL, worker.stderr.read() if worker.stderr else ""
        kills += 1
        # The index opens at its last complete version and holds every file a landed commit added.
        table = open_table(built)
        snap = table.snapshot()
        landed = [line.split() for line in log.read_text().splitlines()]
        assert all(int(v) <= snap.version for v, _ in landed if v != "None")
        indexed = set(table.stats(columns=["id"]).files.to_pylist())
        missing = {name for _, name in landed} - indexed
        assert not missing, (round_, missing)
        versions = IndexTimeline(table.index_root).versions()
        assert versions == list(range(versions[0], versions[-1] + 1))
        # And it answers: every landed file's first id prunes to exactly that file.
        if landed:
            name = landed[-1][1]
            first = 10**6 + int(name[1:-8]) * 10
            result = table.prune(col("id") == first)
            indexed_hits = [os.path.basename(f) for f in result.files if f not in result.unknown_files]
            assert indexed_hits == [name]  # files written by a killed commit are unknown: kept too
    assert kills == rounds  # every writer was killed mid-work, none finished or failed on its own


# ----------------------------------------------------------------------------- concurrent writers

_COMMITTER = textwrap.dedent(
    """
    import json, os, sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
    from index_store import CommitConflictError, open_table
    root, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    table = open_table(root)
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    landed, removal_conflicts, other_conflicts = [], 0, 0
    for k in range(count):
        name = f"p{worker}-{k}.parquet"
        base = (worker * 1000 + k) * 10
        data = pa.table({"id": np.arange(base, base + 10), "v": np.ones(10)})
        pq.write_table(data, os.path.join(root, name))
        # Every writer also tries, once, to remove the same shared file: only one may win.
        removed = ["shared.parquet"] if k == count // 2 else []
        try:
            version = table.update(added=[name], removed=removed)
            landed.append([version, name, removed])
        except CommitConflictError:
            if removed:
                removal_conflicts += 1
            else:
                other_conflicts += 1
    print(json.dumps({"landed": landed, "removal": removal_conflicts, "other": other_conflicts}), flush=True)
    """
)


@pytest.mark.parametrize("writers", [2, 4])
def test_concurrent_writers_land_or_conflict_and_equal_a_serial_replay(tmp_path: Path, writers: int) -> None:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(3):
        _write(root, f"f{i}.parquet", 100_000 + i * 100)
    _write(root, "shared.parquet", 900_000)
    open_table(root).build(progress=False)
    procs = [_spawn(_COMMITTER, str(root), str(w), "25") for w in range(writers)]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:  # release them all at once
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    landed = [entry for r in reports for entry in r["landed"]]
    removal_conflicts = sum(r["removal"] for r in reports)
    other_conflicts = sum(r["other"] for r in reports)
    removals = [e for e in landed if e[2]]
    # Exactly one writer removed the shared file; every other attempt was a clean conflict.
    assert len(removals) == 1
    assert removal_conflicts == writers - 1
    # Every commit landed or raised; plain additions never clash, so at most a rare give-up.
    assert len(landed) + removal_conflicts + other_conflicts == writers * 25
    assert other_conflicts <= writers
    # Versions: the build (1) and then one per landed commit, each taken exactly once.
    versions = sorted(e[0] for e in landed)
    assert versions == list(range(2, 2 + len(landed)))
    # The final index equals a serial replay of the landed commits, in version order.
    expected = {"f0.parquet", "f1.parquet", "f2.parquet", "shared.parquet"}
    for _, name, removed in sorted(landed):
        expected.add(name)
        expected.difference_update(removed)
    table = open_table(root)
    assert set(table.stats(columns=["id"]).files.to_pylist()) == expected
    for _, name, _ in landed[:10]:
        worker, k = (int(x) for x in name[1:-8].split("-"))
        hit = table.prune(col("id") == (worker * 1000 + k) * 10 + 3, verify_files=False).files
        assert [os.path.basename(f) for f in hit] == [name]
