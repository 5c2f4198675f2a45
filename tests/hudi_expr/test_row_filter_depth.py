"""Row filters handed to pyarrow stay shallow: deep AND/OR nests are flattened and rebalanced, and a
filter still too deep raises ``ExpressionTooDeepError`` instead of crashing pyarrow (issue 21).

pyarrow's evaluator overflows its C++ stack (a segmentation fault) on expressions about 8,500
levels deep, so the deep cases run in a subprocess: a crash there fails the test, not pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_expr.rows
from hudi_expr import Expression, ExpressionTooDeepError, HudiExprError, col, to_pyarrow
from index_store import open_table

ROOT = Path(__file__).resolve().parents[2]

# A 10,000-deep alternating AND/OR nest (nothing flattens) evaluated through every path that hands
# a row filter to pyarrow: to_pyarrow + Table.filter, a dataset scan, the pyarrow adapter's
# to_pyarrow and IndexedTable.read (whose rows also pass the residual filter of the secondary-index
# read). Prints the kept values per path and the nesting of the pyarrow expression's text.
_DEEP_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa, pyarrow.dataset as ds, pyarrow.parquet as pq
    import adapters.pyarrow
    from hudi_expr import col
    from index_store import open_table

    n, root = int(sys.argv[1]), sys.argv[2]
    e = col("a") == 0
    for i in range(1, n):
        e = (e & (col("a") != i)) if i % 2 else (e | (col("a") == i))
    values = [*range(0, 3 * n, 7), None]
    table = pa.table({"a": pa.array(values, pa.int64()), "b": pa.array(range(len(values)), pa.int64())})
    half = len(values) // 2
    pq.write_table(table.slice(0, half), f"{root}/f0.parquet")
    pq.write_table(table.slice(half), f"{root}/f1.parquet")
    t = open_table(root)
    t.build(progress=False)
    t.create_index("a")
    t.build_index(progress=False)
    f = e.to_pyarrow(table.schema)
    depth = level = 0
    for ch in str(f):
        level += ch == "("
        level -= ch == ")"
        depth = max(depth, level)
    out = {
        "filter": table.filter(f)["a"].to_pylist(),
        "dataset": ds.dataset(f"{root}").to_table(filter=f)["a"].to_pylist(),
        "adapter": table.filter(adapters.pyarrow.to_pyarrow(e, table.schema))["a"].to_pylist(),
        "read": sorted(t.read(e)["a"].to_pylist()),
        "depth": depth,
    }
    print(json.dumps(out))
    """
)


def _kleene_spine(values: list[int | None], n: int) -> list[int]:
    """The values kept by the alternating nest of ``_DEEP_SCRIPT``, step by step (a NULL value
    makes every comparison NULL, and so the nest: its row is dropped)."""
    a = np.array([v for v in values if v is not None], dtype=np.int64)
    truth = a == 0
    for i in range(1, n):
        truth = (truth & (a != i)) if i % 2 else (truth | (a == i))
    return a[truth].tolist()


def test_10000_deep_alternating_nest_evaluates_on_every_path(tmp_path: Path) -> None:
    n = 10_000
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _DEEP_SCRIPT, str(n), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, f"exit {done.returncode} (-11 is a segfault): {done.stderr[-2000:]}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
    expected = _kleene_spine([*range(0, 3 * n, 7), None], n)
    assert expected and len(expected) < len(range(0, 3 * n, 7))
    for path in ("filter", "dataset", "adapter", "read"):
        assert sorted(out[path]) == expected, path
    assert out["depth"] < 200  # rebalanced: logarithmic, not 10,000


# ------------------------------------------------------------------ random trees vs. Kleene logic

F, N, T = 0, 1, 2  # Kleene truth values: AND is min, OR is max


def _random_tree(rng: np.random.Generator, steps: int) -> tuple[Expression, list[tuple[str, int, int]]]:
    """A random tree built by a stack machine, biased to long alternating spines with bushy parts
    (and both sides deep now and then). Returns the expression and the program."""
    program: list[tuple[str, int, int]] = []
    stack_size = 0
    for _ in range(steps):
        if stack_size < 2 or rng.random() < 0.45:
            program.append(("leaf", int(rng.integers(0, 6)), int(rng.integers(-3, 30))))
            stack_size += 1
        else:
            program.append((str(rng.choice(["and", "or"])), 0, 0))
            stack_size -= 1
    while stack_size > 1:
        program.append((str(rng.choice(["and", "or"])), 0, 0))
        stack_size -= 1
    return _build(program), program


