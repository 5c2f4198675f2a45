"""Hypothesis strategies: typed schemas, rows split into files, (degraded) file stats, expressions.

A ``Case`` is one random table: a schema of 1-4 columns (one may be a struct, addressed as
``"c1.x"``), rows split into 1-6 files, the exact per-file statistics of every leaf column, and the
``FileStats`` handed to the library, whose entries may be degraded (dropped, widened, counts
unknown) and may carry bloom filters. Expressions are drawn against a case, with literals taken from
the data, just around it, at the type's extremes, and across types as SQL allows.

Raw values are kept as Python objects: ints, floats, ``Decimal``, ``str``, ``bytes``, ``bool``, and
dates and timestamps as their raw integer (days, or units since the epoch).

The generators stay inside what DuckDB (the oracle) can express exactly; each such limit is named
where it is applied (``_duckdb_decimal_ok``, ``_duckdb_float_ok``, the ns timestamp range).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

import hudi_expr as hx
from hudi_expr import col
from hudi_expr.printer import format_literal
from hudi_expr.terms import normalize_term, tokenize

__all__ = ["Case", "Leaf", "cases", "expressions", "leaf_predicates"]

# Exact decimal arithmetic: the default context (28 digits) would round 38-digit decimals.
EXACT = decimal.Context(prec=100)
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
# Python dates and datetimes cover years 1..9999: stay there so every literal can be printed.
DATE_RANGE = ((dt.date(1, 1, 1) - EPOCH_DATE).days, (dt.date(9999, 12, 31) - EPOCH_DATE).days)
_SECONDS = (-62_135_596_800, 253_402_300_799)
# Nanosecond timestamps span 1677-2262 in an int64; keep off its ends (DuckDB's infinities).
_NS = (-9_200_000_000_000_000_000, 9_200_000_000_000_000_000)
TS_RANGE = {u: (_SECONDS[0] * m, _SECONDS[1] * m + (m - 1)) for u, m in UNITS.items() if u != "ns"}
TS_RANGE["ns"] = _NS

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
STRINGS = ["", "a", "b", "ab", "abc", "é", "éa", "\U0001f600", "a\x00b", "z", "\uffff", "A", "a'b", "\\x41"]
BYTES = [b"", b"\x00", b"a", b"ab", b"\xff", b"\xff\xff", b"\x7f", b"a\x00"]
ALPHABET = st.sampled_from(["a", "b", "z", "é", "\U0001f600", "\x00", "\uffff", "A", "'"])


@dataclass(frozen=True)
class Leaf:
    """A leaf column: its path (``"c0"`` or ``"c1.x"``) and arrow type."""

    path: str
    type: pa.DataType

    @property
    def kind(self) -> str:
        """int, float, decimal, string, binary, bool, date, ts or tstz."""
        return kind_of(self.type)


@dataclass
class Case:
    """One generated table, split into files, with the stats the library gets."""

    schema: pa.Schema
    leaves: list[Leaf]
    num_files: int
    # Per leaf path, per file: the logical values (None for NULL, including under a NULL struct).
    values: dict[str, list[list[Any]]]
    row_counts: list[int]
    table: pa.Table  # every row, plus __file (int32) and __row (int64)
    file_tables: list[pa.Table]  # the rows of each file, schema ``schema``
    stats: hx.FileStats
    # Per leaf path, per file: True where min/max are the true extremes and counts are known.
    exact: dict[str, list[bool]] = field(default_factory=dict)
    bloom_column: str | None = None

    def leaf(self, path: str) -> Leaf:
        return next(leaf for leaf in self.leaves if leaf.path == path)

    def pool(self, path: str) -> list[Any]:
        """Every non-null value of a leaf column, all files together."""
        return [v for per_file in self.values[path] for v in per_file if v is not None]


def kind_of(t: pa.DataType) -> str:
    """The family of a generated type."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_binary(t):
        return "binary"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "tstz" if t.tz is not None else "ts"
    raise AssertionError(f"unexpected type {t}")


# ---------------------------------------------------------------------------------------- types


def decimal_types() -> st.SearchStrategy[pa.DataType]:
    """decimal128(p, s) with p <= 38 (DuckDB has no decimal256)."""
    precision = st.one_of(st.sampled_from([1, 9, 18, 19, 38]), st.integers(1, 38))
    return precision.flatmap(
        lambda p: st.one_of(st.sampled_from([0, p]), st.integers(0, p)).map(lambda s: pa.decimal128(p, s))
    )


def scalar_types() -> st.SearchStrategy[pa.DataType]:
    """Every scalar column type of the suite, each family about as likely as the others."""
    families: dict[str, st.SearchStrategy[pa.DataType]] = {
        "int": st.sampled_from(INT_TYPES),
        "float": st.sampled_from([pa.float32(), pa.float64()]),
        "decimal": decimal_types(),
        "string": st.just(pa.string()),
        "binary": st.just(pa.binary()),
        "bool": st.just(pa.bool_()),
        "date": st.just(pa.date32()),
        "ts": st.sampled_from([pa.timestamp(u) for u in UNITS]),
        "tstz": st.just(pa.timestamp("us", tz="UTC")),
    }
    return st.sampled_from(sorted(families)).flatmap(families.__getitem__)


