"""Hudi's secondary indexes (``secondary_index_<name>``): a value's record keys from the secondary
index, their file groups from the record index.

Used for ``=`` / ``IN`` on the indexed column only when both partitions can be right about every
value: the metadata table in step (not behind), both partitions built, the column of a type whose
secondary-key form is proven (``secondary_keys``) and the stored keys of that form. A record key
the record index cannot place (no entry, or a file group with no live slice) proves nothing.

The record index holds one file group per key. Where the table's keys are not proven unique (see
``keys_unique``), a key may also be in other files (inserts allowing duplicates): every file whose
``_hoodie_record_key`` range in ``column_stats`` may hold one of the keys (or whose range is
unknown) is kept too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import HFileError, MetadataTableError
from index_store.hudi_source.secondary_keys import SecondaryForm, secondary_form
from index_store.hudi_source.view import SOURCE_NAME, MetadataState, aligned_stats
from index_store.tables.base import TableReader

__all__ = [
    "KEY_COLUMN",
    "PlacedKeys",
    "SecondaryMembership",
    "UsableIndex",
    "file_groups",
    "keys_unique",
    "may_hold_keys",
    "place_values",
    "secondary_memberships",
    "usable_indexes",
]

KEY_COLUMN = "_hoodie_record_key"


@dataclass(frozen=True)
class UsableIndex:
    """A Hudi secondary index that answers ``=`` / ``IN`` on ``column``."""

    partition: str  # secondary_index_<name>
    column: str
    form: SecondaryForm


def usable_indexes(state: MetadataState, schema: pa.Schema) -> tuple[dict[str, UsableIndex], dict[str, str]]:
    """Per column of ``schema``, the secondary index that may answer on it; and per column whose
    index cannot, a note saying why."""
    if state.mdt is None:
        return {}, {}
    out: dict[str, UsableIndex] = {}
    notes: dict[str, str] = {}
    types = {f.name: f.type for f in schema}
    for partition, definition in state.definitions().items():
        if definition.index_type != "secondary_index" or len(definition.columns) != 1:
            continue
        column = definition.columns[0]
        if column not in types:
            continue
        why = _why_not(state, partition, types[column])
        if why is None:
            form = secondary_form(types[column])
            assert form is not None
            out[column] = UsableIndex(partition, column, form)
        else:
            notes[column] = f"{SOURCE_NAME} ({partition}) not used for {column}: {why}"
    return out, notes


def _why_not(state: MetadataState, partition: str, column_type: pa.DataType) -> str | None:
    if not state.in_step or state.step == "ahead":
        return f"the metadata table is not in step with the data table ({state.reason})"
    if not state.has("record_index"):
        return "its record index (which places the record keys) is missing or being built"
    if not state.has(partition):
        return "the partition is missing or still being built"
    form = secondary_form(column_type)
    if form is None:
        return f"Hudi's string form of {column_type} values is not proven bit-exact here (files kept)"
    verdict = state.fact(f"conforms:{partition}:{form.name}", lambda: _conforms(state, partition, form))
    if isinstance(verdict, str):
        return verdict
    if not verdict:
        return f"its stored keys are not all in the {form.name} form expected (files kept)"
    return None


def _conforms(state: MetadataState, partition: str, form: SecondaryForm) -> bool | str:
    """Whether every stored key is in ``form``; why not usable when the partition does not read."""
    try:
        return form.conforms(state.secondary(partition)["secondary_key"])
    except (MetadataTableError, HFileError) as exc:  # unreadable (a corrupt HFile too): nothing proven
        return f"it does not read ({exc}; files kept)"


@dataclass(frozen=True)
class PlacedKeys:
    """The record keys a secondary index holds for some values, each with the file group
    (``"<partition>\\0<file id>"``) the record index places it in."""

    keys: pa.StringArray  # distinct
    groups: pa.StringArray  # aligned to ``keys``

    def restrict(self, other: PlacedKeys) -> PlacedKeys:
        """The keys both hold (rows matching both lookups)."""
        both = pc.is_in(self.keys, value_set=other.keys)
        return PlacedKeys(self.keys.filter(both), self.groups.filter(both))


def place_values(state: MetadataState, partition: str, wanted: pa.StringArray) -> PlacedKeys | None:
    """The record keys of secondary keys ``wanted`` and their file groups; None when a key cannot
    be placed (no record index entry, or one naming a file group with no live slice)."""
    assert state.mdt is not None
    try:
        index = state.secondary(partition)
        found = pc.filter(index["record_key"], pc.is_in(index["secondary_key"], value_set=wanted))
        keys = _flat(pc.unique(found))
        if not len(keys):
            return PlacedKeys(pa.array([], pa.string()), pa.array([], pa.string()))
        whole = state.known("record_index")  # decoded by ``keys_unique``, if it was
        if isinstance(whole, pa.Table):
            located = whole.filter(pc.is_in(whole["record_key"], value_set=keys))
        else:
            located = state.mdt.record_index(keys.to_pylist())
    except (MetadataTableError, HFileError):  # unreadable (a corrupt HFile too): nothing proven
        return None
    if located.num_rows < len(keys):
        return None  # a record key with no record index entry: its file is unknown
    held = pc.binary_join_element_wise(located["partition"], located["file_id"], "\0")
    return PlacedKeys(_flat(located["record_key"]), _flat(held))


def _flat(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def file_groups(reader: TableReader, paths: pa.StringArray) -> pa.StringArray:
    """Per file, ``"<partition folder>\\0<file id>"`` as ``PlacedKeys.groups`` names file groups."""
    folders = pc.replace_substring_regex(paths, r"/?[^/]*$", "")
    return pc.binary_join_element_wise(folders, reader.file_ids(paths), "\0")


def keys_unique(state: MetadataState, reader: TableReader, schema: pa.Schema) -> bool:
    """Whether every live row of the table has a key no other row has: every live file a base file
    with a known row count (``column_stats``), and as many rows as record index entries (the record
    index has one entry per distinct key). A merge-on-read slice with log files is not proven."""

    def work() -> bool:
        listing = reader.listing()
        paths = listing.paths
        if not len(paths) or not pc.all(pc.ends_with(paths, ".parquet")).as_py():
            return bool(not len(paths))
        rows = aligned_stats(state, paths, [], schema).row_count
        if rows.null_count:
            return False
        whole = state.fact("record_index", lambda: _whole_record_index(state))
        return whole is not None and int(pc.sum(rows).as_py() or 0) == whole.num_rows

    return state.fact("keys_unique", work)


def _whole_record_index(state: MetadataState) -> pa.Table | None:
    """Every ``record_index`` entry (kept for this state: later lookups filter it), or None when
    one names a file group with no live slice (then each lookup is checked on its own)."""
    assert state.mdt is not None
    try:
        return state.mdt.record_index()
    except (MetadataTableError, HFileError):  # unreadable (a corrupt HFile too): nothing proven
        return None


def may_hold_keys(
    state: MetadataState, paths: pa.StringArray, keys: pa.StringArray, schema: pa.Schema
) -> np.ndarray:
    """Per file, whether its ``_hoodie_record_key`` range in ``column_stats`` may hold one of
    ``keys`` (True where the range is unknown)."""
    n = len(paths)
    if not len(keys):
        return np.zeros(n, dtype=bool)
    found = aligned_stats(state, paths, [KEY_COLUMN], schema).columns.get(KEY_COLUMN)
    if found is None:
        return np.ones(n, dtype=bool)
    lo = np.asarray(found.min.to_pylist(), dtype=object)
    hi = np.asarray(found.max.to_pylist(), dtype=object)
    unknown = np.array([a is None or b is None for a, b in zip(lo, hi, strict=True)], dtype=bool)
    ordered = np.asarray(sorted(keys.to_pylist()), dtype=object)  # Python orders str by code point
    lo[unknown], hi[unknown] = "", ""
    first = np.searchsorted(ordered, lo, side="left")  # the first key >= min
    inside = first < len(ordered)
    inside[inside] = ordered[first[inside]] <= hi[inside]
    return unknown | inside


@dataclass(frozen=True)
class SecondaryMembership:
    """Per file, whether a value of the column may be in it, from Hudi's secondary index."""

    state: MetadataState
    index: UsableIndex
    groups: pa.StringArray  # per file: "<partition>\\0<file id>"
    paths: pa.StringArray
    schema: pa.Schema
    unique: bool

    def __len__(self) -> int:
        return len(self.groups)

    def take(self, indices: np.ndarray) -> SecondaryMembership:
        at = pa.array(indices)
        return SecondaryMembership(
            self.state, self.index, self.groups.take(at), self.paths.take(at), self.schema, self.unique
        )

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        placed = place_values(self.state, self.index.partition, self.index.form.keys(values))
        if placed is None:
            return pa.nulls(len(self.groups), pa.bool_())  # a key with no known file: nothing proven
        held = pc.is_in(self.groups, value_set=pc.unique(placed.groups)).to_numpy(zero_copy_only=False)
        if not self.unique:
            held = held | may_hold_keys(self.state, self.paths, placed.keys, self.schema)
        return pa.array(held, pa.bool_())


def secondary_memberships(
    state: MetadataState,
    reader: TableReader,
    paths: pa.StringArray,
    columns: tuple[str, ...],
    schema: pa.Schema,
) -> dict[str, SecondaryMembership]:
    """The membership of each of ``columns`` a usable Hudi secondary index covers, over ``paths``."""
    usable, _ = usable_indexes(state, schema)
    wanted = {c: u for c, u in usable.items() if c in columns}
    if not wanted:
        return {}
    groups = file_groups(reader, paths)
    unique = keys_unique(state, reader, schema)
    return {c: SecondaryMembership(state, u, groups, paths, schema, unique) for c, u in wanted.items()}