def _leaf(kind: int, k: int) -> Expression:
    a = col("a")
    return [a == k, a != k, a > k, a <= k, a.isin([k, k + 3, k + 5]), a.is_null()][kind]


def _build(program: list[tuple[str, int, int]]) -> Expression:
    stack: list[Expression] = []
    for op, kind, k in program:
        if op == "leaf":
            stack.append(_leaf(kind, k))
        else:
            right, left = stack.pop(), stack.pop()
            stack.append(left & right if op == "and" else left | right)
    return stack[0]


def _evaluate(program: list[tuple[str, int, int]], a: np.ndarray, valid: np.ndarray) -> np.ndarray:
    stack: list[np.ndarray] = []
    for op, kind, k in program:
        if op == "leaf":
            test = [a == k, a != k, a > k, a <= k, np.isin(a, [k, k + 3, k + 5]), ~valid][kind]
            truth = np.where(test, T, F)
            if kind != 5:
                truth = np.where(valid, truth, N)
            stack.append(truth)
        else:
            right, left = stack.pop(), stack.pop()
            stack.append(np.minimum(left, right) if op == "and" else np.maximum(left, right))
    return stack[0]


def _depth(expr: Expression) -> int:
    best, stack = 0, [(expr, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in node.children)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_random_deep_trees_keep_kleene_logic(seed: int) -> None:
    rng = np.random.default_rng(seed)
    steps = [60, 400, 2500][seed % 3]
    expr, program = _random_tree(rng, steps)
    a = np.arange(-4, 32, dtype=np.int64)
    valid = np.ones(len(a), dtype=bool)
    valid[::7] = False
    table = pa.table({"a": pa.array(a, mask=~valid), "i": np.arange(len(a))})
    expected = np.flatnonzero(_evaluate(program, a, valid) == T).tolist()
    got = table.filter(to_pyarrow(expr, table.schema))["i"].to_pylist()
    assert got == expected, f"depth {_depth(expr)}"
    negated = table.filter(to_pyarrow(~expr, table.schema))["i"].to_pylist()
    assert negated == np.flatnonzero(_evaluate(program, a, valid) == F).tolist()


def test_a_nest_of_deep_spines_on_both_sides() -> None:
    """Both children deep at the top, each a 1,500-deep alternating spine of the other's shape."""

    def spine(offset: int) -> Expression:
        e = col("a") == offset
        for i in range(1, 1500):
            v = offset + i
            e = (e & (col("a") != v)) if i % 2 else (e | (col("a") == v))
        return e

    expr = spine(0) | spine(3000)
    table = pa.table({"a": pa.array([*range(0, 4600, 5), None], pa.int64())})
    got = table.filter(to_pyarrow(expr, table.schema))["a"].to_pylist()
    expected = [v for v in range(0, 4600, 5) if (v < 1499 or 3000 <= v < 4499) and v % 2 == 0]
    assert got == expected


# ------------------------------------------------------------------------ the documented limit


def _nest(n: int) -> Expression:
    e = col("a") == 0
    for i in range(1, n):
        e = (e & (col("a") != i)) if i % 2 else (e | (col("a") == i))
    return e


def test_limit_is_documented_and_below_the_crash() -> None:
    assert hudi_expr.rows.MAX_ROW_FILTER_DEPTH == 1_000
    text = (ROOT / "docs" / "semantics.md").read_text()
    assert "MAX_ROW_FILTER_DEPTH" in text and "1,000" in text


def test_too_deep_raises_a_typed_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Rebalancing keeps every realistic tree far below 1,000 levels; a lowered limit shows the
    # check that runs before any tree reaches pyarrow, on to_pyarrow and on IndexedTable.read.
    monkeypatch.setattr(hudi_expr.rows, "MAX_ROW_FILTER_DEPTH", 8)
    schema = pa.schema([("a", pa.int64())])
    assert to_pyarrow(_nest(2), schema) is not None  # shallow: fine
    with pytest.raises(ExpressionTooDeepError, match=r"nests \d+ levels deep .* the limit is 8") as info:
        to_pyarrow(_nest(3000), schema)
    assert isinstance(info.value, HudiExprError) and isinstance(info.value, ValueError)
    pq.write_table(pa.table({"a": pa.array([1, 2, 3], pa.int64())}), tmp_path / "f.parquet")
    t = open_table(tmp_path)
    t.build(progress=False)
    with pytest.raises(ExpressionTooDeepError, match="the limit is 8"):
        t.read(_nest(3000))
