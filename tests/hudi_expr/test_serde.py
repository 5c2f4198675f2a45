"""JSON form: exact round trips for every leaf kind and literal type, and clear format errors."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import zoneinfo
from typing import Any

import pyarrow as pa
import pytest

from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Contains,
    ContainsTerm,
    EqualTo,
    Expression,
    ExpressionFormatError,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNotNaN,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotContains,
    NotContainsTerm,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    StartsWith,
    col,
    from_json,
    to_json,
)

TOKYO = zoneinfo.ZoneInfo("Asia/Tokyo")

LITERALS: list[Any] = [
    0,
    -(2**63),
    2**64 - 1,
    10**30,
    True,
    False,
    1.5,
    -0.0,
    1e-300,
    math.nan,
    math.inf,
    -math.inf,
    decimal.Decimal("1.50"),
    decimal.Decimal("-0.000001"),
    decimal.Decimal("12345678901234567890.123456789"),
    "",
    'it\'s "quoted"',
    "é中\U0001f600",
    b"",
    b"\x00\xff\x80",
    dt.date(2024, 1, 2),
    dt.date(1, 1, 1),
    dt.datetime(2024, 1, 2, 3, 4, 5, 6),
    dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    dt.datetime(2024, 1, 2, 3, 4, 5, 123, tzinfo=TOKYO),
    dt.time(3, 4, 5),
    pa.scalar(1704153600123456789, pa.timestamp("ns")),
    pa.scalar(1704153600123456789, pa.timestamp("ns", "UTC")),
    pa.scalar(1704153600, pa.timestamp("s", "America/New_York")),
    pa.scalar(5, pa.int8()),
    pa.scalar(2**64 - 1, pa.uint64()),
    pa.scalar(0.1, pa.float32()),
    pa.scalar(math.nan, pa.float64()),
    pa.scalar(decimal.Decimal("1.50"), pa.decimal128(10, 2)),
    pa.scalar(decimal.Decimal("1.50"), pa.decimal256(10, 2)),
    pa.scalar(decimal.Decimal("1" * 45), pa.decimal256(50, 0)),
    pa.scalar("x", pa.large_string()),
    pa.scalar(b"\xff", pa.binary()),
    pa.scalar(b"abc", pa.binary(3)),
    pa.scalar(dt.date(2024, 1, 2), pa.date32()),
    pa.scalar(True),
]

LITERAL_KINDS = [EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual]


def literal_id(value: Any) -> str:
    return f"{type(value).__name__}:{value!r}"[:60]


def round_trip(expr: Expression) -> Expression:
    text = to_json(expr)
    json.loads(text, parse_constant=reject_constant)  # strict JSON: no NaN/Infinity tokens
    return from_json(text)


def reject_constant(token: str) -> Any:
    raise AssertionError(f"non-standard JSON token {token}")


def same_literal(a: Any, b: Any) -> bool:
    if isinstance(a, pa.Scalar):
        return (
            isinstance(b, pa.Scalar)
            and a.type == b.type
            and (a.equals(b) or (a.as_py() != a.as_py() and b.as_py() != b.as_py()))
        )
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float):
        return type(b) is float and a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dt.datetime):
        return isinstance(b, dt.datetime) and a == b and (a.utcoffset() == b.utcoffset())
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("literal", LITERALS, ids=literal_id)
@pytest.mark.parametrize("kind", LITERAL_KINDS, ids=lambda k: k.__name__)
def test_literal_round_trip(kind: type, literal: Any) -> None:
    expr = kind("a", literal)
    back = round_trip(expr)
    assert back == expr
    assert type(back) is kind
    assert same_literal(expr.literal, back.literal), (expr.literal, back.literal)


@pytest.mark.parametrize("literal", [v for v in LITERALS if isinstance(v, (str, bytes))], ids=literal_id)
def test_prefix_round_trip(literal: Any) -> None:
    for kind in (StartsWith, NotStartsWith):
        expr = kind("s", literal)
        assert round_trip(expr) == expr


@pytest.mark.parametrize(
    "kind", [Contains, NotContains, ContainsTerm, NotContainsTerm], ids=lambda k: k.__name__
)
def test_text_search_round_trip(kind: type) -> None:
    for text in ["", "x", "o'k", "É t\u00e9\n\x00", "\U0001f600"]:
        expr = kind("s", text)
        back = round_trip(expr)
        assert back == expr and type(back) is kind
        assert json.loads(to_json(expr)) == {"op": kind.op, "column": "s", "value": text}
    # Bound, the text is a string scalar (the word its lower-cased term), kept as such.
    bound = kind("s", "Mot").bind(pa.schema([("s", pa.string())]))
    word = "Mot" if kind in (Contains, NotContains) else "mot"
    assert from_json(to_json(bound)) == kind("s", pa.scalar(word))


@pytest.mark.parametrize(
    "values",
    [
        [1, 2, 3],
        [1.5, math.nan, -math.inf],
        ["a", "é", ""],
        [b"\x00", b"\xff"],
        [decimal.Decimal("1.1"), decimal.Decimal("2.20")],
        [dt.date(2024, 1, 2), dt.date(2024, 1, 3)],
        [dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 2, tzinfo=dt.UTC)],
        [1, 1.0, True],
        pa.array([1, 2, 3], pa.int16()),
        pa.array([1704153600123456789, 1], pa.timestamp("ns", "UTC")),
    ],
    ids=lambda v: type(v[0]).__name__ if isinstance(v, list) else str(v.type),
)
def test_set_round_trip(values: Any) -> None:
    for kind in (In, NotIn):
        expr = kind("a", values)
        back = round_trip(expr)
        if isinstance(values, pa.Array):
            # Arrow arrays come back as tuples of arrow scalars of the same type.
            assert pa.array(list(back.values), type=values.type).equals(values)
            assert all(v.type == values.type for v in back.values)
        else:
            assert back == expr


@pytest.mark.parametrize(
    "expr",
    [
        IsNull("a"),
        IsNotNull("a"),
        IsNaN("a"),
        IsNotNaN("a"),
        AlwaysTrue(),
        AlwaysFalse(),
        Not(col("a") > 1),
        Not(Not(col("a") > 1) | col("b").is_null()),
        (col("a") > 1) & ((col("b") < 2) | col("c").isin([1, 2])) & ~col("d").starts_with("x"),
        col("d").contains("x") | ~col("d").contains_term("y") & Not(col("e").not_contains_term("z")),
        Or(And(col("a") == 1, col("b") == 2), And(col("a") == 3, Not(col("b") == 4))),
        col("s.x.y") == 1,
        col('weird "name".with dots') == 1,
    ],
    ids=str,
)
def test_tree_round_trip(expr: Expression) -> None:
    assert round_trip(expr) == expr


def test_json_shape() -> None:
    chain = (col("a") > 1) & (col("b") == "x") & col("c").is_null()
    assert json.loads(to_json(chain)) == {
        "and": [
            {"op": "gt", "column": "a", "value": 1},
            {"op": "eq", "column": "b", "value": "x"},
            {"op": "is_null", "column": "c"},
        ]
    }
    assert json.loads(to_json(col("d") == dt.date(2024, 1, 2))) == {
        "op": "eq",
        "column": "d",
        "value": {"date": "2024-01-02"},
    }
    assert json.loads(to_json(col("f") == math.nan)) == {"op": "eq", "column": "f", "value": {"float": "nan"}}
    assert json.loads(to_json(col("m") == decimal.Decimal("1.50"))) == {
        "op": "eq",
        "column": "m",
        "value": {"decimal": "1.50"},
    }
    assert json.loads(to_json(col("b").isin([b"\x00", b"\xff"]))) == {
        "op": "in",
        "column": "b",
        "values": [{"binary": "AA=="}, {"binary": "/w=="}],
    }
    assert json.loads(to_json(Not(col("a") > 1))) == {"not": {"op": "gt", "column": "a", "value": 1}}
    assert to_json(AlwaysTrue()) == "true" and to_json(AlwaysFalse()) == "false"
    assert (col("a") > 1).to_json() == to_json(col("a") > 1)


def test_bound_expressions_serialize_as_unbound() -> None:
    schema = pa.schema(
        [
            ("i", pa.int8()),
            ("d", pa.date32()),
            ("t", pa.timestamp("ns", "UTC")),
            ("m", pa.decimal256(10, 2)),
            ("f", pa.float32()),
            ("fb", pa.binary(2)),
            ("s", pa.large_string()),
        ]
    )
    expr = (
        (col("i") < 1.5)
        & (col("d") == "2024-01-02")
        & (col("t") > "2024-01-02T00:00:00.123456789")
        & (col("m") == decimal.Decimal("1.5"))
        & col("f").isin([0.1, 0.2, math.nan])
        & (col("fb") == b"ab")
        & col("s").starts_with("x")
    )
    bound = expr.bind(schema)
    back = from_json(to_json(bound))
    assert not back.is_bound
    assert back.bind(schema) == bound


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[1, 2]",
        "42",
        "null",
        '"eq"',
        "{}",
        '{"and": 5}',
        '{"or": {"op": "is_null", "column": "a"}}',
        '{"and": [{"op": "nope", "column": "a"}]}',
        '{"op": "eq", "column": "a"}',
        '{"op": "eq", "value": 1}',
        '{"op": "eq", "column": 5, "value": 1}',
        '{"op": "eq", "column": "a", "value": null}',
        '{"op": "eq", "column": "a", "value": [1, 2]}',
        '{"op": ["eq"], "column": "a", "value": 1}',
        '{"op": "in", "column": "a"}',
        '{"op": "in", "column": "a", "values": 5}',
        '{"op": "in", "column": "a", "values": [1, null]}',
        '{"op": "eq", "column": "a", "value": {"date": "2024-13-01"}}',
        '{"op": "eq", "column": "a", "value": {"timestamp": "yesterday"}}',
        '{"op": "eq", "column": "a", "value": {"decimal": "one"}}',
        '{"op": "eq", "column": "a", "value": {"binary": "***"}}',
        '{"op": "eq", "column": "a", "value": {"float": "many"}}',
        '{"op": "eq", "column": "a", "value": {"mystery": 1}}',
        '{"op": "eq", "column": "a", "value": {"date": "2024-01-01", "extra": 1}}',
        '{"op": "eq", "column": "a", "value": {"arrow": "no_such_type", "value": 1}}',
        '{"op": "eq", "column": "a", "value": {"arrow": "int8", "value": 1000}}',
        '{"op": "eq", "column": "a", "value": {"arrow": "timestamp", "unit": "fortnight", "value": 1}}',
        '{"op": "eq", "column": "a", "value": {"arrow": "decimal", "precision":5, "scale":2, "value": "?"}}',
        '{"op": "eq", "column": "a", "value": {"arrow": "decimal", "scale": 2, "value": "1"}}',
        '{"not": ' * 5000 + "true" + "}" * 5000,
    ],
)
def test_malformed_json_raises_format_error(text: str) -> None:
    with pytest.raises(ExpressionFormatError):
        from_json(text)


def test_format_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown predicate op"):
        from_json('{"op": "between", "column": "a"}')
