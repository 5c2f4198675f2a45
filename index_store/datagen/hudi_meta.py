"""A Hudi table's ``.hoodie/`` folder as Hudi writes it, for the merge-on-read writer
(``hudi_mor.py``): ``hoodie.properties``, the partition metadata files, and the timeline's instant
files with their content.

Table version 6 keeps the timeline in ``.hoodie/`` (``<instant>.<action>[.requested|.inflight]``,
commit metadata as JSON); versions 8 and 9 keep it in ``.hoodie/timeline/``, name a completed
instant ``<requested>_<completed>.<action>`` and write commit metadata as an Avro container file.
Rollback plans and metadata are Avro in every version. The Avro schemas here are the subset of
Hudi's (``HoodieCommitMetadata.avsc`` and the rollback ones) that the files fill, under Hudi's
record names: Avro schema resolution gives a reader of the full schema its defaults for the rest."""

from __future__ import annotations

import io
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fastavro

__all__ = [
    "InstantFiles",
    "RollbackFiles",
    "WriteStat",
    "commit_metadata",
    "rollback_metadata",
    "rollback_plan",
    "table_properties",
    "timeline_dir",
    "write_instant",
    "write_partition_metadata",
    "write_properties",
]

_NAMESPACE = "org.apache.hudi.avro.model"
# Hudi's default record merger (HoodieAvroRecordMerger), named by id in the table config
_DEFAULT_MERGER_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"


def timeline_dir(root: Path, table_version: int) -> Path:
    """Where a table's instant files live: ``.hoodie/`` before version 8, ``.hoodie/timeline/``
    from version 8 on."""
    hoodie = root / ".hoodie"
    return hoodie / "timeline" if table_version >= 8 else hoodie


def table_properties(
    *,
    table_version: int,
    table_name: str,
    record_key: str,
    partition_by: str | None,
    ordering_field: str | None,
    hive_style: bool,
    create_schema: str,
) -> dict[str, str]:
    """``hoodie.properties`` of a merge-on-read table with one record key field, at most one
    partition field and Hudi's default merging: by the ordering field's value (event time) when
    there is one, else by commit order."""
    props = {
        "hoodie.table.name": table_name,
        "hoodie.database.name": "default",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": str(table_version),
        "hoodie.table.recordkey.fields": record_key,
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.populate.meta.fields": "true",
        "hoodie.datasource.write.hive_style_partitioning": str(hive_style).lower(),
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.archivelog.folder": "archived",
        "hoodie.table.create.schema": create_schema,
        # Hudi checks the file against this: CRC32 of "<database>.<table name>"
        "hoodie.table.checksum": str(zlib.crc32(f"default.{table_name}".encode())),
    }
    if partition_by is not None:
        props["hoodie.table.partition.fields"] = partition_by
    if table_version < 8:
        props["hoodie.timeline.layout.version"] = "1"
        props["hoodie.table.keygenerator.class"] = (
            "org.apache.hudi.keygen.SimpleKeyGenerator"
            if partition_by is not None
            else "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
        )
        # the payload decides the merge before version 8: DefaultHoodieRecordPayload keeps the
        # greater ordering value, OverwriteWithLatestAvroPayload the later write
        props["hoodie.compaction.payload.class"] = (
            "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
            if ordering_field is not None
            else "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
        )
        props["hoodie.compaction.record.merger.strategy"] = _DEFAULT_MERGER_ID
        if ordering_field is not None:
            props["hoodie.table.precombine.field"] = ordering_field
        return props
    props["hoodie.timeline.layout.version"] = "2"
    props["hoodie.timeline.path"] = "timeline"
    props["hoodie.timeline.history.path"] = "history"
    props["hoodie.table.initial.version"] = str(table_version)
    props["hoodie.table.keygenerator.type"] = "SIMPLE" if partition_by is not None else "NON_PARTITION"
    props["hoodie.record.merge.mode"] = "EVENT_TIME_ORDERING" if ordering_field else "COMMIT_TIME_ORDERING"
    if ordering_field is not None:
        # renamed from hoodie.table.precombine.field in version 9
        key = "hoodie.table.ordering.fields" if table_version >= 9 else "hoodie.table.precombine.field"
        props[key] = ordering_field
    if table_version == 8:
        props["hoodie.record.merge.strategy.id"] = _DEFAULT_MERGER_ID
    return props


