"""The ``hudi-index`` commands about secondary indexes (Hudi RFC-51): ``index create|build|drop|list``
and ``sql``, which runs the index statements of ``index_store.secondary.statements`` on a table
named by path."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from typing import Any

import pyarrow as pa

from adapters.cli.support import (
    add_table_arguments,
    column_list,
    files_text,
    open_from_args,
    print_json,
    require_built,
)
from index_store import IndexedTable, IndexStatus, open_table
from index_store.secondary.kinds import kinds
from index_store.secondary.statements import (
    SYNTAX,
    CreateIndex,
    DropIndex,
    IndexStatement,
    RefreshIndex,
    ShowIndexes,
    parse_statement,
    run_statement,
)
from index_store.tables.rows import require_file_reads

__all__ = [
    "add_index_commands",
    "cmd_index_build",
    "cmd_index_create",
    "cmd_index_drop",
    "cmd_index_list",
    "cmd_sql",
    "table_text",
]


def _note(args: argparse.Namespace, text: str) -> None:
    """A ``note`` line on stderr, where it never mixes with the output."""
    print(f"hudi-index {args.command}: note: {text}", file=sys.stderr)


def _command(args: argparse.Namespace, *words: str) -> str:
    """``hudi-index index WORDS... TABLE [--index-path DIR]`` quoted for a shell, for hints."""
    line = ["hudi-index", "index", *words[:1], args.table, *words[1:]]
    if args.index_path:
        line += ["--index-path", args.index_path]
    return " ".join(shlex.quote(w) for w in line)


def table_text(table: pa.Table) -> str:
    """A result table as aligned text: a header line, then one line per row (numbers right-aligned,
    nulls as NULL, booleans as true/false); ``(no rows)`` under the header when it has none."""
    names = table.column_names
    rows = [[_cell(row[n]) for n in names] for row in table.to_pylist()]
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in table.schema]

    def line(cells: list[str]) -> str:
        padded = [
            c.rjust(w) if right else c.ljust(w) for c, w, right in zip(cells, widths, numeric, strict=True)
        ]
        return "  ".join(padded).rstrip()

    lines = [line(names), *(line(r) for r in rows)]
    return "\n".join(lines if rows else [*lines, "(no rows)"])


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _coverage(status: IndexStatus) -> str:
    """``idx_a (value on a, b): 3 of 4 files indexed``."""
    covered = f"{status.files_indexed} of {files_text(status.live_files)} indexed"
    return f"{status.name} ({status.index_type} on {', '.join(status.columns)}): {covered}"


def _note_unindexed(args: argparse.Namespace, name: str, indexed: int, live: int, table: str) -> None:
    """After a build, why live files can still lack their index files: they changed on disk since
    the last sync (a build indexes the files as the index knows them)."""
    if indexed < live:
        _note(
            args,
            f"{files_text(live - indexed)} of {name} not indexed: changed on disk since the index was "
            f"synced; run {shlex.join(['hudi-index', 'sync', table])}, then build again",
        )


# ------------------------------------------------------------------------------------ commands


def cmd_index_create(args: argparse.Namespace) -> int:
    """Record a secondary index definition; its files are built by ``index build``."""
    table = open_from_args(args)
    statement = CreateIndex(args.name, args.table, tuple(args.columns), args.type)
    row = run_statement(statement, lambda _: table).to_pylist()[0]
    columns = row["columns"].replace(",", ", ")
    print(f"created index {row['name']} ({row['index_type']} on {columns}): index version {row['version']}")
    _note(
        args, f"it has no index files yet: build them with {_command(args, 'build', '--name', row['name'])}"
    )
    return 0


def cmd_index_build(args: argparse.Namespace) -> int:
    """Build the index files missing for live files (``--all``: every one), of one index or all."""
    t0 = time.perf_counter()
    table = require_built(open_from_args(args))
    require_file_reads(table.reader, "building secondary index files (index build)")  # before "create one"
    if not table.indexes():
        create = _command(args, "create", "--columns", "COLUMN")
        raise ValueError(f"{table.root} has no secondary index to build: create one first ({create})")
    version = table.build_index(args.name, "all" if args.all else "incremental", args.progress)
    elapsed = time.perf_counter() - t0
    wanted = None if args.name is None else args.name.lower()
    statuses = [s for s in table.indexes() if wanted is None or s.name.lower() == wanted]
    if version is not None:
        print(f"built index version {version} in {elapsed:.2f} s")
    elif all(s.complete for s in statuses):
        print("nothing to build: every live file has its index files (--all rebuilds them)")
    else:
        print("nothing to build")
    for s in statuses:
        print(f"  {_coverage(s)}")
    for s in statuses:
        _note_unindexed(args, s.name, s.files_indexed, s.live_files, args.table)
    return 0


def cmd_index_drop(args: argparse.Namespace) -> int:
    """Forget a secondary index (a commit); ``clean`` later deletes the files no index uses."""
    table = open_from_args(args)
    row = run_statement(DropIndex(args.name, args.table), lambda _: table).to_pylist()[0]
    print(f"dropped index {row['name']}: index version {row['version']}")
    return 0


def cmd_index_list(args: argparse.Namespace) -> int:
    """Every secondary index of the table and how many live files it covers."""
    table = require_built(open_from_args(args))
    result = run_statement(ShowIndexes(args.table), lambda _: table)
    if args.json:
        print_json(result.to_pylist())
    elif not result.num_rows:
        print(f"no secondary indexes: create one with {_command(args, 'create', '--columns', 'COLUMN')}")
    else:
        print(table_text(result))
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    """Run one index statement; its table is a path (relative ones under ``--table-root``)."""
    from adapters.cli.support import read_argument

    text = read_argument(args.statement, "statement", "statement")
    statement = parse_statement(text)
    if statement is None:
        raise ValueError(
            "not an index statement: hudi-index sql runs "
            + "; ".join(SYNTAX.values())
            + " (run queries with hudi-index query TABLE SQL)"
        )

    def open_path(name: str) -> IndexedTable:
        return open_table(_table_path(args, name), index_path=args.index_path)

    result = run_statement(statement, open_path, args.progress)
    if args.json:
        print_json(result.to_pylist())
    else:
        print(table_text(result))
    _sql_notes(args, statement, result)
    return 0


def _table_path(args: argparse.Namespace, name: str) -> str:
    """A statement's table path: ``~`` expanded, a relative one under ``--table-root`` if given."""
    path = os.path.expanduser(name)
    return path if args.table_root is None else os.path.join(args.table_root, path)


