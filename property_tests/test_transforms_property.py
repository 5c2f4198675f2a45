"""Monotonic functions of a column (``hudi_expr.transforms``) against DuckDB, file by file.

Real parquet files are written by pyarrow from random rows with NULLs, NaN, infinities, negative
numbers, dates before 1970 and integers at the edges of their types (where ``i + 1`` overflows and
DuckDB raises). A random predicate over ``year(d)``, ``date_trunc(unit, ts)``, ``CAST``, ``x + c``,
``x * c`` (negative ``c`` too) and ``left(s, n)``, with constants DuckDB folds, is written as SQL,
translated by the DuckDB adapter and evaluated on the files' statistics. DuckDB is the oracle:

1. a file with a row where DuckDB says the predicate is TRUE is kept by ``might_match``;
2. where ``all_match`` says every row matches, DuckDB counts every row;
3. the row filter (``to_pyarrow``) keeps exactly DuckDB's rows when the whole predicate translated;
4. over the run, the functions do prune (the rules are not vacuous).

A file on which DuckDB raises (overflow) is not checked: the query fails whatever is pruned.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import hudi_expr as hx
from adapters.duckdb.parse import translate_sql
from hudi_expr.errors import BindError
from hudi_expr.stats import FileStats

SCHEMA = pa.schema(
    [
        ("i", pa.int32()),
        ("b", pa.int64()),
        ("q", pa.decimal128(15, 2)),
        ("f", pa.float32()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("s", pa.string()),
    ]
)
I32 = (-(2**31), 2**31 - 1)
I64 = (-(2**63), 2**63 - 1)
WORDS = ["", "a", "ab", "abc", "b", "ba", "é", "éa", "z", "zz", "A", "\U0001f600x", "a\U0001f600"]
FILES = 14
ROWS = 40


def _rows(rng: np.random.Generator, center: int, spread: int) -> dict[str, list[Any]]:
    """One file's rows: values around ``center`` (so files have distinct ranges), some NULL."""

    def maybe(values: list[Any]) -> list[Any]:
        return [None if rng.random() < 0.1 else v for v in values]

    ints = [int(center + rng.integers(-spread, spread + 1)) for _ in range(ROWS)]
    day0 = dt.date(1969, 6, 1) + dt.timedelta(days=center * 37)
    floats = [float(v) / 4 for v in ints]
    specials = [float("nan"), float("inf"), float("-inf"), -0.0]
    return {
        "i": maybe(ints),
        "b": maybe([v * 1_000_003 for v in ints]),
        "q": maybe([decimal.Decimal(v) / 100 for v in ints]),
        "f": maybe([specials[k % 4] if rng.random() < 0.1 else floats[k] for k, _ in enumerate(ints)]),
        "d": maybe([day0 + dt.timedelta(days=int(rng.integers(0, 20))) for _ in range(ROWS)]),
        "ts": maybe(
            [
                dt.datetime.combine(day0, dt.time()) + dt.timedelta(minutes=int(rng.integers(0, 5000)))
                for _ in range(ROWS)
            ]
        ),
        "s": maybe([WORDS[(center + int(rng.integers(0, 3))) % len(WORDS)] for _ in range(ROWS)]),
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], FileStats]:
    rng = np.random.default_rng(20261123)
    root = tmp_path_factory.mktemp("transforms")
    paths = []
    for k in range(FILES):
        rows = _rows(rng, center=k * 10 - 60, spread=6)
        if k == FILES - 2:  # integers at the edges of their types: i + 1 and b * 2 overflow here
            rows["i"] = [I32[1], I32[1] - 1, None, I32[0], I32[0] + 1] * (ROWS // 5)
            rows["b"] = [I64[1], I64[1] - 3, None, I64[0], 5] * (ROWS // 5)
        if k == FILES - 1:  # only NaN and NULL floats
            rows["f"] = [float("nan"), None] * (ROWS // 2)
        path = Path(root) / f"part-{k:02d}.parquet"
        pq.write_table(pa.table(rows, schema=SCHEMA), path, row_group_size=ROWS)
        paths.append(str(path))
        TABLES[str(path)] = pq.read_table(path)
    return paths, FileStats.from_parquet(paths, SCHEMA)


OPS = ["=", "<>", "<", "<=", ">", ">="]


@st.composite
def leaf(draw: st.DrawFn) -> str:
    op = draw(st.sampled_from(OPS))
    n = draw(st.integers(-80, 80))
    templates = [
        f"i + {draw(st.sampled_from(['1', '-7', '2 * 3', '1000000']))} {op} {n}",
        f"i - 3 {op} {n}",
        f"i * {draw(st.sampled_from(['2', '-3', '0', '-1']))} {op} {n}",
        f"-i {op} {n}",
        f"b * {draw(st.sampled_from(['2', '-2']))} {op} {n * 1_000_003}",
        f"q * {draw(st.sampled_from(['2', '-1.5', '0.01']))} {op} {n / 100}",
        f"q + {draw(st.sampled_from(['0.25', '-1']))} {op} {n / 50}",
        f"CAST(i AS BIGINT) {op} {n}",
        f"CAST(i AS DOUBLE) {op} {n / 3}",
        f"CAST(q AS DOUBLE) {op} {n / 100}",
        f"CAST(q AS DECIMAL(20, 4)) {op} {n / 100}",
        f"CAST(f AS DOUBLE) {op} {draw(st.sampled_from([str(n / 4), repr(0.1), _NAN, _INF]))}",
        f"year(d) {op} {1969 + n // 8}",
        f"extract(year FROM ts) {op} {1969 + n // 8}",
        f"date_trunc('{draw(st.sampled_from(['month', 'week', 'quarter', 'year']))}', d) {op} "
        f"DATE '1969-06-01' + INTERVAL {abs(n) * 9} DAY",
        f"date_trunc('{draw(st.sampled_from(['hour', 'day', 'month']))}', ts) {op} "
        f"TIMESTAMP '1969-06-01 00:00:00' + INTERVAL {abs(n) * 7} DAY",
        f"CAST(ts AS DATE) {op} DATE '1969-06-01' + {abs(n) * 5}",
        f"CAST(d AS TIMESTAMP) {op} TIMESTAMP '1969-06-01 12:00:00' + INTERVAL {abs(n) * 5} DAY",
        f"left(s, {draw(st.integers(1, 2))}) {op} '{draw(st.sampled_from(WORDS))}'",
        f"substr(s, 1, 1) IN ('a', '{draw(st.sampled_from(WORDS))}')",
        f"year(d) BETWEEN 1960 + {abs(n) // 10} AND 1970 + {abs(n) // 10}",
        "(i * 2) IS NULL",
    ]
    return draw(st.sampled_from(templates))


_NAN = "CAST('NaN' AS DOUBLE)"
_INF = "CAST('Infinity' AS DOUBLE)"


@st.composite
def predicate(draw: st.DrawFn) -> str:
    parts = draw(st.lists(leaf(), min_size=1, max_size=3))
    if len(parts) == 1:
        text = parts[0]
    else:
        text = f" {draw(st.sampled_from(['AND', 'OR']))} ".join(f"({p})" for p in parts)
    return f"NOT ({text})" if draw(st.booleans()) and len(parts) == 1 else text


_seen: Counter[str] = Counter()


@settings(deadline=None)
@given(sql=predicate())
def test_functions_of_columns_prune_soundly(files: tuple[list[str], FileStats], sql: str) -> None:
    paths, stats = files
    translation = translate_sql(sql)
    try:
        bound = translation.expr.bind(SCHEMA)
    except BindError:
        event("not used: the function does not bind on the column's type")
        return
    keep = hx.might_match(bound, stats).to_pylist()
    every = hx.all_match(bound, stats).to_pylist()
    exact = not translation.not_used
    counts = _duckdb_counts(paths, sql)
    for k, path in enumerate(paths):
        if counts[k] is None:
            event("DuckDB raised on a file (overflow)")
            continue
        matched, total = counts[k]  # type: ignore[misc]
        if matched:
            assert keep[k], (sql, str(bound), path, matched)
        if exact and every[k]:
            assert matched == total, (sql, str(bound), path, matched, total)
        if exact:
            kept = TABLES[path].filter(bound.to_pyarrow()).num_rows
            assert kept == matched, (sql, str(bound), path, kept, matched)
        if not keep[k]:
            _seen["pruned"] += 1
    _seen["examples"] += 1
    if _seen["examples"] >= 60:
        # Not vacuous: over the run, files are pruned by these predicates.
        assert _seen["pruned"] > 0


TABLES: dict[str, pa.Table] = {}
_CON = duckdb.connect()


def _duckdb_counts(paths: list[str], sql: str) -> list[tuple[int, int] | None]:
    """Per file, (rows where ``sql`` is TRUE, rows), or None where DuckDB raises on that file.

    ``can_have_nan``: DuckDB 2.0's own row-group pruning otherwise skips NaN rows (#25521)."""
    query = (
        f"SELECT filename, count(*) FILTER (WHERE {sql}), count(*) "
        "FROM read_parquet(?, filename = true, can_have_nan = true) GROUP BY filename"
    )
    try:
        rows = {name: (m, n) for name, m, n in _CON.execute(query, [paths]).fetchall()}
        return [rows.get(p, (0, 0)) for p in paths]
    except duckdb.OutOfRangeException:
        out: list[tuple[int, int] | None] = []
        for p in paths:
            try:
                [(_, m, n)] = _CON.execute(query, [[p]]).fetchall()
                out.append((m, n))
            except duckdb.OutOfRangeException:
                out.append(None)
        return out


def test_functions_prune_known_cases(files: tuple[list[str], FileStats]) -> None:
    paths, stats = files
    schema_check = [
        ("year(d) = 1969", "year"),
        ("CAST(i AS BIGINT) > 60", "widening cast"),
        ("q * -2 > 1.0", "negative factor"),
        ("date_trunc('month', ts) = TIMESTAMP '1970-01-01 00:00:00'", "date_trunc"),
        ("left(s, 1) = 'z'", "prefix"),
    ]
    for sql, what in schema_check:
        bound = translate_sql(sql).expr.bind(SCHEMA)
        keep = hx.might_match(bound, stats).to_pylist()
        matched = [m for m, _ in _duckdb_counts(paths, sql)]  # type: ignore[misc]
        assert all(keep[k] for k, m in enumerate(matched) if m), (what, keep, matched)
        assert not all(keep), f"{what}: {sql} pruned nothing"
