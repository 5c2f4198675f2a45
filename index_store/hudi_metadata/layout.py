"""Hudi's metadata table on disk: its properties, its own timeline, the latest file slice of each
of its file groups, and which instants its log blocks may come from.

The metadata table (``<table>/.hoodie/metadata``) is a merge-on-read Hudi table of its own: one
folder per partition (``files``, ``column_stats``, ...), file groups of ``.hfile`` base files and
log files of HFile data blocks and delete blocks. Its file slices follow the data tables' rules
(``tables.hudi_slices``) on its own timeline: delta commits, compactions (completed as commits)
and rollbacks. Which log blocks count is wider than that timeline, as in Hudi
(``HoodieTableMetadataUtil.getValidInstantTimestamps``): a block counts when its instant is a
completed instant of the data table, a completed metadata instant the data table is not still
writing (async indexing, partition initialisation ``0000000000000000x``), or a rollback or restore
of the metadata table. A block written for a data commit that has not completed is skipped.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from index_store.errors import MetadataPartitionUnavailableError, MetadataTableError
from index_store.tables.hudi_files import BaseFileName, LogFileName, parse_base, parse_log_file_name
from index_store.tables.hudi_slices import LatestSlice, SlicingRules
from index_store.tables.hudi_timeline import HudiTimeline, read_properties

__all__ = ["MetadataLayout", "MetadataSlice", "PartitionState"]

_METADATA_FOLDER = "metadata"
# Instants of the commits that initialise a metadata partition (Hudi's SOLO_COMMIT_TIMESTAMP and a
# suffix: 00000000000000010 in table version 6, 00000000000000000, ...01, ... in 8 and 9).
_INIT_PREFIX = "00000000000000"
# Data-table actions that write to the metadata table under their own instant time.
_SYNCED_ACTIONS = ("commit", "deltacommit", "replacecommit", "clean", "rollback", "restore")


@dataclass(frozen=True)
class MetadataSlice:
    """The latest slice of one metadata file group: paths of its base file (None: logs only) and
    of its log files, in Hudi's order."""

    partition: str
    file_id: str
    base: str | None
    logs: tuple[str, ...]
    base_instant: str | None


@dataclass(frozen=True)
class PartitionState:
    """The metadata partitions the data table declares: complete (readable) and inflight (being
    built, never read)."""

    complete: tuple[str, ...]
    inflight: tuple[str, ...]

    def is_available(self, name: str) -> bool:
        return name in self.complete and name not in self.inflight


def _listed(properties: dict[str, str], key: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in properties.get(key, "").split(",") if p.strip())


