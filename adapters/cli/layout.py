"""``hudi-index layout``, ``cluster`` and ``advise``: is the table's data layout good for its
queries, and what would fix it. Statistics skip files only when each file holds a narrow range of
the columns queried (RFC-27); these commands measure that from the index, draw it, rewrite a
re-clustered copy, and estimate which clustering a workload wants."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from adapters.cli.support import add_table_arguments, column_list, open_from_args, print_json, require_built
from index_store.clustering import STRATEGIES

__all__ = ["add_layout_commands"]

MAX_PLOTTED = 6  # panels side by side in one picture


def add_layout_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``layout``, ``cluster`` and ``advise`` on the ``hudi-index`` parser."""
    p = sub.add_parser(
        "layout",
        help="how well the table's files are clustered for each column, from the index alone",
        description="For each column, from the index alone: how many files' [min, max] hold a value "
        "inside a file (overlap depth: mean, p50, p99), the expected share of files a point predicate "
        "and a 1%% range keep, and how many files have exact or missing bounds; for each --where, the "
        "files it keeps.",
    )
    add_table_arguments(p)
    p.add_argument("--columns", type=column_list, metavar="COLUMN[,COLUMN...]", help="default: every column")
    p.add_argument(
        "--where",
        action="append",
        metavar="PREDICATE",
        help="SQL or JSON predicate whose kept files to count (repeatable; @FILE reads one from a file)",
    )
    p.add_argument("--plot", metavar="PNG", help="draw each file's [min, max] of the columns into this PNG")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=cmd_layout)

    p = sub.add_parser(
        "cluster",
        help="write a copy of a plain parquet table re-clustered by some columns, and index it",
        description="Write a copy of a plain parquet table with its rows ordered by the columns "
        "(linear) or by a z-order or Hilbert curve of their ranks, in files of about the target size, "
        "index it, and print the layout of the columns before and after. The source is never changed.",
    )
    p.add_argument("table", metavar="TABLE", help="the plain parquet table's folder")
    p.add_argument("--by", required=True, type=column_list, metavar="COLUMN[,COLUMN...]")
    p.add_argument("--strategy", choices=STRATEGIES, default="zorder", help="default: %(default)s")
    p.add_argument(
        "--target-file-mb",
        type=float,
        default=None,
        metavar="MB",
        help="the size of each written file (default: as many files as the source has, and at least "
        "4 per core of 1 MiB or more, so the copy is read as parallel as the source)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="a new (or empty) folder for the copy")
    p.add_argument(
        "--engine",
        choices=("duckdb", "spark"),
        default="duckdb",
        help="duckdb (one machine, the default) or spark (the active session, else local[2])",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=cmd_cluster)

    p = sub.add_parser(
        "advise",
        help="which clustering would make a workload of queries read the fewest files",
        description="For each query of a SQL file: the files it reads now; then, for clusterings by "
        "the columns its predicates use (sorted, z-order, Hilbert), the files the whole workload would "
        "read after `hudi-index cluster`, estimated by re-clustering a sample of the rows.",
    )
    add_table_arguments(p)
    p.add_argument(
        "--workload",
        required=True,
        metavar="FILE",
        help="SQL queries, separated by ';' (- reads standard input)",
    )
    p.add_argument("--name", help="the table's name in the queries (default: the folder's name)")
    p.add_argument("--sample-rows", type=int, default=200_000, metavar="N", help="default: %(default)s")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=cmd_advise)


# ----------------------------------------------------------------------------------------- layout


