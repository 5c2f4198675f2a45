"""Avro binary values decoded column by column with numpy, all values at once: the fast path for
the metadata partitions whose records hold only fixed fields (``record_index``,
``secondary_index_*``), where a record-by-record decode (fastavro, then a dict per record) costs
~50 µs a record.

Each value is one record of the writer schema. The decoder walks the schema once; at every field
it reads that field of every value still in play (a position per value): varints (int, long)
through a window of 10 bytes per value, strings and bytes as (start, length) spans, a union's
branch index, then the rows of each branch alone. It reads null, boolean, int, long, string,
bytes, records and unions; a value that reaches any other type (map, array, float, ...) raises
``Unsupported``, and the caller decodes those cells the ordinary way. A value whose bytes do not
end exactly where its record does raises too: nothing decoded here is trusted unless all of it
lines up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["Column", "Unsupported", "decode_columns"]

_WINDOW = 10  # bytes of the longest varint (a 64-bit zigzag long)
_PRIMITIVES = ("null", "boolean", "int", "long", "string", "bytes")


class Unsupported(ValueError):
    """The values need a type this decoder does not read, or do not decode: use fastavro."""


@dataclass(frozen=True)
class Column:
    """One leaf of the schema over all values: ``valid`` where the value reached it (an enclosing
    union took its branch); ``values`` (ints, booleans) or ``starts``/``lengths`` (strings and
    bytes, into the values' concatenated bytes)."""

    kind: str
    valid: np.ndarray
    values: np.ndarray | None = None
    starts: np.ndarray | None = None
    lengths: np.ndarray | None = None

    def to_arrow(self, data: np.ndarray, type: pa.DataType) -> pa.Array:
        """The column as an Arrow array of ``type``, null where not reached."""
        mask = ~self.valid
        if self.kind in ("string", "bytes"):
            assert self.starts is not None and self.lengths is not None
            lengths = np.where(self.valid, self.lengths, 0)
            offsets = np.zeros(len(lengths) + 1, np.int64)
            np.cumsum(lengths, out=offsets[1:])
            gather = np.repeat(self.starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
            body = data[gather]
            out = pa.LargeBinaryArray.from_buffers(
                pa.large_binary(),
                len(lengths),
                [
                    pa.py_buffer(np.packbits(self.valid, bitorder="little")),
                    pa.py_buffer(offsets),
                    pa.py_buffer(body),
                ],
            )
            return out.cast(pa.large_string() if pa.types.is_string(type) else pa.large_binary()).cast(type)
        assert self.values is not None
        return pa.array(self.values, mask=mask).cast(type)


class _Walk:
    def __init__(self, data: np.ndarray, starts: np.ndarray) -> None:
        self.data = np.concatenate([data, np.zeros(_WINDOW, np.uint8)])
        self.pos = starts.astype(np.int64).copy()
        self.n = len(starts)
        self.columns: dict[tuple[str, ...], Column] = {}
        self.named: dict[str, Any] = {}

    def declare(self, schema: Any) -> None:
        """Every named record of ``schema``, so a later reference by name resolves (iterative)."""
        stack = [schema]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                if node.get("type") == "record":
                    self.named[node["name"]] = node
                    if "namespace" in node:
                        self.named[f"{node['namespace']}.{node['name']}"] = node
                    stack.extend(f["type"] for f in node.get("fields", ()))
                else:
                    stack.extend(
                        node.get(k)
                        for k in ("type", "items", "values")
                        if isinstance(node.get(k), (dict, list))
                    )

    def varint(self, rows: np.ndarray) -> np.ndarray:
        """The zigzag varints at the rows' positions (int64), positions moved past them."""
        first = self.data[self.pos[rows]]
        short = first < 0x80  # most varints (union branches, lengths, small ints) are one byte
        if short.all():
            self.pos[rows] += 1
            small = first.astype(np.int64)
            return (small >> 1) ^ -(small & 1)
        out = np.empty(len(rows), np.int64)
        out[short] = (first[short].astype(np.int64) >> 1) ^ -(first[short].astype(np.int64) & 1)
        self.pos[rows[short]] += 1
        out[~short] = self._long_varint(rows[~short])
        return out

    def _long_varint(self, rows: np.ndarray) -> np.ndarray:
        window = self.data[self.pos[rows, None] + np.arange(_WINDOW)].astype(np.uint64)
        more = window >= 0x80
        length = np.argmin(more, axis=1) + 1  # the first byte without the continuation bit ends it
        if np.any(more.all(axis=1)):
            raise Unsupported("a varint longer than 10 bytes")
        shifts = np.arange(_WINDOW, dtype=np.uint64) * np.uint64(7)
        parts = (window & np.uint64(0x7F)) << shifts
        parts[np.arange(_WINDOW) >= length[:, None]] = 0
        raw = np.bitwise_or.reduce(parts, axis=1)
        self.pos[rows] += length
        return (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)

    def store(self, path: tuple[str, ...], rows: np.ndarray, kind: str, **arrays: np.ndarray) -> None:
        column = self.columns.get(path)
        if column is None:
            empty = {
                k: np.zeros(self.n, v.dtype if v.dtype != np.bool_ else np.bool_) for k, v in arrays.items()
            }
            column = self.columns[path] = Column(kind, np.zeros(self.n, bool), **empty)
        elif column.kind != kind:
            raise Unsupported(f"{'.'.join(path)}: branches of different types")
        column.valid[rows] = True
        for name, values in arrays.items():
            getattr(column, name)[rows] = values

    def node(self, schema: Any, rows: np.ndarray, path: tuple[str, ...]) -> None:
        if not len(rows):
            return
        if isinstance(schema, str):
            if schema in self.named:
                return self.node(self.named[schema], rows, path)
            kind = schema
        elif isinstance(schema, list):
            return self.union(schema, rows, path)
        else:
            kind = schema.get("type")
            if isinstance(kind, (dict, list)):
                return self.node(kind, rows, path)
            if kind == "record":
                for f in schema["fields"]:
                    self.node(f["type"], rows, (*path, f["name"]))
                return
            if schema.get("logicalType") or kind not in _PRIMITIVES:
                raise Unsupported(f"{'.'.join(path)}: type {kind} ({schema.get('logicalType') or 'complex'})")
        if kind == "null":
            return
        if kind == "boolean":
            at = self.pos[rows]
            self.pos[rows] += 1
            self.store(path, rows, kind, values=self.data[at] != 0)
        elif kind in ("int", "long"):
            self.store(path, rows, "long", values=self.varint(rows))
        elif kind in ("string", "bytes"):
            lengths = self.varint(rows)
            if np.any(lengths < 0):
                raise Unsupported("a negative length")
            starts = self.pos[rows].copy()
            self.pos[rows] += lengths
            self.store(path, rows, kind, starts=starts, lengths=lengths)
        else:
            raise Unsupported(f"{'.'.join(path)}: type {kind}")

    def union(self, branches: list[Any], rows: np.ndarray, path: tuple[str, ...]) -> None:
        which = self.varint(rows)
        if np.any((which < 0) | (which >= len(branches))):
            raise Unsupported(f"{'.'.join(path)}: a union branch out of range")
        for b, branch in enumerate(branches):
            self.node(branch, rows[which == b], path)


def decode_columns(
    schema: dict[str, Any], values: pa.BinaryArray
) -> tuple[dict[tuple[str, ...], Column], np.ndarray]:
    """Every leaf of ``schema`` over ``values`` (a union's branches share its path), and the
    values' concatenated bytes the string columns point into. Raises ``Unsupported``."""
    values = values.cast(pa.binary())
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], np.int32, count=n + 1, offset=values.offset * 4).astype(
        np.int64
    )
    buffer = values.buffers()[2]
    data = np.frombuffer(buffer, np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    walk = _Walk(data[: offsets[-1]] if n else data[:0], offsets[:-1])
    walk.declare(schema)
    try:
        walk.node(schema, np.arange(n), ())
    except IndexError as exc:  # a window or span past the end
        raise Unsupported(f"values run past their bytes ({exc})") from None
    if np.any(walk.pos != offsets[1:]):
        raise Unsupported("a value's bytes do not end where its record does")
    return walk.columns, walk.data