# --------------------------------------------------------------------------------------- values


def int_bounds(t: pa.DataType) -> tuple[int, int]:
    info = np.iinfo(t.to_pandas_dtype())
    return int(info.min), int(info.max)


def float_max(t: pa.DataType) -> float:
    return float(np.finfo(np.float32 if t.bit_width == 32 else np.float64).max)


def dec(units: int, scale: int) -> decimal.Decimal:
    """The decimal ``units * 10**-scale``, exactly."""
    return decimal.Decimal(units).scaleb(-scale, EXACT)


def dec_units(v: decimal.Decimal, scale: int) -> int:
    return int(v.scaleb(scale, EXACT))


def temporal_range(t: pa.DataType) -> tuple[int, int]:
    return DATE_RANGE if pa.types.is_date32(t) else TS_RANGE[t.unit]


def values_for(t: pa.DataType) -> st.SearchStrategy[Any]:
    """Non-null raw values of type ``t``, biased towards collisions and extremes."""
    k = kind_of(t)
    if k == "int":
        lo, hi = int_bounds(t)
        small = st.integers(max(lo, -3), min(hi, 3))
        return st.one_of(small, st.sampled_from([lo, hi, lo + 1, hi - 1]), st.integers(lo, hi))
    if k == "float":
        width = t.bit_width
        m = float_max(t)
        tiny = float(np.finfo(np.float32 if width == 32 else np.float64).smallest_subnormal)
        big = 2.0**54  # above 2**53 a float32 tie is no longer exact as a double of integers
        special = st.sampled_from(
            [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, m, -m, tiny, 0.5, big, -big]
        )
        return st.one_of(special, st.integers(-3, 3).map(float), st.floats(width=width))
    if k == "decimal":
        lim = 10**t.precision - 1
        units = st.one_of(st.sampled_from([-lim, lim, 0, 1, -1]), st.integers(-3, 3), st.integers(-lim, lim))
        return units.filter(lambda u: -lim <= u <= lim).map(lambda u: dec(u, t.scale))
    if k == "string":
        return st.one_of(st.sampled_from(STRINGS), st.text(ALPHABET, max_size=4), st.text(max_size=3))
    if k == "binary":
        return st.one_of(st.sampled_from(BYTES), st.binary(max_size=4))
    if k == "bool":
        return st.booleans()
    lo, hi = temporal_range(t)
    step = 86_400 if k == "date" else 86_400 * UNITS[t.unit]
    near_epoch = st.integers(-3, 3) | st.integers(-3, 3).map(lambda d: d * (1 if k == "date" else step))
    return st.one_of(near_epoch, st.sampled_from([lo, hi, 0]), st.integers(lo, hi))


def is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def lower_than(t: pa.DataType, v: Any) -> st.SearchStrategy[Any]:
    """A valid lower bound of ``v`` (a value <= v), to widen a min."""
    k = kind_of(t)
    if k == "int":
        return st.integers(int_bounds(t)[0], v)
    if k == "float":
        return st.one_of(st.just(-math.inf), st.floats(max_value=v, width=t.bit_width, allow_nan=False))
    if k == "decimal":
        return st.integers(-(10**t.precision - 1), dec_units(v, t.scale)).map(lambda u: dec(u, t.scale))
    if k in ("string", "binary"):
        return st.integers(0, len(v)).map(lambda n: v[:n])  # a prefix is never greater
    if k == "bool":
        return st.just(False)
    return st.integers(temporal_range(t)[0], v)


def bump(v: str | bytes) -> str | bytes | None:
    """The smallest-looking string above every string with prefix ``v`` (None if there is none)."""
    if isinstance(v, bytes):
        b = bytearray(v)
        while b and b[-1] == 0xFF:
            b.pop()
        if not b:
            return None
        b[-1] += 1
        return bytes(b)
    chars = list(v)
    while chars and chars[-1] == "\U0010ffff":
        chars.pop()
    if not chars:
        return None
    nxt = ord(chars[-1]) + 1
    chars[-1] = chr(0xE000 if 0xD800 <= nxt <= 0xDFFF else nxt)
    return "".join(chars)


def higher_than(t: pa.DataType, v: Any) -> st.SearchStrategy[Any]:
    """A valid upper bound of ``v`` (a value >= v), to widen a max."""
    k = kind_of(t)
    if k == "int":
        return st.integers(v, int_bounds(t)[1])
    if k == "float":
        return st.one_of(st.just(math.inf), st.floats(min_value=v, width=t.bit_width, allow_nan=False))
    if k == "decimal":
        return st.integers(dec_units(v, t.scale), 10**t.precision - 1).map(lambda u: dec(u, t.scale))
    if k in ("string", "binary"):
        # Truncated then bumped, as parquet writers do with long max values.
        def truncated(n: int) -> Any:
            b = bump(v[:n]) if n < len(v) else None
            return v if b is None else b

        return st.integers(0, len(v)).map(truncated)
    if k == "bool":
        return st.just(True)
    return st.integers(v, temporal_range(t)[1])


