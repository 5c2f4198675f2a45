"""A plain directory of parquet files, flat or hive-partitioned (``k=v/...``, any depth).

Every ``*.parquet`` file under the root is live (there is no log saying otherwise), except what
Spark, Hive and DuckDB users expect to be left out: hidden entries (``.hoodie``, ``.DS_Store``,
``.spark-staging``), underscore entries that are not partitions (``_SUCCESS``, ``_delta_log``,
``_temporary``, ``__MACOSX``), and empty files (a write still in progress holds no rows).
Partition values are typed as DuckDB's ``hive_partitioning`` types them (see ``hive``), or as
declared by ``partition_schema``. The listing uses ``os.scandir`` and ``stat`` only: nothing is
opened.

A listing is kept and reused while nothing changed, checked one of two ways (``check_files``):

- ``"watch"`` (default): the folders are watched from before they are read (``tables.watch``,
  inotify), so a listing is reused as it is, with no ``stat`` at all, until an event says a file
  in them was written (also in place), truncated, touched, created, deleted or renamed. Where no
  watch can vouch (file systems other than local disks, no inotify, a forked child, a file with
  another name elsewhere: a hard link or a symbolic link, which is checked by ``stat`` each time),
  it falls back to:
- ``"stat"``: which files exist is reused while no folder's modification time has moved, and each
  file's size and modification time are read again every time (a file rewritten in place changes
  neither its folder nor its name, only those two): one ``stat`` per file per listing.

``list_files(stat=True)`` checks by ``stat`` whatever the mode.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa

from index_store.errors import TableFormatError
from index_store.tables import hive
from index_store.tables.base import DataFile, Listing, Partitioning, ReadMethod, TableReaderBase
from index_store.tables.registry import OpenOptions
from index_store.tables.watch import Watch, new_watch

__all__ = [
    "CHECK_FILES",
    "PLAIN_FORMAT",
    "PlainFormat",
    "PlainParquetTable",
    "is_hidden",
    "require_directory",
]

CHECK_FILES = ("watch", "stat")


def is_hidden(name: str) -> bool:
    """Spark's rule for paths a table does not contain: ``.x``, and ``_x`` unless it is ``_k=v``."""
    return name.startswith(".") or (name.startswith("_") and "=" not in name)


def require_directory(path: str | os.PathLike[str]) -> str:
    """The absolute path of an existing directory, or a ``FileNotFoundError`` that says which."""
    root = os.path.abspath(os.fspath(path))
    if not os.path.exists(root):
        raise FileNotFoundError(errno.ENOENT, "table path does not exist", root)
    if not os.path.isdir(root):
        raise NotADirectoryError(errno.ENOTDIR, "table path is not a directory", root)
    return root


# A folder's modification time can stay the same across changes made within one clock tick (up to
# 2 s on some file systems), so a listing is reused only for folders untouched for longer than that.
_RACY_NS = 2_000_000_000


