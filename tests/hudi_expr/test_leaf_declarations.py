"""One declaration per leaf (issue 11, item 3), and every leaf checked end to end against DuckDB.

Each leaf class declares its op (the JSON tag), visitor rule, negation and SQL template in its class
statement; the visitors' abstract rules, JSON reading, printing and ``~`` all derive from that. The
first tests show the registries cannot disagree and that a visitor missing a rule fails when it is
defined. The parametrized tests then take every leaf found in the class hierarchy (not in the
registry, so a new leaf is tested with no change here) and, on random tables of rows per file
(NULLs, NaN, degraded stats and bloom filters, from ``property_tests.strategies``), check that it
prints and parses back, survives JSON, is its own double negation, and prunes soundly.
"""

from __future__ import annotations

import gc
import re
import types
from collections import Counter
from collections.abc import Iterator
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import hudi_expr as hx
from adapters.duckdb import parse_predicate
from hudi_expr import expressions
from hudi_expr.errors import BindError
from hudi_expr.expressions import (
    LiteralPredicate,
    Predicate,
    SetPredicate,
    UnaryPredicate,
    leaf_class,
    leaf_classes,
)
from hudi_expr.inclusive import InclusiveEvaluator
from hudi_expr.serde import from_dict, to_dict
from hudi_expr.statsview import StatsEvaluator, StatsView
from hudi_expr.strict import StrictEvaluator
from hudi_expr.visitors import PredicateVisitor, visit
from property_tests.checks import check_sound_and_strict, describe
from property_tests.oracle import evaluate
from property_tests.strategies import Case, Leaf, cases, in_list, literals, prefixes


def _hierarchy_leaves() -> list[type[Predicate]]:
    """Every final subclass of ``Predicate``: found by walking the hierarchy, not the registry."""
    found: list[type[Predicate]] = []
    stack: list[type[Predicate]] = [Predicate]
    while stack:
        cls = stack.pop()
        subclasses = cls.__subclasses__()
        if not subclasses and cls is not Predicate:
            found.append(cls)
        stack.extend(subclasses)
    return sorted(found, key=lambda cls: cls.__name__)


LEAVES = _hierarchy_leaves()
# Each example builds a table and asks DuckDB; leaves that fit few column types reject some.
SLOW = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
KINDS = (UnaryPredicate, LiteralPredicate, SetPredicate)


def _sample(cls: type[Predicate]) -> Predicate:
    """One instance of a leaf class, built from its kind's constructor arguments."""
    if issubclass(cls, UnaryPredicate):
        leaf: Any = cls("a")
    elif issubclass(cls, SetPredicate):
        leaf = cls("a", ["x", "y"])
    elif issubclass(cls, LiteralPredicate):
        leaf = cls("a", "x")
    else:
        pytest.fail(f"{cls.__name__} is of a kind this test cannot build: add it to _sample and _leaves_on")
    assert type(leaf) is cls
    return leaf


def _visitors(base: type[Any]) -> Iterator[type[Any]]:
    """Every subclass of ``base``, at any depth."""
    stack = list(base.__subclasses__())
    while stack:
        cls = stack.pop()
        yield cls
        stack.extend(cls.__subclasses__())


# ------------------------------------------------------------------------- one declaration


def test_the_hierarchy_holds_exactly_the_declared_leaves() -> None:
    exported = [getattr(hx, name) for name in hx.__all__]
    public = {c for c in exported if isinstance(c, type) and issubclass(c, Predicate) and c is not Predicate}
    assert public <= set(LEAVES)  # the discovery finds at least the leaves hudi_expr exports
    assert set(LEAVES) == set(leaf_classes())
    for cls in LEAVES:
        assert issubclass(cls, KINDS), cls
        assert {"op", "visitor_method", "sql_template", "_negation"} <= set(vars(cls)), cls


