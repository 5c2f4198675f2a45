"""Partition values given to ``tag``, as the table's partition paths: one rule for every caller.

A key is looked for only in the files of its own partition, so a partition written in another
form than the table's (``apac`` for ``region=apac``, ``region=apac/``) would silently make a
present key an insert: a duplicate row once the upsert is written. ``PartitionLayout`` learns the
table's form from the partition paths of its live files and maps what a user writes onto it:

- null or ``""`` is the partition of a non-partitioned table (its only one);
- leading and trailing ``/`` are dropped;
- a path the table has is taken as it is (Hudi's ``_hoodie_partition_path`` is one);
- otherwise level by level (levels are ``/``-separated): on a hive-style level (``key=value`` in
  every path of the table) a bare value gets the key (``apac`` -> ``region=apac``); on a level of
  bare values, ``field=value`` naming the table's partition field at that level (Hudi's
  ``hoodie.table.partition.fields``) loses its ``field=``;
- a well-formed path the table does not have yet is a new partition: its keys are inserts (an
  upsert into tomorrow's date);
- what cannot be mapped raises ``PartitionPathError``: another number of levels than the table's
  (a partition of a non-partitioned table, a null one of a partitioned table), a ``k=v`` level
  whose key is not the table's, an empty level or value.

The work is per distinct partition value, vectorized over them (pyarrow compute), then taken back
to the keys. Values are not URL-decoded or encoded: give them as the folders spell them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import PartitionPathError

__all__ = ["PartitionLayout"]


@dataclass(frozen=True)
class PartitionLayout:
    """The form of a table's partition paths, as its live files show it."""

    table: str  # named in errors
    known: pa.StringArray  # distinct partition paths of the live files
    depth: int | None  # levels of every path (0: not partitioned; None: unknown, or paths differ)
    hive_keys: tuple[str | None, ...]  # per level: the key of its ``key=value`` (None: bare values)
    fields: tuple[str, ...]  # per level: the partition field it holds, when declared ("" unknown)

    @classmethod
    def of(
        cls, table: str, partitions: pa.Array | pa.ChunkedArray, fields: Sequence[str] | None = None
    ) -> PartitionLayout:
        """The layout of a table whose live files lie in ``partitions`` (one path per file);
        ``fields``: the partition fields the table declares (Hudi), None when it declares none
        (a plain directory): with no files, an empty list says the table is not partitioned."""
        if isinstance(partitions, pa.ChunkedArray):
            partitions = partitions.combine_chunks()
        known = pc.unique(partitions.cast(pa.string()).fill_null(""))
        nonempty = known.filter(pc.not_equal(known, ""))
        if not len(known):
            depth = 0 if fields is not None and not list(fields) else None
            return cls(table, known, depth, (), ())
        if not len(nonempty):
            return cls(table, known, 0, (), ())
        segments = pc.split_pattern(nonempty, "/")
        lengths = pc.list_value_length(segments).to_numpy(zero_copy_only=False)
        if len(nonempty) != len(known) or lengths.min() != lengths.max():
            return cls(table, known, None, (), ())  # files at several depths: no level rule
        depth = int(lengths[0])
        keys: list[str | None] = []
        for level in range(depth):  # one step per level, each over every path at once
            pairs = pc.extract_regex(pc.list_element(segments, level), pattern=r"^(?P<k>[^=]+)=")
            found = pc.unique(pc.struct_field(pairs, "k"))
            one = len(found) == 1 and pairs.null_count == 0
            keys.append(found[0].as_py() if one else None)
        declared = tuple(fields or ())
        return cls(table, known, depth, tuple(keys), declared if len(declared) == depth else ())

    def normalize(self, values: pa.Array | pa.ChunkedArray) -> pa.StringArray:
        """Each value as the table's partition path (null: ``""``), or ``PartitionPathError``."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        encoded = pc.dictionary_encode(values.cast(pa.string()).fill_null(""))
        mapped = self._map(encoded.dictionary)
        return mapped.take(encoded.indices)

    def _map(self, given: pa.StringArray) -> pa.StringArray:
        """``normalize`` of distinct values."""
        trimmed = pc.utf8_trim(given, characters="/")
        if self.depth is None:
            return trimmed
        known = pc.is_in(trimmed, value_set=self.known).to_numpy(zero_copy_only=False)
        blank = pc.equal(trimmed, "").to_numpy(zero_copy_only=False)
        if self.depth == 0:
            self._check(given, trimmed, ~known & ~blank)
            return trimmed
        segments = pc.split_pattern(trimmed, "/")
        lengths = pc.list_value_length(segments).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = pc.list_flatten(segments)
        starts = np.cumsum(lengths) - lengths
        level = np.arange(len(flat)) - np.repeat(starts, lengths)
        bad_segment = pc.equal(flat, "").to_numpy(zero_copy_only=False)
        size = pc.binary_length(flat).to_numpy(zero_copy_only=False)
        out = flat
        for i in range(self.depth):
            here = level == i
            key = self.hive_keys[i] if i < len(self.hive_keys) else None
            field = self.fields[i] if i < len(self.fields) else ""
            if key is not None:
                prefix = key + "="
                keyed = pc.starts_with(flat, prefix).to_numpy(zero_copy_only=False)
                has_eq = pc.greater_equal(pc.find_substring(flat, "="), 0).to_numpy(zero_copy_only=False)
                empty_value = keyed & (size == len(prefix.encode()))
                bad_segment |= here & ((has_eq & ~keyed) | empty_value)
                with_key = pc.binary_join_element_wise(pa.scalar(prefix), flat, "")
                out = pc.if_else(pa.array(here & ~has_eq), with_key, out)
            elif field:
                prefix = field + "="
                keyed = pc.starts_with(flat, prefix).to_numpy(zero_copy_only=False)
                bad_segment |= here & keyed & (size == len(prefix.encode()))
                bare = pc.utf8_slice_codeunits(flat, start=len(prefix))
                out = pc.if_else(pa.array(here & keyed), bare, out)
        rows = np.repeat(np.arange(len(given)), lengths)
        bad_row = np.bincount(rows[bad_segment], minlength=len(given)) > 0
        levels = np.where(blank, 0, lengths)
        self._check(given, trimmed, ~known & ((levels != self.depth) | bad_row))
        joined = pc.binary_join(pa.ListArray.from_arrays(segments.offsets, out), "/")
        return pc.if_else(pa.array(known), trimmed, joined).cast(pa.string())

    def _check(self, given: pa.StringArray, trimmed: pa.StringArray, bad: np.ndarray) -> None:
        if not bad.any():
            return
        first = int(np.flatnonzero(bad)[0])
        n = int(bad.sum())
        shown = given[first].as_py()
        example = next((p for p in self.known.to_pylist() if p), None)
        form = (
            f"as the table writes them, e.g. {example!r} (a new partition of that form is fine: its keys "
            "are inserts)"
            if example is not None
            else "as null or '' (or tag without partitions)"
        )
        values = "value maps" if n == 1 else "distinct values map"
        raise PartitionPathError(
            f"{n} partition {values} to no partition path of {self.table}, e.g. "
            f"{'null or empty' if not shown else repr(shown)}: {self._why(trimmed[first].as_py())}. "
            f"Give partition paths {form}"
        )

    def _why(self, value: str) -> str:
        """Why one (trimmed) value cannot be mapped, in words (for the error of its batch)."""
        if self.depth == 0:
            return "the table is not partitioned"
        if not value:
            return "null or empty is the partition of a non-partitioned table only"
        levels = value.split("/")
        if len(levels) != self.depth:
            plural = "" if len(levels) == 1 else "s"
            return f"it has {len(levels)} level{plural}, the table's paths have {self.depth}"
        for i, segment in enumerate(levels):
            key = self.hive_keys[i] if i < len(self.hive_keys) else None
            field = self.fields[i] if i < len(self.fields) else ""
            if not segment:
                return f"level {i + 1} is empty"
            if key is not None and "=" in segment and not segment.startswith(key + "="):
                return f"level {i + 1} {segment!r} names another key than the table's {key!r}"
            if segment in (f"{key}=", f"{field}="):
                return (
                    f"level {i + 1} {segment!r} has no value (Hudi writes a null or empty partition "
                    "value as __HIVE_DEFAULT_PARTITION__)"
                )
        return "it is not a partition path of the table's form"
