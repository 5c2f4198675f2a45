"""Hudi's ``.hoodie`` folder: table properties and the active timeline.

Two timeline layouts exist. Table versions up to 6 keep instant files directly in ``.hoodie/``:
``<instant>.<action>`` once completed, ``<instant>.<action>.requested`` / ``.inflight`` while pending
(a commit's inflight file is just ``<instant>.inflight``), with JSON content (Avro for clean,
rollback and plans). Versions 8 and 9 keep them in ``.hoodie/timeline/`` (``hoodie.timeline.path``),
name completed instants ``<requested>_<completed>.<action>`` and write Avro. Clustering is requested
as ``clustering`` and completes as a ``replacecommit``; a compaction is requested as ``compaction``
and completes as a ``commit``. Only completed instants count, save that a table version 6 log file
may be named for a pending compaction (``hudi_slices``).

The archived timeline (``archived/``, ``timeline/history/``) is not read: instants older than the
active timeline's first one are committed (Hudi archives a prefix of completed instants only), and
Hudi archives a replacecommit only after cleaning the file groups it replaced.
"""

from __future__ import annotations

import io
import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import fastavro

from index_store.errors import TableFormatError

__all__ = ["HudiTimeline", "Instant", "parse_instant_name", "read_properties"]

_INSTANT_NAME = re.compile(r"(?P<requested>\d{14,})(?:_(?P<completed>\d{14,}))?\.(?P<rest>[a-z_.]+)")
_STATES = ("requested", "inflight")
_DATA_ACTIONS = ("commit", "deltacommit", "replacecommit")


def _unescape(text: str) -> str:
    """Java properties escapes: ``\\t \\n \\r \\f``, ``\\uXXXX``, and ``\\c`` -> ``c``."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    """Lines joined where one ends in an odd number of backslashes (a continuation)."""
    lines, pending = [], ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        is_comment = not pending and line[:1] in ("#", "!")
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1 and not is_comment:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def parse_properties(text: str) -> dict[str, str]:
    """A ``java.util.Properties`` file: ``#``/``!`` comments, ``=``/``:``/blank separators, escapes."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        if not line or line[0] in "#!":
            continue
        i = 0
        while i < len(line) and line[i] not in "=: \t\f":
            i += 2 if line[i] == "\\" else 1
        key, rest = line[:i], line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        props[_unescape(key)] = _unescape(rest)
    return props


def read_properties(hoodie_dir: str) -> dict[str, str]:
    """``hoodie.properties`` (or the ``.backup`` Hudi writes while updating it), parsed."""
    for name in ("hoodie.properties", "hoodie.properties.backup"):
        path = os.path.join(hoodie_dir, name)
        if os.path.isfile(path):
            with open(path, encoding="latin-1") as f:  # Properties.load(InputStream) reads ISO-8859-1
                return parse_properties(f.read())
    raise TableFormatError(f"{hoodie_dir} has no hoodie.properties: not a Hudi table, or a broken one")


@dataclass(frozen=True)
class Instant:
    """One instant file of the timeline."""

    requested: str  # requested (instant) time: what base file names carry
    action: str  # commit, replacecommit, clustering, clean, rollback, ...
    state: str  # "requested", "inflight" or "completed"
    completed: str | None  # completion time (table version 8+), else None
    file_name: str

    @property
    def is_completed(self) -> bool:
        return self.state == "completed"


def parse_instant_name(name: str) -> Instant | None:
    """The instant a timeline file name stands for, or None for other files."""
    m = _INSTANT_NAME.fullmatch(name)
    if not m:
        return None
    parts = m.group("rest").split(".")
    if parts == ["inflight"]:  # a commit's inflight file has no action in its name
        return Instant(m.group("requested"), "commit", "inflight", None, name)
    if len(parts) == 1 and parts[0]:
        return Instant(m.group("requested"), parts[0], "completed", m.group("completed"), name)
    if len(parts) == 2 and parts[0] and parts[1] in _STATES:
        return Instant(m.group("requested"), parts[0], parts[1], None, name)
    return None


def _decode(data: bytes, where: str) -> dict[str, Any]:
    """Instant content: Avro container (v8+, and clean/rollback/plans in v6) or JSON (v6 commits)."""
    if not data.strip():
        return {}
    try:
        if data[:4] == b"Obj\x01":
            records = list(fastavro.reader(io.BytesIO(data)))
            return records[0] if records and isinstance(records[0], dict) else {}
        content = json.loads(data.decode("utf-8"))
    except Exception as exc:
        raise TableFormatError(f"cannot read Hudi instant file {where}: {exc}") from exc
    return content if isinstance(content, dict) else {}