# ---------------------------------------------------------------------------------------- cases


@st.composite
def schemas(draw: st.DrawFn) -> tuple[pa.Schema, list[Leaf]]:
    """1-4 columns c0..c3; about one in six is a struct of one or two scalar fields x, y."""
    fields: list[pa.Field] = []
    leaves: list[Leaf] = []
    for i in range(draw(st.integers(1, 4))):
        name = f"c{i}"
        if draw(st.integers(0, 5)) == 0:
            children = [pa.field(n, draw(scalar_types())) for n in ("x", "y")[: draw(st.integers(1, 2))]]
            fields.append(pa.field(name, pa.struct(children)))
            leaves.extend(Leaf(f"{name}.{c.name}", c.type) for c in children)
        else:
            t = draw(scalar_types())
            fields.append(pa.field(name, t))
            leaves.append(Leaf(name, t))
    return pa.schema(fields), leaves


@st.composite
def column_values(draw: st.DrawFn, t: pa.DataType, n: int, pool: list[Any]) -> list[Any]:
    """``n`` raw values for one file: all null, one repeated value, a mix (with nulls), or for
    floats only NaN and NULL (a file whose counts say it holds no number)."""
    modes = ["mixed", "mixed", "mixed", "all_null", "constant", "no_null"]
    mode = draw(st.sampled_from([*modes, "nan"] if kind_of(t) == "float" else modes))
    fresh = values_for(t)
    if mode == "all_null":
        return [None] * n
    if mode == "nan":
        return draw(st.lists(st.sampled_from([math.nan, math.nan, None]), min_size=n, max_size=n))
    if mode == "constant":
        v = draw(st.sampled_from(pool) if pool else fresh)
        return [v] * n
    cell = st.one_of(st.sampled_from(pool), fresh) if pool else fresh
    if mode == "mixed":
        cell = st.one_of(st.none(), cell)
    return draw(st.lists(cell, min_size=n, max_size=n))


@st.composite
def with_required_fields(
    draw: st.DrawFn,
    schema: pa.Schema,
    raw_children: dict[str, list[list[Any]]],
    struct_nulls: dict[str, list[list[bool]]],
) -> pa.Schema:
    """``schema`` with some fields that hold no NULL in any file declared non-nullable (parquet
    REQUIRED): the library then takes unknown NULL counts for 0 where the whole path is."""

    def no_nulls(per_file: list[list[Any]]) -> bool:
        return all(v is not None for vals in per_file for v in vals)

    fields = []
    for f in schema:
        if pa.types.is_struct(f.type):
            children = [
                c.with_nullable(not (no_nulls(raw_children[f"{f.name}.{c.name}"]) and draw(st.booleans())))
                for c in f.type
            ]
            never_null = not any(m for masks in struct_nulls[f.name] for m in masks)
            f = f.with_type(pa.struct(children)).with_nullable(not (never_null and draw(st.booleans())))
        elif no_nulls(raw_children[f.name]) and draw(st.booleans()):
            f = f.with_nullable(False)
        fields.append(f)
    return pa.schema(fields)


def _arrow_column(t: pa.DataType, raw: list[Any]) -> pa.Array:
    return pa.array(raw, type=t)


def _exact_stats(t: pa.DataType, vals: list[Any]) -> dict[str, Any]:
    """True min/max (nulls and NaN ignored), null and NaN counts of one file's values."""
    present = [v for v in vals if v is not None and not is_nan(v)]
    out: dict[str, Any] = {
        # Python's order is SQL's here: str by code point (UTF-8 byte order), bytes bytewise.
        "min": min(present) if present else None,
        "max": max(present) if present else None,
        "null_count": sum(v is None for v in vals),
    }
    if kind_of(t) == "float":
        out["nan_count"] = sum(is_nan(v) for v in vals)
    return out