def _sql_notes(args: argparse.Namespace, statement: IndexStatement, result: pa.Table) -> None:
    """What to do next, after a CREATE (build) or a REFRESH that left files unindexed (sync)."""
    table = "'" + statement.table.replace("'", "''") + "'"
    if isinstance(statement, CreateIndex):
        name = result["name"][0].as_py()
        _note(args, f"it has no index files yet: build them with REFRESH INDEX {name} ON {table}")
    elif isinstance(statement, RefreshIndex):
        (row,) = result.to_pylist()
        if row["live_files"] is not None:
            path = _table_path(args, statement.table)
            _note_unindexed(args, row["name"], row["files_indexed"], row["live_files"], path)


# -------------------------------------------------------------------------------------- parser


def _progress(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar on stderr while index files are built (default: when stderr is a terminal)",
    )


def add_index_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``index create|build|drop|list`` and ``sql`` on the ``hudi-index`` parser."""
    index = sub.add_parser(
        "index",
        help="secondary indexes (RFC-51): exact rows per file for a column's values or terms",
        description="Create, build, drop and list secondary indexes: per base file, the rows holding "
        "each value (value index) or each word (term index) of a column. A definition is created "
        "first, then its index files are built; build again after the table changes.",
    )
    actions = index.add_subparsers(dest="index_command", required=True, metavar="ACTION")

    def add(name: str, help: str) -> argparse.ArgumentParser:
        p = actions.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")
        add_table_arguments(p)
        p.set_defaults(command=f"index {name}")  # names the command in error lines
        return p

    p = add("create", "define a secondary index on one or more columns (built by index build)")
    p.add_argument(
        "--columns",
        required=True,
        type=column_list,
        metavar="COLUMN[,COLUMN...]",
        help="the columns to index, comma-separated",
    )
    p.add_argument(
        "--type",
        choices=sorted(k.name for k in kinds()),
        default="value",
        help="value: rows per value (integer, decimal, string, date... columns); term: rows per word "
        "of a string column (default: %(default)s)",
    )
    p.add_argument("--name", help="the index's name (default: idx_<type>_<columns>)")
    p.set_defaults(run=cmd_index_create)

    p = add("build", "build the index files of live files that lack them")
    p.add_argument("--name", help="build only this index (default: every index)")
    p.add_argument("--all", action="store_true", help="rebuild every index file, not only missing ones")
    _progress(p)
    p.set_defaults(run=cmd_index_build)

    p = add("drop", "forget a secondary index (clean deletes its files)")
    p.add_argument("--name", required=True, help="the index to drop")
    p.set_defaults(run=cmd_index_drop)

    p = add("list", "list the secondary indexes and how many live files each covers")
    p.add_argument("--json", action="store_true", help="print a JSON list of objects instead")
    p.set_defaults(run=cmd_index_list)

    p = sub.add_parser(
        "sql",
        help="run an index statement: CREATE INDEX, DROP INDEX, SHOW INDEXES or REFRESH INDEX",
        description="Run one secondary index statement on the table it names by path, a quoted string "
        "or a bare path without spaces: " + "; ".join(SYNTAX.values()) + ".",
    )
    p.add_argument(
        "statement",
        metavar="STATEMENT",
        help="e.g. \"CREATE INDEX idx_city ON 'warehouse/orders' (city)\" (@FILE: read from a file, -: "
        "from standard input)",
    )
    p.add_argument(
        "--table-root",
        metavar="DIR",
        help="relative table paths in the statement are under DIR (default: the current folder)",
    )
    p.add_argument(
        "--index-path",
        metavar="DIR",
        help="the table's index is in DIR (default: TABLE/.hoodie/.index)",
    )
    p.add_argument("--json", action="store_true", help="print the result as a JSON list of objects")
    _progress(p)
    p.set_defaults(run=cmd_sql)
