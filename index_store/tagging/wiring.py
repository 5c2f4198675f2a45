"""Tagging wired to one loaded index version: what ``IndexedTable.tag``'s index sources read of
it (record index, key filters, leading-field bounds) and a value index on the key, gathered into
a ``TagContext``.

The table checks the index is built and current (syncing when asked) and hands over the loaded
version; everything tagging reads of it is set up here, each part in a small function. Which
sources answer is the list's business (``index_store.sources``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import RecordKeyError
from index_store.partitions.record_index import lookup_record_keys
from index_store.record_key import RecordKeySpec
from index_store.secondary.tagging import verify_with_index
from index_store.tagging.locations import RecordMatches, TagContext
from index_store.tagging.merged import merged_tagging
from index_store.tagging.partitions import PartitionLayout
from index_store.tagging.stats import TagMethod
from index_store.tagging.tagger import OnDuplicate, tag_keys
from index_store.tagging.verify import Verified, verify_pairs

if TYPE_CHECKING:
    from index_store.loaded import LoadedVersion
    from index_store.table import IndexedTable

__all__ = ["checked_keys", "key_array", "partition_array", "partition_layout", "tag_loaded"]

Bounds = tuple[np.ndarray, np.ndarray, np.ndarray]


def tag_loaded(
    table: IndexedTable,
    loaded: LoadedVersion,
    present: np.ndarray,
    spec: RecordKeySpec,
    method: TagMethod,
    keys: pa.StringArray,
    partitions: pa.StringArray | None,
    on_duplicate: OnDuplicate,
) -> pa.Table:
    """``tag_keys`` over ``loaded``'s live files (``present``: still on disk), ``partitions``
    already mapped to the table's paths."""
    config = loaded.snap.config
    context = TagContext(
        verify=index_verifier(table, loaded, spec),
        root=table.root,
        paths=loaded.paths,
        partitions=loaded.partitions(table.index_root),
        file_idx=loaded.file_idx,
        present=present,
        spec=spec,
        key_filters=loaded.record_key_filters,
        record_lookup=_record_lookup(loaded) if config.record_index else None,
        leading_bounds=lambda: leading_bounds(table, loaded, spec),
        file_ids=table.reader.file_ids,
        merged=merged_tagging(
            table.reader,
            spec,
            loaded.paths,
            lambda: loaded.record_key_filters().recorded,
            loaded.log_records,
        ),
    )
    return tag_keys(context, keys, partitions, method, on_duplicate)


def _record_lookup(loaded: LoadedVersion) -> Callable[[pa.Array], RecordMatches]:
    """The record index of ``loaded``: the (key, file_idx) entries of the keys wanted."""

    def record_lookup(wanted: pa.Array) -> RecordMatches:
        found = lookup_record_keys(loaded.root, loaded.snap.live.get("record_index", ()), wanted)
        return RecordMatches(found.key_pos, found.file_idx, found.bytes_read)

    return record_lookup


def leading_bounds(table: IndexedTable, loaded: LoadedVersion, spec: RecordKeySpec) -> Bounds | None:
    """Each file's min and max of an integer first key field (and whether known): numeric keys'
    text ranges overlap, their numbers do not. None when the key has no such field."""
    field = spec.fields[0] if spec.fields else None
    schema = loaded.snap.schema
    if field is None or field not in schema.names:
        return None
    kind = schema.field(field).type
    if not pa.types.is_integer(kind) or kind == pa.uint64():
        return None
    column = table.stats([field], with_blooms=False).columns.get(field)
    if column is None:
        return None
    low, high = column.min.cast(pa.int64()), column.max.cast(pa.int64())
    known = pc.and_(low.is_valid(), high.is_valid()).to_numpy(zero_copy_only=False)
    return (
        low.fill_null(0).to_numpy(zero_copy_only=False),
        high.fill_null(0).to_numpy(zero_copy_only=False),
        known,
    )


def partition_layout(table: IndexedTable, loaded: LoadedVersion) -> PartitionLayout:
    """The form of the partition paths of ``loaded``'s live files (kept with the version)."""
    if loaded.layout is None:
        fields = table.reader.partitioning().fields  # Hudi declares its fields
        loaded.layout = PartitionLayout.of(table.root, loaded.partitions(table.index_root), fields)
    return loaded.layout


