"""Keep a metadata index next to a parquet or Hudi copy-on-write table, so that queries read only the
files that may hold matching rows.

Build the index once, keep it current with sync (or update), then ask which files a predicate
needs (prune, files), or run SQL over the table with DuckDB reading only those (query).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from adapters.cli.index import add_index_commands
from adapters.cli.keys import (
    CHECK_SHOWN,
    TAG_SHOWN,
    cmd_check,
    cmd_tag,
    has_keys,
    key_lines,
    key_summary,
    key_text,
)
from adapters.cli.layout import add_layout_commands
from adapters.cli.metadata import cmd_metadata, metadata_lines, metadata_summary
from adapters.cli.support import (
    add_table_arguments,
    column_list,
    duckdb_adapter,
    files_text,
    open_from_args,
    parse_where,
    print_json,
    read_argument,
    require_built,
)
from hudi_expr import AlwaysTrue, HudiExprError, Reference, Translation
from hudi_expr.bloom import BloomFilterFormatError
from hudi_expr.printer import format_literal, quote_column
from hudi_expr.stats import ColumnStats, leaf_columns
from index_store import (
    IndexedTable,
    IndexStoreError,
    PruneResult,
    open_table,
)

__all__ = ["build_parser", "main"]

EPILOG = """\
examples:
  hudi-index build warehouse/orders --bloom order_id
  hudi-index prune warehouse/orders --where "ship_date >= DATE '1995-03-01' AND order_id = 42"
  hudi-index files warehouse/orders --where "order_id IN (1, 2, 3)" | xargs ls -l
  hudi-index query warehouse/orders "SELECT count(*) FROM orders WHERE order_id = 42"
  hudi-index sync warehouse/orders
  hudi-index build warehouse/orders --rebuild      # when the index is reported corrupt (keeps its settings)
  hudi-index build warehouse/orders --no-record-index --bloom city   # a build that changes them
  hudi-index build warehouse/events --record-key user_id,event_id --record-index
  hudi-index tag warehouse/events --keys batch.parquet --out tagged.parquet
  hudi-index check warehouse/events               # record keys held by two files
  hudi-index index create warehouse/orders --columns city --type term
  hudi-index index build warehouse/orders          # after each change of the table
  hudi-index sql "SHOW INDEXES ON 'warehouse/orders'"
  hudi-index layout warehouse/orders --columns ship_date,city --plot layout.png
  hudi-index cluster warehouse/orders --by ship_date,city --strategy hilbert --out warehouse/orders_h