class MetadataLayout:
    """The metadata table of the data table at ``hoodie_dir`` (its ``.hoodie`` folder), with the
    data table's properties and timeline (which decide the valid instants)."""

    def __init__(self, hoodie_dir: str, data_properties: dict[str, str], data_timeline: HudiTimeline) -> None:
        self.root = os.path.join(hoodie_dir, _METADATA_FOLDER)
        self.data_properties = data_properties
        self.data_timeline = data_timeline
        if not os.path.isdir(os.path.join(self.root, ".hoodie")):
            raise MetadataTableError(
                f"{os.path.dirname(hoodie_dir)} has no metadata table ({self.root} is missing): it was "
                "written with hoodie.metadata.enable=false; use the data table's own listing"
            )
        self.properties = read_properties(os.path.join(self.root, ".hoodie"))
        try:
            self.table_version = int(self.properties.get("hoodie.table.version", "0").strip() or 0)
        except ValueError as exc:
            raise MetadataTableError(f"{self.root}: hoodie.table.version is not a number") from exc

    @property
    def timeline_dir(self) -> str:
        hoodie = os.path.join(self.root, ".hoodie")
        if self.table_version >= 8:
            return os.path.join(hoodie, self.properties.get("hoodie.timeline.path", "").strip() or "timeline")
        return hoodie

    @cached_property
    def timeline(self) -> HudiTimeline:
        """The metadata table's own active timeline."""
        return HudiTimeline.load(self.timeline_dir)

    @cached_property
    def partitions(self) -> PartitionState:
        """What ``hoodie.properties`` of the data table says about the metadata partitions."""
        return PartitionState(
            _listed(self.data_properties, "hoodie.table.metadata.partitions"),
            _listed(self.data_properties, "hoodie.table.metadata.partitions.inflight"),
        )

    def require_partition(self, name: str) -> None:
        """Raise ``MetadataPartitionUnavailableError`` unless partition ``name`` may be read."""
        table = os.path.dirname(os.path.dirname(self.root))
        if name in self.partitions.inflight:
            raise MetadataPartitionUnavailableError(
                table, name, "listed in hoodie.table.metadata.partitions.inflight: still being built"
            )
        if name not in self.partitions.complete:
            raise MetadataPartitionUnavailableError(
                table,
                name,
                f"not in hoodie.table.metadata.partitions ({', '.join(self.partitions.complete)})",
            )
        if not os.path.isdir(os.path.join(self.root, name)):
            raise MetadataPartitionUnavailableError(table, name, f"its folder {name}/ is missing")

    @cached_property
    def valid_instant(self) -> Callable[[str], bool]:
        """Whether a log block of this instant counts (the module's rule). Instants a data-table
        rollback undid stay valid, as in Hudi: their blocks list the files the rollback's own
        block then deletes."""
        data = self.data_timeline
        pending = data.pending
        valid = set(data.completed) | data.rolled_back()
        valid.update(t for t in self.timeline.completed if t not in pending)
        undone = self.timeline.rolled_back()
        earliest = data.earliest

        def is_valid(instant: str) -> bool:
            if instant in valid:
                return True
            if instant in undone or instant in pending or instant in self.timeline.pending:
                return False
            return earliest is not None and instant < earliest  # archived in the data table

        return is_valid

    def slices(self, partition: str) -> list[MetadataSlice]:
        """The latest slice of every file group of metadata partition ``partition``."""
        folder = os.path.join(self.root, partition)
        rules = SlicingRules.of(self.timeline, self.table_version)
        bases: dict[str, dict[str, BaseFileName]] = defaultdict(dict)
        logs: dict[str, list[LogFileName]] = defaultdict(list)
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if e.is_file()]
        for name in names:
            base = parse_base(name, "hfile")
            if base is not None:
                if rules.keeps_base(base.instant):
                    bases[base.file_id][base.instant] = base
                continue
            log = parse_log_file_name(name)
            if log is not None and rules.keeps_log(log):
                logs[log.file_id].append(log)
        out = []
        for file_id in sorted(bases.keys() | logs.keys()):
            latest: LatestSlice | None = rules.latest_slice(
                (partition, file_id), bases.get(file_id, {}), logs.get(file_id, ())
            )
            if latest is None:
                continue
            out.append(
                MetadataSlice(
                    partition,
                    file_id,
                    os.path.join(folder, latest.base.name) if latest.base else None,
                    tuple(os.path.join(folder, f.name) for f in latest.logs),
                    latest.base.instant if latest.base else None,
                )
            )
        return out

    # --- step with the data table -----------------------------------------------------------------

    def data_latest_synced(self) -> str | None:
        """The data table's latest completed instant of an action that updates the metadata table
        under its own time (commits, delta and replace commits, cleans, rollbacks, restores)."""
        return max(
            (t for t, i in self.data_timeline.completed.items() if i.action in _SYNCED_ACTIONS), default=None
        )

    def step(self) -> tuple[str, str]:
        """``("in_step" | "behind" | "ahead", reason)``: behind when the data table's latest
        synced instant has no completed metadata delta commit; ahead when the metadata table has
        a completed delta commit for a data instant that is not completed (its blocks are then
        skipped, as Hudi skips them: reads stay correct)."""
        latest = self.data_latest_synced()
        mdt = self.timeline.completed
        if latest is not None and (latest not in mdt or mdt[latest].action != "deltacommit"):
            have = max((t for t, i in mdt.items() if i.action == "deltacommit"), default=None)
            return "behind", (
                f"the data table's latest completed instant {latest} has no completed delta commit in "
                f"the metadata table, whose latest is {have}"
            )
        data_done = self.data_timeline.completed
        ahead = sorted(
            t
            for t, i in mdt.items()
            if i.action == "deltacommit"
            and not t.startswith(_INIT_PREFIX)
            and t not in data_done
            and (t in self.data_timeline.pending or latest is None or t > latest)
        )
        if ahead:
            return "ahead", (
                f"the metadata table has delta commits {', '.join(ahead)} for data instants that are not "
                "completed (skipped when reading)"
            )
        return "in_step", f"both at {latest}"
