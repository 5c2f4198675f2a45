"""Reading a partition whose rows are grouped by a ``column`` name (column stats, bloom filters).

Writers put each column's rows in row groups of their own, so loading 2 columns of a 200-column
index reads the few row groups whose ``column`` range holds them, found from the footer alone.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store.partitions.base import open_index_file, read_index_file

__all__ = ["row_groups_holding", "rows_by_column"]


def rows_by_column(
    root: Path, rel: str, expected: pa.Schema, wanted: list[str], read_cols: list[str]
) -> list[tuple[str, pa.Table]]:
    """The rows of each wanted column in one partition file, reading only their row groups.

    A row group holding a single column (its footer min = max = the name) is read without the
    ``column`` strings; one that mixes columns is read with them and filtered.
    """
    single, mixed = _row_groups_by_column(open_index_file(root, rel), wanted)
    out = [
        (name, read_index_file(root, rel, expected, groups, read_cols))
        for name, groups in single.items()
        if groups
    ]
    if mixed:
        rows = read_index_file(root, rel, expected, mixed, ["column", *read_cols])
        for name in wanted:
            picked = rows.filter(pc.equal(rows["column"], name))
            if len(picked):
                out.append((name, picked.drop_columns(["column"])))
    return out


def _row_groups_by_column(pf: pq.ParquetFile, wanted: list[str]) -> tuple[dict[str, list[int]], list[int]]:
    """Which row groups may hold rows of ``wanted`` columns, by the footer's ``column`` range:
    per column, the groups holding only it (min = max = the name), and the groups mixing names."""
    md = pf.metadata
    col_index = pf.schema_arrow.get_field_index("column")
    single: dict[str, list[int]] = {c: [] for c in wanted}
    mixed: list[int] = []
    for r in range(md.num_row_groups):
        st = md.row_group(r).column(col_index).statistics
        if st is None or not st.has_min_max:
            mixed.append(r)
        elif st.min == st.max:
            if st.min in single:
                single[st.min].append(r)
        elif any(st.min <= w <= st.max for w in wanted):
            mixed.append(r)
    return single, mixed


def row_groups_holding(pf: pq.ParquetFile, wanted: list[str]) -> list[int]:
    """All row groups the reader reads for ``wanted`` (for tests and benchmarks)."""
    single, mixed = _row_groups_by_column(pf, wanted)
    return sorted({r for groups in single.values() for r in groups} | set(mixed))
