"""Hudi tables, copy-on-write and merge-on-read: the live file slices of the latest snapshot.

A table's data is in file groups (partition, fileId). A copy-on-write write produces a new base file
``<fileId>_<writeToken>_<instant>.parquet`` of each group it touches; a merge-on-read write appends
log files ``.<fileId>_<instant>.log.<version>_<writeToken>`` beside the base file until a compaction
writes a new one. A snapshot reader reads, for each live file group, its latest committed file slice
(``hudi_slices``): a base file and, merge-on-read, the log files to merge onto it. File groups a
completed ``replacecommit`` replaced (insert overwrite, clustering) and files of pending, failed or
rolled-back instants are never read.

``HudiFormat.open`` (``open_reader``) opens both kinds. A merge-on-read table's ``read_as`` is
``"slices"``: the index prunes it (log files have statistics of their own and a slice is kept whole),
its rows are read merged (``index_store.merged``), and ``tag`` finds the slice holding each key's
latest live record from its base file and log files (``tagging.slices``).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_expr.types import is_string_like
from index_store.errors import TableFormatError, UnsupportedTableError
from index_store.tables.base import (
    DataFile,
    FileSlice,
    LogMerging,
    Partitioning,
    ReadMethod,
    TableReaderBase,
)
from index_store.tables.file_ids import hudi_file_ids
from index_store.tables.hive import HIVE_NULL
from index_store.tables.hudi_files import (
    BaseFileName,
    LogFileName,
    parse_base,
    parse_base_file_name,
    parse_log_file_name,
)
from index_store.tables.hudi_slices import LatestSlice, SlicingRules
from index_store.tables.hudi_timeline import HudiTimeline, read_properties
from index_store.tables.plain import require_directory
from index_store.tables.registry import OpenOptions

if TYPE_CHECKING:
    from index_store.record_key import RecordKeySpec

__all__ = [
    "HUDI_FORMAT",
    "RECORD_KEY_META_FIELD",
    "HudiCowTable",
    "HudiFormat",
    "HudiTable",
    "parse_base_file_name",
]

RECORD_KEY_META_FIELD = "_hoodie_record_key"
_PARTITION_META = ".hoodie_partition_metadata"
_MAX_TABLE_VERSION = 9
# Payloads whose merge keeps one record whole (the newest, or the one with the greatest ordering
# value): a merged row is then a base row or a log record as written, never a mix of the two.
_WHOLE_RECORD_PAYLOADS = {
    "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
    "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
    "org.apache.hudi.common.model.EventTimeAvroPayload",
}
_WHOLE_RECORD_MODES = {"COMMIT_TIME_ORDERING", "EVENT_TIME_ORDERING"}
# Partition path values are converted to these column types; others (timestamps, whose folder text
# depends on the writer's time zone and format, binary, nested) are left out of partition_values.
_CASTABLE = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal, pa.types.is_boolean)


@dataclass(frozen=True)
class _PartitionField:
    name: str
    from_path: bool  # False when the folder holds a formatted value (timestamp key generators)


@dataclass(frozen=True)
class _Snapshot:
    slices: list[FileSlice]  # by (partition, file id)
    files: list[DataFile]  # every file of the slices, by path
    file_schema: pa.Schema | None  # footer schema of the newest live base file


@dataclass(frozen=True)
class _Found:
    """A file group's latest slice as found in its partition folder."""

    partition: str
    file_id: str
    slice: LatestSlice
    entries: dict[str, os.DirEntry[str]]  # the partition's listed files, by name

    def path(self, name: str) -> str:
        return f"{self.partition}/{name}" if self.partition else name

    def data_file(self, name: str, instant: str, partition_values: dict[str, Any]) -> DataFile:
        """One of the group's files, stat'ed now."""
        stat = self.entries[name].stat()
        return DataFile(
            path=self.path(name),
            size=stat.st_size,
            partition=self.partition,
            partition_values=dict(partition_values),
            instant=instant,
            file_group=self.file_id,
            mtime_ns=stat.st_mtime_ns,
        )