def _escape(text: str, *, is_key: bool) -> str:
    """Java ``Properties.store`` escaping: separators, comment marks and backslashes escaped,
    control and non-Latin-1 characters as ``\\uXXXX``, leading blanks of values kept."""
    out = []
    for i, c in enumerate(text):
        if c in "\\=:#!":
            out.append("\\" + c)
        elif c == " " and (is_key or i == 0):
            out.append("\\ ")
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            units = c.encode("utf-16-be")  # a character above U+FFFF is two UTF-16 units
            out += [f"\\u{int.from_bytes(units[i : i + 2], 'big'):04X}" for i in range(0, len(units), 2)]
        else:
            out.append(c)
    return "".join(out)


def _java_date(now: datetime) -> str:
    return now.strftime("%a %b %d %H:%M:%S UTC %Y")


def write_properties(path: Path, props: Mapping[str, str], comment: str | None = None) -> None:
    """A Java properties file, with a comment line and the date line ``Properties.store`` writes."""
    now = datetime.now(UTC)
    lines = [f"#{comment}"] if comment else []
    lines.append(f"#{_java_date(now)}")
    lines += [f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}" for k, v in props.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")


def write_partition_metadata(folder: Path, instant: str, depth: int) -> None:
    """``.hoodie_partition_metadata``: the instant that created the partition and how many folder
    levels a partition path has (0 for a table without partitions, whose files sit at its root)."""
    write_properties(
        folder / ".hoodie_partition_metadata",
        {"commitTime": instant, "partitionDepth": str(depth)},
        comment="partition metadata",
    )


@dataclass(frozen=True)
class WriteStat:
    """What one write to one file group did (a ``HoodieWriteStat``)."""

    partition: str
    file_id: str
    path: str  # the file written, relative to the table's root
    prev_commit: str  # the slice's base instant ("null" for a new file group)
    num_inserts: int
    num_updates: int
    num_deletes: int
    size: int
    base_file: str | None = None  # for a log write: the slice's base file name ("" if none)
    log_files: tuple[str, ...] | None = None  # for a log write: the slice's log files
    log_version: int | None = None

    def as_record(self) -> dict[str, Any]:
        """The stat under Hudi's field names (JSON in version 6, an Avro record from 8)."""
        return {
            "fileId": self.file_id,
            "path": self.path,
            "prevCommit": self.prev_commit,
            "numWrites": self.num_inserts + self.num_updates,
            "numDeletes": self.num_deletes,
            "numUpdateWrites": self.num_updates,
            "numInserts": self.num_inserts,
            "totalWriteBytes": self.size,
            "totalWriteErrors": 0,
            "partitionPath": self.partition,
            "fileSizeInBytes": self.size,
            "logVersion": self.log_version,
            "logOffset": None if self.log_version is None else 0,
            "baseFile": self.base_file,
            "logFiles": None if self.log_files is None else list(self.log_files),
        }


def _optional(kind: Any) -> list[Any]:
    return ["null", kind]


