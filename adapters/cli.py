"""``hudi-index``: build, sync, prune, query, stats, compact and clean a table's metadata index.

It sits above every package (SQL goes through the DuckDB adapter), hence its place here. Errors
print as one line on stderr with a non-zero exit code (2 for bad input, 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from hudi_expr import Expression, HudiExprError, from_json
from index_store import IndexedTable, open_table

__all__ = ["main", "parse_where"]


def parse_where(text: str) -> tuple[Expression, tuple[str, ...]]:
    """A predicate given on the command line, and the parts of it pruning cannot use: SQL
    (through the DuckDB adapter, when installed) or the JSON form of ``hudi_expr.to_json``."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")) or stripped in ("true", "false"):
        return from_json(stripped), ()
    translation = _duckdb("SQL predicates").translate_sql(stripped)
    return translation.expr, translation.not_used


def _duckdb(what: str) -> Any:
    """The DuckDB adapter, imported on first use: the other commands work without DuckDB."""
    try:
        import adapters.duckdb
    except ImportError:
        raise ValueError(
            f"{what} need DuckDB (pip install 'hudi-index[duckdb]'); a --where predicate may be given in "
            'the JSON form instead, e.g. \'{"op": "gt", "column": "a", "value": 5}\''
        ) from None
    return adapters.duckdb


def _table(args: argparse.Namespace) -> IndexedTable:
    return open_table(args.table, index_path=args.index_path)


def _cmd_build(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    table = _table(args)
    blooms = args.bloom if args.bloom else None
    version = table.build(bloom_columns=blooms, fpp=args.fpp, progress=None)
    stats = table.stats(columns=[])
    print(f"built index version {version}: {stats.num_files} files in {time.perf_counter() - t0:.2f} s")
    return 0


def _cmd_sync(args: argparse.Namespace) -> int:
    version = _table(args).sync()
    print("index is up to date" if version is None else f"synced: index version {version}")
    return 0


def _cmd_prune(args: argparse.Namespace) -> int:
    expr, not_used = parse_where(args.where)
    t0 = time.perf_counter()
    result = _table(args).prune(expr, on_corrupt="keep_all" if args.keep_all_on_corrupt else "raise")
    elapsed = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"kept": result.kept, "total": result.total, "files": result.files}))
        return 0
    print(result.explain())
    for part in not_used:
        print(f"  not used for pruning (kept as TRUE): {part}")
    print(f"planned in {elapsed * 1e3:.1f} ms")
    if args.list:
        for f in result.files:
            print(f)
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    duck = _duckdb("SQL queries")
    import duckdb

    con = duckdb.connect()
    tables = [(args.name or _default_name(args.table), args.table, args.index_path)]
    for spec in args.with_table or []:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--with takes NAME=PATH, got {spec!r}")
        tables.append((name, path, None))
    for name, path, index_path in tables:
        duck.register(con, name, open_table(path, index_path=index_path))
    t0 = time.perf_counter()
    planned = duck.plan(con, args.sql)
    planned_ms = (time.perf_counter() - t0) * 1e3
    try:
        result = planned.relation().to_arrow_table()
    except duckdb.Error as exc:
        raise ValueError(str(exc).splitlines()[0]) from None
    total_ms = (time.perf_counter() - t0) * 1e3
    if args.explain:
        print(planned, file=sys.stderr)
    if args.csv:
        import pyarrow.csv

        pyarrow.csv.write_csv(result, sys.stdout.buffer)
    else:
        print(con.from_arrow(result) if result.num_columns else "(no columns)")
    summary = [f"{result.num_rows} rows in {total_ms:.1f} ms (planning {planned_ms:.1f} ms)"]
    summary += [f"{t.alias}: kept {t.kept} of {t.total} files" for t in planned.tables]
    print("; ".join(summary), file=sys.stderr)
    return 0


def _default_name(path: str) -> str:
    """The table's folder name when it is a plain SQL identifier, else ``t``."""
    import os

    name = os.path.basename(os.path.normpath(path))
    return name if name.isidentifier() else "t"


def _cmd_stats(args: argparse.Namespace) -> int:
    table = _table(args)
    snap = table.snapshot()
    stats = table.stats(columns=args.columns or None, with_blooms=False)
    print(
        f"index version {snap.version} (checkpoint {snap.checkpoint_version}), {stats.num_files} files, "
        f"data instant {snap.table_instant or '-'}"
    )
    for name, cs in stats.columns.items():
        nulls = cs.null_count.to_pylist()
        known = [n for n in nulls if n is not None]
        print(
            f"  {name}: min {_fmt(cs.min)} max {_fmt(cs.max)}; "
            f"nulls {sum(known)} in {len(known)}/{len(nulls)} known"
        )
    return 0


def _fmt(arr: object) -> str:
    import pyarrow.compute as pc

    try:
        mm = pc.min_max(arr)
        return f"{mm['min'].as_py()!r}..{mm['max'].as_py()!r}"
    except Exception:
        return "?"


def _cmd_compact(args: argparse.Namespace) -> int:
    print(f"compacted: index version {_table(args).compact()}")
    return 0


def _cmd_clean(args: argparse.Namespace) -> int:
    deleted = _table(args).clean(retention_seconds=args.retention)
    print(f"deleted {len(deleted)} unreferenced index files")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hudi-index", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.add_argument("table", help="table root (plain parquet directory or Hudi copy-on-write table)")
        p.add_argument("--index-path", help="where the index lives (default <table>/.hoodie/.index)")
        return p

    p = add("build", "index every data file from scratch")
    p.add_argument("--bloom", action="append", help="column to keep bloom filters on (repeatable)")
    p.add_argument("--fpp", type=float, default=0.01, help="bloom filter false-positive rate")
    p.set_defaults(run=_cmd_build)
    add("sync", "index files added or removed since the last commit").set_defaults(run=_cmd_sync)
    p = add("prune", "list the files a predicate may match")
    p.add_argument("--where", required=True, help="predicate: SQL, or the JSON form")
    p.add_argument("--list", action="store_true", help="print the kept file paths")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--keep-all-on-corrupt", action="store_true", help="keep every file if the index is unreadable"
    )
    p.set_defaults(run=_cmd_prune)
    p = add("stats", "summarize the index")
    p.add_argument("--columns", nargs="*", help="only these columns")
    p.set_defaults(run=_cmd_stats)
    p = add("query", "run a SQL query with DuckDB, reading only the files the index keeps")
    p.add_argument("sql", help="the query; the table is named after its folder (or --name)")
    p.add_argument("--name", help="the table's name in the query (default: its folder name, else t)")
    p.add_argument(
        "--with", dest="with_table", action="append", metavar="NAME=PATH", help="another indexed table"
    )
    p.add_argument("--explain", action="store_true", help="print what was kept and why (on stderr)")
    p.add_argument("--csv", action="store_true", help="print the result as CSV")
    p.set_defaults(run=_cmd_query)
    add("compact", "rewrite the live index into one checkpoint").set_defaults(run=_cmd_compact)
    p = add("clean", "delete index files no reader needs any more")
    p.add_argument("--retention", type=float, default=3600.0, help="keep files younger than this (seconds)")
    p.set_defaults(run=_cmd_clean)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (HudiExprError, ValueError, FileNotFoundError, NotADirectoryError) as exc:
        print(f"hudi-index {args.command}: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError | FileNotFoundError | NotADirectoryError) else 1
    except KeyboardInterrupt:
        print(f"hudi-index {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
