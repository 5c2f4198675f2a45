"""What the ``hudi-index`` commands share: opening the table they name, reading ``--where``
and ``@FILE``/``-`` arguments, and printing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from hudi_expr import Translation, from_json
from index_store import IndexedTable, IndexNotBuiltError, open_table

__all__ = [
    "add_table_arguments",
    "column_list",
    "count_text",
    "duckdb_adapter",
    "files_text",
    "open_from_args",
    "parse_where",
    "print_json",
    "read_argument",
    "require_built",
]


def print_json(value: object) -> None:
    """One JSON document on stdout, ending in a newline (as every line of text should)."""
    sys.stdout.write(json.dumps(value) + "\n")


def files_text(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


def count_text(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """TABLE and ``--index-path DIR``, which every command on one table takes."""
    parser.add_argument(
        "table",
        metavar="TABLE",
        help="the table's folder: plain parquet files, or a Hudi copy-on-write table",
    )
    parser.add_argument(
        "--index-path",
        metavar="DIR",
        help="keep the index in DIR, e.g. for a table you cannot write to (default: TABLE/.hoodie/.index)",
    )
    parser.add_argument(
        "--source",
        choices=("auto", "own", "hudi"),
        default="auto",
        help="which index answers: auto (Hudi's metadata table where the table has one, and the "
        "index built here where there is one), own (only the index built here), hudi (only Hudi's "
        "metadata table)",
    )


def column_list(text: str) -> list[str]:
    """An argparse type: ``a,b`` -> the columns, in order."""
    columns = [c.strip() for c in text.split(",")]
    if not text.strip() or not all(columns):
        raise argparse.ArgumentTypeError(f"expected COLUMN[,COLUMN...], got {text!r}")
    if len(set(columns)) != len(columns):
        raise argparse.ArgumentTypeError(f"a column is named twice in {text!r}")
    return columns


def open_from_args(args: argparse.Namespace) -> IndexedTable:
    return open_table(args.table, index_path=args.index_path, source=getattr(args, "source", "auto"))


def require_built(table: IndexedTable) -> IndexedTable:
    """``table``, or ``IndexNotBuiltError`` when it has no index (``compact`` would otherwise commit
    an empty one, and ``stats`` describe nothing as "version 0")."""
    if not table.snapshot().version:
        raise IndexNotBuiltError(table.root)
    return table


def read_argument(text: str, option: str = "--where", noun: str = "predicate") -> str:
    """The text an argument names: ``-`` reads it from stdin and ``@FILE`` from a file (a long IN
    list or OR exceeds the shell's argument limit); anything else is the text itself."""
    if text == "-":
        read = sys.stdin.read()
    elif text.startswith("@"):
        try:
            read = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{option} {text}: cannot read {text[1:]}: {exc.strerror or exc}") from None
    else:
        read = text
    if not read.strip():
        raise ValueError(f"{option} {text}: the {noun} is empty")
    return read


def parse_where(text: str, schema: Any = None) -> Translation:
    """A predicate given on the command line, with the parts of it pruning cannot use: SQL
    (through the DuckDB adapter, when installed; with the table's ``schema``, column names ignore
    case as in DuckDB) or the JSON form of ``hudi_expr.to_json``."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")) or stripped in ("true", "false"):
        return Translation(from_json(stripped), ())
    translation: Translation = duckdb_adapter("SQL predicates").translate_sql(stripped, schema=schema)
    return translation


def duckdb_adapter(what: str) -> Any:
    """The DuckDB adapter, imported on first use: the other commands work without DuckDB."""
    try:
        import adapters.duckdb
    except ImportError:
        raise ValueError(
            f"{what} need DuckDB (pip install 'hudi-index[duckdb]'); a --where predicate may be given in "
            'the JSON form instead, e.g. \'{"op": "gt", "column": "a", "value": 5}\''
        ) from None
    return adapters.duckdb
