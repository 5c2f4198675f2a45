"""Merge-on-read Hudi tables of any size, written as Hudi writes them, for tests and benchmarks:
parquet base files with Hudi's meta columns and footer (bloom filter, key bounds), Avro log files
of upserts and deletes, and ``.hoodie/`` (``hoodie.properties``, the timeline of delta commits).

``write_mor_table(root, rows, ...)`` writes ``rows`` as base files in a first delta commit (a
merge-on-read table's inserts are delta commits too), cut into about ``file_groups`` file groups
per partition in proportion to its rows, each a run of rows sorted by ``cluster_by``; with
``insert_into="log_only"`` as log files only, a file group per partition (a table with no base
file at all, as the bucket index writes one). Each
``DeltaCommit`` then appends one log file to every file group it touches: one Avro data block of
its updates and inserts, one delete block of its deletes. ``MorTable.append`` adds more later.

Where a commit's rows go: an update (and a re-insert of a key written before) to the file group
that holds its key, as Hudi's index sends it; a new key's insert to a new file group with a base
file (``insert_into="base"``, Hudi's default), to the log files of existing groups
(``"logs"``, as with indexes that can index log files), or to a new group of log files only
(``"log_only"``, as the bucket index writes). A commit can be left pending (requested and
inflight only; a reader must ignore its files) or rolled back.

Table versions: 9 by default, the timeline in ``.hoodie/timeline/`` with completion times in the
instant names and Avro commit metadata (8: the same but two properties); or 6, the timeline in
``.hoodie/`` with JSON commit metadata. hudi-rs 0.5 reads all three alike here (the tests run each);
9 is the default as Hudi's current format and hudi-rs's main one (its code marks version 6 for
removal), and there its listing itself leaves out the files of instants not completed. A rollback
is written as each version does it: version 6 appends a rollback command block to the touched
slices, version 8+ deletes the failed commit's files.

``MorTable.expected`` is the snapshot the writes add up to (``hudi_merge.py``): per key the record
with the greatest ordering value, ties to the later commit (no ordering field: the later commit),
unless a later delete removed it. Keys are unique across partitions here, and a key never moves
to another partition."""

from __future__ import annotations

import os
import random
import re
import shutil
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.datagen.hudi_files import (
    base_file_name,
    log_file_name,
    rollback_block,
    with_meta_columns,
    write_base_file,
    write_log_file,
)
from index_store.datagen.hudi_merge import live_mask
from index_store.datagen.hudi_meta import (
    InstantFiles,
    RollbackFiles,
    WriteStat,
    commit_metadata,
    rollback_metadata,
    rollback_plan,
    table_properties,
    timeline_dir,
    write_instant,
    write_partition_metadata,
    write_properties,
)
from index_store.datagen.hudi_routing import KeyIndex, deal, group_cuts, partition_paths
from index_store.datagen.hudi_schema import avro_record_schema, normalize_columns
from index_store.record_key import RecordKeySpec

__all__ = ["DeltaCommit", "FileGroup", "FileSlice", "Instant", "LogFile", "MorTable", "write_mor_table"]

InsertTarget = Literal["base", "logs", "log_only"]
CommitState = Literal["completed", "pending", "rolled_back"]
TABLE_VERSIONS = (6, 8, 9)


@dataclass(frozen=True)
class DeltaCommit:
    """One delta commit's changes. ``updates`` and ``inserts`` have the table's columns;
    ``deletes`` are values of the record key column. ``file_groups`` picks the groups taking new
    keys for ``insert_into="logs"``: indexes into ``MorTable.file_groups`` or a fraction of each
    partition's groups (evenly spread), rows dealt round-robin among them."""

    updates: pa.Table | None = None
    inserts: pa.Table | None = None
    deletes: pa.Array | pa.ChunkedArray | Sequence[Any] | None = None
    insert_into: InsertTarget = "base"
    file_groups: float | Sequence[int] | None = None
    state: CommitState = "completed"


@dataclass(frozen=True)
class LogFile:
    """A log file written: its name, the instant whose blocks it holds, and that instant's fate
    (``rollback`` for a file holding a rollback command block)."""

    name: str
    instant: str
    state: CommitState | Literal["rollback"]


