"""How a plain table knows its files did not change between two reads (issue 14): a watch on its
folders (``check_files="watch"``, inotify) or a ``stat`` of every file (``"stat"``).

Every way a file can change under the index is checked in both modes, after the table was listed
once and with folders aged past the 2 s window (so the kept listing is what is tested, not a fresh
scan): the answer over the kept files must equal DuckDB reading every file. Then what the watch
cannot see, shown by behaviour, which also shows that nothing was looked at by ``stat``: a file
written in place through a hard link made after the listing is missed by the watch (and seen by
``stat``, by ``verify_files="stat"``, after a fork, after a queue overflow, and on file systems
where no watch is trusted).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_expr import col
from index_store import IndexCorruptError, IndexedTable, open_table
from index_store.tables import PlainParquetTable, watch
from index_store.tables.watch import new_watch

MODES = ["watch", "stat"]
watch_only = pytest.mark.skipif(
    watch._process_watcher() is None, reason="no inotify here: the watch mode falls back to stat"
)


def _write(path: Path, keys: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = pa.table({"k": pa.array(keys, pa.int64()), "s": [f"v{k}" for k in keys]})
    pq.write_table(data, path, compression="none", use_dictionary=False)


def _age(root: Path) -> None:
    """Date every folder under ``root`` back an hour, as if nothing had touched them lately."""
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    old = os.stat(root).st_mtime - 3600
    for folder in folders:
        os.utime(folder, (old, old))


def _indexed(root: Path, check_files: str, partitioned: bool = False) -> IndexedTable:
    for i in range(4):
        rel = f"p={i % 2}/f{i}.parquet" if partitioned else f"f{i}.parquet"
        _write(root / rel, [i * 10 + j for j in range(5)])
    t = open_table(root, check_files=check_files)  # type: ignore[arg-type]
    t.build()
    _age(root)
    t.prune(col("k") == 1)  # the listing is taken and kept
    return t


def _count_kept(t: IndexedTable, where: str, k: int) -> int:
    """Rows where ``where`` holds, DuckDB reading the files ``prune(k = value)`` keeps."""
    files = t.prune(col("k") == k).files
    if not files:
        return 0
    return int(duckdb.execute(f"SELECT count(*) FROM read_parquet({files}) WHERE {where}").fetchall()[0][0])


def _count_all(root: Path, where: str) -> int:
    files = sorted(str(p) for p in root.rglob("*.parquet") if p.stat().st_size and p.name[0] not in "._")
    if not files:
        return 0
    return int(duckdb.execute(f"SELECT count(*) FROM read_parquet({files}) WHERE {where}").fetchall()[0][0])


def _bump_mtime(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


# Each rewrite path changes the table at root and returns a key k that now has a row in a file
# the index describes otherwise (or does not know).
def _in_place_other_size(root: Path) -> int:
    _write(root / "f0.parquet", [999, 1000, 1001])  # pyarrow truncates and writes the same inode
    return 999


def _in_place_same_size(root: Path) -> int:
    before = (root / "f0.parquet").stat().st_size
    _write(root / "f0.parquet", [5, 6, 7, 8, 9])  # 7 is in no indexed file's range
    assert (root / "f0.parquet").stat().st_size == before
    _bump_mtime(root / "f0.parquet")  # a later write moves it (same tick: README's coarse-time caveat)
    return 7


def _temp_and_rename(root: Path) -> int:
    _write(root / ".f0.parquet.tmp", [999, 998])  # a hidden name, as writers stage a file
    os.replace(root / ".f0.parquet.tmp", root / "f0.parquet")
    return 999


def _temp_elsewhere_and_rename(root: Path) -> int:
    staging = root.parent / "staging" / "x.parquet"
    _write(staging, [999, 998, 997])
    os.replace(staging, root / "f1.parquet")
    return 999


def _delete_and_add(root: Path) -> int:
    (root / "f2.parquet").unlink()
    _write(root / "f2.parquet", [999])
    return 999


def _add(root: Path) -> int:
    _write(root / "f9.parquet", [999])
    return 999


def _delete(root: Path) -> None:  # (not a rewrite: after it, nothing may be read)
    (root / "f0.parquet").unlink()  # k = 1 lived there: no file may be read for it


def _truncate_to_empty(root: Path) -> None:
    os.truncate(root / "f0.parquet", 0)  # an empty file is a write in progress: not read


REWRITES: list[Callable[[Path], int]] = [
    _in_place_other_size,
    _in_place_same_size,
    _temp_and_rename,
    _temp_elsewhere_and_rename,
    _delete_and_add,
    _add,
]


@pytest.mark.parametrize("check_files", MODES)
@pytest.mark.parametrize("rewrite", REWRITES, ids=lambda f: f.__name__.strip("_"))
def test_every_rewrite_path_is_seen_by_the_next_prune(
    tmp_path: Path, check_files: str, rewrite: Callable[[Path], int]
) -> None:
    root = tmp_path / "t"
    t = _indexed(root, check_files)
    k = rewrite(root)
    assert _count_kept(t, f"k = {k}", k) == _count_all(root, f"k = {k}") == 1


@pytest.mark.parametrize("check_files", MODES)
@pytest.mark.parametrize("rewrite", [_delete, _truncate_to_empty], ids=["delete", "truncate"])
def test_a_file_gone_or_emptied_is_never_read(
    tmp_path: Path, check_files: str, rewrite: Callable[[Path], None]
) -> None:
    root = tmp_path / "t"
    t = _indexed(root, check_files)
    rewrite(root)
    result = t.prune(col("k") == 1)
    assert str(root / "f0.parquet") not in result.files and result.total == 3


@pytest.mark.parametrize("check_files", MODES)
def test_a_file_whose_time_alone_moved_is_kept_as_changed(tmp_path: Path, check_files: str) -> None:
    root = tmp_path / "t"
    t = _indexed(root, check_files)
    _bump_mtime(root / "f3.parquet")  # touch: nothing written, as the stat mode sees it
    assert t.prune(col("k") == 1).changed_files == [str(root / "f3.parquet")]


@pytest.mark.parametrize("check_files", MODES)
def test_partition_folders_new_and_rewritten_in_place(tmp_path: Path, check_files: str) -> None:
    root = tmp_path / "h"
    t = _indexed(root, check_files, partitioned=True)
    _write(root / "p=1" / "f1.parquet", [999, 1000])  # in place, in a watched sub-folder
    assert _count_kept(t, "k = 999", 999) == 1
    _write(root / "p=7" / "n.parquet", [1234])  # a new partition folder
    assert _count_kept(t, "k = 1234", 1234) == 1
    t.sync()
    _age(root)
    t.prune(col("k") == 1)
    _write(root / "p=7" / "n.parquet", [4321, 4322])  # the new folder is watched too
    assert _count_kept(t, "k = 4321", 4321) == 1


@pytest.mark.parametrize("check_files", MODES)
def test_nothing_changed_gives_the_same_listing_and_answer(tmp_path: Path, check_files: str) -> None:
    root = tmp_path / "t"
    t = _indexed(root, check_files)
    first = t.reader.listing()  # type: ignore[attr-defined]
    assert t.reader.listing() is first  # type: ignore[attr-defined]
    assert t.prune(col("k") == 12).files == [str(root / "f1.parquet")]
    _write(root / "f1.parquet", [1, 2, 3, 4, 5, 6])
    assert t.reader.listing() is not first  # type: ignore[attr-defined]
    assert t.prune(col("k") == 12).files == [str(root / "f1.parquet")]  # changed: kept, and said
    assert t.prune(col("k") == 12).changed_files == [str(root / "f1.parquet")]


# ------------------------------------------------ what a watch cannot see, and where it is not used


def _write_through_a_new_hard_link(root: Path, tmp_path: Path) -> None:
    """Give f0 a second name in an unwatched folder, then rewrite it in place through that name."""
    other = tmp_path / "elsewhere"
    other.mkdir(parents=True, exist_ok=True)
    os.link(root / "f0.parquet", other / "alias.parquet")
    with open(other / "alias.parquet", "r+b") as fh:  # in place: same inode, another size
        fh.seek(0, os.SEEK_END)
        fh.write(b"\0" * 100)


@watch_only
def test_a_watched_listing_is_reused_without_a_stat_of_any_file(tmp_path: Path) -> None:
    """The write below changes f0's size where no watch sees it: only a ``stat`` of f0 would
    tell. That the watched listing still has the old size shows that nothing was looked at; the
    ``stat`` mode, ``verify_files="stat"`` and ``list_files(stat=True)`` see it."""
    root = tmp_path / "t"
    t = _indexed(root, "watch")
    strict = _indexed(tmp_path / "s", "stat")
    size = (root / "f0.parquet").stat().st_size
    _write_through_a_new_hard_link(root, tmp_path)
    _write_through_a_new_hard_link(tmp_path / "s", tmp_path / "s_other")
    assert {f.path: f.size for f in t.reader.list_files()}["f0.parquet"] == size
    assert t.prune(col("k") == 12).changed_files == []
    assert t.prune(col("k") == 12, verify_files="stat").changed_files == [str(root / "f0.parquet")]
    assert strict.prune(col("k") == 12).changed_files == [str(tmp_path / "s" / "f0.parquet")]
    assert {f.path: f.size for f in t.reader.list_files(stat=True)}["f0.parquet"] == size + 100  # type: ignore[call-arg]
    assert t.freshness().changed.any()  # freshness (and sync) always look at every file


@watch_only
def test_a_file_with_another_name_when_listed_is_checked_by_stat(tmp_path: Path) -> None:
    root = tmp_path / "t"
    for i in range(3):
        _write(root / f"f{i}.parquet", [i])
    other = tmp_path / "elsewhere"
    other.mkdir()
    os.link(root / "f0.parquet", other / "alias.parquet")  # before the listing: seen as linked
    (other / "target.parquet").write_bytes((root / "f1.parquet").read_bytes())
    (root / "f1.parquet").unlink()
    os.symlink(other / "target.parquet", root / "f1.parquet")
    t = open_table(root)
    t.build()
    _age(root)
    t.prune(col("k") == 0)
    _write(other / "alias.parquet", [999, 1000, 1001])  # through the other name, in place
    _write(other / "target.parquet", [777, 778])  # the symbolic link's target, in place
    result = t.prune(col("k") == 999)
    assert result.changed_files == [str(root / "f0.parquet"), str(root / "f1.parquet")]
    assert _count_kept(t, "k = 999", 999) == 1 and _count_kept(t, "k = 777", 777) == 1


@watch_only
def test_a_queue_overflow_makes_every_watch_look_again(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _indexed(root, "watch")
    _write_through_a_new_hard_link(root, tmp_path)  # unseen by the watch
    noise = [root / ".a", root / ".b"]  # hidden names: their events alone change nothing
    for path in noise:
        path.write_bytes(b"x")
    assert t.prune(col("k") == 12).changed_files == []
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    for i in range(limit + 10):
        os.utime(noise[i % 2])  # alternating names: the kernel cannot merge them
    assert t.prune(col("k") == 12).changed_files == [str(root / "f0.parquet")]


@watch_only
def test_a_forked_child_does_not_trust_the_parents_watch(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _indexed(root, "watch")
    _write_through_a_new_hard_link(root, tmp_path)  # unseen by the watch
    assert t.prune(col("k") == 12).changed_files == []
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the size it lists for f0, then leave at once
        try:
            size = {f.path: f.size for f in t.reader.list_files()}["f0.parquet"]
            os.write(write, str(size).encode())
        finally:
            os._exit(0)
    os.close(write)
    got = os.read(read, 100)
    os.close(read)
    os.waitpid(pid, 0)
    assert int(got) == (root / "f0.parquet").stat().st_size
    # The parent's watch is still its own: it goes on serving (and still does not see the link).
    assert t.prune(col("k") == 12).changed_files == []


def test_file_systems_without_a_trusted_watch_fall_back_to_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch, "LOCAL_FILE_SYSTEMS", frozenset())  # as on NFS, FUSE, virtiofs ...
    root = tmp_path / "t"
    t = _indexed(root, "watch")
    _write_through_a_new_hard_link(root, tmp_path)
    assert t.prune(col("k") == 12).changed_files == [str(root / "f0.parquet")]


def test_the_file_system_of_this_folder_is_known(tmp_path: Path) -> None:
    device = os.stat(tmp_path).st_dev
    assert watch.file_system_of(device)  # the test machine's disks are in /proc/self/mountinfo
    unusable = new_watch()
    assert not unusable.add(str(tmp_path), device=-1) and unusable.changed()


def test_check_files_is_one_of_two_words(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="check_files"):
        PlainParquetTable(tmp_path, check_files="never")  # type: ignore[arg-type]


@watch_only
def test_a_watch_sees_writes_of_another_process(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _indexed(root, "watch")
    code = (
        "import pyarrow as pa, pyarrow.parquet as pq, sys; "
        "pq.write_table(pa.table({'k': pa.array([999, 5], pa.int64()), 's': ['a', 'b']}), sys.argv[1])"
    )
    subprocess.run([sys.executable, "-c", code, str(root / "f2.parquet")], check=True)
    assert _count_kept(t, "k = 999", 999) == 1


# --------------------------------------------------------------------- the index's own timeline


@pytest.mark.parametrize("trusted", [True, False], ids=["watch", "listing"])
def test_the_timeline_sees_commits_damage_and_older_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted: bool
) -> None:
    if not trusted:
        monkeypatch.setattr(watch, "LOCAL_FILE_SYSTEMS", frozenset())
    root = tmp_path / "t"
    t = _indexed(root, "stat")
    first = t.snapshot()
    assert t.snapshot() is first  # nothing changed: the same replay
    other = open_table(root)  # another reader and writer of the same index
    _write(root / "f9.parquet", [999])
    other.update(added=["f9.parquet"])
    assert t.snapshot().version == first.version + 1
    assert t.prune(col("k") == 999).files == [str(root / "f9.parquet")]
    assert t.timeline.snapshot(first.version).version == first.version  # an older version ...
    assert t.snapshot().version == first.version + 1  # ... does not stand for the newest
    entry = t.timeline.path(first.version + 1)
    entry.write_text("{not json")  # damaged in place
    with pytest.raises(IndexCorruptError):
        t.snapshot()


@pytest.mark.parametrize("check_files", MODES)
def test_a_table_swapped_in_by_renaming_a_folder_above_it_is_seen(tmp_path: Path, check_files: str) -> None:
    """Renaming a parent folder sends no event to the folders below it: the watch also checks that
    the table's path still leads to the folder it watches (and the index's, to its timeline)."""
    root = tmp_path / "live" / "t"
    t = _indexed(root, check_files)
    staged = tmp_path / "staged"
    shutil.copytree(tmp_path / "live", staged)  # the table and its index, times kept
    _write(staged / "t" / "f0.parquet", [999, 1000, 1001])
    os.rename(tmp_path / "live", tmp_path / "old")
    os.rename(staged, tmp_path / "live")
    assert t.prune(col("k") == 999).changed_files == [str(root / "f0.parquet")]
    assert _count_kept(t, "k = 999", 999) == 1


def test_an_index_rebuilt_elsewhere_at_the_same_version_is_read(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _indexed(root, "watch")
    before = t.snapshot()
    _write(root / "f0.parquet", [999, 1000, 1001])
    other = open_table(root)
    other.build(rebuild=True)  # the old index is moved aside; the new one starts again at version 1
    assert t.snapshot().version == before.version == 1
    assert t.snapshot().live != before.live
    result = t.prune(col("k") == 999)
    assert result.files == [str(root / "f0.parquet")] and result.changed_files == []  # indexed anew


@watch_only
def test_a_watch_closed_while_the_queue_is_drained_does_not_deadlock(tmp_path: Path) -> None:
    # A Watch is closed by a finalizer (weakref.finalize), which Python may run at any allocation:
    # also inside the drain, on the thread holding the queue's lock. Here the drain's own callback
    # (``ignore``) closes another watch, as such a finalizer would; the close must wait its turn.
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    other = new_watch()
    assert other.add(str(second), os.stat(second).st_dev)

    def ignore(name: str) -> bool:
        other.close()
        return False

    watching = new_watch(ignore)
    assert watching.add(str(first), os.stat(first).st_dev)
    (first / "x.parquet").write_bytes(b"x")
    assert watching.changed()  # drained: ignore() ran and closed the other watch, no deadlock
    assert other.changed()  # closed: vouches for nothing
    (second / "y.parquet").write_bytes(b"y")
    fresh = new_watch()
    assert fresh.add(str(second), os.stat(second).st_dev) and not fresh.changed()
    fresh.close()
    watching.close()
