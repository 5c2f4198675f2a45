"""The write path of an index: ``build``, ``update``, ``sync``, ``compact`` and ``clean``, each
preparing its index files and racing for the next timeline version (``index_store.commit``).

``IndexWriter`` is a part of ``IndexedTable`` (its methods of the same names delegate here): it is
given the table's reader, index root, timeline and secondary indexes (rebuilt by ``build``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import os
import shutil
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa

from hudi_expr.footer import nullable_where_absent
from hudi_expr.stats import leaf_columns
from index_store import tables as _tables
from index_store.builder import BuiltFiles, ComputeKeys, ComputeStats, compute_file_keys, compute_stats
from index_store.commit import commit, writable
from index_store.config import IndexConfig
from index_store.errors import (
    CommitConflictError,
    IndexCorruptError,
    IndexDefinitionError,
    RecordKeyError,
    UnsupportedTableError,
    require_built,
)
from index_store.loaded import LoadedVersion
from index_store.partitions import FILES_SCHEMA, REGISTRY, Batch, LiveIndex, read_files
from index_store.partitions.base import FileKeys
from index_store.record_key import RecordKeySpec
from index_store.secondary.api import STAGING, SecondaryIndexes
from index_store.secondary.build import ComputeIndexFiles
from index_store.secondary.definitions import IndexDefinition
from index_store.secondary.kinds import UnsupportedColumnError, index_kind
from index_store.secondary.kinds import kinds as index_kinds
from index_store.staged import StageBuild, StageRequest, new_staging, publish, write_batch
from index_store.tables.base import DataFile, TableReader
from index_store.tables.hudi_files import parse_base, parse_log_file_name
from index_store.tables.rows import reads_whole_files, require_file_reads
from index_store.tagging.merge_rule import MergeRule
from index_store.timeline import Commit, IndexTimeline, Operation, Snapshot

__all__ = ["IndexWriter"]


class IndexWriter:
    """Builds, updates, syncs, compacts and cleans one table's index."""

    def __init__(
        self,
        reader: TableReader,
        index_root: Path,
        timeline: IndexTimeline,
        secondary: SecondaryIndexes,
        forget: Callable[[], None],
    ) -> None:
        self.reader = reader
        self.index_root = index_root
        self.timeline = timeline
        self._secondary = secondary
        self._forget = forget  # drops the table's loaded version (the index folder moved aside)

    @property
    def root(self) -> str:
        return self.reader.root

    def snapshot(self) -> Snapshot:
        return self.timeline.snapshot()

    def build(
        self,
        bloom_columns: Sequence[str] | None = None,
        fpp: float | None = None,
        progress: bool | None = None,
        compute: ComputeStats | None = None,
        rebuild: bool = False,
        record_key: str | Sequence[str] | Literal[False] | None = None,
        record_index: bool | None = None,
        key_fpp: float | None = None,
        compute_keys: ComputeKeys | None = None,
        record_index_shards: int | None = None,
        compute_index_files: ComputeIndexFiles | None = None,
        stage: StageBuild | None = None,
    ) -> int:
        """Index every live data file from scratch (a checkpoint commit); returns the index version.

        The index keeps its configuration: an argument left as None keeps what the index was last
        built with (its newest readable timeline entry), so ``build()`` and ``build(rebuild=True)``
        rebuild exactly the index there was; a value given changes that setting. Without an index,
        None means the default. ``bloom_columns``: the columns with bloom filters (replacing the
        list; ``[]``: none; default: the table's record key column, if any). ``fpp``: their
        false-positive rate (default 0.01). ``record_key``: the record key of a plain table, one
        column or several, encoded as Hudi's key generators do (False: none; a Hudi table's own is
        used by default); with one, each file's key bounds and a Hudi bloom filter of its keys
        (from Hudi footers when there, else built at ``key_fpp``, default 1e-6) are kept for
        ``tag``. ``record_index`` (default False) adds the record-level index (key -> file), in
        ``record_index_shards`` hash shards per index file (a power of two; default: one per 4M
        keys). Secondary index definitions are always kept, and their files built anew (a second
        commit, whose version is returned); ``drop_index`` removes one.

        A build never reads the index it replaces, so it also repairs a corrupt one (readers replay
        from the newest checkpoint). ``rebuild`` first moves the whole index folder aside (to
        ``<index>.broken-<time>``), for an index too damaged to append to. ``compute`` replaces
        ``compute_stats`` (same arguments and result), e.g. to compute the stats on a cluster;
        ``compute_keys`` replaces ``compute_file_keys`` and ``compute_index_files`` computes the
        secondary index files (``build_index(compute=...)``) the same way; listing and committing
        stay here, so the index is the same. ``stage`` instead writes the index files itself
        (``index_store.staged``: e.g. from Spark executors) into a staging folder the commit
        links them from; ``compute`` and ``compute_keys`` are then unused. A folder holding no
        parquet file and no Hudi table, yet other files, raises ``NotATableError`` and nothing is
        written.
        """
        hooks = (compute, compute_keys, compute_index_files, stage)
        if any(hook is not None for hook in hooks):
            # Those read each data file as parquet (executors): log files need their own reader.
            require_file_reads(self.reader, "a build with compute functions (a distributed build)")
        files = _tables.list_files(self.reader, stat=True)
        _tables.require_table(self.reader, files)
        stored = self.stored_config(stacklevel=4)  # warnings name the caller of IndexedTable.build
        config, spec = self._build_config(stored, bloom_columns, fpp, record_key, record_index, key_fpp)
        if record_index_shards is not None:
            if record_index_shards < 1 or record_index_shards & (record_index_shards - 1):
                raise ValueError(f"record_index_shards must be a power of two, not {record_index_shards}")
            config = dataclasses.replace(config, record_index_shards=record_index_shards)
        if stage is not None:
            version = self._build_staged(files, config, spec, stage, rebuild)
        else:
            version = self._build_here(files, config, spec, progress, compute, compute_keys, rebuild)
        if config.secondary_indexes and files:
            indexed = self._secondary.build_index(None, "all", progress, compute=compute_index_files)
            version = indexed if indexed is not None else version
        return version

    def _build_here(
        self,
        files: Sequence[DataFile],
        config: IndexConfig,
        spec: RecordKeySpec | None,
        progress: bool | None,
        compute: ComputeStats | None,
        compute_keys: ComputeKeys | None,
        rebuild: bool,
    ) -> int:
        """A build whose stats and keys come back here (computed locally or by the hooks) and are
        written by the commit."""
        make_stats = compute or functools.partial(
            compute_stats, log_records_whole=self.reader.log_records_whole
        )
        built = make_stats(
            self.root,
            files,
            self.reader.partition_schema(),
            bloom_columns=list(config.bloom_columns),
            fpp=config.fpp,
            progress=progress,
        )
        if compute is not None and [f.path for f in built.files] != [f.path for f in files]:
            raise ValueError("compute returned stats of other files than it was given (or out of order)")
        if files:
            _check_definitions(config.secondary_indexes, built.stats.schema, self.root)
        if spec is None:
            file_keys = None
        elif compute_keys is not None:
            file_keys = compute_keys(self.root, files, spec, config.key_fpp, config.record_index, progress)
        else:
            file_keys = compute_file_keys(
                self.root,
                files,
                spec,
                config.key_fpp,
                config.record_index,
                progress,
                ordering_field=_ordering_field(self.reader),
            )
        if file_keys is not None and len(file_keys.min_key) != len(files):
            raise ValueError("compute_keys returned keys of other files than it was given")
        if rebuild:
            self._move_aside()

        def prepare_commit(snap: Snapshot) -> Commit:
            added = self._write_batch(
                built,
                np.arange(len(files), dtype=np.int64),
                snap.version + 1,
                record_keys=file_keys,
                config=config,
            )
            return self._build_commit(snap.version + 1, added, built.stats.schema, len(files), config)

        return commit(self.timeline, prepare_commit, state=self._next_version_only)

    def _build_staged(
        self,
        files: Sequence[DataFile],
        config: IndexConfig,
        spec: RecordKeySpec | None,
        stage: StageBuild,
        rebuild: bool,
    ) -> int:
        """A build whose index files ``stage`` writes into a staging folder of the index; one
        commit links them in. The files carry the version they were staged for (the ``files``
        partition records it): a commit landing meanwhile is a ``CommitConflictError``."""
        # A rebuild starts a new index folder: its first version.
        version = 1 if rebuild else self._next_version_only().version + 1
        staging = new_staging(self.index_root)
        fresh = not self.index_root.exists()  # a failed first build leaves no index folder
        try:
            with writable(self.index_root):
                staging.mkdir(parents=True)
            staged = stage(
                StageRequest(self.root, files, self.reader.partition_schema(), config, spec, staging, version)
            )
            if files:
                _check_definitions(config.secondary_indexes, staged.schema, self.root)
            if rebuild:
                aside = self._move_aside()
                if aside is not None:  # the staging folder moved with the index: bring it back
                    staging.parent.mkdir(parents=True)
                    (aside / staging.relative_to(self.index_root)).rename(staging)

            def prepare_commit(snap: Snapshot) -> Commit:
                if snap.version + 1 != version:
                    raise CommitConflictError(
                        f"another index commit (version {snap.version}) landed while the build was "
                        f"staged for version {version}: run the build again"
                    )
                added = publish(staging, self.index_root, staged.added)
                return self._build_commit(version, added, staged.schema, len(files), config)

            return commit(self.timeline, prepare_commit, state=self._next_version_only)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            for folder in [staging.parent, *([self.index_root] if fresh else [])]:
                with contextlib.suppress(OSError):  # not empty: in use
                    folder.rmdir()

    def _build_commit(
        self, version: int, added: dict[str, list[str]], schema: pa.Schema, n_files: int, config: IndexConfig
    ) -> Commit:
        return Commit(
            version=version,
            operation=Operation.BUILD,
            added=added,
            schema=schema,
            checkpoint=True,
            next_file_idx=n_files,
            table_instant=self.reader.latest_instant(),
            config=config,
        )

    def stored_config(self, stacklevel: int = 3) -> IndexConfig | None:
        """The configuration the index was last built or changed with: that of its newest readable
        timeline entry (a build must work on an index too damaged to read, and keep what it can);
        None when there is no index. A warning says when the newest entries could not be read."""
        versions = self.timeline.versions()
        for v in reversed(versions):
            try:
                config = self.timeline.read(v).config
            except (IndexCorruptError, OSError, ValueError):
                continue
            if v != versions[-1]:
                warnings.warn(
                    f"index version {versions[-1]} of {self.root} is unreadable: the configuration of "
                    f"version {v} is kept",
                    stacklevel=stacklevel,
                )
            return config
        if versions:
            warnings.warn(
                f"no index version of {self.root} is readable: its configuration (bloom columns, record "
                "key, record index, secondary indexes) is lost; give it again to build",
                stacklevel=stacklevel,
            )
        return None

    def _build_config(
        self,
        stored: IndexConfig | None,
        bloom_columns: Sequence[str] | None,
        fpp: float | None,
        record_key: str | Sequence[str] | Literal[False] | None,
        record_index: bool | None,
        key_fpp: float | None,
    ) -> tuple[IndexConfig, RecordKeySpec | None]:
        """What a build makes, and its record key: each setting given, else the ``stored`` one,
        else the default. The table's kind, record key field and partition columns always come
        from the table."""
        base = stored if stored is not None else IndexConfig()
        if record_key is False:
            spec = None
        elif record_key is not None:
            spec = self._key_spec(record_key)
        else:
            spec = RecordKeySpec.from_config(stored) if stored is not None else None
            if spec is None:
                spec = self._key_spec(None)  # what a Hudi table declares
        keyed = spec is not None
        if record_index is None:
            record_index = keyed and base.record_index
        if record_index and not keyed:
            raise RecordKeyError(
                f"a record index needs a record key: {self.root} has none; name its key columns with "
                "build(record_key=[...]) (CLI: --record-key a,b)"
            )
        if bloom_columns is None and stored is not None:
            bloom_columns = stored.bloom_columns
        elif bloom_columns is None:
            # A key column the files store (Hudi's _hoodie_record_key) is served by the key
            # filters (Hudi's own footer filters): no need to read it for another bloom filter.
            key = self.reader.record_key_field()
            bloom_columns = [key] if key and (spec is None or spec.column != key) else []
        elif isinstance(bloom_columns, str):
            bloom_columns = [bloom_columns]
        config = self._config(
            list(dict.fromkeys(bloom_columns)),
            base.fpp if fpp is None else fpp,
            spec,
            base.key_fpp if key_fpp is None else key_fpp,
            record_index,
        )
        shards = base.record_index_shards if record_index else None
        made = dataclasses.replace(config, record_index_shards=shards)
        return dataclasses.replace(made, secondary_indexes=base.secondary_indexes), spec

    def _next_version_only(self) -> Snapshot:
        """An empty snapshot at the latest version: what a build needs, read without replaying."""
        return dataclasses.replace(Snapshot.empty(), version=max(self.timeline.versions(), default=0))

    def _move_aside(self) -> Path | None:
        """Rename the index folder to ``<name>.broken-<UTC time>``; returns the new path."""
        if not self.index_root.exists():
            return None
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = self.index_root.with_name(f"{self.index_root.name}.broken-{stamp}")
        with writable(self.index_root):
            self.index_root.rename(aside)
        self._forget()
        return aside

    def update(
        self,
        added: Iterable[str | DataFile] = (),
        removed: Iterable[str] = (),
        progress: bool | None = None,
    ) -> int:
        """One index commit for one data commit: ``added`` files indexed, ``removed`` forgotten.

        Paths are relative to the table root (or absolute under it). Raises
        ``CommitConflictError`` if a concurrent commit added or removed the same files.
        """
        snap = self.snapshot()
        require_built(snap.version, self.root)
        add_files = self._describe(added)
        remove_paths = [self._rel(p) for p in removed]
        bloom_columns = snap.config.bloom_columns
        # The new files' own schema; columns they lack stay unknown for them (never pruned on).
        built = compute_stats(
            self.root,
            add_files,
            self.reader.partition_schema(),
            bloom_columns=[c for c in bloom_columns if c not in self.reader.partition_schema().names],
            fpp=snap.config.fpp,
            progress=progress,
            table_schema=snap.schema,  # log records take the types the index already has
            log_records_whole=self.reader.log_records_whole,
        )
        spec = RecordKeySpec.from_config(snap.config)
        file_keys = (
            compute_file_keys(
                self.root,
                add_files,
                spec,
                snap.config.key_fpp,
                snap.config.record_index,
                progress,
                ordering_field=_ordering_field(self.reader),
            )
            if spec is not None
            else None
        )
        touched = set(remove_paths) | {f.path for f in add_files}
        first_seen: dict[str, int] | None = None  # our paths' index entries at the first attempt

        def prepare_commit(s: Snapshot) -> Commit:
            nonlocal first_seen
            live = read_files(self.index_root, s.live["files"])
            live_paths = dict(zip(live["path"].to_pylist(), live["file_idx"].to_pylist(), strict=True))
            mine = {p: live_paths[p] for p in touched if p in live_paths}
            if first_seen is None:
                unknown = [p for p in remove_paths if p not in live_paths]
                if unknown:
                    raise CommitConflictError(f"cannot remove files the index does not hold: {unknown[:3]}")
                first_seen = mine
            elif mine != first_seen:
                # Lost a race to a commit that changed the entry of one of our files.
                clash = sorted(p for p in touched if mine.get(p) != first_seen.get(p))
                raise CommitConflictError(
                    f"a concurrent index commit changed the same data files ({clash[:3]}): re-run sync"
                )
            version = s.version + 1
            idx = np.arange(s.next_file_idx, s.next_file_idx + len(add_files), dtype=np.int64)
            # Re-added paths replace their old entry: tombstone it like a removed one.
            gone = remove_paths + [
                f.path for f in add_files if f.path in live_paths and f.path not in remove_paths
            ]
            written = self._write_batch(
                built,
                idx,
                version,
                tombstones=[(p, live_paths[p]) for p in gone],
                record_keys=file_keys,
                config=s.config,
            )
            return Commit(
                version=version,
                operation=Operation.UPDATE,
                added=written,
                schema=_merge_schemas(s.schema, built.stats.schema),
                next_file_idx=s.next_file_idx + len(add_files),
                table_instant=self.reader.latest_instant(),
                config=s.config,
            )

        return commit(self.timeline, prepare_commit)

    def sync(self, progress: bool | None = None) -> int | None:
        """Catch up with files added, removed or rewritten on disk; None if nothing changed."""
        if not self.snapshot().version:
            return self.build(progress=progress)
        loaded = LoadedVersion(self.index_root, self.snapshot())
        recorded = zip(loaded.files["size"].to_pylist(), loaded.files["mtime"].to_pylist(), strict=True)
        indexed = dict(zip(loaded.paths.to_pylist(), recorded, strict=True))
        listing = _tables.list_files(self.reader, stat=True)
        on_disk = {f.path: f for f in listing}
        # A file whose size or modification time moved was rewritten: index it again. So is one
        # indexed before times were recorded (None never equals a listed time), and one whose
        # listing has no time (nothing could tell it was not rewritten).
        added = [f for f in listing if indexed.get(f.path) != (f.size, f.mtime_ns) or f.mtime_ns is None]
        removed = [p for p in indexed if p not in on_disk]
        if not added and not removed:
            return None
        return self.update(added=added, removed=removed, progress=progress)

    def compact(self) -> int:
        """Rewrite the live index into one file per partition (a checkpoint); returns its version."""
        require_built(self.snapshot().version, self.root)

        def prepare_commit(snap: Snapshot) -> Commit:
            loaded = LoadedVersion(self.index_root, snap, FILES_SCHEMA.names)
            live = LiveIndex(loaded.files, snap.live, snap.schema, snap.config, snap.version + 1)
            added = {}
            for partition in REGISTRY:
                rel = partition.compact(self.index_root, live)
                if isinstance(rel, str):
                    added[partition.name] = [rel]
                elif rel is not None:  # a partition that also names files of other folders
                    added.update({name: list(files) for name, files in rel.items()})
            return Commit(
                version=snap.version + 1,
                operation=Operation.COMPACT,
                added=added,
                removed={p: list(files) for p, files in snap.live.items()},
                schema=snap.schema,
                checkpoint=True,
                next_file_idx=snap.next_file_idx,
                table_instant=snap.table_instant,
                config=snap.config,
            )

        return commit(self.timeline, prepare_commit)

    def clean(self, retention_seconds: float = 3600.0) -> list[str]:
        """Delete index files no version since the latest checkpoint uses, and timeline entries
        before it, once older than ``retention_seconds``; returns what was deleted."""
        snap = self.snapshot()
        keep: set[str] = set()
        for v in self.timeline.versions():
            if v >= snap.checkpoint_version:
                for files in self.timeline.read(v).added.values():
                    keep.update(files)
        cutoff = time.time() - retention_seconds
        with writable(self.index_root):
            return self._delete_unused(keep, snap, cutoff)

    def _delete_unused(self, keep: set[str], snap: Snapshot, cutoff: float) -> list[str]:
        deleted = self._delete_unused_nested(keep, cutoff)
        for partition in REGISTRY.names():
            folder = self.index_root / partition
            if not folder.is_dir():
                continue
            for name in os.listdir(folder):
                rel = f"{partition}/{name}"
                path = folder / name
                if rel not in keep and path.stat().st_mtime <= cutoff:
                    path.unlink(missing_ok=True)
                    deleted.append(rel)
        for v in self.timeline.versions():
            path = self.timeline.path(v)
            if v < snap.checkpoint_version and path.stat().st_mtime <= cutoff:
                path.unlink(missing_ok=True)
                deleted.append(f"timeline/{path.name}")
        if self.timeline.dir.is_dir():
            for name in os.listdir(self.timeline.dir):
                path = self.timeline.dir / name
                if name.startswith(".tmp-") and path.stat().st_mtime <= cutoff:
                    path.unlink(missing_ok=True)
                    deleted.append(f"timeline/{name}")
        return deleted

    def _delete_unused_nested(self, keep: set[str], cutoff: float) -> list[str]:
        """Secondary index files (``<type>/<instant>/<file id>/``) no version uses, then the
        folders left empty (an instant goes with its last file), and abandoned build staging."""
        deleted = []
        for name in [k.name for k in index_kinds()] + [STAGING]:
            top = self.index_root / name
            if not top.is_dir():
                continue
            for folder, _, names in os.walk(top, topdown=False):
                for file in names:
                    path = Path(folder) / file
                    rel = path.relative_to(self.index_root).as_posix()
                    if rel not in keep and path.stat().st_mtime <= cutoff:
                        path.unlink(missing_ok=True)
                        deleted.append(rel)
                if folder != str(top) and not os.listdir(folder):
                    os.rmdir(folder)
        return deleted

    # ----------------------------------------------------------------------------- internals

    def _write_batch(
        self,
        built: BuiltFiles,
        file_idx: np.ndarray,
        version: int,
        tombstones: Sequence[tuple[str, int]] = (),
        record_keys: FileKeys | None = None,
        config: IndexConfig | None = None,
    ) -> dict[str, list[str]]:
        """Offer the batch to every partition; what each wrote, by partition name."""
        batch = Batch(
            built.files,
            file_idx,
            version,
            built.stats,
            built.blooms,
            built.exact_columns,
            tombstones,
            record_keys,
            config,
        )
        return write_batch(self.index_root, batch)

    def _config(
        self,
        bloom_columns: Sequence[str],
        fpp: float,
        spec: RecordKeySpec | None = None,
        key_fpp: float = 1e-6,
        record_index: bool = False,
    ) -> IndexConfig:
        return IndexConfig(
            table_kind=self.reader.kind,
            record_key=self.reader.record_key_field(),
            bloom_columns=tuple(bloom_columns),
            fpp=fpp,
            exact_columns=tuple(self.reader.partition_schema().names),
            key_fields=spec.fields if spec is not None else (),
            key_column=spec.column if spec is not None else None,
            key_generator=spec.generator if spec is not None else "",
            key_fpp=key_fpp,
            record_index=record_index,
        )

    def _key_spec(self, record_key: str | Sequence[str] | None) -> RecordKeySpec | None:
        """The table's record key: the columns given, else what a Hudi table declares, else none."""
        if record_key is not None:
            fields = (record_key,) if isinstance(record_key, str) else tuple(record_key)
            if not fields or not all(isinstance(f, str) and f for f in fields):
                raise RecordKeyError(f"record_key must name one or more columns, got {record_key!r}")
            return RecordKeySpec(fields, None, "simple" if len(fields) == 1 else "complex")
        return self.reader.record_key_spec()

    def _rel(self, path: str) -> str:
        if os.path.isabs(path):
            rel = os.path.relpath(path, self.root)
            if rel.startswith(".."):
                raise ValueError(f"{path} is not under the table root {self.root}")
            return rel.replace(os.sep, "/")
        return path.replace(os.sep, "/")

    def _describe(self, added: Iterable[str | DataFile]) -> list[DataFile]:
        items = list(added)
        wanted = {self._rel(a) for a in items if not isinstance(a, DataFile)}
        described = [a for a in items if isinstance(a, DataFile)]
        if not reads_whole_files(self.reader):
            # A file slice is kept whole by its file group: a caller's DataFile without one would
            # stand alone, and a base file pruned apart from its log files loses their rows.
            described = [_with_file_group(f) for f in described]
        if wanted:
            listing = {f.path: f for f in _tables.list_files(self.reader, stat=True)}
            missing = sorted(wanted - listing.keys())
            if missing:
                raise FileNotFoundError(f"not live data files of {self.root}: {missing[:3]}")
            described += [listing[p] for p in sorted(wanted)]
        return described