def test_declarations_agree_with_each_other() -> None:
    assert len({cls.op for cls in LEAVES}) == len(LEAVES)
    assert len({cls.visitor_method for cls in LEAVES}) == len(LEAVES)
    for cls in LEAVES:
        leaf = _sample(cls)
        negation = leaf.negation
        assert cls.negation is negation  # on the class too
        assert negation in LEAVES and negation is not cls
        assert _sample(negation).negation is cls  # a negation pair names each other
        assert [k for k in KINDS if issubclass(cls, k)] == [k for k in KINDS if issubclass(negation, k)]
        assert type(~leaf) is negation
        assert leaf_class(cls.op) is cls


def test_registries_are_derived_from_the_declarations() -> None:
    """Visitor rules, dispatch, JSON tags and printing all read the declaration."""
    assert PredicateVisitor.__abstractmethods__ == {cls.visitor_method for cls in LEAVES}
    calls: list[tuple[str, tuple[Any, ...]]] = []

    def rule(name: str) -> Any:
        return lambda self, *args: calls.append((name, args))

    namespace = {cls.visitor_method: rule(cls.visitor_method) for cls in LEAVES}
    recorder = types.new_class("Recorder", (PredicateVisitor[None],), {}, lambda ns: ns.update(namespace))
    for cls in LEAVES:
        leaf = _sample(cls)
        calls.clear()
        visit(leaf, recorder())
        assert calls == [(cls.visitor_method, leaf.args)]
        assert to_dict(leaf)["op"] == cls.op
        assert type(from_dict(to_dict(leaf))) is cls
        fields = {"column": "a", "value": "'x'", "values": "'x', 'y'", "prefix_column": "a", "prefix": "'x'"}
        assert str(leaf) == cls.sql_template.format(**fields)
    with pytest.raises(
        hx.ExpressionFormatError, match=re.escape(f"known: {sorted(cls.op for cls in LEAVES)}")
    ):
        hx.from_json('{"op": "between", "column": "a"}')


def test_every_visitor_in_the_library_has_every_rule() -> None:
    complete = [cls for cls in _visitors(PredicateVisitor) if not cls.__abstractmethods__]
    assert {InclusiveEvaluator, StrictEvaluator} <= set(complete)
    assert "_RowFilter" in {cls.__name__ for cls in complete}
    partial = [cls for cls in _visitors(PredicateVisitor) if cls.__abstractmethods__]
    assert StatsEvaluator in partial  # writes no rule: a base for the two evaluators


def test_a_visitor_missing_a_rule_fails_when_defined() -> None:
    all_but_not_in = {cls.visitor_method: (lambda self, *args: 0) for cls in LEAVES if cls is not hx.NotIn}
    with pytest.raises(TypeError, match=r"MissingNotIn has no rule for visit_not_in \(NotIn\)"):
        types.new_class("MissingNotIn", (PredicateVisitor[int],), {}, lambda ns: ns.update(all_but_not_in))

    with pytest.raises(TypeError, match=r"no rule for .*visit_is_not_null \(IsNotNull\)"):

        class OnlyNulls(PredicateVisitor[int]):
            def visit_is_null(self, term: Any) -> int:
                return 1

    # A subclass of a complete visitor inherits every rule and may override one.
    class Tweaked(InclusiveEvaluator):
        def visit_is_null(self, term: Any) -> Any:
            return super().visit_is_null(term)

    assert not Tweaked.__abstractmethods__

    # A base writing no rule is allowed, but cannot be instantiated: still before any leaf is visited.
    class NoRules(StatsEvaluator):
        unknown = True

    stats = hx.FileStats.from_pylist([{"file": "f", "row_count": 1}], pa.schema([]))
    with pytest.raises(TypeError, match="abstract"):
        NoRules(StatsView(stats))

    # A base writing only some rules says so; its subclasses are checked again.
    class Half(PredicateVisitor[int], abstract=True):
        def visit_is_null(self, term: Any) -> int:
            return 1

    with pytest.raises(TypeError, match="visit_in"):

        class StillHalf(Half):
            def visit_is_not_null(self, term: Any) -> int:
                return 2

    rest = {cls.visitor_method: (lambda self, *args: 3) for cls in LEAVES if cls is not hx.IsNull}
    whole = types.new_class("Whole", (Half,), {}, lambda ns: ns.update(rest))
    assert visit(hx.col("a").is_null(), whole()) == 1
    assert visit(hx.col("a") > 1, whole()) == 3


