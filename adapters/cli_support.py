"""What the ``hudi-index`` commands share: opening the table they name, and printing."""

from __future__ import annotations

import argparse
import json
import sys

from index_store import IndexedTable, IndexNotBuiltError, open_table

__all__ = [
    "add_table_arguments",
    "column_list",
    "count_text",
    "files_text",
    "open_from_args",
    "print_json",
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


def column_list(text: str) -> list[str]:
    """An argparse type: ``a,b`` -> the columns, in order."""
    columns = [c.strip() for c in text.split(",")]
    if not text.strip() or not all(columns):
        raise argparse.ArgumentTypeError(f"expected COLUMN[,COLUMN...], got {text!r}")
    if len(set(columns)) != len(columns):
        raise argparse.ArgumentTypeError(f"a column is named twice in {text!r}")
    return columns


def open_from_args(args: argparse.Namespace) -> IndexedTable:
    return open_table(args.table, index_path=args.index_path)


def require_built(table: IndexedTable) -> IndexedTable:
    """``table``, or ``IndexNotBuiltError`` when it has no index (``compact`` would otherwise commit
    an empty one, and ``stats`` describe nothing as "version 0")."""
    if not table.snapshot().version:
        raise IndexNotBuiltError(table.root)
    return table