class HudiTimeline:
    """The active timeline of a Hudi table: its instant files, read on demand."""

    def __init__(self, directory: str, instants: list[Instant]) -> None:
        self.directory = directory
        self.instants = sorted(instants, key=lambda i: (i.requested, i.state != "completed"))

    @classmethod
    def load(cls, directory: str) -> HudiTimeline:
        """The instants of a timeline folder (``.hoodie`` or ``.hoodie/timeline``); none if absent."""
        instants = []
        if os.path.isdir(directory):
            with os.scandir(directory) as entries:
                for entry in entries:
                    instant = parse_instant_name(entry.name)
                    if instant is not None and entry.is_file():
                        instants.append(instant)
        return cls(directory, instants)

    @cached_property
    def completed(self) -> dict[str, Instant]:
        """Completed instants by requested time."""
        return {i.requested: i for i in self.instants if i.is_completed}

    @cached_property
    def pending(self) -> set[str]:
        """Requested times of instants with no completed file yet."""
        return {i.requested for i in self.instants if not i.is_completed} - set(self.completed)

    @property
    def earliest(self) -> str | None:
        """The first instant (any action, any state) still on the active timeline."""
        return self.instants[0].requested if self.instants else None

    def latest_completed(self) -> str | None:
        """The greatest requested time of a completed instant."""
        return max(self.completed, default=None)

    def latest_completed_commit(self) -> str | None:
        """The greatest requested time of a completed commit, delta commit or replace commit (a
        compaction completes as a commit, a clustering as a replace commit): what a snapshot reads
        as of. Cleans, rollbacks and indexing write no data files."""
        return max((t for t, i in self.completed.items() if i.action in _DATA_ACTIONS), default=None)

    def completion_time(self, requested: str) -> str | None:
        """When the instant requested at ``requested`` completed, or None while it is pending (or
        failed, or unknown). Table version 6 records no completion time: Hudi then takes the
        requested time for it, as it does for an archived instant (older than the active timeline,
        which only ever loses a prefix of completed instants)."""
        instant = self.completed.get(requested)
        if instant is not None:
            return instant.completed or instant.requested
        earliest = self.earliest
        return requested if earliest is None or requested < earliest else None

    def is_committed(self, requested: str) -> bool:
        """The instant completed (on the active timeline, or archived)."""
        return self.completion_time(requested) is not None

    def pending_compactions(self) -> set[str]:
        """Requested times of compactions requested or inflight, not completed (a compaction
        completes as a commit)."""
        return {i.requested for i in self.instants if i.action == "compaction"} - set(self.completed)

    def read(self, instant: Instant) -> dict[str, Any]:
        """The decoded content of an instant file."""
        path = os.path.join(self.directory, instant.file_name)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:  # archived or cleaned up between listing and reading
            return {}
        return _decode(data, path)

    def replaced_file_groups(self) -> set[tuple[str, str]]:
        """``(partition, file id)`` of every file group a completed replacecommit replaced
        (insert overwrite, clustering, delete partition)."""
        replaced: set[tuple[str, str]] = set()
        for instant in self.completed.values():
            if instant.action != "replacecommit":
                continue
            content = self.read(instant)
            for partition, file_ids in (content.get("partitionToReplaceFileIds") or {}).items():
                replaced.update((partition, file_id) for file_id in file_ids or ())
        return replaced

    def rolled_back(self) -> set[str]:
        """Instants a rollback or restore removed, or is removing (their files are never live)."""
        times: set[str] = set()
        for instant in self.instants:
            if instant.action not in ("rollback", "restore") or instant.state == "inflight":
                continue
            content = self.read(instant)
            times.update(_rollback_targets(content))
        return times


def _rollback_targets(content: dict[str, Any]) -> set[str]:
    """Instant times named by rollback/restore metadata (completed) or a rollback plan (requested)."""
    times: set[str] = set(content.get("commitsRollback") or ())
    infos = list(content.get("instantsRollback") or ()) + list(content.get("instantsToRollback") or ())
    plan_target = content.get("instantToRollback")
    if isinstance(plan_target, dict):
        infos.append(plan_target)
    times.update(info["commitTime"] for info in infos if isinstance(info, dict) and info.get("commitTime"))
    for nested in (content.get("hoodieRestoreMetadata") or {}).values():
        for rollback in nested or ():
            if isinstance(rollback, dict):
                times.update(_rollback_targets(rollback))
    return times
