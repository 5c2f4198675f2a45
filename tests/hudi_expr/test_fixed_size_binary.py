"""Fixed-size binary columns are bytes like any other (``is_binary_like``): prefixes bind, prune and
filter rows as they do on ``binary`` columns."""

from __future__ import annotations

import itertools

import pyarrow as pa

from hudi_expr import FileStats, bind, col, might_match, to_pyarrow

SCHEMA = pa.schema([("f", pa.binary(2))])
VALUES = [bytes(p) for p in itertools.product(b"\x00ab\xff", repeat=2)]


def test_prefixes_on_fixed_size_binary_prune_and_filter_like_on_binary() -> None:
    files = [VALUES[i : i + 3] for i in range(0, len(VALUES), 3)]
    tables = [pa.table({"f": pa.array([*vals, None], pa.binary(2))}) for vals in files]
    stats = FileStats.from_pylist(
        [
            {
                "file": f"f{i}",
                "row_count": len(v) + 1,
                "stats": {"f": {"min": min(v), "max": max(v), "null_count": 1}},
            }
            for i, v in enumerate(files)
        ],
        SCHEMA,
    )
    for prefix in (b"", b"a", b"ab", b"\xff", b"\x00\xff", b"b\x00"):
        for expr in (col("f").starts_with(prefix), ~col("f").starts_with(prefix)):
            bound = bind(expr, SCHEMA)
            keep = might_match(bound, stats).to_pylist()
            for i, table in enumerate(tables):
                rows = table.filter(to_pyarrow(bound, SCHEMA))["f"].to_pylist()
                values = [v for v in table["f"].to_pylist() if v is not None]
                positive = not str(expr).startswith("NOT")
                assert rows == [v for v in values if v.startswith(prefix) == positive], (expr, i)
                assert keep[i] or not rows, (expr, i)  # never pruned while holding a matching row
