"""The index's commit log: ``timeline/<version:020d>.json``, one entry per commit, never rewritten.

A commit writes its parquet files first, then creates the next entry exclusively: the JSON goes to
a temporary file, is flushed to disk, and is hard-linked to its final name, which fails if the
name exists. So an entry is either absent or complete (a crash leaves only orphan files, which
readers ignore and ``clean`` removes), and of two writers racing for one version exactly one wins.
Readers replay from the latest checkpoint (a commit listing every live index file).

A reader asks for the newest version before every query; the answer is reused while nothing
changed in the timeline folder: known from a watch on it (``index_store.tables.watch``: no system
call beyond reading an empty event queue) where one can vouch, else from its listing and a ``stat``
of each replayed entry.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import pyarrow as pa

from index_store.config import IndexConfig
from index_store.errors import IndexCorruptError
from index_store.partitions import REGISTRY
from index_store.tables.watch import Watch, new_watch

__all__ = ["Commit", "IndexTimeline", "Operation", "Snapshot"]

FORMAT_VERSION = 1
_ENTRY = re.compile(r"^(\d{20})\.json$")


class Operation(StrEnum):
    """What a commit did, as its timeline entry names it. ``sync`` and ``update`` both commit as
    ``update`` (a sync is an update of the files that changed)."""

    BUILD = "build"
    UPDATE = "update"
    COMPACT = "compact"
    CREATE_INDEX = "create_index"
    BUILD_INDEX = "build_index"
    DROP_INDEX = "drop_index"


@dataclass(frozen=True)
class Commit:
    """One timeline entry."""

    version: int
    operation: Operation
    added: dict[str, list[str]]  # partition -> index files (relative to the index root) it adds
    removed: dict[str, list[str]] = field(default_factory=dict)  # partition -> files no longer live
    schema: pa.Schema = field(default_factory=lambda: pa.schema([]))  # table schema, partition cols too
    checkpoint: bool = False  # True: ``added`` lists every live file; replay may start here
    next_file_idx: int = 0  # the first file_idx the next commit may assign
    table_instant: str | None = None  # data-table instant this commit reflects
    config: IndexConfig = field(default_factory=IndexConfig)  # how the index is built
    time: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": FORMAT_VERSION,
                "version": self.version,
                "time": self.time or _dt.datetime.now(_dt.UTC).isoformat(),
                "operation": self.operation,
                "table_instant": self.table_instant,
                "checkpoint": self.checkpoint,
                "added": self.added,
                "removed": self.removed,
                "next_file_idx": self.next_file_idx,
                "schema": base64.b64encode(self.schema.serialize().to_pybytes()).decode("ascii"),
                "info": self.config.to_json(),
            },
            indent=1,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str, path: str) -> Commit:
        try:
            d = json.loads(text)
            if d.get("format") != FORMAT_VERSION:
                raise ValueError(f"unknown format {d.get('format')!r}")
            schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(d["schema"])))
            added = {p: list(map(str, fs)) for p, fs in d["added"].items()}
            removed = {p: list(map(str, fs)) for p, fs in d.get("removed", {}).items()}
            return cls(
                version=int(d["version"]),
                operation=Operation(str(d["operation"])),
                added=added,
                removed=removed,
                schema=schema,
                checkpoint=bool(d["checkpoint"]),
                next_file_idx=int(d["next_file_idx"]),
                table_instant=d.get("table_instant"),
                config=IndexConfig.from_json(d.get("info") or {}),
                time=str(d.get("time", "")),
            )
        except (ValueError, KeyError, TypeError, AttributeError, pa.ArrowException) as exc:
            raise IndexCorruptError(path, f"not a valid timeline entry ({exc})") from None


@dataclass(frozen=True)
class Snapshot:
    """The index as of one version: live index files per partition and the latest metadata."""

    version: int
    live: dict[str, tuple[str, ...]]
    schema: pa.Schema
    next_file_idx: int
    table_instant: str | None
    config: IndexConfig
    checkpoint_version: int

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(0, {p: () for p in REGISTRY.names()}, pa.schema([]), 0, None, IndexConfig(), 0)


class IndexTimeline:
    """Reads and appends the index's commit log, the entries under ``<index root>/timeline``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "timeline"
        # The newest replay, the versions on disk it was made from, and the (size, mtime) of the
        # entries it read: entries are never rewritten, so the same listing and unchanged entries
        # give the same snapshot (a listing and a stat per replayed entry, no reads). The stats
        # still catch an entry damaged in place.
        self._replayed: tuple[tuple[int, ...], list[tuple[Path, int, int]], Snapshot] | None = None
        # A watch on the folder, made before the newest replay's listing: while it saw nothing
        # (an entry created, removed or written), that replay is the newest snapshot as it stands.
        self._watch: Watch | None = None

    def __del__(self) -> None:
        watch = getattr(self, "_watch", None)
        if watch is not None:
            with contextlib.suppress(Exception):  # at interpreter exit modules may be gone
                watch.close()

    def versions(self) -> list[int]:
        """Versions of complete entries, ascending (temporary files are not entries)."""
        if not self.dir.is_dir():
            return []
        found = (_ENTRY.match(name) for name in os.listdir(self.dir))
        return sorted(int(m.group(1)) for m in found if m)

    def path(self, version: int) -> Path:
        return self.dir / f"{version:020d}.json"

    def read(self, version: int) -> Commit:
        path = self.path(version)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise IndexCorruptError(str(path), "the timeline entry disappeared while reading") from None
        except UnicodeDecodeError:
            raise IndexCorruptError(str(path), "not UTF-8 text") from None
        commit = Commit.from_json(text, str(path))
        if commit.version != version:
            raise IndexCorruptError(str(path), f"says version {commit.version}")
        return commit

    def snapshot(self, version: int | None = None) -> Snapshot:
        """Replay the log up to ``version`` (default: the latest) from the latest checkpoint."""
        cached = self._replayed
        newest = version is None
        if newest and cached is not None and self._watch is not None and not self._watch.changed():
            return cached[2]
        if self._watch is not None:
            self._watch.close()  # an older version's replay is about to replace the cached one
            self._watch = None
        watch = self._new_watch() if newest else None
        try:
            snap = self._snapshot(version)
        except BaseException:
            if watch is not None:
                watch.close()
            raise
        if watch is not None:
            # Kept only with a replay of the newest version made after it started.
            if self._replayed is not None and self._replayed[2] is snap:
                self._watch = watch
            else:
                watch.close()
        return snap

    def _new_watch(self) -> Watch | None:
        """A usable watch on the timeline folder (None: the folder is not there, or cannot be)."""
        watch = new_watch(lambda name: name.startswith("."))  # writers' temporary files
        watch.pin(str(self.dir))  # an index swapped in by renaming its folder sends no event here
        try:
            device = os.stat(self.dir).st_dev
        except OSError:
            watch.close()
            return None
        if not watch.add(str(self.dir), device):
            watch.close()
            return None
        return watch

    def _snapshot(self, version: int | None) -> Snapshot:
        versions = [v for v in self.versions() if version is None or v <= version]
        if not versions:
            return Snapshot.empty()
        cached = self._replayed
        if (
            cached is not None
            and cached[0] == tuple(versions)
            and all(_signature(path) == (size, mtime) for path, size, mtime in cached[1])
        ):
            return cached[2]
        # Walk back to the newest checkpoint, then forward applying each commit.
        chain: list[Commit] = []
        for v in reversed(versions):
            commit = self.read(v)
            chain.append(commit)
            if commit.checkpoint:
                break
        else:
            raise IndexCorruptError(str(self.path(versions[0])), "no checkpoint to replay from")
        chain.reverse()
        live: dict[str, dict[str, None]] = {p: {} for p in REGISTRY.names()}
        for commit in chain:
            if commit.checkpoint:
                live = {p: {} for p in REGISTRY.names()}
            for p, files in commit.removed.items():
                for f in files:
                    live.setdefault(p, {}).pop(f, None)
            for p, files in commit.added.items():
                live.setdefault(p, {}).update(dict.fromkeys(files))
        last = chain[-1]
        snap = Snapshot(
            version=last.version,
            live={p: tuple(fs) for p, fs in live.items()},
            schema=last.schema,
            next_file_idx=last.next_file_idx,
            table_instant=last.table_instant,
            config=last.config,
            checkpoint_version=chain[0].version,
        )
        entries = [(self.path(c.version), *_signature(self.path(c.version))) for c in chain]
        self._replayed = (tuple(versions), entries, snap)
        return snap

    def create(self, commit: Commit) -> bool:
        """Create the entry of ``commit.version``; False if that version exists (another writer won)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".tmp-{uuid.uuid4().hex}.json"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(commit.to_json())
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, self.path(commit.version))
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(self.dir)
        return True


def _signature(path: Path) -> tuple[int, int]:
    """(size, mtime in ns) of a timeline entry; (-1, -1) when it is gone."""
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
