"""``HudiMetadataView``: a data table's metadata table as it stands now, and whether it may answer.

The metadata table is opened again only when the data timeline, the metadata timeline or the data
table's ``hoodie.properties`` (which lists the partitions being built) moved, so its decoded
partitions are kept per metadata instant. Nothing read here can make an answer wrong: a metadata
table behind its data table answers only for the base files it lists (a base file's name carries
its write, so its statistics cannot be stale; a log file may have been appended to since), a
partition being built or unreadable answers nothing, and a file or column it has no statistics
of stays unknown. Each such case leaves a note for ``explain``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import ColumnStats
from hudi_expr.stats import leaf_columns
from index_store.errors import HFileError, IndexSourceError, MetadataTableError
from index_store.hudi_metadata.table import HudiIndexDefinition, HudiMetadataTable
from index_store.tables.base import TableReader
from index_store.tables.hudi import HudiTable

__all__ = [
    "SOURCE_NAME",
    "AlignedStats",
    "HudiMetadataView",
    "IndexSourceChoice",
    "MetadataState",
    "metadata_view",
    "typed_column_stats",
]

IndexSourceChoice = Literal["auto", "own", "hudi"]
"""Which index answers: ``auto`` both where present (answers intersected), ``own`` this project's
index only, ``hudi`` Hudi's metadata table only."""

SOURCE_NAME = "Hudi metadata table"
_T = TypeVar("_T")
_CHOICES = ("auto", "own", "hudi")


def check_choice(source: str) -> IndexSourceChoice:
    """``source`` checked (``open_table(source=...)``)."""
    if source not in _CHOICES:
        raise ValueError(f"source must be one of {', '.join(map(repr, _CHOICES))}, not {source!r}")
    return source  # type: ignore[return-value]


@dataclass
class MetadataState:
    """The metadata table at one moment: opened (``mdt``) or why not (``error``), its step with
    the data table, and the partitions decoded so far."""

    mdt: HudiMetadataTable | None
    step: str  # "in_step", "behind", "ahead", or "unreadable"
    reason: str
    available: tuple[str, ...] = ()
    inflight: tuple[str, ...] = ()
    # per schema (its string form), per column: its rows, or None when it has no statistics
    _stats: dict[str, dict[str, pa.Table | None]] = field(default_factory=dict)
    _stats_error: list[str] = field(default_factory=list)
    _secondary: dict[str, pa.Table] = field(default_factory=dict)  # per partition
    _definitions: dict[str, HudiIndexDefinition] | None = None
    _facts: dict[str, object] = field(default_factory=dict)  # what was worked out of this state
    # What other readers of this state decode once (partition statistics, bloom filters), by name.
    cache: dict[Any, Any] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return self.mdt is not None

    @property
    def in_step(self) -> bool:
        return self.step in ("in_step", "ahead")  # ahead: Hudi skips the blocks, reads stay right

    def has(self, partition: str) -> bool:
        return partition in self.available and partition not in self.inflight

    def unusable_note(self, partition: str) -> str | None:
        """Why ``partition`` cannot answer now, or None when it can."""
        if self.mdt is None:
            return f"{SOURCE_NAME} not used: {self.reason}"
        if partition in self.inflight:
            return f"{SOURCE_NAME}: its {partition} partition is still being built (not used)"
        if partition not in self.available:
            return f"{SOURCE_NAME} has no {partition} partition"
        return None

    def stats_table(self, schema: pa.Schema, columns: Sequence[str]) -> dict[str, pa.Table] | None:
        """Per column of ``columns`` that ``column_stats`` holds, every live file's row of it
        (``path``, ``file_name``, the column's struct, bounds typed as ``schema`` says); None
        (with ``stats_error`` set) when the partition cannot be read. Only the columns not read
        before are read, by their keys' prefixes (the HFile blocks holding them)."""
        cache = self._stats.setdefault(schema.to_string(show_schema_metadata=False), {})
        missing = [c for c in dict.fromkeys(columns) if c not in cache]
        if missing and not self._stats_error:
            assert self.mdt is not None
            try:
                table = self.mdt.column_stats(missing, schema=schema)
            except (MetadataTableError, HFileError, ValueError, TypeError, pa.ArrowException) as exc:
                # Unreadable, or bounds that do not convert to the columns' types: not used.
                self._stats_error.append(str(exc))
                return None
            names = table["file_name"].combine_chunks()
            parts = table["partition"].combine_chunks()
            joined = pc.binary_join_element_wise(parts, names, "/")
            path = pc.if_else(pc.equal(parts, ""), names, joined)
            for column in missing:
                if column not in table.column_names:
                    cache[column] = None
                    continue
                rows = pa.table({"path": path, "file_name": names, column: table[column].combine_chunks()})
                cache[column] = rows.filter(pc.is_valid(rows[column]))
        if self._stats_error:
            return None
        return {c: t for c in dict.fromkeys(columns) if (t := cache[c]) is not None}

    def secondary(self, partition: str) -> pa.Table:
        """Secondary index ``partition`` decoded (once per metadata table state)."""
        assert self.mdt is not None
        if partition not in self._secondary:
            self._secondary[partition] = self.mdt.secondary_index(partition)
        return self._secondary[partition]

    def fact(self, name: str, make: Callable[[], _T]) -> _T:
        """``make()``, worked out once per metadata table state (``name`` says what it is)."""
        if name not in self._facts:
            self._facts[name] = make()
        return self._facts[name]  # type: ignore[return-value]

    def known(self, name: str) -> object | None:
        """The fact ``name`` when it was worked out already (``fact``), else None."""
        return self._facts.get(name)

    def definitions(self) -> dict[str, HudiIndexDefinition]:
        """The indexes the data table declares (none when their file does not read)."""
        if self._definitions is None:
            try:
                self._definitions = self.mdt.index_definitions() if self.mdt is not None else {}
            except MetadataTableError:
                self._definitions = {}
        return self._definitions

    @property
    def stats_error(self) -> str | None:
        return self._stats_error[0] if self._stats_error else None


