"""``adapters.pyarrow``: pyarrow filters to ``hudi_expr`` (a sound superset) and back."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from adapters.pyarrow import Translation, _bracket, from_pyarrow, parse_pyarrow, to_pyarrow
from hudi_expr import AlwaysFalse, AlwaysTrue, Expression, IsNaN, Or, col

NAN, INF = math.nan, math.inf
f = pc.field
LO, HI = _bracket(1.5)
LO_HALF, HI_HALF = _bracket(1.5, 0.5)

TABLE = pa.table(
    {
        "i": pa.array([1, 5, None, 9, -3, 5, 0, None], pa.int64()),
        "f": pa.array([1.0, NAN, None, -0.0, 0.0, INF, -INF, 2.5], pa.float64()),
        "s": pa.array(["apple", "banana", None, "é", "", "app", "zebra", "Apple"], pa.string()),
        "d": pa.array(
            [
                decimal.Decimal(x) if x else None
                for x in ["1.1", "2.0", None, "-1.1", "0.0", "1.1", "9.9", "2.2"]
            ],
            pa.decimal128(5, 1),
        ),
        "b": pa.array([True, False, None, True, False, True, None, False], pa.bool_()),
        "day": pa.array([dt.date(2024, 1, n) if n != 3 else None for n in range(1, 9)], pa.date32()),
        "st": pa.array(
            [{"x": v} if v != 99 else None for v in [1, 2, None, 4, 99, 6, 7, 8]],
            pa.struct([pa.field("x", pa.int64())]),
        ),
    }
)
SCHEMA = TABLE.schema


def rows(expr: pc.Expression) -> set[int]:
    """Indexes of the rows a pyarrow filter keeps."""
    indexed = TABLE.append_column("_row", pa.array(range(TABLE.num_rows)))
    return set(indexed.filter(expr).column("_row").to_pylist())


def kept(translation: Translation) -> set[int]:
    """Rows the translated hudi expression keeps (evaluated with the library's semantics)."""
    return rows(translation.expr.to_pyarrow(SCHEMA))


# ------------------------------------------------------------------------------------ mapping

MAPPING: list[tuple[pc.Expression, Expression]] = [
    (f("i") == 5, col("i") == 5),
    (f("i") != 5, col("i") != 5),
    (f("i") < 5, col("i") < 5),
    (f("i") <= 5, col("i") <= 5),
    (f("i") > 5, col("i") > 5),
    (f("i") >= 5, col("i") >= 5),
    (pc.scalar(5) < f("i"), col("i") > 5),
    (pc.scalar(5) >= f("i"), col("i") <= 5),
    (pc.scalar(5) == f("i"), col("i") == 5),
    (f("s") == "apple", col("s") == "apple"),
    (f("day") > pc.scalar(dt.date(2024, 1, 2)), col("day") > dt.date(2024, 1, 2)),
    (f("st", "x") == 4, col("st.x") == 4),
    ((f("i") > 1) & (f("s") == "a"), (col("i") > 1) & (col("s") == "a")),
    (pc.and_kleene(f("i") > 1, f("s") == "a"), (col("i") > 1) & (col("s") == "a")),
    (pc.and_(f("i") > 1, f("s") == "a"), (col("i") > 1) & (col("s") == "a")),
    ((f("i") > 1) | (f("s") == "a"), (col("i") > 1) | (col("s") == "a")),
    (pc.or_(f("i") > 1, f("s") == "a"), (col("i") > 1) | (col("s") == "a")),
    (pc.and_not(f("i") > 1, f("s") == "a"), (col("i") > 1) & (col("s") != "a")),
    (~(f("i") < 5), col("i") >= 5),
    (~(f("s") > "a"), col("s") <= "a"),  # a string column holds no NaN
    (~(f("i") > 5), Or(col("i") <= 5, IsNaN("i"))),  # without a schema, i may be a float column
    (~((f("s") == "a") | (f("s") == "b")), (col("s") != "a") & (col("s") != "b")),
    (~~(f("i") == 1), col("i") == 1),
    (f("i").isin([1, 2]), col("i").isin([1, 2])),
    (f("i").isin([1, 2, None]), col("i").isin([1, 2]) | col("i").is_null()),
    (pc.is_in(f("i"), value_set=pa.array([1, 2, None]), skip_nulls=True), col("i").isin([1, 2])),
    (~f("i").isin([1, 2]), col("i").notin([1, 2]) | col("i").is_null()),
    (~f("i").isin([1, 2, None]), col("i").notin([1, 2])),
    (
        ~pc.is_in(f("i"), value_set=pa.array([1, 2, None]), skip_nulls=True),
        col("i").notin([1, 2]) | col("i").is_null(),
    ),
    (f("i").isin([]), AlwaysFalse()),
    (f("i").is_null(), col("i").is_null()),
    (~f("i").is_null(), col("i").is_not_null()),
    (f("f").is_null(nan_is_null=True), col("f").is_null() | col("f").is_nan()),
    (f("i").is_valid(), col("i").is_not_null()),
    (~f("i").is_valid(), col("i").is_null()),
    (pc.is_nan(f("f")), col("f").is_nan()),
    (~pc.is_nan(f("f")), col("f").is_not_nan()),
    (pc.starts_with(f("s"), "ap"), col("s").starts_with("ap")),
    (~pc.starts_with(f("s"), "ap"), col("s").not_starts_with("ap")),
    (pc.match_substring(f("s"), "pp"), col("s").contains("pp")),
    (~pc.match_substring(f("s"), "pp"), col("s").not_contains("pp")),
    (f("b"), col("b") == True),  # noqa: E712
    (~f("b"), col("b") == False),  # noqa: E712
    (pc.scalar(True), AlwaysTrue()),
    (pc.scalar(False), AlwaysFalse()),
    (f("i") == pc.scalar(pa.scalar(None, pa.int64())), AlwaysFalse()),
    (~(f("i") == pc.scalar(pa.scalar(None, pa.int64()))), AlwaysFalse()),
    (f("f") == NAN, AlwaysFalse()),
    (f("f") != NAN, col("f").is_not_null()),
    (~(f("f") < NAN), col("f").is_not_null()),
    (pc.if_else(f("i") > 1, True, False), col("i") > 1),
    # A float literal against a column that may be decimal: slack for arrow's double rounding.
    (f("x") == 1.5, (col("x") >= LO) & (col("x") <= HI)),
    (f("x") > 1.5, col("x") > LO),
    (f("x") != 1.5, col("x").is_not_null()),
    (~(f("x") >= 1.5), (col("x") <= HI) | col("x").is_nan()),
    (f("x") > INF, col("x") > INF),
    (f("x").isin([1.5]), (col("x") >= LO_HALF) & (col("x") <= HI_HALF)),
]


@pytest.mark.parametrize(("pyarrow_expr", "expected"), MAPPING, ids=[str(e) for e, _ in MAPPING])
def test_maps_to_expected_tree(pyarrow_expr: pc.Expression, expected: Expression) -> None:
    t = from_pyarrow(pyarrow_expr)
    assert t.expr == expected, (str(t.expr), str(expected))
    assert t.not_used == ()
    assert parse_pyarrow(pyarrow_expr) == expected


def test_schema_removes_float_widening_and_nan_guards() -> None:
    schema = pa.schema([("f", pa.float64()), ("i", pa.int64()), ("d", pa.decimal128(5, 1))])
    assert from_pyarrow(f("f") == 1.5, schema).expr == (col("f") == 1.5)
    assert from_pyarrow(f("f").isin([1.5, NAN]), schema).expr == col("f").isin([1.5, NAN])
    dec = pc.scalar(decimal.Decimal("1.1"))
    assert from_pyarrow(f("d") > dec, schema).expr == (col("d") > decimal.Decimal("1.1"))
    # Arrow rounds a float value set to the decimal column's scale: half a unit either way.
    lo, hi = _bracket(1.5, 0.05)
    assert from_pyarrow(f("d").isin([1.5]), schema).expr == (col("d") >= lo) & (col("d") <= hi)
    assert from_pyarrow(~(f("i") > 5), schema).expr == (col("i") <= 5)
    assert from_pyarrow(~(f("f") > 5), schema).expr == Or(col("f") <= 5, IsNaN("f"))


def test_literals_keep_their_arrow_type() -> None:
    ts = pa.scalar(1_700_000_000_123_456_789, pa.timestamp("ns", "UTC"))
    t = from_pyarrow(f("t") >= ts)
    assert t.not_used == ()
    leaf = next(t.expr.leaves())
    assert leaf.literal == ts  # type: ignore[attr-defined]


# -------------------------------------------------------------------------------- unsupported

UNSUPPORTED: list[tuple[pc.Expression, str]] = [
    ((f("i") + 1) > 2, "add"),
    (f("i") == f("f"), "equal(i, f)"),
    (pc.ends_with(f("s"), "a"), "ends_with"),
    (pc.starts_with(f("s"), "a", ignore_case=True), "starts_with"),
    (pc.match_substring(f("s"), "a", ignore_case=True), "match_substring"),
    (pc.match_substring_regex(f("s"), "a"), "match_substring_regex"),
    (f("i").cast(pa.string()) == "1", "cast"),
    (pc.scalar(1) < pc.scalar(2), "less(1, 2)"),
    (pc.scalar(3), "3"),
]


@pytest.mark.parametrize(("pyarrow_expr", "needle"), UNSUPPORTED, ids=[n for _, n in UNSUPPORTED])
def test_unsupported_is_true_and_reported(pyarrow_expr: pc.Expression, needle: str) -> None:
    for e in (pyarrow_expr, ~pyarrow_expr, (f("s") == "x") & pyarrow_expr, ~((f("s") == "x") & pyarrow_expr)):
        t = from_pyarrow(e)
        assert len(t.not_used) == 1 and needle in t.not_used[0], (str(e), t.not_used)
    assert from_pyarrow(pyarrow_expr).expr == AlwaysTrue()
    assert from_pyarrow(~pyarrow_expr).expr == AlwaysTrue()
    assert from_pyarrow((f("s") == "x") & pyarrow_expr).expr == (col("s") == "x")
    assert from_pyarrow(~((f("s") == "x") & pyarrow_expr)).expr == AlwaysTrue()
    assert from_pyarrow((f("s") == "x") | ~pyarrow_expr).expr == AlwaysTrue()


def test_schema_drops_leaves_that_do_not_bind() -> None:
    t = from_pyarrow((f("nope") == 1) & (f("i") == 1) & pc.starts_with(f("i"), "1"), SCHEMA)
    assert t.expr == (col("i") == 1)
    assert len(t.not_used) == 2


def test_field_by_position_is_not_readable() -> None:
    t = from_pyarrow(f(0) == 1)
    assert t.expr == AlwaysTrue() and len(t.not_used) == 1


def test_rejects_non_expressions() -> None:
    with pytest.raises(TypeError):
        from_pyarrow(col("a") == 1)  # type: ignore[arg-type]


def test_deep_chain() -> None:
    e = f("i") == 0
    for n in range(1, 400):
        e = e | (f("i") == n)
    assert from_pyarrow(e).expr == Or(*[col("i") == n for n in range(400)])


# --------------------------------------------------------------------------------- round trip

ROUND_TRIP: list[Expression] = [
    col("i") > 1,
    col("i") <= 5,
    ~(col("i") == 5),
    col("f") > 0.0,
    col("f") >= 2.5,
    col("f") < 1.0,
    col("f") == 0.0,
    col("f") == -0.0,
    col("f") == NAN,
    col("f") > NAN,
    col("f") < NAN,
    col("f").isin([0.0, 2.5]),
    col("f").notin([0.0, 2.5]),
    col("f").notin([-0.0, NAN]),
    col("f").isin([NAN, 1.0]),
    col("f").is_nan(),
    col("f").is_not_nan(),
    col("i").isin([1, 9]),
    col("i").notin([1, 9]),
    col("s").starts_with("ap"),
    col("s").not_starts_with("ap"),
    col("s").contains("pp"),
    col("s").not_contains("p"),
    col("s") > "b",
    col("d") >= decimal.Decimal("1.1"),
    col("day") < dt.date(2024, 1, 5),
    col("st.x") >= 4,
    col("st.x").is_null(),
    (col("i") > 1) & (col("f") < 2.0) | col("s").is_null(),
    ~((col("i") > 1) | col("f").is_nan()),
    col("b") == True,  # noqa: E712
]


@pytest.mark.parametrize("expr", ROUND_TRIP, ids=[str(e) for e in ROUND_TRIP])
def test_round_trip_selects_the_same_rows(expr: Expression) -> None:
    expected = rows(to_pyarrow(expr, SCHEMA))
    assert expected == rows(expr.to_pyarrow(SCHEMA))
    t = from_pyarrow(to_pyarrow(expr, SCHEMA), SCHEMA)
    assert t.not_used == ()
    assert kept(t) == expected, (str(expr), str(t.expr))
    # Without a schema: float literals get slack and the cast to_pyarrow puts under starts_with
    # and match_substring cannot be checked (not used); a superset still.
    t = from_pyarrow(to_pyarrow(expr, SCHEMA))
    casts = {"starts_with": "starts_with(cast(s))", "contains": "match_substring(cast(s))"}
    assert t.not_used == tuple(text for name, text in casts.items() if name in str(expr))
    assert kept(t) >= expected, (str(expr), str(t.expr))


# --------------------------------------------------------------------------------- soundness

_LITERALS: dict[str, list[Any]] = {
    "i": [0, 1, 5, 9, -3, 2.5, 5.0, -0.0, NAN, INF, None],
    "f": [0.0, -0.0, 1.0, 2.5, NAN, INF, -INF, 3, None],
    "s": ["", "a", "apple", "app", "é", "zebra", None],
    "d": [1.1, 2.0, 0.0, decimal.Decimal("1.1"), decimal.Decimal("2.2"), 1, None],
    "day": [dt.date(2024, 1, 2), dt.date(2024, 1, 6), None],
    "st.x": [1, 4, 7, 2.5, None],
}
_COMPARE = [pc.equal, pc.not_equal, pc.less, pc.less_equal, pc.greater, pc.greater_equal]


def _ref(name: str) -> pc.Expression:
    return f(*name.split("."))


def _literal(name: str, v: Any) -> pc.Expression:
    if v is None:
        return pc.scalar(
            pa.scalar(None, SCHEMA.field(name.split(".")[0]).type if "." not in name else pa.int64())
        )
    return pc.scalar(v)


def _random_leaf(rng: random.Random) -> pc.Expression:
    name = rng.choice(list(_LITERALS))
    kind = rng.randrange(9)
    ref = _ref(name)
    if kind <= 3:
        lit = _literal(name, rng.choice(_LITERALS[name]))
        op = rng.choice(_COMPARE)
        return op(ref, lit) if kind % 2 else op(lit, ref)
    if kind == 4:
        values = [v for v in rng.sample(_LITERALS[name], k=rng.randint(1, 3))]
        non_null = [v for v in values if v is not None]
        if len({type(v) for v in non_null}) > 1:
            values = [v for v in values if v is None or type(v) is type(non_null[0])]
        arr = pa.array(values, SCHEMA.field("i").type if name == "st.x" else None)
        return pc.is_in(ref, value_set=arr, skip_nulls=rng.random() < 0.5)
    if kind == 5:
        return rng.choice([pc.is_null(ref, nan_is_null=rng.random() < 0.5), pc.is_valid(ref)])
    if kind == 6:
        text = rng.choice(["", "a", "ap", "é", "pl"])
        return rng.choice(
            [pc.is_nan(f("f")), pc.starts_with(f("s"), text), pc.match_substring(f("s"), text), f("b")]
        )
    if kind == 7:
        return rng.choice([(f("i") + 1) > 2, f("i") == f("st", "x"), pc.ends_with(f("s"), "e")])
    return rng.choice([pc.scalar(True), pc.scalar(False), pc.scalar(pa.scalar(None, pa.bool_()))])


def _random_expr(rng: random.Random, depth: int) -> pc.Expression:
    if depth == 0 or rng.random() < 0.3:
        return _random_leaf(rng)
    kind = rng.randrange(7)
    a = _random_expr(rng, depth - 1)
    if kind == 0:
        return ~a
    if kind == 5:
        return pc.if_else(a, _random_expr(rng, depth - 1), _random_expr(rng, depth - 1))
    b = _random_expr(rng, depth - 1)
    # (pc.and_/pc.or_ build calls named "and_"/"or_" that arrow cannot evaluate: not used here.)
    junctions = [pc.and_kleene, pc.or_kleene, pc.and_not, pc.or_kleene, pc.and_not_kleene, pc.and_kleene]
    return junctions[kind - 1](a, b)


def test_translation_is_a_superset_on_random_filters() -> None:
    rng = random.Random(20241121)
    checked = 0
    for _ in range(500):
        e = _random_expr(rng, 3)
        try:
            selected = rows(e)
        except (pa.ArrowException, TypeError):
            continue  # arrow rejects the mix of types: nothing to compare
        checked += 1
        for schema in (SCHEMA, None):
            t = from_pyarrow(e, schema)
            assert selected <= kept(t), (str(e), str(t.expr), schema is None)
            negated = from_pyarrow(~e, schema)
            assert rows(~e) <= kept(negated), (str(e), str(negated.expr), schema is None)
    assert checked >= 200


def test_float_literals_against_decimals_follow_arrow_rounding() -> None:
    """Arrow compares decimals with a float through (inexact) doubles, and rounds float value sets
    to the column's scale: the translation must keep every row arrow keeps, in both polarities."""
    values = ["0.3", "1.1", "1.2", "1.0", "-0.3", "0.1", "2.5", "0.0"]
    table = pa.table({"d": pa.array([decimal.Decimal(v) for v in values], pa.decimal128(5, 1))})
    indexed = table.append_column("_row", pa.array(range(table.num_rows)))

    def selected(e: pc.Expression) -> set[int]:
        return set(indexed.filter(e).column("_row").to_pylist())

    literals = [0.3, 1.1, 1.15, 1.05, 1.19999, -0.3, 0.1, 2.5, 0.0, -0.0]
    exprs: list[pc.Expression] = [op(f("d"), v) for op in _COMPARE for v in literals]
    exprs += [f("d").isin([v]) for v in literals] + [f("d").isin(literals)]
    exprs += [op(f("d"), pc.scalar(decimal.Decimal(v))) for op in _COMPARE for v in values]
    for e in exprs:
        for x in (e, ~e):
            for schema in (table.schema, None):
                t = from_pyarrow(x, schema)
                assert selected(x) <= selected(t.expr.to_pyarrow(table.schema)), (str(x), str(t.expr))


def test_wrong_arity_is_not_used() -> None:
    e = pc.Expression._call("and_kleene", [f("i") > 1, f("i") < 5, f("i") == 2])
    t = from_pyarrow(e)
    assert t.expr == AlwaysTrue() and len(t.not_used) == 1


def test_round_trip_of_a_grouped_chain() -> None:
    """``to_pyarrow`` wraps groups of a long chain in ``if_else(g, true, false)``: read through."""
    expr = Or(*[col("i") == n for n in range(150)]) & (col("f") < 2.0)
    t = from_pyarrow(to_pyarrow(expr, SCHEMA), SCHEMA)
    assert t.not_used == ()
    assert kept(t) == rows(expr.to_pyarrow(SCHEMA))


def test_timestamp_literals_round_trip() -> None:
    utc = dt.UTC
    table = pa.table(
        {
            "t": pa.array(
                [dt.datetime(2024, 1, 1, h, tzinfo=utc) if h != 3 else None for h in range(6)],
                pa.timestamp("ns", "UTC"),
            )
        }
    )
    indexed = table.append_column("_row", pa.array(range(table.num_rows)))

    def selected(e: pc.Expression) -> set[int]:
        return set(indexed.filter(e).column("_row").to_pylist())

    edge = dt.datetime(2024, 1, 1, 2, tzinfo=utc)
    for expr in [col("t") > edge, col("t") <= edge, col("t").isin([edge]), ~(col("t") == edge)]:
        for schema in (table.schema, None):
            t = from_pyarrow(to_pyarrow(expr, table.schema), schema)
            assert t.not_used == ()
            got = selected(t.expr.to_pyarrow(table.schema))
            assert got == selected(expr.to_pyarrow(table.schema)), (str(expr), str(t.expr))
