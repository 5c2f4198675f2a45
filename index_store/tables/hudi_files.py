"""Hudi data file names: base files and log files, parsed, and the order Hudi replays log files in.

A base file is ``<fileId>_<writeToken>_<instant>.parquet`` (``.hfile`` in Hudi's metadata table); a
log file is ``.<fileId>_<instant>.log.<version>_<writeToken>``, where the instant is the base
instant of the slice it was written against (table version 6) or the requested time of the delta
commit that wrote it (table versions 8 and 9). A log file name ending in ``.cdc`` holds
change-data-capture records (a supplement for incremental queries), never rows of the snapshot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BaseFileName", "LogFileName", "parse_base", "parse_base_file_name", "parse_log_file_name"]

_BASE_FILE = re.compile(
    r"(?P<file_id>[^_.][^_]*)_(?P<write_token>[^_]+)_(?P<instant>\d+)\.(?P<extension>[a-z]+)"
)
_LOG_FILE = re.compile(
    r"\.(?P<file_id>[^_]+)_(?P<instant>\d+)\.log\.(?P<version>\d+)_(?P<write_token>\d+-\d+-\d+)(?P<cdc>\.cdc)?"
)


@dataclass(frozen=True)
class BaseFileName:
    """The parts of a base file's name."""

    name: str
    file_id: str
    write_token: str
    instant: str  # requested time of the commit that wrote it: the base instant of its slice


@dataclass(frozen=True)
class LogFileName:
    """The parts of a log file's name."""

    name: str
    file_id: str
    instant: str  # v6: the base instant it was written against; v8+: its delta commit's requested time
    version: int  # rises when a writer rolls over to a new file within one instant
    write_token: str
    cdc: bool  # a change-data-capture log: not part of the snapshot

    @property
    def order(self) -> tuple[str, int, str]:
        """Hudi's log-file order (``HoodieLogFile.LogFileComparator``): instant, version (as a
        number), write token. Log files are merged onto their base file in this order."""
        return (self.instant, self.version, self.write_token)


def parse_base(name: str, extension: str = "parquet") -> BaseFileName | None:
    """The parts of a base file name, or None if it is not one. Data tables here store parquet;
    Hudi's metadata table stores ``hfile`` base files (``extension="hfile"``)."""
    m = _BASE_FILE.fullmatch(name)
    if not m or m.group("extension") != extension:
        return None
    return BaseFileName(name, m.group("file_id"), m.group("write_token"), m.group("instant"))


def parse_base_file_name(name: str) -> tuple[str, str, str] | None:
    """``(file id, write token, instant time)`` of a base file name, or None if it is not one."""
    parsed = parse_base(name)
    return (parsed.file_id, parsed.write_token, parsed.instant) if parsed else None


def parse_log_file_name(name: str) -> LogFileName | None:
    """The parts of a log file name, or None if it is not one (``.hoodie_partition_metadata``,
    ``.crc`` side files, ``.DS_Store``)."""
    m = _LOG_FILE.fullmatch(name)
    if not m:
        return None
    return LogFileName(
        name,
        m.group("file_id"),
        m.group("instant"),
        int(m.group("version")),
        m.group("write_token"),
        m.group("cdc") is not None,
    )
