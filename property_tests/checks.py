"""Checks shared by the property suites: the oracle's verdict against might_match/all_match."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import note
from hypothesis import strategies as st

import hudi_expr as hx
from property_tests.strategies import Case, cases, expressions

__all__ = ["case_and_expression", "check_sound_and_strict", "describe", "plain"]


@st.composite
def case_and_expression(draw: st.DrawFn, **case_options: Any) -> tuple[Case, hx.Expression]:
    case = draw(cases(**case_options))
    return case, draw(expressions(case))


def plain(arr: pa.Array) -> list[Any]:
    """Raw values as the strategies keep them: dates and timestamps as their integers."""
    if pa.types.is_timestamp(arr.type):
        return arr.view(pa.int64()).to_pylist()  # nanoseconds do not fit a datetime
    if pa.types.is_date32(arr.type):
        return arr.view(pa.int32()).to_pylist()
    return arr.to_pylist()


def describe(case: Case, expr: hx.Expression) -> None:
    """Notes printed with a falsifying example: the SQL and the stats handed to the library."""
    note(f"expr: {expr}")
    note(f"bound: {expr.bind(case.schema)}")
    note(f"schema: {case.schema}")
    note(f"row counts: {case.row_counts}, bloom on: {case.bloom_column}")
    for name, cs in case.stats.columns.items():
        note(
            f"stats {name}: min={plain(cs.min)} max={plain(cs.max)} "
            f"nulls={cs.null_count.to_pylist()} nans={cs.nan_count.to_pylist()}"
        )
    note(f"row counts given: {case.stats.row_count.to_pylist()}")
    for leaf in case.leaves:
        note(f"values {leaf.path}: {case.values[leaf.path]}")


def check_sound_and_strict(
    stats: hx.FileStats, expr: hx.Expression, files: list[int], truth: list[bool | None], num_files: int
) -> tuple[list[bool], list[bool]]:
    """Properties 1 and 2 for one stats object; returns the masks."""
    might = hx.might_match(expr, stats).to_pylist()
    every = hx.all_match(expr, stats).to_pylist()
    assert len(might) == len(every) == num_files
    for f in range(num_files):
        mine = [v for v, g in zip(truth, files, strict=True) if g == f]
        if any(v is True for v in mine):
            assert might[f] is True, f"might_match pruned file {f}, where DuckDB matches a row"
        if every[f]:
            assert all(v is True for v in mine), f"all_match says every row of file {f} matches: {mine}"
    return might, every