def _walk_partitions(root: str, rel: str = "") -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """``(partition path, file entries)`` of every folder holding a Hudi partition metadata file.

    Hidden folders (``.hoodie``, ``.DS_Store``) and ``__MACOSX`` are skipped; underscore folders are
    not, since ``__HIVE_DEFAULT_PARTITION__`` is a partition."""
    with os.scandir(os.path.join(root, rel) if rel else root) as scan:
        entries = list(scan)
    files = [e for e in entries if e.is_file()]
    if any(e.name.startswith(_PARTITION_META) for e in files):
        yield rel, files
    for entry in entries:
        if entry.is_dir() and not entry.name.startswith(".") and entry.name != "__MACOSX":
            yield from _walk_partitions(root, f"{rel}/{entry.name}" if rel else entry.name)


def _avro_to_arrow(avro_type: Any) -> pa.DataType | None:
    """Arrow type of a primitive Avro field type (unions with null unwrapped), else None."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        return _avro_to_arrow(branches[0]) if len(branches) == 1 else None
    if isinstance(avro_type, dict):
        logical = avro_type.get("logicalType")
        if logical == "date":
            return pa.date32()
        if logical == "decimal" and int(avro_type.get("precision", 0)) <= 38:
            return pa.decimal128(int(avro_type["precision"]), int(avro_type.get("scale", 0)))
        if logical in ("timestamp-micros", "timestamp-millis"):
            return pa.timestamp("us" if logical.endswith("micros") else "ms", tz="UTC")
        return None if logical else _avro_to_arrow(avro_type.get("type"))
    simple = {
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "string": pa.string(),
        "bytes": pa.binary(),
    }
    return simple.get(avro_type) if isinstance(avro_type, str) else None


class HudiTable(TableReaderBase):
    """The live file slices of a Hudi table, copy-on-write or merge-on-read (``TableReader``).

    Table versions 6 (timeline in ``.hoodie/``) and 8-9 (``.hoodie/timeline/``) are read.
    ``record_key_field`` overrides the record-key column the table's properties imply.
    """

    kind = "hudi_cow"  # "hudi_mor" for a merge-on-read table
    read_as: ReadMethod = "files"  # the root holds every file version: only the listed ones are live
    record_key_declared = True  # hoodie.properties says how keys are made

    def __init__(self, root: str | os.PathLike[str], *, record_key_field: str | None = None) -> None:
        self.root = require_directory(root)
        self.hoodie_dir = os.path.join(self.root, ".hoodie")
        if not os.path.isdir(self.hoodie_dir):
            raise TableFormatError(f"{self.root} is not a Hudi table: it has no .hoodie folder")
        self.properties: dict[str, str] = read_properties(self.hoodie_dir)
        self.table_version = self._table_version()
        self._check_supported()
        if self.merge_on_read:
            self.kind = "hudi_mor"
            self.read_as = "slices"  # a base file's rows are stale until merged with its log files
        self.log_records_whole = self._merges_whole_records()
        self._record_key_override = record_key_field

    def __repr__(self) -> str:
        return f"HudiTable({self.root!r})"

    # --- properties -----------------------------------------------------------------------------

    def _prop(self, key: str, default: str = "") -> str:
        return self.properties.get(key, default).strip()

    def _flag(self, key: str, default: bool) -> bool:
        value = self._prop(key)
        return default if not value else value.lower() == "true"

    def _table_version(self) -> int:
        raw = self._prop("hoodie.table.version", "0") or "0"
        try:
            return int(raw)
        except ValueError as exc:
            raise TableFormatError(f"{self.hoodie_dir}: hoodie.table.version is {raw!r}") from exc

    @property
    def merge_on_read(self) -> bool:
        """The table keeps updates in log files (``hoodie.table.type=MERGE_ON_READ``)."""
        return self._prop("hoodie.table.type", "COPY_ON_WRITE").upper() == "MERGE_ON_READ"

    def _merges_whole_records(self) -> bool:
        """A merged row is either a base row or a log record as written (commit or event time
        ordering, Hudi's overwrite payloads), so a log file's statistics bound the rows it brings.
        Not so with custom mergers, partial-update modes and payloads that keep a base value where
        the log record has none (``OverwriteNonDefaultsWithLatestAvroPayload``, ...)."""
        if self._prop("hoodie.table.partial.update.mode"):
            return False
        mode = self._prop("hoodie.record.merge.mode").upper()
        if mode:
            return mode in _WHOLE_RECORD_MODES
        payload = self._prop("hoodie.table.payload.class") or self._prop("hoodie.compaction.payload.class")
        return not payload or payload in _WHOLE_RECORD_PAYLOADS

    def _check_supported(self) -> None:
        table_type = self._prop("hoodie.table.type", "COPY_ON_WRITE").upper()
        if table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            raise UnsupportedTableError(f"Hudi table {self.root}: unknown hoodie.table.type {table_type!r}")
        base_format = self._prop("hoodie.table.base.file.format", "PARQUET").upper()
        if base_format != "PARQUET":
            raise UnsupportedTableError(
                f"Hudi table {self.root} stores {base_format} base files; only PARQUET is supported"
            )
        if self._prop("hoodie.bootstrap.base.path"):
            raise UnsupportedTableError(
                f"Hudi table {self.root} is bootstrapped from {self._prop('hoodie.bootstrap.base.path')}: "
                "its skeleton files do not hold the data columns; bootstrapped tables are not supported"
            )
        table_format = self._prop("hoodie.table.format", "native").lower()
        if table_format != "native":
            raise UnsupportedTableError(f"Hudi table {self.root} uses table format {table_format!r}")
        if self.table_version > _MAX_TABLE_VERSION:
            raise UnsupportedTableError(
                f"Hudi table {self.root} has table version {self.table_version}; versions up to "
                f"{_MAX_TABLE_VERSION} are supported"
            )

    @property
    def timeline_dir(self) -> str:
        """Where the active timeline's instant files are, per the table version."""
        if self.table_version >= 8:
            return os.path.join(self.hoodie_dir, self._prop("hoodie.timeline.path") or "timeline")
        return self.hoodie_dir

    def timeline(self) -> HudiTimeline:
        """The active timeline, read now."""
        return HudiTimeline.load(self.timeline_dir)

    def _key_generator(self) -> str:
        """``timestamp``, ``custom`` or ``other``, from the key generator class or type."""
        cls = self._prop("hoodie.table.keygenerator.class") or self._prop(
            "hoodie.datasource.write.keygenerator.class"
        )
        kind = self._prop("hoodie.table.keygenerator.type").upper()
        if "TimestampBased" in cls or kind.startswith("TIMESTAMP"):
            return "timestamp"
        if "CustomKeyGenerator" in cls or "CustomAvroKeyGenerator" in cls or kind.startswith("CUSTOM"):
            return "custom"
        return "other"

    @property
    def hive_style_partitioning(self) -> bool:
        """Whether partition folders are named ``field=value`` (else they hold the value alone)."""
        return self._flag("hoodie.datasource.write.hive_style_partitioning", False)

    @property
    def partition_fields(self) -> list[str]:
        """The partition columns (``hoodie.table.partition.fields``); empty if not partitioned."""
        return [f.name for f in self._partition_fields()]

    def partitioning(self) -> Partitioning:
        """Folders per declared partition field, ``field=value`` when hive-style."""
        return Partitioning(
            folders=True, hive_style=self.hive_style_partitioning, fields=tuple(self.partition_fields)
        )

    def _partition_fields(self) -> list[_PartitionField]:
        keygen = self._key_generator()
        fields = []
        for spec in self._prop("hoodie.table.partition.fields").split(","):
            name, _, kind = spec.strip().partition(":")  # v9 custom key generator: "field:type"
            if not name:
                continue
            if keygen == "timestamp" or kind.strip().lower() == "timestamp":
                from_path = False
            else:
                from_path = keygen != "custom" or kind.strip().lower() == "simple"
            fields.append(_PartitionField(name, from_path))
        return fields

    # --- the snapshot ---------------------------------------------------------------------------

    def _snapshot(self) -> _Snapshot:
        """The live slices and files, their partition values, and the newest base file's schema."""
        found = self._latest_slices(self.timeline())
        file_schema = None
        with_base = [(f, f.slice.base) for f in found if f.slice.base is not None]
        if with_base:  # the newest file has the latest schema (columns may have been added)
            group, newest = max(with_base, key=lambda pair: pair[1].instant)
            file_schema = self._footer_schema(group.path(newest.name))
        types = self._value_types(file_schema)
        required = set(self._folder_only_columns(file_schema))
        values: dict[str, dict[str, Any]] = {}
        slices = []
        for group in found:
            if group.partition not in values:
                values[group.partition] = self._partition_values(group.partition, types, required)
            base, logs = group.slice.base, group.slice.logs
            slices.append(
                FileSlice(
                    group.file_id,
                    group.partition,
                    group.data_file(base.name, base.instant, values[group.partition]) if base else None,
                    tuple(group.data_file(f.name, f.instant, values[group.partition]) for f in logs),
                )
            )
        slices.sort(key=lambda s: (s.partition, s.file_id))
        files = sorted((f for s in slices for f in s.files), key=lambda f: f.path)
        return _Snapshot(slices, files, file_schema)

    def _latest_slices(self, timeline: HudiTimeline) -> list[_Found]:
        """The latest slice of each live file group, from the file names in each partition folder."""
        rules = SlicingRules.of(timeline, self.table_version)
        found = []
        for partition, entries in _walk_partitions(self.root):
            bases: dict[str, dict[str, BaseFileName]] = defaultdict(dict)  # file id -> instant -> file
            logs: dict[str, list[LogFileName]] = defaultdict(list)
            for entry in entries:
                base = parse_base(entry.name)
                if base is not None:
                    if (partition, base.file_id) in rules.replaced or not rules.keeps_base(base.instant):
                        continue
                    current = bases[base.file_id].get(base.instant)
                    if current is not None:  # a retried task left a second file of the slice
                        kept = self._pick_duplicate(
                            timeline, partition, base.instant, current.name, base.name
                        )
                        if kept == current.name:
                            continue
                    bases[base.file_id][base.instant] = base
                    continue
                log = parse_log_file_name(entry.name)
                if log is not None and rules.keeps_log(log):
                    logs[log.file_id].append(log)
            by_name = {entry.name: entry for entry in entries}
            for file_id in sorted(bases.keys() | logs.keys()):
                group = (partition, file_id)
                latest = rules.latest_slice(group, bases.get(file_id, {}), logs.get(file_id, ()))
                if latest is not None:
                    found.append(_Found(partition, file_id, latest, by_name))
        return found

    def _pick_duplicate(self, timeline: HudiTimeline, partition: str, instant: str, a: str, b: str) -> str:
        """Two base files of one file slice (a retried task left one behind): keep the one the
        commit's write statistics name, or refuse to guess."""
        content = timeline.read(timeline.completed[instant]) if instant in timeline.completed else {}
        written = {
            os.path.basename(stat.get("path") or "")
            for stats in (content.get("partitionToWriteStats") or {}).values()
            for stat in stats or ()
            if isinstance(stat, dict)
        }
        if (a in written) != (b in written):
            return a if a in written else b
        raise TableFormatError(
            f"Hudi table {self.root}: partition {partition!r} has two base files {a} and {b} for one "
            f"file slice of instant {instant}, and the commit metadata does not say which is valid"
        )

    def _footer_schema(self, rel_path: str) -> pa.Schema:
        path = os.path.join(self.root, rel_path)
        try:
            return pq.read_schema(path)
        except (OSError, pa.ArrowException) as exc:
            raise TableFormatError(f"cannot read the parquet footer of Hudi base file {path}: {exc}") from exc

    def _table_avro_fields(self) -> dict[str, Any]:
        """Avro field types of the table schema (``hoodie.table.create.schema``), by name."""
        try:
            schema = json.loads(self._prop("hoodie.table.create.schema") or "{}")
        except json.JSONDecodeError:
            return {}
        fields = schema.get("fields") if isinstance(schema, dict) else None
        return {f["name"]: f.get("type") for f in fields or () if isinstance(f, dict) and "name" in f}

    def _value_types(self, file_schema: pa.Schema | None) -> dict[str, pa.DataType]:
        """The type of each partition column: from the data files when they store it, else from the
        table's Avro schema, else string."""
        types = {}
        avro_fields: dict[str, Any] | None = None
        for field in self._partition_fields():
            if file_schema is not None and field.name in file_schema.names:
                types[field.name] = file_schema.field(field.name).type
                continue
            if avro_fields is None:
                avro_fields = self._table_avro_fields()
            types[field.name] = _avro_to_arrow(avro_fields.get(field.name)) or pa.string()
        return types

    def _folder_only_columns(self, file_schema: pa.Schema | None) -> list[str]:
        """Partition columns the base files do not store but whose folders hold their values."""
        if file_schema is not None:
            stored = set(file_schema.names)
        elif self._flag("hoodie.datasource.write.drop.partition.columns", False):
            stored = set()
        else:  # an empty table without dropped columns: they will be stored
            stored = {f.name for f in self._partition_fields()}
        return [f.name for f in self._partition_fields() if f.from_path and f.name not in stored]

    def _partition_values(
        self, partition: str, types: dict[str, pa.DataType], required: set[str]
    ) -> dict[str, Any]:
        """Typed values of a partition path. A column the files store is left out when its folder
        does not hold its value (timestamp key generators format it) or the value does not convert;
        a ``required`` one (in ``partition_schema()``, known only from folders) raises instead, since
        a missing value would read as NULL."""
        fields = self._partition_fields()
        segments = partition.split("/") if partition else []
        hive_style = self.hive_style_partitioning
        encoded = self._flag("hoodie.datasource.write.partitionpath.urlencode", False)
        values: dict[str, Any] = {}
        if fields and len(segments) == len(fields):
            for field, segment in zip(fields, segments, strict=True):
                key, sep, text = segment.partition("=") if hive_style else (field.name, "=", segment)
                if not sep or key != field.name or not field.from_path:
                    continue
                converted = _convert(unquote(text) if encoded else text, types[field.name])
                if converted is not _UNKNOWN:
                    values[field.name] = converted
        missing = sorted(required - set(values))
        if missing:
            raise TableFormatError(
                f"Hudi table {self.root}: partition folder {partition!r} has no valid "
                f"{types[missing[0]]} value for {missing[0]!r}, a partition column the base files do "
                f"not store (partition fields {self.partition_fields})"
            )
        return values

    # --- TableReader ----------------------------------------------------------------------------

    def list_files(self) -> list[DataFile]:
        """Every file of the live slices, sorted by path: the latest committed base file of each
        live file group and, merge-on-read, the log files to merge onto it."""
        return self._snapshot().files

    def file_slices(self) -> list[FileSlice]:
        """The latest committed slice of each live file group, by (partition, file id)."""
        return self._snapshot().slices

    def file_ids(self, paths: pa.StringArray) -> pa.StringArray:
        """The file group id each base or log file name carries."""
        return hudi_file_ids(paths)

    def hudi_table(self) -> HudiTable:
        return self

    def log_merging(self) -> LogMerging | None:
        """A merge-on-read table's properties and timeline, read now; None for copy-on-write."""
        return LogMerging(self.properties, self.timeline()) if self.merge_on_read else None

    def partition_schema(self) -> pa.Schema:
        """Partition columns the base files do not store (``drop.partition.columns``), typed from the
        table schema, whose values every listed file carries in ``partition_values``; empty when the
        files store every partition column (the usual case). A dropped column whose folders hold a
        formatted value (timestamp key generators) is in neither: a filter on it cannot be used."""
        schema = self._snapshot().file_schema
        types = self._value_types(schema)
        return pa.schema([pa.field(name, types[name]) for name in self._folder_only_columns(schema)])

    def latest_instant(self) -> str | None:
        """The greatest requested time of a completed instant on the active timeline."""
        return self.timeline().latest_completed()

    def record_key_field(self) -> str | None:
        """``_hoodie_record_key`` when Hudi's meta fields are populated; otherwise the record key
        column when the key is a single field. A composite key without meta fields has no single
        column (its key is ``f1:v1,f2:v2`` built from several): None."""
        if self._record_key_override is not None:
            return self._record_key_override
        if self._flag("hoodie.populate.meta.fields", True):
            schema = self._snapshot().file_schema
            if schema is None or RECORD_KEY_META_FIELD in schema.names:
                return RECORD_KEY_META_FIELD
        keys = [k.strip() for k in self._prop("hoodie.table.recordkey.fields").split(",") if k.strip()]
        return keys[0] if len(keys) == 1 else None

    def record_key_spec(self) -> RecordKeySpec | None:
        """How the table makes record keys, from its own ``.hoodie/hoodie.properties`` and a base
        file's schema (does it store ``_hoodie_record_key``?)."""
        from index_store.record_key import RecordKeySpec

        return RecordKeySpec.from_hudi_properties(self.properties, self._snapshot().file_schema)


# The name other modules import until they move to HudiTable.
HudiCowTable = HudiTable


class HudiFormat:
    """Hudi tables (``TableFormat``): a folder with a ``.hoodie`` folder that holds more than this
    library's index, or a folder inside such a table (refused: it is no table of its own)."""

    name = "hudi"

    def detect(self, root: str) -> bool:
        return _has_hoodie(root) or _enclosing_hudi(root) is not None

    def open(self, root: str, options: OpenOptions) -> HudiTable:
        parent = _enclosing_hudi(root)
        if parent is not None:
            # A partition, or a merge-on-read table's files: read as plain parquet it would mix
            # every file slice and miss the log files.
            raise TableFormatError(
                f"{root} is inside the Hudi table at {parent}: open the table's root folder instead"
            )
        hoodie = os.path.join(root, ".hoodie")
        names = ("hoodie.properties", "hoodie.properties.backup")
        if not any(os.path.isfile(os.path.join(hoodie, name)) for name in names):
            raise TableFormatError(f"{root} has a .hoodie folder but no .hoodie/hoodie.properties")
        if options.partition_schema is not None:
            raise ValueError(
                "partition_schema applies to plain parquet directories; a Hudi table's partition "
                "columns come from its hoodie.properties"
            )
        return HudiTable(root, record_key_field=options.record_key_field)


def _has_hoodie(root: str) -> bool:
    """``root/.hoodie`` holds something other than this library's index (``.hoodie/.index``, and
    indexes a rebuild moved aside: ``.index.broken-*``), which is not Hudi's."""
    hoodie = os.path.join(root, ".hoodie")
    return os.path.isdir(hoodie) and any(not name.startswith(".index") for name in os.listdir(hoodie))


def _enclosing_hudi(root: str) -> str | None:
    """The Hudi table folder above ``root``, if any (one with ``.hoodie/hoodie.properties``)."""
    parent = os.path.dirname(root)
    while parent and parent != os.path.dirname(parent):
        if os.path.isfile(os.path.join(parent, ".hoodie", "hoodie.properties")):
            return parent
        parent = os.path.dirname(parent)
    return None


HUDI_FORMAT = HudiFormat()

_UNKNOWN = object()


def _convert(text: str, arrow_type: pa.DataType) -> Any:
    """A partition folder value in its column type; ``_UNKNOWN`` when it does not convert."""
    if text == HIVE_NULL:
        return None
    if is_string_like(arrow_type):
        return text
    if not (pa.types.is_date(arrow_type) or any(check(arrow_type) for check in _CASTABLE)):
        return _UNKNOWN
    try:
        return pa.array([text], pa.string()).cast(arrow_type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _UNKNOWN
