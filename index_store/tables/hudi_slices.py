"""The latest file slice of a Hudi file group, as a snapshot reader sees it.

A file group's files are sliced by base instant: each base file starts a slice, and each log file
joins one. The rules are Hudi 1.x's (``AbstractTableFileSystemView.buildFileGroups`` and
``getLatestMergedFileSlicesBeforeOrOn``, ``HoodieFileGroup.addLogFile``), which read table versions
6 and 8/9 alike:

- Only files of committed instants take part (completed, or archived); files of pending, failed or
  rolled-back instants are never read.
- A log file joins the slice with the greatest base instant at or before the completion time of
  its instant; one with no such slice starts its own (a file group of log files only, or log files
  whose base file is gone). Table version 6 records no completion times: an instant's requested
  time stands for it.
- The snapshot reads, per file group, the latest slice whose base instant is at or before the
  latest completed commit: every slice here, since only committed files take part.

A pending compaction at instant C: Hudi opens a slice at C for the file groups of its plan, which
the log files written after C was requested join (in table version 6 they are named for C), and a
reader merges that slice's log files onto the slice before it, since C's base file is not written
(or not committed) yet. Here C's base file is no slice, being uncommitted, so those log files join
the slice before C directly: the same files, in the same order. A table version 6 log file named
for a C requested after the latest completed commit is read by nobody: no delta commit written
against C has completed.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from index_store.tables.hudi_files import BaseFileName, LogFileName
from index_store.tables.hudi_timeline import HudiTimeline

__all__ = ["LatestSlice", "SlicingRules"]


@dataclass(frozen=True)
class LatestSlice:
    """The files a reader merges for one file group: a base file (None: log files only) and log
    files in Hudi's order."""

    base: BaseFileName | None
    logs: tuple[LogFileName, ...]


@dataclass(frozen=True)
class SlicingRules:
    """What the timeline says about a table's files, and the slicing rules that use it."""

    timeline: HudiTimeline
    by_completion: bool  # table version 8+: a log file names its delta commit, whose completion counts
    as_of: str | None  # the latest completed commit
    rolled_back: frozenset[str]
    pending_compactions: frozenset[str]  # instants of compactions not completed
    replaced: frozenset[tuple[str, str]]  # (partition, file id) of groups a replace commit retired

    @classmethod
    def of(cls, timeline: HudiTimeline, table_version: int) -> SlicingRules:
        """The rules for a table of ``table_version`` with this timeline."""
        return cls(
            timeline,
            table_version >= 8,
            timeline.latest_completed_commit(),
            frozenset(timeline.rolled_back()),
            frozenset(timeline.pending_compactions()),
            frozenset(timeline.replaced_file_groups()),
        )

    def keeps_base(self, instant: str) -> bool:
        """A base file of ``instant`` may be read (committed, not rolled back)."""
        return instant not in self.rolled_back and self.timeline.is_committed(instant)

    def keeps_log(self, log: LogFileName) -> bool:
        """A log file may be read. In table version 6 its name carries the base instant it was
        written against, not the instant that wrote it: one written against a pending compaction
        is named for it, and a log file of a failed delta commit on a committed base cannot be told
        from the name (its blocks carry their instant)."""
        if log.cdc or log.instant in self.rolled_back:
            return False
        return self.timeline.is_committed(log.instant) or (
            not self.by_completion
            and log.instant in self.pending_compactions
            and self.as_of is not None
            and log.instant <= self.as_of
        )

    def latest_slice(
        self,
        group: tuple[str, str],
        bases: Mapping[str, BaseFileName],
        logs: Iterable[LogFileName],
    ) -> LatestSlice | None:
        """The slice a snapshot reads of file group ``group`` (partition, file id), given its
        readable base files by instant and its readable log files; None when it has none."""
        if group in self.replaced:
            return None
        slices: dict[str, list[LogFileName]] = {instant: [] for instant in bases}
        for log in sorted(logs, key=lambda f: f.order):  # in order: a slice a log file opens takes the next
            slices.setdefault(self._slice_of(log, sorted(slices)), []).append(log)
        if not slices:
            return None
        key = max(slices)
        return LatestSlice(bases.get(key), tuple(slices[key]))

    def _slice_of(self, log: LogFileName, keys: list[str]) -> str:
        """The base instant of the slice ``log`` joins, among the slices opened so far."""
        if not keys:
            return log.instant
        done = self.timeline.completion_time(log.instant)
        if done is None:  # a table version 6 log file written against a pending compaction
            return keys[-1]
        at = bisect.bisect_right(keys, done)
        return keys[at - 1] if at else log.instant
