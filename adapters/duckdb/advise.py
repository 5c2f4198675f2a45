"""Which clustering a workload wants: for each query of a workload, the files it reads now, and for
each candidate clustering (columns and strategy) an estimate of the files the whole workload would
read after ``hudi-index cluster``.

The estimate re-clusters a sample of the rows the way ``cluster`` would (sorted by the columns, or
by the z-order or Hilbert key of their ranks), cuts it into as many files as the table has, takes
each simulated file's min and max, and prunes every query's predicate with those statistics. The
current layout is estimated the same way from the same sample (its rows grouped by the file they
came from), so the candidates and "as it is" compare like with like; a sample file's range is
narrower than the real file's, so every estimate is a little low, alike for all.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from adapters.duckdb.parse import parse_predicate
from adapters.duckdb.query import plan, register
from hudi_expr import AlwaysTrue, ColumnStats, Expression, FileStats, might_match
from index_store import IndexedTable, open_table
from index_store.clustering import STRATEGIES, Strategy
from index_store.curves import curve_keys
from index_store.tables.rows import require_file_reads

__all__ = ["Advice", "Candidate", "QueryReads", "advise"]

SAMPLE_ROWS = 200_000


@dataclass(frozen=True)
class QueryReads:
    """One query of the workload: the files it reads now (``kept`` of ``total``; None: it does not
    read the table) and the predicate on the table that estimates use."""

    query: str
    kept: int | None
    total: int
    predicate: Expression


@dataclass(frozen=True)
class Candidate:
    """A clustering and the files the workload would read after it (estimated, summed)."""

    strategy: Strategy | Literal["as is"]  # "as is": the current layout
    columns: tuple[str, ...]
    files_read: int
    per_query: tuple[int, ...]


@dataclass(frozen=True)
class Advice:
    queries: list[QueryReads]
    candidates: list[Candidate]  # best first; the current layout is one of them ("as is")
    sample_rows: int
    files: int

    @property
    def best(self) -> Candidate:
        return self.candidates[0]


def advise(
    table: IndexedTable | str | os.PathLike[str],
    workload: Sequence[str],
    name: str | None = None,
    *,
    candidates: Sequence[tuple[Strategy, Sequence[str]]] | None = None,
    sample_rows: int = SAMPLE_ROWS,
    max_columns: int = 2,
) -> Advice:
    """Estimate, for the queries ``workload`` (SQL reading the table as ``name``, default its folder's
    name), the files each clustering would make them read. ``candidates``: (strategy, columns) pairs
    to weigh; default every order of up to ``max_columns`` of the columns the predicates use most,
    sorted (linear), and every set of two or more of them on each curve."""
    indexed = table if isinstance(table, IndexedTable) else open_table(table)
    require_file_reads(indexed.reader, "advising a clustering (it samples rows)")
    name = name or os.path.basename(indexed.root.rstrip("/"))
    con = duckdb.connect()
    register(con, name, indexed)
    schema = indexed.snapshot().schema
    reads = [_reads(con, query, name, schema) for query in workload]
    if not reads:
        raise ValueError("the workload has no query")
    orderable = {f.name for f in schema if not pa.types.is_nested(f.type)}
    used = Counter(c for r in reads for c in set(r.predicate.references()) if c in orderable)
    columns = [c for c, _ in used.most_common()]
    if candidates is None:
        candidates = _candidates(columns[:3], max_columns)
    needed = sorted({c for _, cols in candidates for c in cols} | set(columns))
    files = indexed.stats([], with_blooms=False).num_files
    sample = _sample(con, indexed, needed, sample_rows)
    current = _estimate(reads, _by_source_file(sample, needed), "as is", ())
    estimated = [current] + [
        _estimate(reads, _simulated(sample, list(cols), strategy, files), strategy, tuple(cols))
        for strategy, cols in candidates
    ]
    estimated.sort(key=lambda c: (c.files_read, c.strategy == "as is", len(c.columns)))
    return Advice(reads, estimated, sample.num_rows, files)


def _reads(con: duckdb.DuckDBPyConnection, query: str, name: str, schema: pa.Schema) -> QueryReads:
    planned = plan(con, query)
    mine = [t for t in planned.tables if t.name.lower() == name.lower()]
    if not mine:
        return QueryReads(query, None, 0, AlwaysTrue())
    parts: list[Expression] = []
    for t in mine:
        text = " AND ".join(f"({u})" for u in t.used)
        parts.append(parse_predicate(text, {t.alias}, schema) if text else AlwaysTrue())
    # A table read twice (a self-join) counts both reads; the estimate takes the first's predicate.
    return QueryReads(query, sum(t.kept for t in mine), sum(t.total for t in mine), parts[0])


def _candidates(columns: list[str], max_columns: int) -> list[tuple[Strategy, tuple[str, ...]]]:
    found: list[tuple[Strategy, tuple[str, ...]]] = []
    for size in range(1, min(max_columns, len(columns)) + 1):
        found += [("linear", order) for order in itertools.permutations(columns, size)]
    for size in range(2, min(max_columns, len(columns)) + 1):
        for chosen in itertools.combinations(columns, size):
            found += [(strategy, chosen) for strategy in STRATEGIES if strategy != "linear"]
    return found


def _sample(con: duckdb.DuckDBPyConnection, table: IndexedTable, columns: list[str], rows: int) -> pa.Table:
    """Up to ``rows`` rows of ``columns``, drawn at random (repeatably), with each row's file."""
    files = [os.path.join(table.root, f.path) for f in table.reader.list_files()]
    hive = "true" if table.reader.folder_columns() else "false"
    picked = ", ".join(f'"{c}"' for c in columns)
    source = f"read_parquet(?, filename = true, union_by_name = true, hive_partitioning = {hive})"
    return con.sql(
        f'SELECT filename AS "__file", {picked} FROM {source} USING SAMPLE reservoir({int(rows)} ROWS) '
        "REPEATABLE (7)",
        params=[files],
    ).to_arrow_table()


