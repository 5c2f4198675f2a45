"""Footer statistics of real parquet files: valid bounds, and sound pruning against DuckDB.

Each generated file is written with pyarrow (row groups of random size, dictionary encoding on or
off, decimals as integers or not) and read back with ``FileStats.from_parquet``; the footer stats
must be true bounds of the data, and pruning with them must keep every file DuckDB finds a match in.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

import hudi_expr as hx
from property_tests.checks import case_and_expression, check_sound_and_strict, describe, plain
from property_tests.oracle import evaluate
from property_tests.strategies import Case, is_nan

WRITE_OPTIONS = st.fixed_dictionaries(
    {
        "row_group_size": st.integers(1, 4),
        "use_dictionary": st.booleans(),
        "store_decimal_as_integer": st.booleans(),
    }
)


def footer_stats(case: Case, options: dict[str, Any]) -> hx.FileStats:
    """Write every file of the case as parquet and read its footer statistics back."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, table in enumerate(case.file_tables):
            path = str(Path(tmp) / f"f{i}.parquet")
            pq.write_table(table, path, **options)
            paths.append(path)
        return hx.FileStats.from_parquet(paths, case.schema)


def check_bounds(case: Case, stats: hx.FileStats) -> None:
    """Known min/max bound the data (SQL order), known counts are exact."""
    assert stats.row_count.to_pylist() == case.row_counts
    for leaf in case.leaves:
        cs = stats.column(leaf.path)
        if cs is None:
            continue
        lows, highs, nulls = plain(cs.min), plain(cs.max), cs.null_count.to_pylist()
        for f, vals in enumerate(case.values[leaf.path]):
            present = [v for v in vals if v is not None and not is_nan(v)]
            if nulls[f] is not None:
                assert nulls[f] == sum(v is None for v in vals), (leaf.path, f, nulls[f])
            if not present:
                continue
            lo, hi = lows[f], highs[f]
            if lo is not None and not (isinstance(lo, float) and math.isnan(lo)):
                assert lo <= min(present), (leaf.path, f, lo, min(present))
            if hi is not None and not (isinstance(hi, float) and math.isnan(hi)):
                assert hi >= max(present), (leaf.path, f, hi, max(present))


@settings(max_examples=max(settings().max_examples // 4, 10))
@given(example=case_and_expression(max_files=4), options=WRITE_OPTIONS)
def test_footer_stats_prune_soundly(example: tuple[Case, hx.Expression], options: dict[str, Any]) -> None:
    case, expr = example
    describe(case, expr)
    stats = footer_stats(case, options)
    check_bounds(case, stats)
    files, (truth,) = evaluate(case.table, [str(expr)])
    check_sound_and_strict(stats, expr, files, truth, case.num_files)