@dataclass(frozen=True)
class HudiIndexStatus:
    """One index Hudi keeps in its metadata table, and whether it answers here now."""

    name: str  # its metadata partition (``secondary_index_merchant_idx``)
    index_type: str  # ``column_stats``, ``record_index``, ``secondary_index``, ...
    columns: tuple[str, ...]
    state: str  # "available" (built), "building" (inflight), "declared" (defined, not built)
    used_for: str  # what it answers here: "prune", "tag", "prune (= and IN)", or ""


def index_statuses(
    state: MetadataState, schema: pa.Schema, usable_secondary: Collection[str] = ()
) -> list[HudiIndexStatus]:
    """Every index Hudi declares or has a partition of, with its state and what it answers; a
    secondary index answers when it is one of ``usable_secondary`` (``secondary.usable_indexes``
    says which: its column's values have a proven secondary-key form, the record index is there)."""
    defs = state.definitions()
    names = list(dict.fromkeys([*state.available, *state.inflight, *defs]))
    out = []
    used = {"column_stats": "prune", "record_index": "tag", "secondary_index": "prune, rows (= and IN)"}
    for name in names:
        d = defs.get(name)
        kind = d.index_type if d is not None else name.rstrip("_0123456789")
        if name.startswith("secondary_index_"):
            kind = "secondary_index"
        built = (
            "building" if name in state.inflight else "available" if name in state.available else "declared"
        )
        answers = used.get(kind, "")
        if kind == "secondary_index" and name not in usable_secondary:
            answers = ""
        out.append(
            HudiIndexStatus(
                name,
                kind,
                d.columns if d is not None else (),
                built,
                answers if built == "available" and state.mdt is not None else "",
            )
        )
    return out


class HudiMetadataView:
    """The metadata table of the Hudi table ``reader``, opened anew when it or its data table moved."""

    def __init__(self, reader: HudiTable) -> None:
        self.reader = reader
        self._key: tuple[object, ...] | None = None
        self._state: MetadataState | None = None

    def __repr__(self) -> str:
        return f"HudiMetadataView({self.reader.root!r})"

    def _moment(self) -> tuple[object, ...]:
        """What changes when either table commits or a partition starts or ends being built."""
        hoodie = self.reader.hoodie_dir
        meta = os.path.join(hoodie, "metadata", ".hoodie")
        timelines = [self.reader.timeline_dir, meta, os.path.join(meta, "timeline")]
        listed = tuple(tuple(sorted(os.listdir(d))) if os.path.isdir(d) else () for d in timelines)
        props = os.path.join(hoodie, "hoodie.properties")
        return (*listed, os.stat(props).st_mtime_ns if os.path.exists(props) else 0)

    def state(self) -> MetadataState:
        """The metadata table now (the same object while nothing moved)."""
        key = self._moment()
        if self._state is None or key != self._key:
            self._state, self._key = _open(self.reader.root), key
        return self._state

    def require(self) -> MetadataState:
        """The state, or ``IndexSourceError`` when the metadata table cannot be used at all."""
        state = self.state()
        if state.mdt is None:
            raise IndexSourceError(
                f"{self.reader.root}: {SOURCE_NAME} cannot be used ({state.reason}); open the table with "
                "source='own' and build its own index (hudi-index build)"
            )
        return state


def _open(root: str) -> MetadataState:
    try:
        mdt = HudiMetadataTable(HudiTable(root), require_in_step=False)
        step, reason = mdt.layout.step()
        parts = mdt.partitions()
    except (MetadataTableError, OSError, ValueError) as exc:
        return MetadataState(None, "unreadable", str(exc))
    return MetadataState(mdt, step, reason, parts.available, parts.inflight)


def metadata_view(reader: TableReader) -> HudiMetadataView | None:
    """The metadata table view of ``reader`` when it is a Hudi table with a metadata table."""
    hudi = reader.hudi_table()
    if hudi is None or not os.path.isdir(os.path.join(hudi.hoodie_dir, "metadata", ".hoodie")):
        return None
    return HudiMetadataView(hudi)


