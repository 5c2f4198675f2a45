"""The rewrite of the query's text: each planned reference replaced by a read of its kept files or
rows with the registered schema, and the checks that the splice changes nothing else."""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from adapters.duckdb.clock import time_calls as time_calls_of
from adapters.duckdb.rows import ROW_COLUMN, RowRead
from adapters.duckdb.scope import TableRef, column_refs, same_ignoring_locations
from adapters.duckdb.serialized import Class, Key, alias_or_name, column_aliases, is_base_table, table_key
from index_store import (
    IndexedTable,
)
from index_store import tables as _tables
from index_store.tables.base import Listing

if TYPE_CHECKING:
    from adapters.duckdb.plans import TablePlan
    from adapters.duckdb.registration import Registration


# The last glob worked out per table, with the listing it came from (the same object until the
# table changes on disk).
_GLOBS: weakref.WeakKeyDictionary[IndexedTable, tuple[Listing, str | None]] = weakref.WeakKeyDictionary()


def uniform_glob(registration: Registration) -> str | None:
    """A glob that reads exactly the files the registered view reads, without its per-row filter
    on the file name (which costs DuckDB up to a fifth of a scan): there is one when every data
    file is a ``.parquet`` at the same depth under the root and no folder or file name on the way
    starts with ``.`` or ``_`` (which the view's filter is for, and ``[!._]*`` leaves out)."""
    table = registration.table
    if table.reader.read_as != "glob":
        return None
    listing = _tables.listing(table.reader)
    cached = _GLOBS.get(table)
    if cached is not None and cached[0] is listing:
        return cached[1]
    paths = listing.paths
    glob: str | None = None
    if len(paths):
        depth = pc.count_substring(paths, "/")
        shallow, deep = pc.min_max(depth).values()
        hidden = pc.any(pc.match_substring_regex(paths, r"(^|/)[._]")).as_py()
        plain = pc.all(pc.ends_with(paths, ".parquet")).as_py()
        if shallow == deep and not hidden and plain:
            glob = table.root.rstrip("/") + "/" + "[!._]*/" * deep.as_py() + "[!._]*.parquet"
    _GLOBS[table] = (listing, glob)
    return glob


def kept_read(registration: Registration, table: TablePlan) -> str:
    """The text of a read of ``table``'s files (or selected rows) with the registered schema, as a
    subquery: one ``read_parquet`` per ``RowRead``, their rows put together by ``UNION ALL``."""
    if table.constant:
        return f"({table.constant})"
    if registration.merged is not None:  # merge-on-read (issue 23): the kept slices, merged
        return registration.merged.kept_read(
            table.result, registration.columns, table.columns, live=bool(table.direct)
        )
    nulls = "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {quote_name(c)}" for c, t in registration.columns)
    if table.glob:
        return f"(SELECT * FROM read_parquet({sql_string(table.glob)}, {registration.options}))"
    if table.reads is not None:
        reads = table.reads.reads
    elif table.result is not None and table.result.files:
        reads = (RowRead(tuple(table.result.files), None),)
    else:
        reads = ()
    if not reads:
        return f"({nulls} WHERE false)"
    projection = ", ".join(
        f"CAST({quote_name(c)} AS {t}) AS {quote_name(c)}" for c, t in registration.columns
    )
    parts = []
    for each in reads:
        if each.condition is None:
            read = read_text(each.files, registration.options)
        else:
            options = f"{ROW_COLUMN} = true, {registration.options}"
            read = f"(SELECT * FROM {read_text(each.files, options)} WHERE {each.condition})"
        if registration.union_by_name:
            # The files read may lack columns others have: a typed empty row set supplies them all.
            read = f"({nulls} WHERE false UNION ALL BY NAME SELECT * FROM {read})"
        parts.append(f"SELECT {projection} FROM {read}")
    return "(" + " UNION ALL ".join(parts) + ")"


def same_but_renamed(
    checked: Any, statement: Any, refs: Sequence[TableRef], placeholders: Sequence[str]
) -> bool:
    """Whether ``checked`` (the parsed text with ``placeholders`` spliced in for ``refs``) is
    ``statement`` with exactly those references renamed, each keeping its alias."""
    statements = (checked or {}).get(Key.STATEMENTS) or []
    if (checked or {}).get(Key.ERROR) or len(statements) != 1:
        return False
    tree = statements[0][Key.NODE]
    by_name = {p: ref.node for p, ref in zip(placeholders, refs, strict=True)}
    seen: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if is_base_table(item) and item.get(Key.TABLE_NAME) in by_name:
                name = item[Key.TABLE_NAME]
                if name in seen or str(item.get(Key.ALIAS)) != alias_or_name(by_name[name]):
                    return False
                seen.add(name)
                item.clear()
                item.update(by_name[name])  # compared below, never changed: no copy needed
                continue
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return seen == set(placeholders) and same_ignoring_locations(tree, statement)