@dataclass
class FileGroup:
    """A file group written (updated in place as commits append to it)."""

    index: int  # position in MorTable.file_groups
    partition: str  # partition path, "" without partitions
    file_id: str
    base_instant: str  # the instant of its base file, or of the commit starting a log-only group
    base_file: str | None  # None: a group of log files only
    state: CommitState  # the fate of the commit that created it
    log_files: list[LogFile] = field(default_factory=list)


@dataclass(frozen=True)
class FileSlice:
    """A file slice as a Hudi file system view lists it (file names, no folders)."""

    partition: str
    file_id: str
    base_file: str | None
    log_files: tuple[str, ...]


@dataclass(frozen=True)
class Instant:
    """A timeline instant written: a delta commit or a rollback."""

    action: str
    requested: str
    completed: str | None  # None: left pending
    state: CommitState


def _instant_text(moment: datetime) -> str:
    """Hudi's instant format, ``yyyyMMddHHmmssSSS``."""
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


def _table_name(root: Path) -> str:
    """An Avro-safe name from the table's folder (Hudi names the record ``<name>_record``)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", root.name) or "table"
    return name if not name[0].isdigit() else f"t_{name}"


def _rows_by_group(target: np.ndarray) -> dict[int, np.ndarray]:
    """Row positions by file group, each in row order (one stable sort, not a scan per group)."""
    if not len(target):
        return {}
    order = np.argsort(target, kind="stable")
    chunks = np.split(order, np.flatnonzero(np.diff(target[order])) + 1)
    return {int(target[chunk[0]]): chunk for chunk in chunks}


@dataclass(frozen=True)
class _Changes:
    """One delta commit's rows, keys and the file group of each."""

    upserts: pa.Table  # updates first, then inserts
    keys: pa.Array
    partitions: pa.Array
    ids: np.ndarray  # key id of each upsert (-1 for new keys until committed)
    target: np.ndarray  # file group of each upsert (-1 until a new key is placed)
    n_updates: int
    deleted: pa.Array  # record keys
    delete_ids: np.ndarray
    delete_groups: np.ndarray


