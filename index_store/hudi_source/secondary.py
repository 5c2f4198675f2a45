"""Hudi's secondary indexes (``secondary_index_<name>``) as membership of a string column's values
in files: a value's record keys from the secondary index, their file groups from the record
index, and a file is ruled out for ``=`` / ``IN`` when its file group holds none of them.

Used only when both partitions can be right about every value: the metadata table in step (not
behind), both partitions built, the column a string column (the secondary key is Hudi's string
form of a value, the value itself for a string). A record key the record index cannot place (no
entry, or a file group with no live slice) makes every file unknown for that lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import MetadataTableError
from index_store.hudi_source.view import MetadataState
from index_store.tables.base import TableReader

__all__ = ["SecondaryMembership", "secondary_memberships"]


@dataclass(frozen=True)
class SecondaryMembership:
    """Per file, whether a value of the column may be in it, from Hudi's secondary index."""

    state: MetadataState
    partition: str  # secondary_index_<name>
    groups: pa.StringArray  # per file: "<partition>\\0<file id>"

    def __len__(self) -> int:
        return len(self.groups)

    def take(self, indices: np.ndarray) -> SecondaryMembership:
        return SecondaryMembership(self.state, self.partition, self.groups.take(pa.array(indices)))

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        unknown = pa.nulls(len(self.groups), pa.bool_())
        wanted = pc.drop_null(values.cast(pa.string()))
        assert self.state.mdt is not None
        try:
            index = self.state.secondary(self.partition)
            keys = pc.filter(index["record_key"], pc.is_in(index["secondary_key"], value_set=wanted))
            if not len(keys):
                return pa.array(np.zeros(len(self.groups), dtype=bool))
            located = self.state.mdt.record_index(pc.unique(keys).to_pylist())
        except MetadataTableError:
            return unknown  # a key the record index cannot place: nothing is proven
        if located.num_rows < len(pc.unique(keys)):
            return unknown  # a record key with no record index entry: its file is unknown
        held = pc.binary_join_element_wise(located["partition"], located["file_id"], "\0")
        return pc.is_in(self.groups, value_set=pc.unique(held))


def secondary_memberships(
    state: MetadataState,
    reader: TableReader,
    paths: pa.StringArray,
    columns: tuple[str, ...],
    schema: pa.Schema,
) -> dict[str, SecondaryMembership]:
    """The membership of each of ``columns`` a usable Hudi secondary index covers, over ``paths``."""
    if state.mdt is None or not state.in_step or state.step == "ahead" or not state.has("record_index"):
        return {}
    types = {f.name: f.type for f in schema}
    out: dict[str, SecondaryMembership] = {}
    groups: pa.StringArray | None = None
    for partition, definition in state.definitions().items():
        if definition.index_type != "secondary_index" or len(definition.columns) != 1:
            continue
        column = definition.columns[0]
        if column not in columns or not state.has(partition) or not pa.types.is_string(types.get(column)):
            continue
        if groups is None:
            folders = pc.replace_substring_regex(paths, r"/?[^/]*$", "")
            groups = pc.binary_join_element_wise(folders, reader.file_ids(paths), "\0")
        out[column] = SecondaryMembership(state, partition, groups)
    return out