def index_verifier(
    table: IndexedTable, loaded: LoadedVersion, spec: RecordKeySpec
) -> Callable[[pa.StringArray, np.ndarray, np.ndarray], Verified] | None:
    """Confirming tag candidates from a value index on the key column, when there is one (a
    one-column key as Hudi's simple key generator writes it); None: read the data files."""
    if spec.generator != "simple" or len(spec.fields) != 1 or spec.column is not None:
        return None
    column = spec.fields[0]
    usable = table.secondary.usable_manifest(loaded)
    mine = usable.filter(pc.and_(pc.equal(usable["index_type"], "value"), pc.equal(usable["column"], column)))
    if not len(mine) or column not in loaded.snap.schema.names:
        return None
    column_type = loaded.snap.schema.field(column).type
    root, index_root = table.root, table.index_root

    def index_file_of(file_pos: np.ndarray) -> list[str | None]:
        where = pc.index_in(pa.array(loaded.file_idx[file_pos], pa.int64()), value_set=mine["file_idx"])
        return mine["index_file"].take(where).to_pylist()

    def verify(keys: pa.StringArray, key_idx: np.ndarray, file_pos: np.ndarray) -> Verified:
        paths = loaded.paths.to_pylist()

        def by_reading(which: np.ndarray) -> Verified:
            return verify_pairs(root, paths, keys, key_idx[which], file_pos[which], spec)

        return verify_with_index(
            keys,
            key_idx,
            file_pos,
            column,
            column_type,
            index_file_of,
            index_root,
            loaded.secondary.opened,
            by_reading,
        )

    return verify


def key_array(keys: Any, spec: RecordKeySpec) -> pa.StringArray:
    """Record key strings from what ``tag`` was given (a table of key columns is encoded)."""
    if isinstance(keys, pa.Table | pa.RecordBatch):
        array = spec.encode(keys)
    elif isinstance(keys, pa.ChunkedArray):
        array = keys.combine_chunks()
    elif isinstance(keys, pa.Array):
        array = keys
    else:
        items = list(keys)
        if any(not isinstance(k, str) and k is not None for k in items):
            raise RecordKeyError("keys must be record key strings (or a pyarrow Table of the key columns)")
        array = pa.array(items, pa.string())
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        raise RecordKeyError(
            f"keys must be strings as Hudi writes _hoodie_record_key, got {array.type}; pass a pyarrow "
            f"Table of the key columns {list(spec.fields)} to have them encoded"
        )
    return checked_keys(array)


def checked_keys(array: pa.Array, batch_of: str | None = None) -> pa.StringArray:
    """``array`` (string keys) as strings, or ``RecordKeyError`` when a key is null or empty; the
    one rule of local and Spark tagging (``batch_of``: the input column named in the message)."""
    where = "" if batch_of is None else f" of a batch of {batch_of!r}"
    if array.null_count:
        raise RecordKeyError(
            f"{array.null_count} of {len(array)} record keys{where} are null: a record key is never null"
        )
    empty = pc.sum(pc.equal(pc.binary_length(array), 0)).as_py() or 0
    if empty:
        # Hudi's key generators refuse an empty key (KeyGenUtils: "cannot be null or empty"), so a
        # table never holds one: calling it an insert would write a row no Hudi writer could.
        raise RecordKeyError(
            f"{empty} of {len(array)} record keys{where} are empty: a Hudi record key is never empty "
            "(its key generators refuse one); drop those rows or fix their key"
        )
    return array.cast(pa.string())


def partition_array(partitions: Any, n: int) -> pa.StringArray | None:
    if partitions is None:
        return None
    array = partitions.combine_chunks() if isinstance(partitions, pa.ChunkedArray) else partitions
    if not isinstance(array, pa.Array):
        array = pa.array(list(array), pa.string())
    if len(array) != n:
        raise RecordKeyError(f"partitions has {len(array)} entries for {n} keys: give one per key")
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        raise RecordKeyError(f"partitions must be partition path strings, got {array.type}")
    return array.cast(pa.string())
