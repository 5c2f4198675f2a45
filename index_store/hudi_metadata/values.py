"""Column statistics bounds, from their storage slots to the data column's exact Arrow type.

A bound is converted through its kind (``kinds``): dates are days, timestamps counts of their unit
(UTC-adjusted or wall-clock as the kind says, the data column's time zone kept), decimals exact
(the unscaled bytes of Hudi 1.x, or the decimal(30, 15) of earlier writers, rescaled without loss
or refused), integers narrowed only when every value fits. Nothing goes through float.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import MetadataTableError
from index_store.hudi_metadata.kinds import natural_type

__all__ = ["typed_bounds"]

_SLOT_OF_KIND = {
    "boolean": "bool",
    "int": "int",
    "long": "int",
    "date": "int",
    "time_millis": "int",
    "time_micros": "int",
    "timestamp_millis": "int",
    "timestamp_micros": "int",
    "timestamp_nanos": "int",
    "local_timestamp_millis": "int",
    "local_timestamp_micros": "int",
    "local_timestamp_nanos": "int",
    "float": "float",
    "double": "float",
    "string": "string",
    "uuid": "string",
    "bytes": "bytes",
    "fixed": "bytes",
    "decimal": "decimal",
    "decimal_v1": "decimal",
}
_TIMESTAMP_UNITS = {"millis": "ms", "micros": "us", "nanos": "ns"}


def _temporal(ints: pa.Array, kind: str, target: pa.DataType) -> pa.Array:
    if kind == "date":
        return ints.cast(pa.int32()).cast(pa.date32())
    if kind == "time_millis":
        return ints.cast(pa.int32()).cast(pa.time32("ms"))
    if kind == "time_micros":
        return ints.cast(pa.time64("us"))
    unit = _TIMESTAMP_UNITS[kind.rsplit("_", 1)[1]]
    # The count is of the kind's unit; the time zone (or none) is the data column's, so a wall-clock
    # column's bounds stay wall-clock whichever wrapper stored them.
    tz = target.tz if pa.types.is_timestamp(target) else (None if kind.startswith("local") else "UTC")
    return ints.cast(pa.timestamp(unit, tz=tz))


def _convert(rows: pa.Table, end: str, kind: str, target: pa.DataType) -> pa.Array:
    slot = _SLOT_OF_KIND[kind]
    stored = rows[f"{end}_{slot}"].combine_chunks()
    natural: pa.Array
    if slot == "int" and kind not in ("int", "long"):
        natural = _temporal(stored, kind, target)
    else:
        natural = stored if slot == "decimal" else stored.cast(natural_type(kind) or stored.type)
    return natural.cast(target, safe=True)


def typed_bounds(rows: pa.Table, end: str, target: pa.DataType | None, column: str = "") -> pa.Array:
    """The ``end`` ("min" or "max") bounds of ``rows`` (one data column's statistics rows, raw
    schema of ``records``) as an array of ``target`` (the data column's type; None: the natural
    type of the bounds' kind). A bound of no known kind is null (unknown: never prunes)."""
    kinds = rows[f"{end}_kind"].combine_chunks()
    present = [k for k in pc.unique(kinds).to_pylist() if k is not None]
    if target is None:
        natural = {natural_type(k, (rows["type_info"].to_pylist() or [None])[0]) for k in present}
        target = natural.pop() if len(natural) == 1 and None not in natural else pa.null()
    out = pa.nulls(len(rows), target)
    for kind in present:
        if kind not in _SLOT_OF_KIND:
            continue  # null or an unknown kind: the bound stays unknown
        mask = pc.fill_null(pc.equal(kinds, kind), False)
        try:
            converted = _convert(rows.filter(mask), end, kind, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
            raise MetadataTableError(
                f"column_stats of column {column!r}: {end} bounds of kind {kind} do not convert to the "
                f"column's type {target} exactly ({exc})"
            ) from exc
        out = pc.replace_with_mask(out, mask, converted)
    return out