@dataclass(frozen=True)
class AlignedStats:
    """What ``column_stats`` holds of some files, aligned to them: per column its statistics
    (unknown where it has none), each file's row count (null: unknown), and what it could not
    cover, for ``explain``."""

    columns: dict[str, ColumnStats]
    row_count: pa.Array
    notes: list[str]


# Hudi's record key column: one non-null value per row, so its value count is the row count.
_ROW_COUNTER = "_hoodie_record_key"


def aligned_stats(
    state: MetadataState, paths: pa.StringArray, columns: Sequence[str], schema: pa.Schema
) -> AlignedStats:
    """Per column of ``columns``, the statistics ``column_stats`` holds of each of ``paths``
    (table-relative), aligned to them; unknown (null) for files it has none of."""
    unknown_rows = pa.nulls(len(paths), pa.int64())
    note = state.unusable_note("column_stats")
    if note is not None:
        return AlignedStats({}, unknown_rows, [note])
    tables = state.stats_table(schema, [_ROW_COUNTER, *columns])
    if tables is None:
        note = f"{SOURCE_NAME} not used: its column_stats partition does not read ({state.stats_error})"
        return AlignedStats({}, unknown_rows, [note])
    notes = []
    if not state.in_step:
        # A base file's name carries its write: its statistics stay true. A log file's may not.
        tables = {c: t.filter(pc.match_substring(t["file_name"], ".parquet")) for c, t in tables.items()}
        notes.append(
            f"{SOURCE_NAME} is behind the data table ({state.reason}): only the base files it lists "
            "are pruned with it"
        )
    wheres = {c: pc.index_in(paths, value_set=t["path"]) for c, t in tables.items()}
    covered = np.zeros(len(paths), dtype=bool)
    for where in wheres.values():
        covered |= np.asarray(pc.is_valid(where).to_numpy(zero_copy_only=False), dtype=bool)
    uncovered = len(paths) - int(np.count_nonzero(covered))
    if uncovered:
        notes.append(f"{SOURCE_NAME}: {uncovered} of {len(paths)} files have no column_stats entry (kept)")
    rows = unknown_rows
    if _ROW_COUNTER in tables:
        rows = _fields(tables[_ROW_COUNTER][_ROW_COUNTER].combine_chunks().take(wheres[_ROW_COUNTER]))[
            "value_count"
        ]
    out: dict[str, ColumnStats] = {}
    lacking = []
    types = leaf_columns(schema)
    for name in columns:
        if name not in tables:
            lacking.append(name)
            continue
        found = _fields(tables[name][name].combine_chunks().take(wheres[name]))
        converted = typed_column_stats(found, types.get(name))
        if converted is None:
            lacking.append(name)
            continue
        out[name] = converted
    if lacking:
        notes.append(f"{SOURCE_NAME} has no statistics of {', '.join(lacking)} (not pruned on)")
    return AlignedStats(out, rows, notes)


def typed_column_stats(found: dict[str, pa.Array], wanted: pa.DataType | None) -> ColumnStats | None:
    """Statistics fields (``min``, ``max``, ``null_count``) as ``ColumnStats`` of the column's type
    ``wanted``, bounds unknown where this project's order could differ from Hudi's; None when the
    bounds do not convert to that type."""
    lo, hi = found["min"], found["max"]
    if wanted is not None and lo.type != wanted:
        try:
            lo, hi = lo.cast(wanted), hi.cast(wanted)
        except pa.ArrowException:
            return None
    lo, hi = _comparable(lo, hi)
    return ColumnStats(lo, hi, found["null_count"], pa.nulls(len(lo), pa.int64()))


# Characters whose order differs between Java's UTF-16 compareTo (how Hudi orders the values of a
# log file's statistics) and UTF-8 bytes (how bounds are compared here): U+E000 and above.
_ORDER_DIFFERS = "[\ue000-\U0010ffff]"


def _comparable(lo: pa.Array, hi: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Bounds usable in this project's order: binary bounds unknown (Hudi orders a log file's
    bytes as Java's signed ``ByteBuffer.compareTo`` does), string bounds unknown where either holds
    a character whose UTF-16 and UTF-8 orders differ."""
    if (
        pa.types.is_binary(lo.type)
        or pa.types.is_large_binary(lo.type)
        or pa.types.is_fixed_size_binary(lo.type)
    ):
        return pa.nulls(len(lo), lo.type), pa.nulls(len(hi), hi.type)
    if pa.types.is_string(lo.type) or pa.types.is_large_string(lo.type):
        odd = pc.or_(
            pc.fill_null(pc.match_substring_regex(lo, _ORDER_DIFFERS), False),
            pc.fill_null(pc.match_substring_regex(hi, _ORDER_DIFFERS), False),
        )
        if pc.any(odd).as_py():
            return pc.if_else(odd, pa.scalar(None, lo.type), lo), pc.if_else(
                odd, pa.scalar(None, hi.type), hi
            )
    return lo, hi


def _fields(struct: pa.StructArray) -> dict[str, pa.Array]:
    """A struct's fields, null where the struct is (a file whose statistics were deleted)."""
    return {f.name: arr for f, arr in zip(struct.type, struct.flatten(), strict=True)}
