"""Hudi's ``bloom_filters`` partition (the filters Hudi's bloom index reads: one per base file,
of its record keys) as membership of the record key's values in files, for ``=`` and ``IN``.

The columns answered are those whose values are the record keys themselves:
``_hoodie_record_key``, and the key field of a simple key generator when it is a string column.
Each file's filter is found by its key (``index_ids.bloom_filter_keys``: partition and file name
hashed), by point lookups of only the files asked about, and kept per metadata table state. A
base file's filter was written from that file, whose name carries its write, so it stays right
even when the metadata table is behind; a file without one (a log file, a file Hudi wrote none
for) may hold any key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import FileStats
from index_store.errors import HFileError, MetadataTableError, RecordKeyError
from index_store.hudi_bloom.filter import HudiBloomFilter
from index_store.hudi_bloom.filter_set import HudiBloomFilterSet
from index_store.hudi_bloom.format import HudiBloomFormatError
from index_store.hudi_source.view import SOURCE_NAME, MetadataState
from index_store.record_key import RECORD_KEY_META_FIELD, SIMPLE, RecordKeySpec
from index_store.sources.base import SourceQuery

__all__ = ["HudiBloomFilterSource", "bloom_memberships", "key_columns"]

PARTITION = "bloom_filters"
_CACHE = "bloom_filters"  # MetadataState.cache: path -> HudiBloomFilter | None


def key_columns(state: MetadataState, schema: pa.Schema) -> tuple[str, ...]:
    """The string columns of ``schema`` whose values are the table's record keys."""
    assert state.mdt is not None
    names = [RECORD_KEY_META_FIELD]
    try:
        spec = RecordKeySpec.from_hudi_properties(state.mdt.table.properties, schema)
    except RecordKeyError:  # a key generator this project does not know: the meta column only
        spec = None
    if spec is not None and spec.generator == SIMPLE and len(spec.fields) == 1:
        names.append(spec.fields[0])
    return tuple(
        n for n in dict.fromkeys(names) if n in schema.names and pa.types.is_string(schema.field(n).type)
    )


def _filters(state: MetadataState, paths: pa.StringArray) -> tuple[list[HudiBloomFilter | None], list[str]]:
    """Each path's filter (None: none), looking up only the base files not looked up before."""
    assert state.mdt is not None
    cache: dict[str, HudiBloomFilter | None] = state.cache.setdefault(_CACHE, {})
    missing = pc.filter(paths, pc.invert(pc.is_in(paths, value_set=pa.array(list(cache), pa.string()))))
    missing = pc.filter(missing, pc.ends_with(missing, ".parquet"))
    notes: list[str] = []
    if len(missing):
        folders = pc.replace_substring_regex(missing, r"/?[^/]*$", "")
        names = pc.replace_substring_regex(missing, r"^.*/", "")
        try:
            rows = state.mdt.bloom_filters(pa.table({"partition": folders, "file_name": names})).to_pylist()
            made = [HudiBloomFilter.from_serialized(r["bloom_filter"], r["bloom_type"]) for r in rows]
        except (MetadataTableError, HFileError, HudiBloomFormatError, ValueError) as exc:
            return [None] * len(paths), [
                f"{SOURCE_NAME} not used: its {PARTITION} partition does not read ({exc})"
            ]
        keyed = {
            (r["file_name"] if r["partition"] == "" else f"{r['partition']}/{r['file_name']}"): f
            for r, f in zip(rows, made, strict=True)
        }
        for path in missing.to_pylist():
            cache[path] = keyed.get(path)
    return [cache.get(p) for p in paths.to_pylist()], notes


def bloom_memberships(
    state: MetadataState, paths: pa.StringArray, columns: tuple[str, ...], schema: pa.Schema
) -> tuple[dict[str, HudiBloomFilterSet], list[str]]:
    """The membership of each record key column among ``columns``, over ``paths``, and notes."""
    if state.mdt is None or not state.has(PARTITION):
        return {}, []
    wanted = [c for c in key_columns(state, schema) if c in columns]
    if not wanted:
        return {}, []
    filters, notes = _filters(state, paths)
    if not any(f is not None for f in filters):
        return {}, notes
    found = HudiBloomFilterSet(filters)
    have = int(np.count_nonzero(found.has_filter))
    notes.append(
        f"{SOURCE_NAME} answered: its {PARTITION} partition ({have} of {len(paths)} files have a filter)"
    )
    return dict.fromkeys(wanted, found), notes


@dataclass(frozen=True)
class HudiBloomFilterSource:
    """= and IN on the record key: files whose Hudi bloom filter admits none of the values are
    ruled out (``bloom_filters``)."""

    name: str = f"{SOURCE_NAME} ({PARTITION})"

    def available(self, query: SourceQuery) -> bool:
        return query.hudi is not None and query.with_blooms and bool(query.columns)

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        assert query.hudi is not None
        found, notes = bloom_memberships(query.hudi, stats.files, query.columns, stats.schema)
        query.notes.extend(notes)
        for column, membership in found.items():
            stats = stats.with_membership(column, membership)
        return stats