def schema_qualified(statement: Any, database: str) -> set[str]:
    """Table names that a column reference of the statement qualifies with a schema."""
    found: set[str] = set()
    for column in column_refs(statement, into_subqueries=True):
        parts = [str(p).lower() for p in column.get(Key.COLUMN_NAMES) or []]
        if len(parts) >= 3 and parts[0] == "main":
            found.add(parts[1])
        if len(parts) >= 4 and parts[0] == database.lower() and parts[1] == "main":
            found.add(parts[2])
    return found


def names_from_text(statement: Any, refs: Sequence[TableRef], time_calls: bool = False) -> bool:
    """Whether an output column is named by the text of an expression holding a rewritten reference
    (or, with ``time_calls``, a call of a time function, which ``pin_time`` rewrites)."""
    node = statement
    while node.get(Key.TYPE) == "SET_OPERATION_NODE":
        node = node.get(Key.LEFT) or {}
    marked = {id(ref.node) for ref in refs}
    if time_calls:
        marked |= {id(call) for call, _ in time_calls_of(node)}
    for item in node.get(Key.SELECT_LIST) or []:
        if item.get(Key.ALIAS) or (item.get(Key.CLASS) == Class.STAR):
            continue
        if item.get(Key.CLASS) == Class.COLUMN_REF and not time_calls:
            continue
        stack: list[Any] = [item]
        while stack:
            part = stack.pop()
            if isinstance(part, dict):
                if id(part) in marked:
                    return True
                stack.extend(part.values())
            elif isinstance(part, list):
                stack.extend(part)
    return False


def splice(query: str, refs: Sequence[TableRef], sources: Sequence[str]) -> str:
    """``query`` with the text of each reference replaced by its source, keeping its alias."""
    text = query.encode()
    pieces: list[bytes] = []
    end = len(text)
    for ref, source in sorted(zip(refs, sources, strict=True), key=lambda p: -p[0].span[0]):
        start, length = ref.span
        alias = quote_name(alias_or_name(ref.node))
        renamed = ref.node.get(Key.COLUMN_NAME_ALIAS) or []
        if renamed:
            alias += "(" + ", ".join(quote_name(str(c)) for c in renamed) + ")"
        pieces.append(text[start + length : end])
        pieces.append(f"{source} AS {alias}".encode())
        end = start
    pieces.append(text[:end])
    return b"".join(reversed(pieces)).decode()


_NAME = r'(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+")'


_WRITTEN_REFERENCE = re.compile(
    rf"(?P<names>{_NAME}(?:\s*\.\s*{_NAME}){{0,2}})"
    rf"(?:\s+(?:AS\s+)?(?P<alias>{_NAME})(?:\s*\((?P<columns>\s*{_NAME}(?:\s*,\s*{_NAME})*)\s*\))?)?",
    re.IGNORECASE,
)


_NAME_TOKEN = re.compile(_NAME)


def plainly_written(query: str, refs: Sequence[TableRef]) -> bool:
    """Whether the text of each reference is exactly ``[catalog.][schema.]name [[AS] alias
    [(columns)]]`` naming what its node names, so that splicing another source in its place
    changes nothing else in the query (otherwise the spliced text is parsed back and compared)."""
    text = query.encode()
    for ref in refs:
        start, length = ref.span
        try:
            written = text[start : start + length].decode()
        except UnicodeDecodeError:
            return False
        match = _WRITTEN_REFERENCE.fullmatch(written)
        if match is None:
            return False
        node = ref.node
        named = list(table_key(node))
        if _names(match["names"]) != [n for n in named if n]:
            return False
        alias = str(node.get(Key.ALIAS) or "")
        if (match["alias"] is None) != (not alias) or (alias and _names(match["alias"]) != [alias]):
            return False
        columns = column_aliases(node)
        if _names(match["columns"] or "") != columns:
            return False
    return True


def _names(text: str) -> list[str]:
    """The identifiers of a dotted or comma-separated list, as DuckDB's syntax tree spells them:
    quoted ones unquoted, unquoted ones as written (DuckDB keeps their case)."""
    return [t[1:-1].replace('""', '"') if t.startswith('"') else t for t in _NAME_TOKEN.findall(text)]


def read_text(files: Sequence[str], options: str) -> str:
    """``read_parquet`` of a list of files."""
    return f"read_parquet([{', '.join(sql_string(f) for f in files)}], {options})"


def quote_name(identifier: str) -> str:
    """An identifier as SQL text."""
    return '"' + identifier.replace('"', '""') + '"'


def sql_string(text: str) -> str:
    """A string literal as SQL text."""
    return "'" + text.replace("'", "''") + "'"