def _fields(spec: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": name, "type": _optional(kind), "default": None} for name, kind in spec]


_WRITE_STAT_FIELDS = (
    ("fileId", "string"),
    ("path", "string"),
    ("prevCommit", "string"),
    ("numWrites", "long"),
    ("numDeletes", "long"),
    ("numUpdateWrites", "long"),
    ("totalWriteBytes", "long"),
    ("totalWriteErrors", "long"),
    ("partitionPath", "string"),
    ("numInserts", "long"),
    ("fileSizeInBytes", "long"),
    ("logVersion", "int"),
    ("logOffset", "long"),
    ("baseFile", "string"),
    ("logFiles", {"type": "array", "items": "string"}),
)
_COMMIT_METADATA_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieCommitMetadata",
        "namespace": _NAMESPACE,
        "fields": [
            {
                "name": "partitionToWriteStats",
                "type": _optional(
                    {
                        "type": "map",
                        "values": {
                            "type": "array",
                            "items": {
                                "type": "record",
                                "name": "HoodieWriteStat",
                                "fields": _fields(_WRITE_STAT_FIELDS),
                            },
                        },
                    }
                ),
                "default": None,
            },
            {"name": "compacted", "type": _optional("boolean"), "default": None},
            {
                "name": "extraMetadata",
                "type": _optional({"type": "map", "values": "string"}),
                "default": None,
            },
            {"name": "version", "type": ["int", "null"], "default": 1},
            {"name": "operationType", "type": _optional("string"), "default": None},
        ],
    }
)
_INSTANT_INFO = {
    "type": "record",
    "name": "HoodieInstantInfo",
    "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}],
}
_STRINGS = {"type": "array", "items": "string"}
_SIZES = _optional({"type": "map", "values": "long"})
_ROLLBACK_METADATA_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieRollbackMetadata",
        "namespace": _NAMESPACE,
        "fields": [
            {"name": "startRollbackTime", "type": "string"},
            {"name": "timeTakenInMillis", "type": "long"},
            {"name": "totalFilesDeleted", "type": "int"},
            {"name": "commitsRollback", "type": _STRINGS},
            {
                "name": "partitionMetadata",
                "type": {
                    "type": "map",
                    "values": {
                        "type": "record",
                        "name": "HoodieRollbackPartitionMetadata",
                        "fields": [
                            {"name": "partitionPath", "type": "string"},
                            {"name": "successDeleteFiles", "type": _STRINGS},
                            {"name": "failedDeleteFiles", "type": _STRINGS},
                            {"name": "rollbackLogFiles", "type": _SIZES, "default": None},
                            {"name": "logFilesFromFailedCommit", "type": _SIZES, "default": None},
                        ],
                    },
                },
            },
            {"name": "version", "type": ["int", "null"], "default": 1},
            {"name": "instantsRollback", "type": {"type": "array", "items": _INSTANT_INFO}, "default": []},
        ],
    }
)
_ROLLBACK_PLAN_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieRollbackPlan",
        "namespace": _NAMESPACE,
        "fields": [
            {"name": "instantToRollback", "type": _optional(_INSTANT_INFO), "default": None},
            {
                "name": "RollbackRequests",
                "type": _optional(
                    {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "HoodieRollbackRequest",
                            "fields": [
                                {"name": "partitionPath", "type": "string"},
                                {"name": "fileId", "type": _optional("string"), "default": None},
                                {"name": "latestBaseInstant", "type": _optional("string"), "default": None},
                                {"name": "filesToBeDeleted", "type": _STRINGS, "default": []},
                                {"name": "logBlocksToBeDeleted", "type": _SIZES, "default": None},
                            ],
                        },
                    }
                ),
                "default": None,
            },
            {"name": "version", "type": ["int", "null"], "default": 1},
        ],
    }
)


def _avro_file(schema: Any, record: Mapping[str, Any]) -> bytes:
    """One record in an Avro container file, uncompressed, as Hudi's timeline holds it."""
    out = io.BytesIO()
    fastavro.writer(out, schema, [record], codec="null")
    return out.getvalue()


