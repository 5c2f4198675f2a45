"""The view ``register`` creates: a read of the table's data files as they are on disk now.

A frozen file list would miss files added after ``register`` and fail on deleted ones, so the
view globs the table at each query, as DuckDB's own ``read_parquet('t/**/*.parquet')`` would,
and keeps only what the index calls data (``index_store.tables.plain.is_hidden``):

- a plain directory: ``<root>/**/*.parquet`` (``<root>/*=*/.../**/*.parquet`` when hive
  partitioned, so that no stray file outside the partition folders breaks DuckDB's partition
  detection), minus hidden paths (``.x``, ``_x`` unless ``_k=v``), by a filter on the file name
  that DuckDB applies to the file list before opening anything;
- a Hudi table: every ``*.parquet`` under the root, filtered by a function that asks the Hudi
  timeline which base files are live (the latest committed slice of each file group); it is
  re-read only when the timeline folder changes.

What the glob reads is checked against the index's own listing when the view is made.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import time
import weakref
import zlib
from dataclasses import dataclass

import duckdb
import duckdb.func
import pyarrow as pa
import pyarrow.compute as pc

from index_store import IndexedTable

__all__ = ["FILE_COLUMN", "LiveRead", "live_read"]

FILE_COLUMN = "__hudi_index_file"

# Any path segment under the root that Spark, Hive and the index treat as not data.
_HIDDEN_SEGMENT = r"(?:[^/]*/)*(?:\.[^/]*|_[^/=]*)(?:/|$)"
_GLOB_CHARACTERS = set("*?[]{}")
# A folder's modification time may not move for changes made within one clock tick.
_RACY_NS = 2_000_000_000
_BURST_NS = 5_000_000


@dataclass(frozen=True)
class LiveRead:
    """``SELECT * EXCLUDE (FILE_COLUMN) FROM <source> WHERE <condition>`` reads the live files."""

    pattern: str  # the glob
    source: str  # read_parquet(pattern, ...) with a FILE_COLUMN column
    condition: str  # TRUE for the live data files among the globbed ones (on FILE_COLUMN)

    def view_sql(self) -> str:
        return f"SELECT * EXCLUDE ({_quote(FILE_COLUMN)}) FROM {self.source} WHERE {self.condition}"

    def files(self, con: duckdb.DuckDBPyConnection) -> set[str]:
        """The files a query of the view reads now (DuckDB's glob, filtered by ``condition``)."""
        listed = con.sql(
            f"SELECT {_quote(FILE_COLUMN)} FROM (SELECT file AS {_quote(FILE_COLUMN)} FROM glob(?)) "
            f"WHERE {self.condition}",
            params=[self.pattern],
        )
        return {str(row[0]) for row in listed.fetchall()}


def live_read(con: duckdb.DuckDBPyConnection, name: str, table: IndexedTable, options: str) -> LiveRead:
    """How to read the live data files of ``table`` with the ``read_parquet`` ``options``."""
    root = table.root.rstrip("/")
    if _GLOB_CHARACTERS & set(root):
        raise ValueError(
            f"cannot register {root}: DuckDB reads a table by globbing its folder, and the path holds "
            f"a glob character ({''.join(sorted(_GLOB_CHARACTERS & set(root)))}); rename or link it"
        )
    read_options = f"filename = {_string(FILE_COLUMN)}, {options}"
    if table.reader.read_as == "glob":
        depth = len(table.reader.folder_columns())
        pattern = root + "/*=*" * depth + "/**/*.parquet"
        hidden = _string(_root_regex(root) + _HIDDEN_SEGMENT)
        condition = f"NOT regexp_matches({_quote(FILE_COLUMN)}, {hidden})"
    else:
        pattern = root + "/**/*.parquet"
        condition = f"{_live_function(con, name, table)}({_quote(FILE_COLUMN)})"
    return LiveRead(pattern, f"read_parquet({_string(pattern)}, {read_options})", condition)


def _root_regex(root: str) -> str:
    """An RE2 pattern matching ``root/`` literally (``\\Q...\\E`` quotes it)."""
    if "\\E" in root:
        return "^" + "".join(c if c.isalnum() else "\\" + c for c in root) + "/"
    return f"^\\Q{root}\\E/"


def _live_function(con: duckdb.DuckDBPyConnection, name: str, table: IndexedTable) -> str:
    """Register, on ``con``, a function telling whether a path is a live base file of ``table``."""
    function = f"__hudi_index_live_{_safe(name)}"
    live = _LiveFiles(table)
    with contextlib.suppress(duckdb.Error):  # registered before: replaced
        con.remove_function(function)
    con.create_function(
        function,
        live,
        [duckdb.sqltype("VARCHAR")],
        duckdb.sqltype("BOOLEAN"),
        type=duckdb.func.PythonUDFType.ARROW,
        side_effects=False,
    )
    _close_at_exit(con)
    return function


class _LiveFiles:
    """``path -> bool`` over arrow arrays: is it a live base file of the Hudi table right now?

    DuckDB calls it once per globbed file (before opening it), so the live set is kept and listed
    again only when the Hudi timeline folder's modification time moves (every commit, rollback or
    clean writes there). While that time is within a clock tick of now, a change could leave it
    unmoved, so the set is then listed again unless it is a few milliseconds old (the calls of one
    query come in a burst).
    """

    def __init__(self, table: IndexedTable) -> None:
        self.table = table
        self.timeline_dir: str = table.reader.timeline_dir or table.root
        self.stamp: int | None = None
        self.listed_at = 0
        self.paths = pa.array([], pa.string())

    def __call__(self, paths: pa.Array) -> pa.Array:
        stamp = os.stat(self.timeline_dir).st_mtime_ns
        now = time.time_ns()
        if stamp != self.stamp or (now - stamp < _RACY_NS and now - self.listed_at > _BURST_NS):
            prefix = self.table.root.rstrip(os.sep) + os.sep
            self.paths = pa.array([prefix + f.path for f in self.table.reader.list_files()], pa.string())
            self.stamp, self.listed_at = stamp, time.time_ns()
        return pc.is_in(paths, value_set=self.paths)


_to_close: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def _close_at_exit(con: duckdb.DuckDBPyConnection) -> None:
    """Close ``con`` when Python exits: a connection holding a Python function that is still open
    at exit makes DuckDB's bindings print reference-leak warnings."""
    _to_close.add(con)


@atexit.register
def _close_all() -> None:
    for con in list(_to_close):
        with contextlib.suppress(duckdb.Error):
            con.close()


def _safe(name: str) -> str:
    readable = "".join(c if c.isalnum() else "_" for c in name.lower())
    return f"{readable}_{zlib.crc32(name.lower().encode()):08x}"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