@st.composite
def degrade(draw: st.DrawFn, t: pa.DataType, exact: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """Statistics as an index may hold them: maybe dropped, widened or with unknown counts.

    Returns the stats (None: nothing known) and whether min/max and null count are still exact.
    """
    if draw(st.integers(0, 9)) == 0:
        return None, False
    s = dict(exact)
    still_exact = True
    if s["min"] is not None and draw(st.integers(0, 4)) == 0:
        s["min"] = draw(lower_than(t, s["min"]))
        still_exact = False
    if s["max"] is not None and draw(st.integers(0, 4)) == 0:
        s["max"] = draw(higher_than(t, s["max"]))
        still_exact = False
    if draw(st.integers(0, 11)) == 0:
        s["min"] = None
        still_exact = False
    if draw(st.integers(0, 11)) == 0:
        s["max"] = None
        still_exact = False
    if draw(st.integers(0, 9)) == 0:
        s["null_count"] = None
        still_exact = False
    if "nan_count" in s and draw(st.integers(0, 3)) == 0:
        s["nan_count"] = None
    if "nan_count" not in s and draw(st.booleans()):
        s["nan_count"] = 0  # a NaN count of 0 on a non-float column is true and harmless
    return s, still_exact


def _bloom_for(t: pa.DataType, vals: list[Any], fpp: float) -> hx.BloomFilter:
    present = [v for v in vals if v is not None]
    bloom = hx.BloomFilter.for_entries(max(len(present), 1), fpp)
    if present:
        bloom.add_all(pa.array(present, type=t))
    return bloom


@st.composite
def cases(draw: st.DrawFn, max_files: int = 6, max_rows: int = 6, degraded: bool = True) -> Case:
    """A random table split into files, its data and the stats the library is given."""
    schema, leaves = draw(schemas())
    num_files = draw(st.integers(1, max_files))
    row_counts = [draw(st.integers(0, max_rows)) for _ in range(num_files)]
    values: dict[str, list[list[Any]]] = {}
    raw_children: dict[str, list[list[Any]]] = {}
    struct_nulls: dict[str, list[list[bool]]] = {}
    for leaf in leaves:
        pool = draw(st.lists(values_for(leaf.type), min_size=1, max_size=4))
        raw_children[leaf.path] = [draw(column_values(leaf.type, n, pool)) for n in row_counts]
    for f in schema:
        if pa.types.is_struct(f.type):
            struct_nulls[f.name] = [
                draw(st.lists(st.integers(0, 4).map(lambda i: i == 0), min_size=n, max_size=n))
                for n in row_counts
            ]
    schema = draw(with_required_fields(schema, raw_children, struct_nulls))
    for leaf in leaves:
        top = leaf.path.split(".")[0]
        masks = struct_nulls.get(top)
        per_file = raw_children[leaf.path]
        if masks is None:
            values[leaf.path] = per_file
        else:
            # Under a NULL struct the field is NULL, whatever its child slot holds.
            values[leaf.path] = [
                [None if m else v for v, m in zip(vals, mask, strict=True)]
                for vals, mask in zip(per_file, masks, strict=True)
            ]

    file_tables = []
    for i in range(num_files):
        arrays = []
        for f in schema:
            if pa.types.is_struct(f.type):
                children = [
                    _arrow_column(f.type.field(j).type, raw_children[f"{f.name}.{f.type.field(j).name}"][i])
                    for j in range(f.type.num_fields)
                ]
                mask = pa.array(struct_nulls[f.name][i], pa.bool_())
                arrays.append(pa.StructArray.from_arrays(children, fields=list(f.type), mask=mask))
            else:
                arrays.append(_arrow_column(f.type, raw_children[f.name][i]))
        file_tables.append(pa.Table.from_arrays(arrays, schema=schema))
    table = pa.concat_tables(file_tables).combine_chunks()
    file_ids = [i for i, n in enumerate(row_counts) for _ in range(n)]
    table = table.append_column("__file", pa.array(file_ids, pa.int32()))
    table = table.append_column("__row", pa.array(range(len(file_ids)), pa.int64()))

    # ---- statistics
    per_file_stats: list[dict[str, Any]] = [{} for _ in range(num_files)]
    exact: dict[str, list[bool]] = {leaf.path: [] for leaf in leaves}
    known_rows = [True] * num_files
    if degraded:
        known_rows = [draw(st.integers(0, 9)) != 0 for _ in range(num_files)]
    for leaf in leaves:
        for i in range(num_files):
            true_stats = _exact_stats(leaf.type, values[leaf.path][i])
            s, still = draw(degrade(leaf.type, true_stats)) if degraded else (true_stats, True)
            if s is not None:
                per_file_stats[i][leaf.path] = s
            exact[leaf.path].append(still and known_rows[i])
    rc = [n if known else None for n, known in zip(row_counts, known_rows, strict=True)]
    files = [f"f{i}" for i in range(num_files)]
    if draw(st.booleans()):
        records = [
            {"file": files[i], "row_count": rc[i], "stats": per_file_stats[i]} for i in range(num_files)
        ]
        stats = hx.FileStats.from_pylist(records, schema)
    else:
        columns = {}
        for leaf in leaves:
            got = [per_file_stats[i].get(leaf.path, {}) for i in range(num_files)]
            if not any(got):
                continue
            columns[leaf.path] = hx.ColumnStats(
                min=pa.array([g.get("min") for g in got], leaf.type),
                max=pa.array([g.get("max") for g in got], leaf.type),
                null_count=pa.array([g.get("null_count") for g in got], pa.int64()),
                nan_count=pa.array([g.get("nan_count") for g in got], pa.int64()),
            )
        stats = hx.FileStats(files, rc, columns, schema)

    bloom_column = None
    if draw(st.integers(0, 2)) == 0:
        bloom_leaf = draw(st.sampled_from(leaves))
        fpp = draw(st.sampled_from([0.01, 0.3]))
        filters = [
            _bloom_for(bloom_leaf.type, values[bloom_leaf.path][i], fpp) if draw(st.integers(0, 4)) else None
            for i in range(num_files)
        ]
        stats = stats.with_bloom(bloom_leaf.path, filters)
        bloom_column = bloom_leaf.path

    return Case(
        schema=schema,
        leaves=leaves,
        num_files=num_files,
        values=values,
        row_counts=row_counts,
        table=table,
        file_tables=file_tables,
        stats=stats,
        exact=exact,
        bloom_column=bloom_column,
    )


# ------------------------------------------------------------------------------------- literals


def _digits(v: decimal.Decimal) -> tuple[int, int]:
    """(digits before the point, digits after it) of a decimal value (0.5 has none before)."""
    _, digits, exponent = v.as_tuple()
    assert isinstance(exponent, int)
    scale = max(-exponent, 0)
    int_digits = max(len(digits) + exponent, 0) if any(digits) else 0
    return int_digits, scale


def _type_digits(t: pa.DataType) -> tuple[int, int]:
    """The DECIMAL(p, s) DuckDB sees for an integer or decimal column, as (p - s, s)."""
    if pa.types.is_decimal(t):
        return t.precision - t.scale, t.scale
    lo, hi = int_bounds(t)
    return len(str(max(abs(lo), hi))), 0


def positional(v: float) -> decimal.Decimal:
    """The float as the decimal literal its shortest repr stands for."""
    return decimal.Decimal(repr(v))


def _read_as_double(v: float | decimal.Decimal) -> bool:
    """DuckDB reads the printed literal as a DOUBLE (exponent form, over 38 digits)."""
    return "e" in format_literal(v).lower()


def _duckdb_decimal_ok(t: pa.DataType, v: Any) -> bool:
    """DuckDB compares an integer/decimal column with a number exactly, or fails, or (for a
    literal it reads as a DOUBLE) compares through doubles: keep to the exact cases.

    The common DECIMAL type must hold both sides in 38 digits, else the cast fails at run time
    for values that do not fit (``dec38_0_col > 9.5``).
    """
    if isinstance(v, float) and not math.isfinite(v):
        return True
    if not isinstance(v, int) and _read_as_double(v):
        return not (pa.types.is_integer(t) or pa.types.is_decimal(t))
    a, b = _digits(positional(v) if isinstance(v, float) else decimal.Decimal(v))
    if not (pa.types.is_integer(t) or pa.types.is_decimal(t)):
        return True
    if pa.types.is_integer(t) and b == 0:
        return True  # integer against integer: HUGEINT at worst
    ta, tb = _type_digits(t)
    return max(ta, a) + max(tb, b) <= 38


def _duckdb_float_ok(t: pa.DataType, v: float | decimal.Decimal) -> bool:
    """A number DuckDB reads as a DOUBLE means the same on a float column only when it is a
    value of the column's type (binding rounds to float32 and compares decimals exactly there)."""
    if not math.isfinite(v) or not pa.types.is_floating(t) or not _read_as_double(v):
        return True
    as_float = float(v)
    if not math.isfinite(as_float) or decimal.Decimal(as_float) != decimal.Decimal(v):
        return False
    return t != pa.float32() or (abs(as_float) <= float_max(t) and float(np.float32(as_float)) == as_float)


def literal_ok(t: pa.DataType, v: Any) -> bool:
    """Whether the printed literal means in DuckDB what the library binds it to."""
    if isinstance(v, bool):
        return True
    if isinstance(v, (float, decimal.Decimal)) and not _duckdb_float_ok(t, v):
        return False
    if isinstance(v, (int, float, decimal.Decimal)):
        if isinstance(v, int) and abs(v) >= 2**127:
            return False  # beyond HUGEINT: DuckDB rejects the literal
        return _duckdb_decimal_ok(t, v)
    if isinstance(v, dt.date) and pa.types.is_timestamp(t) and t.unit == "ns":
        # DuckDB cannot compare TIMESTAMP_NS with TIMESTAMPTZ at all (a binder error).
        return _in_ns_range(v) and getattr(v, "tzinfo", None) is None
    if isinstance(v, pa.TimestampScalar) and pa.types.is_timestamp(t) and t.unit == "ns":
        return v.type.tz is None
    if isinstance(v, str) and pa.types.is_timestamp(t) and t.unit == "ns":
        try:
            return _in_ns_range(dt.datetime.fromisoformat(v[:19]))
        except ValueError:
            return True
    return True


def _in_ns_range(v: dt.date) -> bool:
    """DuckDB cannot cast a date/timestamp outside 1677-2262 to TIMESTAMP_NS (an error)."""
    if not isinstance(v, dt.datetime):
        v = dt.datetime(v.year, v.month, v.day)
    if v.tzinfo is not None:
        v = v.astimezone(dt.UTC).replace(tzinfo=None)
    return dt.datetime(1678, 1, 1) <= v <= dt.datetime(2261, 12, 31)


def to_date(days: int) -> dt.date | None:
    try:
        return EPOCH_DATE + dt.timedelta(days=days)
    except OverflowError:
        return None


def to_datetime(raw: int, unit: str) -> dt.datetime | None:
    """The wall-clock datetime of a raw timestamp, truncated to microseconds (None if out of range)."""
    micros = raw * 1_000_000 // UNITS[unit]
    try:
        return EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        return None


def iso_strings(moment: dt.datetime, extra_ns: int = 0) -> st.SearchStrategy[str]:
    """ISO text of a moment: date only, with seconds, with 3/6/7/9 fraction digits, T or space."""
    base = moment.date().isoformat()  # strftime("%Y") does not pad years before 1000
    hms = f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    frac9 = f"{moment.microsecond:06d}{extra_ns:03d}"

    def render(choice: tuple[int, str]) -> str:
        digits, sep = choice
        text = f"{base}{sep}{hms}"
        return f"{text}.{frac9[:digits]}" if digits else text

    digits = st.sampled_from([0, 3, 6, 7, 9, 7, 9])  # past 6 digits: truncated, or ns
    with_time = st.tuples(digits, st.sampled_from([" ", "T"])).map(render)
    return st.one_of(st.just(base), with_time)


@st.composite
def literal_near(draw: st.DrawFn, t: pa.DataType, v: Any) -> Any:
    """A literal at, just below or just above the raw value ``v``, in a form SQL accepts."""
    k = kind_of(t)
    if k == "int":
        lo, hi = int_bounds(t)
        shift = draw(st.sampled_from([0, 0, -1, 1]))
        choice = draw(st.integers(0, 3))
        if choice == 0:
            return v + shift
        if choice == 1:  # halfway to the neighbour: exact as a Decimal
            return decimal.Decimal(v) + decimal.Decimal(draw(st.sampled_from(["0.5", "-0.5"])))
        if choice == 2:  # a float means the number its repr shows (2.0**60 is ...847000)
            return float(v) + draw(st.sampled_from([0.0, 0.5, -0.5, 0.25]))
        return draw(st.sampled_from([lo, hi, lo - 1, hi + 1, v]))
    if k == "float":
        if is_nan(v):
            return v
        dtype = np.float32 if t.bit_width == 32 else np.float64
        choice = draw(st.integers(0, 4))
        if choice == 0 and math.isfinite(v):
            with np.errstate(over="ignore"):  # the float32 next to its max is inf
                return float(np.nextafter(dtype(v), dtype(draw(st.sampled_from([math.inf, -math.inf])))))
        if choice == 1 and math.isfinite(v) and v == int(v) and abs(v) < 1e30:
            return int(v) + draw(st.sampled_from([0, 1, -1]))
        if choice == 2 and math.isfinite(v):
            return v + draw(st.sampled_from([0.5, -0.5, 0.1]))
        if choice == 3 and math.isfinite(v):
            return positional(v)
        if choice == 4 and math.isfinite(v) and 2**24 <= abs(v) < 2**100:
            # An integer at (or next to) the tie between v and its neighbour: rounding it
            # through a double first lands on the other side of the tie.
            half = int(np.spacing(dtype(abs(v)))) // 2
            return int(v) + int(math.copysign(half, v)) + draw(st.sampled_from([0, 1, -1]))
        return v
    if k == "decimal":
        s = t.scale
        u = dec_units(v, s)
        choice = draw(st.integers(0, 3))
        if choice == 0:
            return dec(u + draw(st.sampled_from([0, 1, -1])), s)
        if choice == 1:
            return dec(10 * u + draw(st.sampled_from([5, -5])), s + 1)
        if choice == 2 and s == 0:
            return u + draw(st.sampled_from([0, 1, -1]))
        if choice == 3:
            return float(v)
        return v
    if k in ("string", "binary"):
        empty = "" if k == "string" else b""
        zero = "\x00" if k == "string" else b"\x00"
        options = [v, v + zero, v[:-1] if v else empty, bump(v) or v, v + (b"a" if k == "binary" else "a")]
        out = draw(st.sampled_from(options))
        if k == "binary" and draw(st.integers(0, 3)) == 0 and out.isascii() and b"\\" not in out:
            # A string against a binary column is cast to BLOB (ASCII without backslash only:
            # DuckDB's VARCHAR -> BLOB cast reads backslash escapes and rejects non-ASCII).
            return out.decode()
        return out
    if k == "bool":
        return draw(st.sampled_from([v, not v]))
    if k == "date":
        day = v + draw(st.sampled_from([0, 0, -1, 1]))
        d = to_date(day)
        if d is None:
            return to_date(v)
        form = draw(st.integers(0, 4))
        if form == 0:
            return d.isoformat()
        if form == 1:  # a timestamp against a date column: the date is cast to a timestamp
            stamp = dt.datetime(d.year, d.month, d.day)
            delta = draw(st.sampled_from([0, 1, -1, 43_200_000_000]))
            with contextlib.suppress(OverflowError):
                stamp = stamp + dt.timedelta(microseconds=delta)
            return stamp.replace(tzinfo=dt.UTC) if draw(st.booleans()) else stamp
        if form == 2:  # text with a time part: cast to DATE, the time part is dropped
            return draw(iso_strings(dt.datetime(d.year, d.month, d.day, 12, 30, 15, 123456)))
        if form == 3:
            return pa.scalar(day, pa.date32())
        return d
    # timestamps
    unit = t.unit
    step = draw(st.sampled_from([0, 0, 1, -1, UNITS[unit], 86_400 * UNITS[unit]]))
    raw = v + step
    lo, hi = temporal_range(t)
    raw = min(max(raw, lo), hi)
    form = draw(st.integers(0, 5))
    moment = to_datetime(raw, unit)
    if form == 0 or moment is None:
        return pa.scalar(raw, t)
    if form == 1:  # python datetime (microseconds), naive or aware
        tz = draw(st.sampled_from([None, dt.UTC, dt.timezone(dt.timedelta(hours=5))]))
        try:
            return moment if tz is None else moment.replace(tzinfo=dt.UTC).astimezone(tz)
        except OverflowError:  # year 9999 + 5 hours
            return moment
    if form == 2:
        extra_ns = raw % 1000 if unit == "ns" else draw(st.sampled_from([0, 1, 999, 500]))
        return draw(iso_strings(moment, extra_ns))
    if form == 3:  # with a UTC offset: applied against TIMESTAMPTZ, ignored (cast) against TIMESTAMP
        text = draw(iso_strings(moment))
        if len(text) == 10:
            return text
        return text + draw(st.sampled_from(["+05:00", "-03:30", "Z", "+00:00"]))
    if form == 4:
        return moment.date()
    other = draw(st.sampled_from([u for u in UNITS if u != unit]))
    try:
        return pa.scalar(raw, t).cast(pa.timestamp(other, tz=t.tz))
    except pa.ArrowInvalid:
        return pa.scalar(raw, t)


def extremes(t: pa.DataType) -> list[Any]:
    """Literals at or beyond the ends of the type."""
    k = kind_of(t)
    if k == "int":
        lo, hi = int_bounds(t)
        return [lo, hi, lo - 1, hi + 1, 0]
    if k == "float":
        m = float_max(t)
        return [math.nan, math.inf, -math.inf, -0.0, 0.0, m, -m, 1e300, -1e300]
    if k == "decimal":
        lim = 10**t.precision - 1
        return [dec(lim, t.scale), dec(-lim, t.scale), dec(0, t.scale), dec(lim + 1, t.scale)]
    if k == "string":
        return ["", "\U0010ffff", "\x00", "\uffff"]
    if k == "binary":
        return [b"", b"\x00", b"\xff\xff\xff"]
    if k == "bool":
        return [True, False]
    lo, hi = temporal_range(t)
    if k == "date":
        return [to_date(lo), to_date(hi), EPOCH_DATE, "1970-01-01"]
    return [pa.scalar(lo, t), pa.scalar(hi, t), pa.scalar(0, t), to_datetime(0, t.unit)]


@st.composite
def literals(draw: st.DrawFn, case: Case, leaf: Leaf) -> Any:
    """One literal for a comparison on ``leaf`` (never None), checked against DuckDB's limits."""
    pool = case.pool(leaf.path)
    t = leaf.type
    for _ in range(5):
        source = draw(st.integers(0, 3))
        if source <= 1 and pool:
            v = draw(literal_near(t, draw(st.sampled_from(pool))))
        elif source == 2:
            v = draw(st.sampled_from(extremes(t)))
        else:
            v = draw(literal_near(t, draw(values_for(t))))
        if v is not None and literal_ok(t, v):
            return v
    return draw(st.sampled_from([v for v in extremes(t) if v is not None and literal_ok(t, v)]))


def prefixes(case: Case, leaf: Leaf) -> st.SearchStrategy[Any]:
    """Prefixes for starts_with: of data values, random, empty; bytes on binary columns."""
    pool = case.pool(leaf.path)
    fresh = values_for(leaf.type)
    source = st.one_of(st.sampled_from(pool), fresh) if pool else fresh

    def cut(v: Any) -> st.SearchStrategy[Any]:
        # A prefix of the value, or the value with one more character (matches nothing of it).
        return st.integers(0, len(v) + 1).map(lambda n: v[:n] if n <= len(v) else v + v[:1])

    return source.flatmap(cut)


def substrings(case: Case, leaf: Leaf) -> st.SearchStrategy[str]:
    """Substrings for contains: slices of data values (or one with a quote added), random, empty."""
    pool = case.pool(leaf.path)
    fresh = values_for(leaf.type)
    source = st.one_of(st.sampled_from(pool), fresh) if pool else fresh

    def cut(v: str) -> st.SearchStrategy[str]:
        ends = st.tuples(st.integers(0, len(v)), st.integers(0, len(v) + 1))
        return ends.map(lambda ij: v[ij[0] : ij[1]] if ij[1] <= len(v) else v[ij[0] :] + "'")

    return source.flatmap(cut)


def words(case: Case, leaf: Leaf) -> st.SearchStrategy[str]:
    """Words for contains_term: terms of the data or a few others, in any case that stays one term."""
    pool = case.pool(leaf.path)
    found = tokenize(pa.array(pool, pa.string()))[0].to_pylist() if pool else []
    terms = [*sorted(set(found)), "a", "zz", "é9"]

    def spellings(term: str) -> st.SearchStrategy[str]:
        forms = [term, term.upper(), term.capitalize()]
        return st.sampled_from([w for w in forms if _one_term(w)])

    return st.sampled_from(terms).flatmap(spellings)


def _one_term(word: str) -> bool:
    try:
        normalize_term(word)
    except ValueError:
        return False  # 'ΐ'.upper() holds a combining accent, which is no letter
    return True


# ---------------------------------------------------------------------------------- expressions


NUMERIC = ("int", "float", "decimal")


def _form(v: Any) -> Any:
    return v.type if isinstance(v, pa.Scalar) else type(v)


def in_list(t: pa.DataType, values: list[Any]) -> list[Any]:
    """Values of one literal form, as DuckDB casts an IN list to one common type (a date column
    IN (TIMESTAMP, text) would cast the text to TIMESTAMP, unlike ``= text``)."""
    values = [v for v in values if _form(v) == _form(values[0])] if values else []
    numbers = [v for v in values if isinstance(v, (float, decimal.Decimal)) and math.isfinite(v)]
    if numbers and (pa.types.is_integer(t) or pa.types.is_decimal(t)):
        digits = [_digits(positional(v) if isinstance(v, float) else v) for v in numbers]
        ta, tb = _type_digits(t)
        if max(ta, *(a for a, _ in digits)) + max(tb, *(b for _, b in digits)) > 38:
            return values[:1]
    return values


@st.composite
def leaf_predicates(draw: st.DrawFn, case: Case) -> hx.Expression:
    """One predicate of any kind on one leaf column, built through the public builders."""
    leaf = draw(st.sampled_from(case.leaves))
    c = col(leaf.path)
    kinds = ["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "is_null", "is_not_null"]
    if leaf.kind in NUMERIC:
        kinds += ["is_nan", "is_not_nan"]  # DuckDB's isnan takes numbers only
    if leaf.kind in ("string", "binary"):
        kinds += ["starts_with", "not_starts_with", "starts_with"]
    if leaf.kind == "string":
        kinds += ["contains", "not_contains", "contains_term", "not_contains_term"]
    kind = draw(st.sampled_from(kinds))
    if kind in ("is_null", "is_not_null", "is_nan", "is_not_nan"):
        builder = {"is_null": c.is_null, "is_not_null": c.is_not_null, "is_nan": c.is_nan}
        return builder.get(kind, c.is_not_nan)()
    if kind in ("starts_with", "not_starts_with"):
        p = draw(prefixes(case, leaf))
        return c.starts_with(p) if kind == "starts_with" else c.not_starts_with(p)
    if kind in ("contains", "not_contains"):
        text = draw(substrings(case, leaf))
        return c.contains(text) if kind == "contains" else c.not_contains(text)
    if kind in ("contains_term", "not_contains_term"):
        word = draw(words(case, leaf))
        return c.contains_term(word) if kind == "contains_term" else c.not_contains_term(word)
    if kind in ("in", "not_in"):
        values = in_list(leaf.type, draw(st.lists(literals(case, leaf), min_size=0, max_size=5)))
        return c.isin(values) if kind == "in" else c.notin(values)
    v = draw(literals(case, leaf))
    ops = {
        "eq": lambda: c == v,
        "ne": lambda: c != v,
        "lt": lambda: c < v,
        "le": lambda: c <= v,
        "gt": lambda: c > v,
        "ge": lambda: c >= v,
    }
    return ops[kind]()


@st.composite
def expressions(draw: st.DrawFn, case: Case, depth: int = 4) -> hx.Expression:
    """And/Or/Not trees of leaf predicates, up to ``depth`` levels of nesting."""
    op = draw(st.sampled_from(["leaf", "leaf", "and", "or", "not", "and", "or"]))
    if depth == 0 or op == "leaf":
        return draw(leaf_predicates(case))
    if op == "not":
        child = draw(expressions(case, depth - 1))
        return hx.Not(child) if draw(st.booleans()) else ~child
    left = draw(expressions(case, depth - 1))
    right = draw(expressions(case, depth - 1))
    return (left & right) if op == "and" else (left | right)