@dataclass
class _Listing:
    """One scan: the files, their partition schema, and what tells whether it is still current."""

    files: list[DataFile]
    schema: pa.Schema
    folders: dict[str, int]  # folder path -> modification time (ns) when it was read
    empty: list[str]  # empty files, skipped now, to look at again: a write may have filled them
    paths: list[str]  # absolute path of each of ``files``
    quiet: bool  # every folder's time is older than the racy window: ``current()`` can be trusted
    watch: Watch | None  # a usable watch on every folder, added before they were read
    linked: list[int]  # files with another name (hard or symbolic link): a watch cannot vouch
    listed: Listing = field(init=False)  # what readers are given, the same object while unchanged
    _by_folder: list[tuple[str, list[str], list[int]]] | None = None  # (folder, names, positions)

    def __post_init__(self) -> None:
        self.listed = Listing(self.files)
        if self.watch is not None:
            weakref.finalize(self, self.watch.close)

    def current(self) -> bool:
        """No folder was changed (so no file added, removed or renamed) and no empty file filled."""
        try:
            return all(os.stat(d).st_mtime_ns == t for d, t in self.folders.items()) and not any(
                os.stat(f).st_size for f in self.empty
            )
        except OSError:
            return False

    def current_by_watch(self) -> bool:
        """True when the watch saw nothing happen in any folder; files with another name, which it
        cannot vouch for, are looked at by ``stat`` (``listed`` then says what they are now)."""
        if self.watch is None or self.watch.changed():
            return False
        return not self.linked or self.restat(self.linked) is not None

    def _stat_all(self) -> list[tuple[int, int]]:
        """(size, mtime ns) of every file, in order: each stat relative to its folder's open
        descriptor, so the kernel resolves one path component per file instead of all of them
        (about 20% faster for 2,000 files)."""
        if self._by_folder is None:
            groups: dict[str, list[int]] = {}
            for i, path in enumerate(self.paths):
                groups.setdefault(os.path.dirname(path), []).append(i)
            self._by_folder = [
                (folder, [os.path.basename(self.paths[i]) for i in idx], idx)
                for folder, idx in groups.items()
            ]
        now: list[tuple[int, int]] = [(0, 0)] * len(self.paths)
        for folder, names, idx in self._by_folder:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            try:
                for i, name in zip(idx, names, strict=True):
                    st = os.stat(name, dir_fd=fd)
                    now[i] = (st.st_size, st.st_mtime_ns)
            finally:
                os.close(fd)
        return now

    def restat(self, positions: list[int] | None = None) -> list[DataFile] | None:
        """The files with their size and modification time as they are now (of ``positions`` only,
        when given); None if one is gone. A change makes a new ``listed``."""
        try:
            if positions is None:
                now = dict(enumerate(self._stat_all()))
            else:
                now = {}
                for i in positions:
                    st = os.stat(self.paths[i])
                    now[i] = (st.st_size, st.st_mtime_ns)
        except OSError:
            return None
        if any(not size for size, _ in now.values()):
            return None  # truncated to nothing: rescan, so that it is set aside as empty
        files = self.files
        moved = {i: stat for i, stat in now.items() if (files[i].size, files[i].mtime_ns) != stat}
        if moved:
            files = list(files)
            for i, (size, mtime) in moved.items():
                files[i] = dataclasses.replace(files[i], size=size, mtime_ns=mtime)
            self.files = files
            self.listed = Listing(files)
        return files


def _walk_parquet(
    root: str, folders: dict[str, int], empty: list[str], watch: Watch | None, rel: str = ""
) -> Iterator[tuple[str, str, int, int, bool]]:
    """``(relative dir, file name, size, mtime ns, linked)`` of every visible, non-empty
    ``*.parquet`` file; ``linked``: it has another name (a hard link, or it is a symbolic link).

    Records each folder's modification time (taken before reading it) in ``folders`` and the
    paths of empty parquet files in ``empty``; adds each folder to ``watch`` before reading it.
    """
    path = os.path.join(root, rel) if rel else root
    stat = os.stat(path)
    folders[path] = stat.st_mtime_ns
    if watch is not None:
        watch.add(path, stat.st_dev)
    with os.scandir(path) as entries:
        for entry in entries:
            if rel and entry.name == ".hoodie" and entry.is_dir():
                # Its parquet files are file slices of a Hudi table, not rows of this one.
                raise TableFormatError(
                    f"{root} holds a Hudi table at {rel}: open that table on its own (a folder of "
                    "Hudi tables is not one table)"
                )
            if is_hidden(entry.name):
                continue
            if entry.is_dir():
                child = f"{rel}/{entry.name}" if rel else entry.name
                yield from _walk_parquet(root, folders, empty, watch, child)
            elif entry.name.endswith(".parquet") and entry.is_file():
                stat = entry.stat()
                if stat.st_size > 0:
                    linked = stat.st_nlink > 1 or entry.is_symlink()
                    yield rel, entry.name, stat.st_size, stat.st_mtime_ns, linked
                else:
                    empty.append(entry.path)