--where takes SQL (parsed by DuckDB) or the JSON form of an expression; --where @FILE reads it
from a file and --where - from standard input, for predicates too long for a command line.
Exit status: 0 on success, 2 when the command line is at fault (bad path, predicate or option),
1 for any other error.
"""


# ------------------------------------------------------------------------------------ predicates


def _where(args: argparse.Namespace, table: IndexedTable | None = None) -> Translation:
    """``--where`` parsed (against ``table``'s columns when given); TRUE when it was not given."""
    if args.where is None:
        return Translation(AlwaysTrue(), ())
    schema = None
    if table is not None:
        try:
            schema = table.snapshot().schema
        except IndexStoreError:
            schema = None  # the prune reports the unreadable index
    return parse_where(read_argument(args.where), schema)


# ------------------------------------------------------------------------------------- output


def _say(args: argparse.Namespace, kind: str, text: str) -> None:
    """A ``note`` or ``warning`` line on stderr, where it never mixes with the output."""
    print(f"hudi-index {args.command}: {kind}: {text}", file=sys.stderr)


def _shorten(text: str, width: int = 240) -> str:
    """``text`` with each line longer than ``width`` cut in the middle: a 10,000-term predicate
    quoted in an explanation would otherwise fill the terminal."""
    lines = []
    for line in text.splitlines():
        if len(line) > width:
            cut = len(line) - width * 3 // 4
            line = f"{line[: width // 2]} ...({cut:,} characters)... {line[-width // 4 :]}"
        lines.append(line)
    return "\n".join(lines)


def _result_json(result: PruneResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kept": result.kept,
        "total": result.total,
        "files": result.files,
        "unknown_files": result.unknown_files,
        "changed_files": result.changed_files,
        "index_used": result.index_used,
        "notes": result.notes(),
    }
    if result.whole_slices:  # merge-on-read: which files make each kept slice
        out["file_slices"] = [dataclasses.asdict(s) for s in result.file_slices]
        out["total_slices"] = result.total_slices
    return out


def _warn_if_unused(args: argparse.Namespace, result: PruneResult) -> None:
    """Say why every file was kept when the index could not be read (``--keep-all-on-corrupt``)."""
    if not result.index_used:
        _say(args, "warning", f"the index is unreadable, every file is kept: {result.index_error}")


# ------------------------------------------------------------------------------------ commands


def _cmd_build(args: argparse.Namespace) -> int:
    """Index every file with the index's configuration, changed by the options given (``--bloom``,
    ``--record-index``...); with ``--rebuild`` the old index is moved aside first, and its place said."""
    t0 = time.perf_counter()
    table = open_from_args(args)
    if (args.record_key or args.record_key is False) and table.reader.record_key_declared:
        declared_spec = table.reader.record_key_spec()
        declared = ", ".join(declared_spec.fields) if declared_spec is not None else ""
        raise ValueError(
            f"--record-key is for plain parquet tables: a Hudi table declares its own record key "
            f"(hoodie.table.recordkey.fields: {declared or 'none'}), which build uses"
        )
    if args.record_index and args.record_key is None and not table.reader.record_key_declared:
        stored = table.stored_config()
        if stored is None or not has_keys(stored):
            raise ValueError(
                "--record-index needs the record key of a plain parquet table: "
                "add --record-key COLUMN[,COLUMN...]"
            )
    before = _set_aside(table)
    version = table.build(
        bloom_columns=args.bloom,
        fpp=args.fpp,
        progress=None,
        rebuild=args.rebuild,
        record_key=args.record_key,
        record_index=args.record_index,
        key_fpp=args.key_fpp,
    )
    for aside in sorted(_set_aside(table) - before):
        print(f"moved the old index aside to {aside}")
    n = table.stats(columns=[]).num_files
    empty = " (the table has no data files yet)" if not n else ""
    print(f"built index version {version}: {files_text(n)}{empty} in {time.perf_counter() - t0:.2f} s")
    config = table.snapshot().config
    if config.bloom_columns:
        print(f"bloom filters: {', '.join(quote_column(Reference(c)) for c in config.bloom_columns)}")
    if has_keys(config):
        index = "with a record index" if config.record_index else "no record index"
        print(f"record key: {key_text(config)}; {index}")
    for status in table.indexes() if config.secondary_indexes else ():
        print(
            f"secondary index {status.name} ({status.index_type} on {', '.join(status.columns)}): "
            f"{status.files_indexed} of {files_text(status.live_files)} indexed"
        )
    return 0


def _set_aside(table: IndexedTable) -> set[Path]:
    """The folders ``build(rebuild=True)`` has moved the index to (``<index>.broken-<time>``)."""
    return set(table.index_root.parent.glob(f"{table.index_root.name}.broken-*"))


def _cmd_sync(args: argparse.Namespace) -> int:
    version = open_from_args(args).sync()
    print("index is up to date" if version is None else f"synced: index version {version}")
    return 0


def _cmd_update(args: argparse.Namespace) -> int:
    """One index commit for files a writer added and removed (cheaper than ``sync``'s listing)."""
    if not args.added and not args.removed:
        raise ValueError("nothing to update: give --added PATH... and/or --removed PATH...")
    table = open_from_args(args)
    added = [_in_table(table, p) for p in args.added]
    removed = [_in_table(table, p) for p in args.removed]
    version = table.update(added=added, removed=removed, progress=None)
    print(f"updated: index version {version} ({len(added)} added, {len(removed)} removed)")
    return 0


def _in_table(table: IndexedTable, path: str) -> str:
    """A data file path as ``update`` takes it: a path from the current folder when it lies under
    the table (``t/part-1.parquet``, what a shell completes), else relative to the table root."""
    if os.path.isabs(path):
        return path
    here = os.path.abspath(path)
    return here if os.path.commonpath([here, table.root]) == table.root else path


def _cmd_prune(args: argparse.Namespace) -> int:
    """The kept files and why: per conjunct what it skipped, and what was kept regardless."""
    table = open_from_args(args)
    where = _where(args, table)
    t0 = time.perf_counter()
    result = table.prune(where, on_corrupt="keep_all" if args.keep_all_on_corrupt else "raise")
    elapsed = time.perf_counter() - t0
    _warn_if_unused(args, result)
    if args.json:
        print_json(_result_json(result))
        return 0
    print(_shorten(result.explain()))
    print(f"planned in {elapsed * 1e3:.1f} ms")
    if args.list:
        for f in result.files:
            print(f)
    return 0


def _cmd_files(args: argparse.Namespace) -> int:
    """Only the kept files' absolute paths on stdout, one per line, for other tools to read."""
    table = open_from_args(args)
    result = table.prune(_where(args, table), on_corrupt="keep_all" if args.keep_all_on_corrupt else "raise")
    _warn_if_unused(args, result)
    for note in result.notes():
        if result.index_used or note != result.note:
            _say(args, "note", note)
    if args.json:
        print_json(_result_json(result))
    else:
        sys.stdout.write("".join(f"{f}\n" for f in result.files))
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    """Run SQL with each table a DuckDB view, every reference to it read pruned (``plan``).

    DuckDB cannot make a view of a table without data files, so such a table answers no rows.
    """
    duck = duckdb_adapter("SQL queries")
    import duckdb

    tables = _query_tables(args)
    empty = [name for name, table in tables if not table.reader.list_files()]
    if empty:
        for name in empty:
            _say(args, "note", f"table {_sql_name(name)} has no data files: the query returns no rows")
        return 0
    con = duckdb.connect()
    for name, table in tables:
        duck.register(con, name, table)
    t0 = time.perf_counter()
    planned = duck.plan(con, read_argument(args.sql, "query", "query"))
    planned_ms = (time.perf_counter() - t0) * 1e3
    result = planned.relation().to_arrow_table()
    total_ms = (time.perf_counter() - t0) * 1e3
    if args.explain:
        print(_shorten(str(planned)), file=sys.stderr)
    if args.csv:
        import pyarrow.csv

        sys.stdout.flush()
        pyarrow.csv.write_csv(result, sys.stdout.buffer)
    else:
        print(con.from_arrow(result) if result.num_columns else "(no columns)")
    summary = [f"{result.num_rows} rows in {total_ms:.1f} ms (planning {planned_ms:.1f} ms)"]
    summary += [f"{t.alias}: kept {t.kept} of {t.total} files" for t in planned.tables]
    print("; ".join(summary), file=sys.stderr)
    if not args.explain:
        for t in planned.tables:
            for note in t.result.notes() if t.result is not None and t.result.index_used else ():
                _say(args, "note", f"{t.alias}: {note}")
    return 0


def _query_tables(args: argparse.Namespace) -> list[tuple[str, IndexedTable]]:
    """The tables a query may read, by name: TABLE (named after its folder, or ``--name``) and each
    ``--with NAME=PATH``. A table with no index, or an unreadable one, is read whole, with a
    warning (``register``)."""
    name = args.name or _default_name(args.table)
    tables = [(name, open_from_args(args))]
    for spec in args.with_table or []:
        other, sep, path = spec.partition("=")
        if not sep or not other or not path:
            raise ValueError(f"--with takes NAME=PATH, got {spec!r}")
        tables.append((other, open_table(path)))
    if not args.name and not _plain_identifier(name):
        _say(
            args,
            "note",
            f"the table is named {_sql_name(name)} in the query, quoted: {name} is not a plain SQL "
            "identifier (--name chooses another name)",
        )
    return tables


def _default_name(path: str) -> str:
    """The table's folder name (that of the current folder for ``.``); ``t`` for the root folder."""
    return os.path.basename(os.path.abspath(path)) or "t"


def _plain_identifier(name: str) -> bool:
    """Whether DuckDB reads ``name`` unquoted as this one table name (the SQL printer's rule)."""
    return "." not in name and quote_column(Reference(name)) == name


def _sql_name(name: str) -> str:
    """``name`` as it must be written in SQL: quoted unless it is a plain identifier."""
    return name if _plain_identifier(name) else '"' + name.replace('"', '""') + '"'


def _cmd_stats(args: argparse.Namespace) -> int:
    """The index's version and size, and per column what its statistics say, as SQL literals; on a
    Hudi table with a metadata table, its partitions and which are used."""
    table = open_from_args(args)
    hudi = metadata_summary(table)
    if hudi is not None and not table.snapshot().version:  # no own index: the metadata table alone
        if args.json:
            print_json({"version": 0, "hudi_metadata": hudi})
        else:
            print("no index built")
            print("\n".join(metadata_lines(hudi)))
        return 0
    require_built(table)
    snap = table.snapshot()
    types = leaf_columns(snap.schema)
    unknown = [c for c in args.columns or () if c not in types]
    if unknown:
        raise ValueError(f"unknown column {unknown[0]!r}; the index has {', '.join(types) or 'none'}")
    stats = table.stats(columns=args.columns or None, with_blooms=False)
    columns = {name: _column_summary(cs, types.get(name)) for name, cs in stats.columns.items()}
    keys = key_summary(table, snap)
    if args.json:
        print_json(
            {
                "version": snap.version,
                "checkpoint_version": snap.checkpoint_version,
                "files": stats.num_files,
                "table_instant": snap.table_instant,
                "columns": columns,
                "record_key": keys,
                "hudi_metadata": hudi,
            }
        )
        return 0
    print(
        f"index version {snap.version} (checkpoint {snap.checkpoint_version}), "
        f"{files_text(stats.num_files)}, data instant {snap.table_instant or '-'}"
    )
    for line in key_lines(keys) if keys is not None else ():
        print(line)
    for line in metadata_lines(hudi) if hudi is not None else ():
        print(line)
    for name, column in columns.items():
        print(_column_line(name, column))
    return 0


def _column_line(name: str, c: dict[str, Any]) -> str:
    """``  name type: min X, max Y (known for k of n); nulls N (...); NaNs M (...)`` (NaNs when known)."""
    line = f"  {quote_column(Reference(name))} {c['type']}: min {c['min']}, max {c['max']}"
    line += f" ({_known(c, 'bounds')}); nulls {c['null_count']} ({_known(c, 'null_count')})"
    if c["nan_count_files"]:
        line += f"; NaNs {c['nan_count']} ({_known(c, 'nan_count')})"
    return line


def _column_summary(cs: ColumnStats, type: pa.DataType | None) -> dict[str, Any]:
    """One column over every file: the smallest min and largest max as SQL literals (NULL when no
    file has one), the null and NaN counts summed over the files that know theirs."""
    files = len(cs.min)
    known = pc.and_(pc.is_valid(cs.min), pc.is_valid(cs.max))
    return {
        "type": str(type if type is not None else cs.min.type),
        "files": files,
        "min": _literal(_extreme(cs.min, min)),
        "max": _literal(_extreme(cs.max, max)),
        "bounds_files": pc.sum(pc.cast(known, pa.int64())).as_py() or 0,
        "null_count": pc.sum(cs.null_count).as_py() or 0,
        "null_count_files": files - cs.null_count.null_count,
        "nan_count": pc.sum(cs.nan_count).as_py() or 0,
        "nan_count_files": files - cs.nan_count.null_count,
    }


def _extreme(values: pa.Array, pick: Any) -> pa.Scalar:
    """The smallest (``pick=min``) or largest (``max``) value, null if none is known; in Python for
    the types Arrow has no kernel for (durations, string views)."""
    try:
        return pc.min(values) if pick is min else pc.max(values)
    except pa.ArrowNotImplementedError:
        return pa.scalar(pick((v for v in values.to_pylist() if v is not None), default=None), values.type)


def _literal(value: pa.Scalar) -> str:
    return format_literal(value) if value.is_valid else "NULL"


def _known(column: dict[str, Any], what: str) -> str:
    return f"known for {column[f'{what}_files']} of {column['files']}"


def _cmd_compact(args: argparse.Namespace) -> int:
    print(f"compacted: index version {require_built(open_from_args(args)).compact()}")
    return 0


def _cmd_clean(args: argparse.Namespace) -> int:
    deleted = open_from_args(args).clean(retention_seconds=args.retention)
    print(f"deleted {len(deleted)} unreferenced index files")
    return 0


# -------------------------------------------------------------------------------------- parser


def _fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a false-positive rate)."""
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return value


def _non_negative(text: str) -> int:
    """An argparse type: a whole number, zero or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number, 0 or more, got {text}")
    return value