def cmd_layout(args: argparse.Namespace) -> int:
    from adapters.cli.support import parse_where, read_argument

    table = require_built(open_from_args(args))
    report = table.layout(args.columns)
    kept: list[dict[str, Any]] = []
    for text in args.where or []:
        translation = parse_where(read_argument(text), table.snapshot().schema)
        result = table.prune(translation.expr)
        kept.append(
            {
                "where": text,
                "kept": result.kept,
                "total": result.total,
                "not_used": list(translation.not_used),
            }
        )
    if args.plot:
        columns = report.column("column").to_pylist()
        if len(columns) > MAX_PLOTTED:
            raise ValueError(f"--plot draws at most {MAX_PLOTTED} columns: give them with --columns")
        table.plot_layout(columns, args.plot)
    if args.json:
        print_json({"columns": report.to_pylist(), "where": kept, "plot": args.plot})
        return 0
    print(format_report(report))
    for item in kept:
        share = item["kept"] / item["total"] if item["total"] else 0.0
        print(f"--where {item['where']}: kept {item['kept']:,} of {item['total']:,} files ({share:.1%})")
        for part in item["not_used"]:
            print(f"  not used: {part}")
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def format_report(report: pa.Table) -> str:
    """The layout report as an aligned text table, one line per column."""
    header = (
        "column",
        "files",
        "depth mean",
        "p50",
        "p99",
        "point kept",
        "1% range kept",
        "exact",
        "missing",
    )
    lines = [header]
    for row in report.to_pylist():
        lines.append(
            (
                str(row["column"]),
                f"{row['files']:,}",
                _number(row["depth_mean"]),
                _number(row["depth_p50"]),
                _number(row["depth_p99"]),
                _share(row["point_kept"]),
                _share(row["range_kept"]),
                _share(row["exact_bounds"]),
                _share(row["missing_bounds"]),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    )


def _number(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:,.1f}"


def _share(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.1%}"


# ---------------------------------------------------------------------------------------- cluster


def cmd_cluster(args: argparse.Namespace) -> int:
    if args.engine == "spark":
        from adapters.spark import cluster as engine
    else:
        from adapters.duckdb import cluster as engine  # type: ignore[no-redef]
    result = engine.cluster(args.table, args.out, args.by, args.strategy, args.target_file_mb)
    if args.json:
        print_json(
            {
                "out": result.out,
                "files": result.files,
                "rows": result.rows,
                "seconds": round(result.seconds, 3),
                "before": result.before.to_pylist(),
                "after": result.after.to_pylist(),
            }
        )
        return 0
    print(f"layout of {args.table} (before):")
    print(format_report(result.before))
    print(
        f"\nwrote {result.rows:,} rows in {result.files:,} files to {result.out} "
        f"({args.strategy} by {', '.join(args.by)}, {args.engine}, {result.seconds:.1f} s); indexed"
    )
    print("layout of the copy (after):")
    print(format_report(result.after))
    return 0


# ----------------------------------------------------------------------------------------- advise


def cmd_advise(args: argparse.Namespace) -> int:
    import duckdb

    from adapters.duckdb.advise import advise

    try:
        text = sys.stdin.read() if args.workload == "-" else Path(args.workload).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"--workload {args.workload}: cannot read it: {exc.strerror or exc}") from None
    queries = [s.query.strip() for s in duckdb.extract_statements(text) if s.query.strip()]
    if not queries:
        raise ValueError(f"--workload {args.workload}: no SQL query in it")
    table = require_built(open_from_args(args))
    advice = advise(table, queries, args.name, sample_rows=args.sample_rows)
    if args.json:
        print_json(
            {
                "files": advice.files,
                "sample_rows": advice.sample_rows,
                "queries": [{"query": q.query, "kept": q.kept, "total": q.total} for q in advice.queries],
                "candidates": [
                    {"strategy": c.strategy, "columns": list(c.columns), "files_read": c.files_read}
                    for c in advice.candidates
                ],
            }
        )
        return 0
    print(f"files read now, of {advice.files:,}:")
    for i, q in enumerate(advice.queries, 1):
        now = "does not read the table" if q.kept is None else f"{q.kept:,} of {q.total:,}"
        print(f"  q{i}: {now}  ({_one_line(q.query)})")
    print(f"\nestimated files read by the whole workload ({advice.sample_rows:,} sampled rows re-clustered):")
    for c in advice.candidates:
        what = "as it is now" if c.strategy == "as is" else f"{c.strategy} by {', '.join(c.columns)}"
        print(f"  {c.files_read:>10,}  {what}")
    best = advice.best
    if best.strategy == "as is":
        print("\nadvice: keep the layout; no clustering tried reads fewer files")
    else:
        print(
            f"\nadvice: hudi-index cluster {args.table} --by {','.join(best.columns)} "
            f"--strategy {best.strategy} --out <new folder>"
        )
    return 0


def _one_line(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."