class MorTable:
    """A merge-on-read table written here: its file groups, instants and expected snapshot.
    ``append`` writes one more delta commit (and updates this object)."""

    def __init__(
        self,
        root: Path,
        schema: pa.Schema,
        *,
        record_key: str,
        partition_by: str | None,
        ordering_field: str | None,
        hive_style: bool,
        table_version: int,
        table_name: str,
        start: datetime,
        seed: int,
    ) -> None:
        self.root = root
        self.schema = schema  # the data columns, as stored (hudi_schema.normalize_columns)
        self.record_key = record_key
        self.partition_by = partition_by
        self.ordering_field = ordering_field
        self.hive_style = hive_style
        self.table_version = table_version
        self.table_name = table_name
        self.file_groups: list[FileGroup] = []
        self.instants: list[Instant] = []
        self.avro_schema = avro_record_schema(schema, table_name, with_meta=True)  # log blocks'
        self.writer_schema = avro_record_schema(schema, table_name, with_meta=False)  # commits'
        self._key_spec = RecordKeySpec((record_key,))
        self._clock = start
        self._rng = random.Random(seed)
        self._attempt = 0
        self._commits = 0  # delta commits written: the COMMIT order of their records
        self._pending: str | None = None
        self._log_versions: dict[int, int] = {}  # group -> its last log version (table version 6)
        self._index = KeyIndex()
        # what completed commits wrote: records (data columns, and per record its key, key id,
        # commit and file group) and deletes (key id, commit), for the expected snapshot
        self._records: list[pa.Table] = []
        self._record_keys: list[pa.Array] = []
        self._record_ids: list[np.ndarray] = []
        self._record_commits: list[np.ndarray] = []
        self._record_groups: list[np.ndarray] = []
        self._delete_ids: list[np.ndarray] = []
        self._delete_commits: list[np.ndarray] = []
        self._snapshot: tuple[pa.Table, np.ndarray] | None = None

    # ------------------------------------------------------------------ what was written

    @property
    def timeline(self) -> Path:
        return timeline_dir(self.root, self.table_version)

    @property
    def expected(self) -> pa.Table:
        """The snapshot a reader must return: the data columns, sorted by record key."""
        return self._live()[0].sort_by(self.record_key)

    def rows_in(self, groups: Sequence[int]) -> pa.Table:
        """The live rows of the file groups ``groups`` (data columns), e.g. to pick updates."""
        live, live_groups = self._live()
        return live.filter(pa.array(np.isin(live_groups, np.asarray(groups))))

    def slices(self) -> list[FileSlice]:
        """The file slices a Hudi file system view lists: file groups created by completed
        commits with their log files on disk (table version 6: every one, a reader skips the
        blocks of instants that are not valid; version 8+: those of completed instants only)."""
        out = []
        for group in self.file_groups:
            if group.state != "completed":
                continue
            logs = tuple(f.name for f in group.log_files if self.table_version < 8 or f.state == "completed")
            out.append(FileSlice(group.partition, group.file_id, group.base_file, logs))
        return out

    def _live(self) -> tuple[pa.Table, np.ndarray]:
        """The live rows and the file group of each."""
        if self._snapshot is None:
            records = pa.concat_tables(self._records)
            mask = self._live_mask(records)
            groups = np.concatenate(self._record_groups)[mask]
            self._snapshot = (records.filter(pa.array(mask)), groups)
        return self._snapshot

    def _live_mask(self, records: pa.Table, upcoming: _Changes | None = None) -> np.ndarray:
        """``hudi_merge.live_mask`` of the committed records, and of the ``upcoming`` commit's
        upserts when given (to check them before anything is written)."""
        ids, commits, keys = self._record_ids, self._record_commits, self._record_keys
        if upcoming is not None:
            records = pa.concat_tables([records, upcoming.upserts])
            fresh = upcoming.ids < 0  # new keys: the ids they are about to get
            ahead = np.where(fresh, len(self._index) + np.cumsum(fresh) - 1, upcoming.ids)
            ids = [*ids, ahead]
            commits = [*commits, np.full(len(upcoming.ids), self._commits, dtype=np.int32)]
            keys = [*keys, upcoming.keys]
        ordering = None if self.ordering_field is None else records.column(self.ordering_field)
        deletes = (
            np.concatenate(self._delete_ids or [np.empty(0, np.int64)]),
            np.concatenate(self._delete_commits or [np.empty(0, np.int32)]),
        )
        key_text = pa.chunked_array(keys, pa.string())
        return live_mask(np.concatenate(ids), np.concatenate(commits), ordering, deletes, key_text)

    # ------------------------------------------------------------------ shared by every commit

    def _next_times(self) -> tuple[datetime, str, str]:
        """A new instant: its moment, requested time and completion time (400 ms later; the
        next instant comes a second after)."""
        moment = self._clock
        self._clock += timedelta(seconds=1)
        return moment, _instant_text(moment), _instant_text(moment + timedelta(milliseconds=400))

    def _token(self, task: int) -> str:
        """A write token, ``<task>-<stage>-<attempt>`` as Spark tasks make them."""
        self._attempt += 1
        return f"{task}-{self._commits + 1}-{self._attempt}"

    def _new_group(self, partition: str, instant: str, state: CommitState, with_base: bool) -> FileGroup:
        """A file group, numbered after every group so far (registered once its commit is)."""
        folder = self.root / partition
        if not (folder / ".hoodie_partition_metadata").exists():
            folder.mkdir(parents=True, exist_ok=True)
            write_partition_metadata(folder, instant, 0 if self.partition_by is None else 1)
        file_id = f"{uuid.UUID(int=self._rng.getrandbits(128), version=4)}-0"
        base = "" if with_base else None  # named once written
        return FileGroup(len(self.file_groups), partition, file_id, instant, base, state)

    def _prepared(self, rows: pa.Table | None, what: str) -> pa.Table:
        """Rows of a commit in the table's columns and types."""
        if rows is None:
            return self.schema.empty_table()
        differ = set(self.schema.names) ^ set(rows.column_names)
        if differ:
            raise ValueError(f"{what} must have the table's columns; these differ: {sorted(differ)}")
        rows = rows.select(self.schema.names).cast(self.schema)  # the schema is normalized
        if self.ordering_field is not None and rows.column(self.ordering_field).null_count:
            raise ValueError(f"{what}: the ordering field {self.ordering_field!r} has nulls")
        return rows

    def _write_base_files(
        self, instant: str, jobs: list[tuple[FileGroup, pa.Table, pa.Array]]
    ) -> list[WriteStat]:
        """A base file per ``(group, rows, keys)``, on a thread pool (parquet encoding and
        compression release the GIL)."""
        named = []
        for task, (group, rows, keys) in enumerate(jobs):
            group.base_file = base_file_name(group.file_id, self._token(task), instant)
            named.append((task, group, rows, keys))

        def write(job: tuple[int, FileGroup, pa.Table, pa.Array]) -> WriteStat:
            task, group, rows, keys = job
            table = with_meta_columns(
                rows,
                keys,
                instant=instant,
                partition=group.partition,
                file_name=str(group.base_file),
                task=task,
            )
            size = write_base_file(
                self.root / group.partition / str(group.base_file), table, self.avro_schema
            )
            path = f"{group.partition}/{group.base_file}".lstrip("/")
            return WriteStat(group.partition, group.file_id, path, "null", rows.num_rows, 0, 0, size)

        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            return list(pool.map(write, named))

    def _finish(
        self, instant: str, completed: str, stats: list[WriteStat], operation: str, state: CommitState
    ) -> Instant:
        """The commit's instant files, by its fate (none for a rolled-back commit: Hudi deletes
        them once the rollback is done)."""
        self._commits += 1
        if state == "rolled_back":
            done = Instant("deltacommit", instant, None, state)
        else:
            files = InstantFiles(
                "deltacommit",
                instant,
                completed if state == "completed" else None,
                inflight_content=commit_metadata([], self.table_version, schema=None, operation=operation),
                completed_content=commit_metadata(
                    stats, self.table_version, schema=self.writer_schema, operation=operation
                ),
            )
            write_instant(self.timeline, self.table_version, files)
            done = Instant("deltacommit", instant, files.completed, state)
        self.instants.append(done)
        if state == "pending":
            self._pending = instant
        return done

    def _commit_records(self, rows: pa.Table, keys: pa.Array, ids: np.ndarray, groups: np.ndarray) -> None:
        """The last (completed) commit's rows, into what the snapshot comes from."""
        self._records.append(rows)
        self._record_keys.append(keys)
        self._record_ids.append(ids)
        self._record_commits.append(np.full(len(ids), self._commits - 1, dtype=np.int32))
        self._record_groups.append(np.asarray(groups, dtype=np.int32))
        self._snapshot = None

    # ------------------------------------------------------------------ the first commit

    def _write_base(self, rows: pa.Table, file_groups: int, cluster_by: str | None) -> Instant:
        """The first delta commit (``write_mor_table``'s): ``rows`` as the base files of new file
        groups, each a run of the rows of one partition sorted by ``cluster_by`` (else by key)."""
        rows = self._prepared(rows, "rows").combine_chunks()
        keys = self._key_spec.encode(rows)
        # distinct values have distinct texts: count the values, cheaper than the strings
        if pc.count_distinct(rows.column(self.record_key)).as_py() != rows.num_rows:
            raise ValueError(f"the record key {self.record_key!r} has duplicate values in rows")
        partitions = partition_paths(rows, self.partition_by, self.hive_style)
        order = pc.sort_indices(
            pa.table({"p": partitions, "c": rows.column(cluster_by or self.record_key)}),
            sort_keys=[("p", "ascending"), ("c", "ascending")],
        )
        rows, keys, partitions = rows.take(order), keys.take(order), partitions.take(order)
        _, instant, completed = self._next_times()
        jobs = []
        groups = np.empty(rows.num_rows, dtype=np.int32)
        for a, b in group_cuts(partitions, file_groups):
            group = self._new_group(partitions[a].as_py(), instant, "completed", with_base=True)
            self.file_groups.append(group)
            jobs.append((group, rows.slice(a, b - a), keys.slice(a, b - a)))
            groups[a:b] = group.index
        stats = self._write_base_files(instant, jobs)
        done = self._finish(instant, completed, stats, "INSERT", "completed")
        self._commit_records(rows, keys, self._index.add(keys, groups), groups)
        return done

    # ------------------------------------------------------------------ delta commits

    def append(self, commit: DeltaCommit) -> Instant:
        """Write one delta commit: a log file per touched file group (and base files or log-only
        groups for new keys), its instant files, and for a rolled-back commit the rollback."""
        if self._pending is not None:
            raise ValueError(f"delta commit {self._pending} is pending: it must stay the latest instant")
        if commit.state not in ("completed", "pending", "rolled_back"):
            raise ValueError(f"a commit's state is completed, pending or rolled_back, not {commit.state!r}")
        changes = self._changes(commit)
        moment, instant, completed = self._next_times()
        fresh = np.flatnonzero(changes.target < 0)
        new_groups = self._place_new_keys(commit, changes, fresh, instant)
        by_group = _rows_by_group(changes.target)
        jobs = []
        for group in new_groups:
            if group.base_file is not None:
                rows = pa.array(by_group.pop(group.index))
                jobs.append((group, changes.upserts.take(rows), changes.keys.take(rows)))
        stats = self._write_base_files(instant, jobs)
        groups = {g.index: g for g in [*self.file_groups, *new_groups]}
        written = self._write_logs(commit.state, instant, changes, by_group, groups, stats)
        operation = "UPSERT" if changes.upserts.num_rows else "DELETE"
        done = self._finish(instant, completed, stats, operation, commit.state)
        if commit.state == "rolled_back":
            self._roll_back(moment, instant, written, new_groups)
            return done
        self.file_groups += new_groups
        if commit.state == "completed":
            if len(fresh):
                changes.ids[fresh] = self._index.add(
                    changes.keys.take(pa.array(fresh)), changes.target[fresh]
                )
            self._commit_records(changes.upserts, changes.keys, changes.ids, changes.target)
            if len(changes.deleted):
                self._delete_ids.append(changes.delete_ids)
                self._delete_commits.append(np.full(len(changes.delete_ids), self._commits - 1, np.int32))
        return done

    def _changes(self, commit: DeltaCommit) -> _Changes:
        """A commit's rows checked: keys unique, updates and deletes of keys written before,
        no key moving to another partition."""
        updates = self._prepared(commit.updates, "updates")
        upserts = pa.concat_tables([updates, self._prepared(commit.inserts, "inserts")])
        keys = self._key_spec.encode(upserts) if upserts.num_rows else pa.array([], pa.string())
        if pc.count_distinct(keys).as_py() != len(keys):
            raise ValueError("a key appears twice among one commit's updates and inserts")
        deleted = self._delete_keys(commit.deletes)
        if len(deleted) and pc.any(pc.is_in(deleted, value_set=keys)).as_py():
            raise ValueError("a key is both upserted and deleted in one commit")
        ids, delete_ids = self._index.ids(keys), self._index.ids(deleted)
        if (ids[: updates.num_rows] < 0).any():
            raise ValueError("updates hold keys never written: pass them as inserts")
        if (delete_ids < 0).any():
            raise ValueError("deletes hold keys never written")
        target, delete_groups = self._index.groups(ids), self._index.groups(delete_ids)
        partitions = partition_paths(upserts, self.partition_by, self.hive_style)
        known = np.flatnonzero(target >= 0)
        if len(known):
            # Hudi would take a row of another partition for a new key (keys are per partition)
            of_group = pa.array([g.partition for g in self.file_groups], pa.string())
            same = pc.equal(partitions.take(pa.array(known)), of_group.take(pa.array(target[known])))
            if not pc.all(same).as_py():
                raise ValueError(f"an update moves a key to another partition ({self.partition_by})")
        changes = _Changes(
            upserts, keys, partitions, ids, target, updates.num_rows, deleted, delete_ids, delete_groups
        )
        if self._delete_ids and commit.state == "completed":
            # a key written again after a delete may make an ambiguous snapshot: check first
            once_deleted = np.concatenate(self._delete_ids)
            if np.isin(ids, once_deleted).any():
                self._live_mask(pa.concat_tables(self._records), changes)
        return changes

    def _delete_keys(self, deletes: pa.Array | pa.ChunkedArray | Sequence[Any] | None) -> pa.Array:
        if deletes is None:
            return pa.array([], pa.string())
        if isinstance(deletes, pa.ChunkedArray):
            values = deletes.combine_chunks()
        else:
            values = deletes if isinstance(deletes, pa.Array) else pa.array(list(deletes))
        kind = self.schema.field(self.record_key).type
        keys = self._key_spec.encode(pa.table({self.record_key: values.cast(kind)}))
        if pc.count_distinct(keys).as_py() != len(keys):
            raise ValueError("a key appears twice among one commit's deletes")
        return keys

    def _place_new_keys(
        self, commit: DeltaCommit, changes: _Changes, fresh: np.ndarray, instant: str
    ) -> list[FileGroup]:
        """A file group for each new key's row (``changes.target`` set in place): existing
        groups' log files, or new groups (with a base file, or of log files only), one per
        partition. Returns the new groups."""
        if not len(fresh):
            return []
        partitions = changes.partitions.take(pa.array(fresh))
        if commit.insert_into == "logs":
            by_partition: dict[str, list[int]] = {}
            for group in self.file_groups:
                if group.state == "completed":
                    by_partition.setdefault(group.partition, []).append(group.index)
            changes.target[fresh] = deal(partitions, by_partition, commit.file_groups)
            return []
        if commit.insert_into not in ("base", "log_only"):
            raise ValueError(f"insert_into is 'base', 'logs' or 'log_only', not {commit.insert_into!r}")
        new_groups: list[FileGroup] = []
        for partition in pc.unique(partitions).to_pylist():
            group = self._new_group(partition, instant, commit.state, commit.insert_into == "base")
            group.index += len(new_groups)
            new_groups.append(group)
            changes.target[fresh[pc.equal(partitions, partition).to_numpy(zero_copy_only=False)]] = (
                group.index
            )
        return new_groups

    def _write_logs(
        self,
        state: CommitState,
        instant: str,
        changes: _Changes,
        by_group: dict[int, np.ndarray],
        groups: dict[int, FileGroup],
        stats: list[WriteStat],
    ) -> list[tuple[FileGroup, LogFile]]:
        """One log file per file group with upserts (other than new base files') or deletes."""
        deletes_by_group = _rows_by_group(changes.delete_groups)
        empty = np.empty(0, dtype=np.int64)
        written = []
        for task, index in enumerate(sorted(set(by_group) | set(deletes_by_group))):
            group = groups[index]
            picked, gone = by_group.get(index, empty), deletes_by_group.get(index, empty)
            if self.table_version >= 8:  # each delta commit writes its own file
                version, named_after = 1, instant
            else:  # the slice's next version, named after its base instant
                version = self._log_versions.get(index, 0) + 1
                self._log_versions[index] = version
                named_after = group.base_instant
            name = log_file_name(group.file_id, named_after, version, self._token(task))
            rows = pa.array(picked)
            body = with_meta_columns(
                changes.upserts.take(rows),
                changes.keys.take(rows),
                instant=instant,
                partition=group.partition,
                file_name=group.file_id,  # log records name their file group, not a file
                task=task,
            )
            removed = pa.table(
                {
                    "record_key": changes.deleted.take(pa.array(gone)),
                    "partition_path": pc.fill_null(pa.nulls(len(gone), pa.string()), group.partition),
                }
            )
            path = self.root / group.partition / name
            size = write_log_file(path, body, removed, instant=instant, avro_schema=self.avro_schema)
            log = LogFile(name, instant, state)
            group.log_files.append(log)
            written.append((group, log))
            updated = int((picked < changes.n_updates).sum())  # updates come first in upserts
            stats.append(
                WriteStat(
                    group.partition,
                    group.file_id,
                    f"{group.partition}/{name}".lstrip("/"),
                    group.base_instant if self.table_version < 8 else instant,
                    num_inserts=len(picked) - updated,
                    num_updates=updated,
                    num_deletes=len(gone),
                    size=size,
                    base_file=group.base_file or "",
                    log_files=tuple(f.name for f in group.log_files) if self.table_version < 8 else (name,),
                    log_version=version,
                )
            )
        return written

    def _roll_back(
        self,
        moment: datetime,
        failed: str,
        written: list[tuple[FileGroup, LogFile]],
        new_groups: list[FileGroup],
    ) -> None:
        """Undo a failed delta commit as its table version does, then write the rollback instant:
        the files of groups it created are deleted; in the others, version 8+ deletes its log
        files, version 6 keeps them and appends a rollback block in the slice's next log file."""
        rollback = _instant_text(moment + timedelta(milliseconds=600))
        done_at = _instant_text(moment + timedelta(milliseconds=800))
        requests: list[RollbackFiles] = []
        for group in new_groups:
            paths = [self.root / group.partition / f.name for f in group.log_files]
            if group.base_file:
                paths.append(self.root / group.partition / group.base_file)
            for path in paths:
                path.unlink()
            requests.append(
                RollbackFiles(group.partition, group.file_id, group.base_instant, tuple(map(str, paths)))
            )
        created = {id(g) for g in new_groups}
        for group, log in written:
            if id(group) in created:
                continue
            path = self.root / group.partition / log.name
            if self.table_version >= 8:
                path.unlink()
                group.log_files.remove(log)
                requests.append(
                    RollbackFiles(group.partition, group.file_id, group.base_instant, (str(path),))
                )
                continue
            version = self._log_versions[group.index] + 1
            self._log_versions[group.index] = version
            name = log_file_name(group.file_id, group.base_instant, version, self._token(0))
            size = rollback_block(self.root / group.partition / name, instant=rollback, target=failed)
            group.log_files.append(LogFile(name, rollback, "rollback"))
            requests.append(
                RollbackFiles(
                    group.partition,
                    group.file_id,
                    group.base_instant,
                    rollback_logs={str(self.root / group.partition / name): size},
                    failed_logs={str(path): path.stat().st_size},
                )
            )
        files = InstantFiles(
            "rollback",
            rollback,
            done_at,
            requested_content=rollback_plan(failed, requests),
            completed_content=rollback_metadata(rollback, failed, requests),
        )
        write_instant(self.timeline, self.table_version, files)
        self.instants.append(Instant("rollback", rollback, done_at, "completed"))