def _by_source_file(sample: pa.Table, columns: list[str]) -> FileStats:
    file_of = pc.dictionary_encode(sample.column("__file").combine_chunks()).indices
    return _file_stats(sample, columns, np.asarray(file_of, dtype=np.int64))


def _simulated(
    sample: pa.Table, by: list[str], strategy: Strategy | Literal["as is"], files: int
) -> FileStats:
    """The sample re-clustered as ``cluster`` would write it, in ``files`` equal parts."""
    if strategy == "linear":
        order = pc.sort_indices(sample, sort_keys=[(c, "ascending", "at_start") for c in by])
    else:
        order = pa.array(np.argsort(curve_keys(strategy, [sample.column(c) for c in by]), kind="stable"))
    ordered = sample.take(order)
    part = (np.arange(ordered.num_rows, dtype=np.int64) * files) // max(ordered.num_rows, 1)
    return _file_stats(ordered, [c for c in sample.column_names if c != "__file"], part)


def _file_stats(table: pa.Table, columns: list[str], part: np.ndarray) -> FileStats:
    """Per part: min, max and NULL count of each column, as the statistics of one file each."""
    grouped = table.append_column("__part", pa.array(part)).group_by("__part", use_threads=False)
    aggregated = grouped.aggregate(
        [(c, "min") for c in columns]
        + [(c, "max") for c in columns]
        + [(c, "count", pc.CountOptions(mode="only_null")) for c in columns]
        + [("__part", "count")]
    ).sort_by("__part")
    stats = {}
    for c in columns:
        kind = table.schema.field(c).type
        # NaN is left unknown (None): min and max of a float column skip NaN, and so does pruning.
        stats[c] = ColumnStats(
            min=aggregated.column(f"{c}_min").combine_chunks().cast(kind),
            max=aggregated.column(f"{c}_max").combine_chunks().cast(kind),
            null_count=aggregated.column(f"{c}_count").combine_chunks().cast(pa.int64()),
            nan_count=pa.nulls(aggregated.num_rows, pa.int64()),
        )
    names = [f"part-{i}" for i in aggregated.column("__part").to_pylist()]
    fields = pa.schema([table.schema.field(c) for c in columns])
    return FileStats(names, aggregated.column("__part_count").combine_chunks(), stats, fields)


def _estimate(
    reads: list[QueryReads], stats: FileStats, strategy: Strategy | Literal["as is"], columns: tuple[str, ...]
) -> Candidate:
    per_query = []
    for r in reads:
        if r.kept is None:
            per_query.append(0)
            continue
        present = all(c in stats.columns for c in r.predicate.references())
        kept = might_match(r.predicate, stats) if present else None
        per_query.append(stats.num_files if kept is None else int(pc.sum(kept).as_py() or 0))
    return Candidate(strategy, columns, sum(per_query), tuple(per_query))