def _seconds(text: str) -> float:
    """An argparse type: a duration in seconds, zero or more."""
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def _version() -> str:
    try:
        return metadata.version("hudi-index")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree, not installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The ``hudi-index`` command line: one subcommand per operation on a table's index."""
    parser = argparse.ArgumentParser(
        prog="hudi-index",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")
        add_table_arguments(p)
        return p

    def where(p: argparse.ArgumentParser, required: bool) -> None:
        p.add_argument(
            "--where",
            required=required,
            metavar="PREDICATE",
            help="SQL (e.g. \"a > 5 AND d >= DATE '2024-01-01'\") or the JSON form; @FILE reads it from "
            "a file, - from standard input" + ("" if required else " (default: every file)"),
        )
        p.add_argument(
            "--keep-all-on-corrupt",
            action="store_true",
            help="keep every file, with a warning, instead of failing when the index is unreadable",
        )

    p = add(
        "build",
        "index every data file of the table from scratch, keeping the index's configuration (bloom "
        "columns, record key, record index, secondary indexes) unless an option changes it",
    )
    blooms = p.add_mutually_exclusive_group()
    blooms.add_argument(
        "--bloom",
        action="append",
        metavar="COLUMN",
        help="keep bloom filters on COLUMN (repeatable; replaces the index's list; default: the index's "
        "list, else the table's record key, if it has one)",
    )
    blooms.add_argument(
        "--no-bloom",
        dest="bloom",
        action="store_const",
        const=[],
        help="keep no bloom filters (on columns; a record key's filters stay)",
    )
    p.add_argument(
        "--fpp",
        type=_fraction,
        help="bloom filter false-positive rate (default: the index's, else 0.01)",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="move the existing index aside (to <index>.broken-<time>) first: the way out of a corrupt "
        "index; its configuration is kept",
    )
    keys = p.add_mutually_exclusive_group()
    keys.add_argument(
        "--record-key",
        type=column_list,
        metavar="COLUMN[,COLUMN...]",
        help="the record key of a plain parquet table, for tag and check (several columns: Hudi's "
        "complex key, col1:v1,col2:v2; default: the index's); a Hudi table's own is used without it",
    )
    keys.add_argument(
        "--no-record-key",
        dest="record_key",
        action="store_const",
        const=False,
        help="forget the record key of a plain parquet table (and its record index)",
    )
    p.add_argument(
        "--record-index",
        action=argparse.BooleanOptionalAction,
        help="keep a record index (key -> file): for random keys, which key ranges cannot narrow "
        "(default: as the index has it, else none)",
    )
    p.add_argument(
        "--key-fpp",
        type=_fraction,
        help="false-positive rate of the per-file key bloom filters built here (Hudi's footer filters "
        "are kept as written) (default: the index's, else 1e-06)",
    )
    p.set_defaults(run=_cmd_build)

    add("sync", "index the files added, removed or rewritten since the last commit").set_defaults(
        run=_cmd_sync
    )

    p = add("update", "record one data commit in the index: files added and removed")
    paths = "paths under TABLE: relative to the current folder, or to TABLE, or absolute (repeatable)"
    p.add_argument("--added", nargs="+", action="extend", default=[], metavar="PATH", help=f"new {paths}")
    p.add_argument(
        "--removed", nargs="+", action="extend", default=[], metavar="PATH", help=f"deleted {paths}"
    )
    p.set_defaults(run=_cmd_update)

    p = add("prune", "show which files a predicate may match, and why the others are skipped")
    where(p, required=True)
    p.add_argument("--list", action="store_true", help="also print the kept files' paths")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.set_defaults(run=_cmd_prune)

    p = add("files", "print the files a predicate may match, one absolute path per line (for xargs)")
    where(p, required=False)
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.set_defaults(run=_cmd_files)

    p = add("query", "run a SQL query with DuckDB, reading only the files the index keeps")
    p.add_argument(
        "sql",
        metavar="SQL",
        help="the query (@FILE: read from a file, -: from standard input); the table is named after its "
        'folder, quoted when that is not a plain name: "my-tbl"',
    )
    p.add_argument("--name", help="the table's name in the query (default: its folder's name)")
    p.add_argument(
        "--with",
        dest="with_table",
        action="append",
        metavar="NAME=PATH",
        help="another indexed table the query reads (repeatable)",
    )
    p.add_argument("--explain", action="store_true", help="print what was kept and why (on stderr)")
    p.add_argument("--csv", action="store_true", help="print the result as CSV")
    p.set_defaults(run=_cmd_query)

    p = add(
        "stats",
        "summarize the index: files, the record key and its filters, and per column min, max, null and "
        "NaN counts",
    )
    p.add_argument("--columns", nargs="*", metavar="COLUMN", help="only these columns (default: all)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.set_defaults(run=_cmd_stats)

    p = add(
        "metadata",
        "print the records of a partition of a Hudi table's own metadata table (.hoodie/metadata)",
    )
    p.add_argument(
        "--partition",
        required=True,
        metavar="NAME",
        help="files, column_stats, partition_stats, bloom_filters, record_index or secondary_index_<name>",
    )
    p.add_argument(
        "--where",
        metavar="PREDICATE",
        help="DuckDB SQL over the partition's columns (e.g. \"file_name LIKE 'abc%%'\", "
        '"amount.min > 100"); @FILE reads it from a file, - from standard input',
    )
    p.add_argument("--limit", type=_non_negative, metavar="N", help="print at most N records")
    p.add_argument("--json", action="store_true", help="print one JSON array of records instead")
    p.set_defaults(run=cmd_metadata)

    p = add("tag", "find the data file holding each record key (an update) and the new keys (inserts)")
    p.add_argument(
        "--keys",
        required=True,
        metavar="FILE",
        help="parquet or CSV file of the keys (CSV columns are read as text), or - for one key per line "
        "from standard input; the table's key fields are encoded as Hudi does, else a column "
        "_hoodie_record_key or key holds the key strings",
    )
    p.add_argument("--key-col", metavar="COLUMN", help="the column of record key strings")
    p.add_argument(
        "--partition-col",
        metavar="COLUMN",
        help="the column of each key's partition path: tag each key within its partition "
        "(default: search the whole table)",
    )
    p.add_argument(
        "--using",
        choices=("auto", "bloom", "record"),
        default="auto",
        help="bloom: key ranges, bloom filters, then reading candidate files' keys; record: the record "
        "index; auto: the record index when built (default: %(default)s)",
    )
    p.add_argument(
        "--on-duplicate",
        choices=("all", "error"),
        default="all",
        help="a key held by several live files: all tags each copy (a row per file, as Hudi does); "
        "error fails (default: %(default)s)",
    )
    p.add_argument("--sync", action="store_true", help="sync a stale index first instead of failing")
    p.add_argument(
        "--out",
        metavar="FILE",
        help=f"write the result (key, partition, file, file_id) to a parquet file (without it the first "
        f"{TAG_SHOWN} rows are printed)",
    )
    p.add_argument("--json", action="store_true", help="print the counts and stage statistics as JSON")
    p.set_defaults(run=cmd_tag)

    p = add("check", "list record keys held by more than one live data file (exit 1 if any)")
    p.add_argument(
        "--limit",
        type=_non_negative,
        default=CHECK_SHOWN,
        metavar="N",
        help="show at most N duplicate keys (default: %(default)s)",
    )
    p.add_argument("--sync", action="store_true", help="sync a stale index first instead of failing")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    p.set_defaults(run=cmd_check)

    add("compact", "rewrite the live index into one checkpoint").set_defaults(run=_cmd_compact)

    p = add("clean", "delete index files no reader needs any more")
    p.add_argument(
        "--retention",
        type=_seconds,
        default=3600.0,
        metavar="SECONDS",
        help="keep files younger than this, for readers still on an older version (default: %(default)s)",
    )
    p.set_defaults(run=_cmd_clean)

    add_index_commands(sub)
    add_layout_commands(sub)
    return parser


# ---------------------------------------------------------------------------------------- main


def _expected_errors() -> tuple[type[BaseException], ...]:
    """What a user can cause or fix: the library's errors, bad input, file system and DuckDB errors."""
    errors: tuple[type[BaseException], ...] = (HudiExprError, ValueError, OSError, pa.ArrowException)
    duckdb = sys.modules.get("duckdb")
    return (*errors, duckdb.Error) if duckdb is not None else errors


def _exit_code(exc: BaseException) -> int:
    """2 when the command line is at fault (a bad path, predicate, option or query), 1 otherwise."""
    if isinstance(exc, BloomFilterFormatError | pa.ArrowException):
        return 1  # unreadable data or index files, whatever their Python base class
    if isinstance(exc, ValueError | FileNotFoundError | NotADirectoryError):
        return 2
    duckdb = sys.modules.get("duckdb")
    return 2 if duckdb is not None and isinstance(exc, duckdb.ProgrammingError) else 1


def _message(exc: BaseException) -> str:
    """One line: an OS error as ``path: reason``, DuckDB's error without the query it quotes."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and isinstance(exc, duckdb.Error):
        return lines[0]
    return " ".join(line.strip() for line in lines)


@contextlib.contextmanager
def _warnings_as_lines(command: str) -> Iterator[None]:
    """Print each distinct warning once, as one ``hudi-index CMD: warning:`` line on stderr, instead
    of Python's two-line ``file:line: Category: message`` form."""
    with warnings.catch_warnings(record=True) as caught:
        try:
            yield
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                print(f"hudi-index {command}: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``hudi-index`` command; errors print as one line on stderr, never a traceback."""
    args = build_parser().parse_args(argv)
    try:
        with _warnings_as_lines(args.command):
            code = int(args.run(args))
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print(f"hudi-index {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``hudi-index files t | head``): stop quietly, as other tools do.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except _expected_errors() as exc:
        print(f"hudi-index {args.command}: error: {_message(exc)}", file=sys.stderr)
        return _exit_code(exc)