def test_leaves_are_declared_once_and_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A leaf declared late, a subclass of a leaf, and malformed declarations are refused."""
    try:
        with pytest.raises(TypeError, match=r"declared after hudi_expr\.expressions was loaded"):

            class Late(LiteralPredicate, op="late", visitor="visit_late", negation="Late2", sql="{column}"):
                __slots__ = ()

        with pytest.raises(TypeError, match="final"):

            class Equal2(hx.EqualTo):
                __slots__ = ()

        # Reopened for the checks on the declaration itself (none of these is recorded).
        monkeypatch.setattr(expressions, "_declarations_closed", False)
        bad: list[tuple[str, dict[str, str], str]] = [
            ("duplicate op", {"op": "lt"}, "op 'lt' is already declared by LessThan"),
            ("duplicate rule", {"visitor": "visit_in"}, "'visit_in' is already declared by In"),
            ("unknown placeholder", {"sql": "{column} ~ {values}"}, r"may use only"),
            ("format spec", {"sql": "{column:>5}"}, r"may use only"),
            ("own negation", {"negation": "Bad"}, "its own negation"),
            ("unpaired negation", {"negation": "EqualTo"}, "names each other"),
            ("missing sql", {"sql": ""}, r"missing \['sql'\]"),
        ]
        for _, change, message in bad:
            declaration = {"op": "bad", "visitor": "visit_bad", "negation": "NotBad", "sql": "{column}"}
            declaration.update(change)
            with pytest.raises(TypeError, match=message):
                types.new_class("Bad", (LiteralPredicate,), declaration, lambda ns: ns.update(__slots__=()))
        with pytest.raises(TypeError, match="must derive from"):
            types.new_class(
                "Kindless", (Predicate,), {"op": "k", "visitor": "visit_k", "negation": "X", "sql": "k"}
            )
        assert set(leaf_classes()) == set(LEAVES)
    finally:
        gc.collect()  # the refused classes leave Predicate.__subclasses__()
    assert _hierarchy_leaves() == LEAVES


# --------------------------------------------------------------- every leaf, end to end


def _literals(case: Case, column: Leaf) -> st.SearchStrategy[Any]:
    """Literals for a column: near its data, at its type's ends, and prefixes of its text."""
    if column.kind in ("string", "binary"):
        return st.one_of(literals(case, column), prefixes(case, column))
    return literals(case, column)