def _with_file_group(f: DataFile) -> DataFile:
    """``f`` with the Hudi file id its name says, when it names none."""
    if f.file_group is not None:
        return f
    name = os.path.basename(f.path)
    parsed = parse_log_file_name(name) or parse_base(name)
    return dataclasses.replace(f, file_group=parsed.file_id) if parsed is not None else f


def _check_definitions(definitions: Sequence[IndexDefinition], schema: pa.Schema, root: str) -> None:
    """``IndexDefinitionError`` when a secondary index covers a column the table no longer has, or
    no longer of a type its index type takes: a build keeps every definition and builds it."""
    leaves = leaf_columns(schema)
    for d in definitions:
        kind = index_kind(d.index_type)
        for c in d.columns:
            if c not in schema.names or c not in leaves:
                why = "the table has no such column any more"
            else:
                try:
                    kind.check(c, leaves[c])
                    continue
                except UnsupportedColumnError as exc:
                    why = str(exc)
            raise IndexDefinitionError(
                f"secondary index {d.name!r} covers column {c!r}, which it cannot index now ({why}): "
                f"drop it first (hudi-index index drop {root} --name {d.name}; Python: drop_index)"
            )


def _merge_schemas(old: pa.Schema, new: pa.Schema) -> pa.Schema:
    if not len(old):
        return new
    # A column only the indexed (only the new) files have is NULL in the others: nullable.
    return nullable_where_absent(pa.unify_schemas([old, new], promote_options="permissive"), [old, new])


def _ordering_field(reader: TableReader) -> str | None:
    """The field a merge-on-read table's log records are ordered by (event time ordering), for the
    ``log_records`` partition; None for commit time ordering, for a table without log files, and
    for a merge mode tagging refuses anyway."""
    merging = reader.log_merging()
    if merging is None:
        return None
    try:
        return MergeRule.of(merging.properties, reader.root).ordering_field
    except UnsupportedTableError:
        return None
