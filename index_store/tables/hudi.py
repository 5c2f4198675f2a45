"""Hudi copy-on-write tables: the live base files of the latest snapshot.

A COW table's data is in base files ``<partition>/<fileId>_<writeToken>_<instant>.parquet``. Every
write produces a new version (file slice) of the file groups it touches, so a snapshot reader reads,
for each file group (partition, fileId), only its newest base file whose instant is committed, and
skips the file groups a completed ``replacecommit`` replaced (insert overwrite, clustering). Files
of pending, failed or rolled-back instants are never read. That is what ``list_files`` returns.

Merge-on-read tables are refused with ``UnsupportedTableError``: their log files hold updates and
deletes that base-file statistics do not see, so pruning on them could return wrong results.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_expr.types import is_string_like
from index_store.errors import TableFormatError, UnsupportedTableError
from index_store.tables.base import DataFile, Partitioning, ReadMethod, TableReaderBase
from index_store.tables.hive import HIVE_NULL
from index_store.tables.hudi_timeline import HudiTimeline, read_properties
from index_store.tables.plain import require_directory
from index_store.tables.registry import OpenOptions

if TYPE_CHECKING:
    from index_store.record_key import RecordKeySpec

__all__ = ["HUDI_FORMAT", "RECORD_KEY_META_FIELD", "HudiCowTable", "HudiFormat", "parse_base_file_name"]

RECORD_KEY_META_FIELD = "_hoodie_record_key"
_BASE_FILE = re.compile(r"(?P<file_id>[^_.][^_]*)_(?P<write_token>[^_]+)_(?P<instant>\d+)\.parquet")
_PARTITION_META = ".hoodie_partition_metadata"
_MAX_TABLE_VERSION = 9
# Partition path values are converted to these column types; others (timestamps, whose folder text
# depends on the writer's time zone and format, binary, nested) are left out of partition_values.
_CASTABLE = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal, pa.types.is_boolean)


def parse_base_file_name(name: str) -> tuple[str, str, str] | None:
    """``(file id, write token, instant time)`` of a base file name, or None if it is not one."""
    m = _BASE_FILE.fullmatch(name)
    return (m.group("file_id"), m.group("write_token"), m.group("instant")) if m else None


_Slice = tuple[str, str, int, int]  # instant, base file name, size, modification time (ns)


@dataclass(frozen=True)
class _PartitionField:
    name: str
    from_path: bool  # False when the folder holds a formatted value (timestamp key generators)


@dataclass(frozen=True)
class _Snapshot:
    files: list[DataFile]
    file_schema: pa.Schema | None  # footer schema of the newest live base file


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


class HudiCowTable(TableReaderBase):
    """The live base files of a Hudi copy-on-write table (``TableReader``).

    Table versions 6 (timeline in ``.hoodie/``) and 8-9 (``.hoodie/timeline/``) are read.
    ``record_key_field`` overrides the record-key column the table's properties imply.
    """

    kind = "hudi_cow"
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
        self._record_key_override = record_key_field

    def __repr__(self) -> str:
        return f"HudiCowTable({self.root!r})"

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

    def _check_supported(self) -> None:
        table_type = self._prop("hoodie.table.type", "COPY_ON_WRITE").upper()
        if table_type == "MERGE_ON_READ":
            raise UnsupportedTableError(
                f"merge-on-read table {self.root} is not supported yet: its log files hold updates and "
                "deletes that base-file statistics do not see, so pruning it could return wrong "
                "results. Only copy-on-write tables are supported; read this one without the index."
            )
        if table_type != "COPY_ON_WRITE":
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
        """The live files, their partition values, and the newest file's footer schema."""
        newest = self._newest_committed_slices(self.timeline())
        file_schema = None
        if newest:  # the newest file has the latest schema (columns may have been added)
            partition, file_id = max(newest, key=lambda group: newest[group][0])
            name = newest[(partition, file_id)][1]
            file_schema = self._footer_schema(f"{partition}/{name}" if partition else name)
        types = self._value_types(file_schema)
        required = set(self._folder_only_columns(file_schema))
        values: dict[str, dict[str, Any]] = {}
        files = []
        for (partition, file_id), (instant, name, size, mtime) in newest.items():
            if partition not in values:
                values[partition] = self._partition_values(partition, types, required)
            files.append(
                DataFile(
                    path=f"{partition}/{name}" if partition else name,
                    size=size,
                    partition=partition,
                    partition_values=dict(values[partition]),
                    instant=instant,
                    file_group=file_id,
                    mtime_ns=mtime,
                )
            )
        files.sort(key=lambda f: f.path)
        return _Snapshot(files, file_schema)

    def _newest_committed_slices(self, timeline: HudiTimeline) -> dict[tuple[str, str], _Slice]:
        """(partition, file id) -> (instant, file name, size, mtime ns) of each live file group's newest base
        file of a committed instant."""
        replaced = timeline.replaced_file_groups()
        rolled_back = timeline.rolled_back()
        earliest = timeline.earliest
        newest: dict[tuple[str, str], _Slice] = {}
        for partition, entries in _walk_partitions(self.root):
            for entry in entries:
                parsed = parse_base_file_name(entry.name)
                if parsed is None:
                    continue
                file_id, _, instant = parsed
                group = (partition, file_id)
                if instant in rolled_back or group in replaced:
                    continue
                # committed: completed on the active timeline, or older than all of it (archived)
                if instant not in timeline.completed and (earliest is None or instant >= earliest):
                    continue
                current = newest.get(group)
                if current is not None and current[0] == instant:
                    name = self._pick_duplicate(timeline, partition, instant, current[1], entry.name)
                    if name != current[1]:
                        stat = entry.stat()
                        newest[group] = (instant, name, stat.st_size, stat.st_mtime_ns)
                elif current is None or current[0] < instant:
                    stat = entry.stat()
                    newest[group] = (instant, entry.name, stat.st_size, stat.st_mtime_ns)
        return newest

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
        """The latest committed base file of every live file group, sorted by path."""
        return self._snapshot().files

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


class HudiFormat:
    """Hudi tables (``TableFormat``): a folder with a ``.hoodie`` folder that holds more than this
    library's index, or a folder inside such a table (refused: it is no table of its own)."""

    name = "hudi"

    def detect(self, root: str) -> bool:
        return _has_hoodie(root) or _enclosing_hudi(root) is not None

    def open(self, root: str, options: OpenOptions) -> HudiCowTable:
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
        return HudiCowTable(root, record_key_field=options.record_key_field)


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