def _leaves_on(cls: type[Predicate], case: Case, column: Leaf) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` on ``column``, through the constructor its kind declares."""
    if issubclass(cls, UnaryPredicate):
        return st.just(cls(column.path))
    if issubclass(cls, SetPredicate):
        values = st.lists(_literals(case, column), min_size=2, max_size=5)
        return values.map(lambda vs: cls(column.path, in_list(column.type, vs)))
    if issubclass(cls, LiteralPredicate):
        return _literals(case, column).map(lambda v: cls(column.path, v))
    raise AssertionError(f"{cls.__name__} is of a kind this test cannot build: add it to _leaves_on")


def _duckdb_truth(case: Case, leaf: Predicate) -> list[bool | None] | None:
    """The leaf's value on every row per DuckDB, or None where DuckDB cannot evaluate it on this
    table (isnan takes numbers, starts_with text: a binder error)."""
    try:
        return evaluate(case.table, [str(leaf)])[1][0]
    except duckdb.BinderException:
        return None


@st.composite
def leaf_cases(
    draw: st.DrawFn, cls: type[Predicate], seek_match: bool = True, **case_options: Any
) -> tuple[Case, Predicate]:
    """A random table split into files, and a leaf of class ``cls`` on one of its columns that
    binds and that DuckDB can evaluate. With ``seek_match``, half the time one that some row
    matches, looked for in up to ``_TRIES`` tables (so soundness is tested on files that must be
    kept, even for isnan, whose NaN rows are rare)."""
    want_match = seek_match and draw(st.booleans())
    found: tuple[Case, Predicate] | None = None
    for _ in range(_TRIES if want_match else 1):
        case = draw(cases(**case_options))
        for column in draw(st.permutations(case.leaves)):
            leaf = draw(_leaves_on(cls, case, column))
            if type(leaf) is not cls:
                continue  # IN of one value is =
            try:
                leaf.bind(case.schema)
            except BindError:
                continue  # starts_with on a number
            truth = _duckdb_truth(case, leaf)
            if truth is None:
                continue
            if not want_match or True in truth:
                return case, leaf
            found = found or (case, leaf)
    if found is None:
        reject()
    return found


_TRIES = 10


def _parses_back(leaf: Predicate, case: Case) -> None:
    """str(leaf) read by the DuckDB adapter is the leaf, or binds to the same (1.5 reads as DECIMAL)."""
    parsed = parse_predicate(str(leaf), schema=case.schema)
    if parsed == leaf:
        return
    if isinstance(leaf, LiteralPredicate) and "starts_with(hex(" in str(leaf):
        # Known gap: a binary prefix prints as starts_with(hex(c), 'HEX') (DuckDB's starts_with
        # takes no BLOB), which adapters.duckdb does not read back: it becomes TRUE, untranslatable,
        # which prunes nothing and so stays sound. Once the adapter reads it, this branch goes unused.
        assert parsed == hx.AlwaysTrue(), f"{leaf} parses as {parsed!r}"
        return
    assert parsed.bind(case.schema) == leaf.bind(case.schema), f"{leaf!r} printed {leaf} parses as {parsed!r}"


@pytest.mark.parametrize("cls", LEAVES, ids=lambda cls: cls.__name__)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=SLOW)
@given(data=st.data())
def test_prints_parses_serializes_and_negates(cls: type[Predicate], data: st.DataObject) -> None:
    case, leaf = data.draw(leaf_cases(cls, seek_match=False, max_files=2, max_rows=3))
    _parses_back(leaf, case)
    assert hx.from_json(hx.to_json(leaf)) == leaf
    negated = ~leaf
    assert type(negated) is leaf.negation
    assert ~negated == leaf


@pytest.mark.parametrize("cls", LEAVES, ids=lambda cls: cls.__name__)
def test_pruning_is_sound_against_duckdb(cls: type[Predicate]) -> None:
    """might_match keeps every file where DuckDB finds a matching row; all_match is never wrong."""
    counts: Counter[str] = Counter()

    @settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=SLOW)
    @given(example=leaf_cases(cls))
    def prop(example: tuple[Case, Predicate]) -> None:
        case, leaf = example
        describe(case, leaf)
        files, (truth,) = evaluate(case.table, [str(leaf)])
        might, every = check_sound_and_strict(case.stats, leaf, files, truth, case.num_files)
        counts["examples"] += 1
        nonempty = [f for f in range(case.num_files) if case.row_counts[f]]
        counts["a row matches"] += any(v is True for v in truth)
        counts["pruned a non-empty file"] += any(not might[f] for f in nonempty)
        counts["all_match on a non-empty file"] += any(every[f] for f in nonempty)

    prop()
    print(cls.__name__, dict(counts))
    # Not vacuous: some files had to be kept, and some could be pruned.
    assert counts["a row matches"] >= 1, counts
    assert counts["pruned a non-empty file"] >= 1, counts