class PlainParquetTable(TableReaderBase):
    """The live files of a plain parquet directory (``TableReader``).

    ``partition_schema`` declares the type of some or all hive partition columns (the others are
    inferred as DuckDB does); every declared column must appear in the folder names.
    ``record_key_field`` names the column holding record keys, if the data has one.
    ``check_files`` says how a listing is known to be current (see the module): ``"watch"``
    (change notification, a ``stat`` per file only where it cannot vouch) or ``"stat"``.
    """

    kind = "parquet"
    read_as: ReadMethod = "glob"  # every visible parquet file under the root is live

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        partition_schema: pa.Schema | None = None,
        record_key_field: str | None = None,
        check_files: Literal["watch", "stat"] = "watch",
    ) -> None:
        if check_files not in CHECK_FILES:
            raise ValueError(f"check_files must be one of {CHECK_FILES}, not {check_files!r}")
        self.root = require_directory(root)
        self._declared = partition_schema if partition_schema is not None else pa.schema([])
        self._record_key_field = record_key_field
        self.check_files = check_files
        self._listing: _Listing | None = None

    def __repr__(self) -> str:
        return f"PlainParquetTable({self.root!r})"

    def list_files(self, *, stat: bool = False) -> list[DataFile]:
        """Every live parquet file, sorted by path, with its typed partition values; ``stat``:
        each file's size and modification time read now, whatever ``check_files`` says."""
        return list(self.listing(stat=stat).files)

    def listing(self, *, stat: bool = False) -> Listing:
        """``list_files`` as a ``Listing``: the same object until something changes on disk."""
        return self._scan(stat)[0]

    def stray_files(self, limit: int = 4) -> list[str]:
        """Up to ``limit`` visible files (table-relative) when the folder holds no ``*.parquet``
        file at all, not even an empty one (a write in progress): what makes it no table (a
        typo'd path, a folder of CSV files). Empty when it holds a parquet file or no visible file
        (an empty table). Walks the folder like a listing; meant for when a listing found nothing."""
        found: list[str] = []
        pending = [""]
        while pending:
            rel = pending.pop()
            with os.scandir(os.path.join(self.root, rel) if rel else self.root) as entries:
                for entry in entries:
                    if is_hidden(entry.name):
                        continue
                    child = f"{rel}/{entry.name}" if rel else entry.name
                    if entry.is_dir():
                        pending.append(child)
                    elif entry.name.endswith(".parquet"):
                        return []
                    elif len(found) < limit:
                        found.append(child)
        return sorted(found)

    def partition_schema(self) -> pa.Schema:
        """The hive partition columns and their types (their folder values win over any same-named
        column inside the files, as in DuckDB and Spark); empty for a flat directory."""
        return self._scan(False)[1]

    def partitioning(self) -> Partitioning:
        """Hive folders (``k=v``, any depth), their columns inferred or declared, not named."""
        return Partitioning(folders=True, hive_style=True, fields=None)

    def folder_columns(self) -> list[str]:
        """The hive partition columns: an engine reads their values from the folder names."""
        return self.partition_schema().names

    def latest_instant(self) -> str | None:
        """Always None: a plain directory has no commit log."""
        return None

    def record_key_field(self) -> str | None:
        """The record-key column given to the constructor, if any."""
        return self._record_key_field

    def _scan(self, stat: bool) -> tuple[Listing, pa.Schema]:
        """The listing, reused while nothing changed in the table's folders since it was taken."""
        listing = self._listing
        if listing is not None and not stat and listing.current_by_watch():
            return listing.listed, listing.schema
        if listing is not None and listing.quiet and listing.current():
            # No file added, removed or renamed: each file's own size and time tell the rest. A new
            # watch starts before the files are looked at, so nothing done after is missed.
            watch = self._watch(listing.folders)
            if listing.restat() is not None:
                if listing.watch is not None:
                    listing.watch.close()
                listing.watch = watch
                if watch is not None:
                    weakref.finalize(listing, watch.close)
                return listing.listed, listing.schema
            if watch is not None:
                watch.close()
        started = time.time_ns()
        folders: dict[str, int] = {}
        empty: list[str] = []
        watch = new_watch(is_hidden) if self.check_files == "watch" else None
        if watch is not None:
            watch.pin(self.root)  # a table swapped in by renaming a folder above it is not an event
        found = sorted(_walk_parquet(self.root, folders, empty, watch), key=lambda f: (f[0], f[1]))
        if watch is not None and not watch.usable:
            watch.close()
            watch = None
        dirs = {rel: hive.hive_segments(rel) for rel in dict.fromkeys(rel for rel, *_ in found)}
        schema = self._schema_of(dirs)
        values = {rel: self._values_of(pairs, schema) for rel, pairs in dirs.items()}
        files = [
            DataFile(
                path=f"{rel}/{name}" if rel else name,
                size=size,
                partition=rel,
                partition_values=dict(values[rel]),
                mtime_ns=mtime,
            )
            for rel, name, size, mtime, _ in found
        ]
        quiet = all(t < started - _RACY_NS for t in folders.values())
        paths = [os.path.join(self.root, f.path) for f in files]
        linked = [i for i, found_file in enumerate(found) if found_file[4]]
        if self._listing is not None and self._listing.watch is not None:
            self._listing.watch.close()
        kept = _Listing(files, schema, folders, empty, paths, quiet, watch, linked)
        # A listing of folders changed within the racy window is kept only under a watch.
        self._listing = kept if quiet or watch is not None else None
        return kept.listed, schema

    def _watch(self, folders: dict[str, int]) -> Watch | None:
        """A usable watch on ``folders`` (in ``"watch"`` mode), else None."""
        if self.check_files != "watch":
            return None
        watch = new_watch(is_hidden)
        watch.pin(self.root)
        for folder in folders:
            try:
                device = os.stat(folder).st_dev
            except OSError:
                watch.close()
                return None
            if not watch.add(folder, device):
                watch.close()
                return None
        return watch

    def _schema_of(self, dirs: dict[str, list[tuple[str, str]]]) -> pa.Schema:
        """Check that every folder has the same partition keys, then type each column."""
        if not dirs:
            return self._declared
        first_dir, first_pairs = next(iter(dirs.items()))
        keys = [key for key, _ in first_pairs]
        for rel, pairs in dirs.items():
            these = [key for key, _ in pairs]
            if len(set(these)) != len(these):
                raise TableFormatError(f"folder {rel!r} of {self.root} repeats a partition key")
            if set(these) != set(keys):
                raise TableFormatError(
                    f"hive partition mismatch in {self.root}: folder {first_dir or '.'!r} has keys "
                    f"{keys} but {rel or '.'!r} has {these}"
                )
        missing = [name for name in self._declared.names if name not in keys]
        if missing:
            raise ValueError(
                f"partition_schema declares {missing}, which are not partition folders (k=v) of "
                f"{self.root}; its partition keys are {keys}"
            )
        fields = []
        for key in keys:
            if key in self._declared.names:
                fields.append(self._declared.field(key))
            else:
                raws = (raw for pairs in dirs.values() for k, raw in pairs if k == key)
                fields.append(pa.field(key, hive.infer_column_type(raws)))
        return pa.schema(fields)

    def _values_of(self, pairs: list[tuple[str, str]], schema: pa.Schema) -> dict[str, object]:
        values: dict[str, object] = {}
        for key, raw in pairs:
            arrow_type = schema.field(key).type
            if key in self._declared.names:
                values[key] = hive.cast_declared(key, raw, arrow_type)
            else:
                values[key] = hive.typed_value(key, raw, arrow_type)
        return values


class PlainFormat:
    """The fallback format (``TableFormat``): any folder no other format recognises."""

    name = "parquet"

    def detect(self, root: str) -> bool:
        return True

    def open(self, root: str, options: OpenOptions) -> PlainParquetTable:
        return PlainParquetTable(
            root,
            partition_schema=options.partition_schema,
            record_key_field=options.record_key_field,
            check_files=options.check_files,
        )


PLAIN_FORMAT = PlainFormat()