def commit_metadata(
    stats: Sequence[WriteStat], table_version: int, *, schema: str | None, operation: str
) -> bytes:
    """A (delta) commit's metadata file: write stats by partition, the writer's schema (Avro,
    without meta columns: what readers take the table's schema from) and the operation. An
    inflight file holds the same with no stats."""
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition, []).append(stat.as_record())
    record = {
        "partitionToWriteStats": by_partition,
        "compacted": False,
        "extraMetadata": {} if schema is None else {"schema": schema},
        "version": 1,
        "operationType": operation,
    }
    if table_version >= 8:
        return _avro_file(_COMMIT_METADATA_SCHEMA, record)
    return json.dumps(record, indent=2).encode("utf-8")


@dataclass(frozen=True)
class RollbackFiles:
    """What a rollback did in one partition: files it deleted, log files it appended a rollback
    block to (version 6) and the failed commit's log files, each with its size."""

    partition: str
    file_id: str
    base_instant: str
    deleted: tuple[str, ...] = ()  # full paths
    rollback_logs: Mapping[str, int] | None = None
    failed_logs: Mapping[str, int] | None = None


def rollback_plan(target: str, requests: Sequence[RollbackFiles]) -> bytes:
    """A rollback's ``.rollback.requested``: the instant to undo and, per file group, the files to
    delete and the log files whose blocks to undo."""
    record = {
        "instantToRollback": {"commitTime": target, "action": "deltacommit"},
        "RollbackRequests": [
            {
                "partitionPath": r.partition,
                "fileId": r.file_id,
                "latestBaseInstant": r.base_instant,
                "filesToBeDeleted": list(r.deleted),
                "logBlocksToBeDeleted": dict(r.failed_logs or {}),
            }
            for r in requests
        ],
        "version": 1,
    }
    return _avro_file(_ROLLBACK_PLAN_SCHEMA, record)


def rollback_metadata(instant: str, target: str, done: Sequence[RollbackFiles]) -> bytes:
    """A completed rollback's metadata: the instant undone and what was done per partition."""
    partitions: dict[str, dict[str, Any]] = {}
    for r in done:
        entry = partitions.setdefault(
            r.partition,
            {
                "partitionPath": r.partition,
                "successDeleteFiles": [],
                "failedDeleteFiles": [],
                "rollbackLogFiles": {},
                "logFilesFromFailedCommit": {},
            },
        )
        entry["successDeleteFiles"] += list(r.deleted)
        entry["rollbackLogFiles"].update(r.rollback_logs or {})
        entry["logFilesFromFailedCommit"].update(r.failed_logs or {})
    record = {
        "startRollbackTime": instant,
        "timeTakenInMillis": 0,
        "totalFilesDeleted": sum(len(r.deleted) for r in done),
        "commitsRollback": [target],
        "partitionMetadata": partitions,
        "version": 1,
        "instantsRollback": [{"commitTime": target, "action": "deltacommit"}],
    }
    return _avro_file(_ROLLBACK_METADATA_SCHEMA, record)


@dataclass(frozen=True)
class InstantFiles:
    """The files of one instant: its requested, inflight and (when completed) completed content."""

    action: str
    requested: str  # requested time
    completed: str | None  # completion time; None leaves the instant pending
    requested_content: bytes = b""
    inflight_content: bytes = b""
    completed_content: bytes = b""


def write_instant(timeline: Path, table_version: int, instant: InstantFiles) -> list[Path]:
    """Write an instant's files in the order Hudi moves through its states; returns them."""
    timeline.mkdir(parents=True, exist_ok=True)
    t, action = instant.requested, instant.action
    written = [timeline / f"{t}.{action}.requested", timeline / f"{t}.{action}.inflight"]
    written[0].write_bytes(instant.requested_content)
    written[1].write_bytes(instant.inflight_content)
    if instant.completed is not None:
        # the completion time is in the name from version 8 on, in the file's date before
        name = f"{t}_{instant.completed}.{action}" if table_version >= 8 else f"{t}.{action}"
        written.append(timeline / name)
        written[-1].write_bytes(instant.completed_content)
    return written