def write_mor_table(
    root: str | Path,
    rows: pa.Table,
    *,
    record_key: str,
    partition_by: str | None = None,
    ordering_field: str | None = None,
    file_groups: int = 1,
    cluster_by: str | None = None,
    commits: Sequence[DeltaCommit] = (),
    insert_into: Literal["base", "log_only"] = "base",
    hive_style: bool = True,
    table_version: int = 9,
    table_name: str | None = None,
    start: datetime | None = None,
    seed: int = 0,
    overwrite: bool = False,
) -> MorTable:
    """Write a merge-on-read table at ``root``: ``rows`` as about ``file_groups`` base files per
    partition (rows sorted by ``cluster_by``, else by key, and cut in runs), then ``commits``.
    ``insert_into="log_only"`` writes ``rows`` as one file group of log files per partition
    instead (no base file). Instants start at ``start`` (default: now, UTC), a second apart; file
    ids follow ``seed``."""
    root = Path(root)
    if table_version not in TABLE_VERSIONS:
        raise ValueError(f"table_version must be one of {TABLE_VERSIONS}, not {table_version}")
    if file_groups < 1:
        raise ValueError(f"file_groups must be at least 1, got {file_groups}")
    if insert_into not in ("base", "log_only"):
        raise ValueError(f"insert_into is 'base' or 'log_only' for the first commit, not {insert_into!r}")
    if insert_into == "log_only" and (file_groups != 1 or cluster_by is not None):
        raise ValueError(
            "insert_into='log_only' writes one file group of log files per partition: "
            "leave file_groups at 1 and cluster_by unset"
        )
    for name in (record_key, partition_by, ordering_field, cluster_by):
        if name is not None and name not in rows.column_names:
            raise ValueError(f"column {name!r} is not in rows ({rows.column_names})")
    if root.exists() and any(root.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{root} is not empty: pass overwrite=True to replace it")
        shutil.rmtree(root)
    schema = normalize_columns(rows.slice(0, 0)).schema
    name = table_name or _table_name(root)
    moment = start or datetime.now(UTC)
    table = MorTable(
        root,
        schema,
        record_key=record_key,
        partition_by=partition_by,
        ordering_field=ordering_field,
        hive_style=hive_style,
        table_version=table_version,
        table_name=name,
        start=moment.replace(microsecond=moment.microsecond // 1000 * 1000),
        seed=seed,
    )
    props = table_properties(
        table_version=table_version,
        table_name=name,
        record_key=record_key,
        partition_by=partition_by,
        ordering_field=ordering_field,
        hive_style=hive_style,
        create_schema=table.writer_schema,
    )
    if insert_into == "log_only":  # the first delta commit's inserts, as any later one's
        table.append(DeltaCommit(inserts=rows, insert_into="log_only"))
    else:
        table._write_base(rows, file_groups, cluster_by)
    # last, so that rows refused leave no table behind
    write_properties(root / ".hoodie" / "hoodie.properties", props, comment="Properties saved by hudi_mor")
    for commit in commits:
        table.append(commit)
    return table
