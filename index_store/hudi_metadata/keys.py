"""How the metadata table encodes what its keys and values point at.

- Record index file ids (``HoodieRecordIndexInfo``): encoding 0 keeps a file id of the form
  ``<uuid>-<n>`` as the UUID's two longs (``fileIdHighBits``, ``fileIdLowBits``, formatted as
  Java's ``new UUID(high, low).toString()``) and ``n`` (``fileIndex``; -1: no suffix); encoding 1
  keeps the file id as a string (``fileId``).
- Record index instants: ``instantTime`` is the instant as epoch milliseconds, read from the
  instant's wall-clock digits in the writer's time zone (``hoodie.table.timeline.timezone``,
  the machine's own zone unless UTC); ``instants_of`` finds that zone from the timeline.
- Secondary index keys: ``<secondary key>$<record key>``, ``\\`` escaping ``$`` and ``\\`` in
  both; a null secondary key is the one character ``\\0``.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import MetadataTableError

__all__ = ["NULL_SECONDARY_KEY", "file_ids", "instants_of", "split_secondary_keys"]

NULL_SECONDARY_KEY = "\0"
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_UUID_DASHES = (8, 13, 18, 23)


def _uuids(high: np.ndarray, low: np.ndarray) -> pa.Array:
    """Java ``UUID(high, low).toString()`` of int64 arrays, vectorized."""
    n = len(high)
    nibbles = np.empty((n, 32), dtype=np.uint8)
    for half, values in enumerate((high.astype(np.uint64), low.astype(np.uint64))):
        for i in range(16):
            shift = np.uint64(4 * (15 - i))
            nibbles[:, half * 16 + i] = ((values >> shift) & np.uint64(15)).astype(np.uint8)
    digits = _HEX[nibbles]
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    columns = [c for c in range(36) if c not in _UUID_DASHES]
    text[:, columns] = digits
    return pa.array(text.view("S36").ravel().astype(str), pa.string())


def file_ids(raw: pa.Table) -> pa.Array:
    """The file group id of each record index row (raw schema of ``records``)."""
    n = len(raw)
    if not n:
        return pa.array([], pa.string())
    high = raw["file_id_high_bits"].combine_chunks().fill_null(0).to_numpy()
    low = raw["file_id_low_bits"].combine_chunks().fill_null(0).to_numpy()
    index = raw["file_index"].combine_chunks()
    # Formatted once per distinct file group (a few), then spread over the rows.
    both = np.ascontiguousarray(np.stack([high, low], axis=1).astype(np.int64))
    packed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n, [None, pa.py_buffer(both)])
    distinct = pc.unique(packed)
    pairs = np.frombuffer(distinct.buffers()[1], np.int64, count=2 * len(distinct)).reshape(-1, 2)
    uuids = _uuids(pairs[:, 0], pairs[:, 1]).take(pc.index_in(packed, value_set=distinct))
    suffixed = pc.binary_join_element_wise(uuids, index.cast(pa.string()), "-")
    from_uuid = pc.if_else(pc.fill_null(pc.equal(index, -1), True), uuids, suffixed)
    encoding = raw["file_id_encoding"].combine_chunks().fill_null(0)
    unknown = pc.any(pc.invert(pc.is_in(encoding, pa.array([0, 1], pa.int32())))).as_py()
    if unknown:
        raise MetadataTableError(
            "record_index entries with a fileIdEncoding other than 0 (UUID) or 1 (string): written by a "
            "newer Hudi than this reader knows"
        )
    return pc.if_else(pc.equal(encoding, 1), raw["file_id_string"].combine_chunks(), from_uuid)


def _formatted(millis: pa.Array, offset_minutes: int) -> pa.Array:
    shifted = pc.add(millis, pa.scalar(offset_minutes * 60_000, pa.int64()))
    text = pc.strftime(shifted.cast(pa.timestamp("ms")), "%Y%m%d%H%M%S")
    return pc.replace_substring(text, ".", "")


def instants_of(millis: pa.Array, known: Collection[str], timezone: str = "LOCAL") -> pa.Array:
    """Instant times (``yyyyMMddHHmmssSSS``) of record index ``instantTime`` values. With
    ``timezone`` UTC they are formatted in UTC; otherwise in the UTC offset (in quarter hours, as
    time zones go) under which every distinct value is one of the ``known`` instants (the data
    table's timeline). None fits (instants archived since, a zone change): ``MetadataTableError``."""
    millis = millis.cast(pa.int64())
    distinct = pc.unique(millis.drop_null())
    at = pc.index_in(millis, value_set=distinct)  # each value formatted once, then spread
    if timezone.strip().upper() == "UTC" or not len(distinct):
        return _formatted(distinct, 0).take(at)
    wanted = pa.array(sorted(known), pa.string())
    for quarter in [0] + [q for k in range(1, 57) for q in (-k, k)]:
        formatted = _formatted(distinct, quarter * 15)
        if pc.all(pc.is_in(formatted, wanted)).as_py():
            return formatted.take(at)
    raise MetadataTableError(
        "record_index instant times match no instant of the data table's timeline in any time zone: "
        "set hoodie.table.timeline.timezone, or read the record index without instants"
    )


def split_secondary_keys(keys: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``(secondary key, record key)`` of secondary index keys, unescaped; a null secondary key
    (``\\0``) comes back null."""
    parts = pc.extract_regex(keys, r"^(?P<secondary>(?:[^\\$]|\\.)*)\$(?P<record>.*)$")
    if parts.null_count:
        bad = keys.filter(pc.is_null(parts))[0].as_py()
        raise MetadataTableError(f"secondary index key {bad!r} has no unescaped '$' between its two keys")
    secondary = pc.replace_substring_regex(parts.field("secondary"), r"\\(.)", r"\1")
    record = pc.replace_substring_regex(parts.field("record"), r"\\(.)", r"\1")
    is_null = pc.equal(parts.field("secondary"), NULL_SECONDARY_KEY)
    return pc.if_else(is_null, pa.nulls(len(keys), pa.string()), secondary), record
