"""Keep a metadata index next to a parquet or Hudi copy-on-write table, so that queries read only the
files that may hold matching rows.

Build the index once, keep it current with sync (or update), then ask which files a predicate
needs (prune, files), or run SQL over the table with DuckDB reading only those (query).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import os
import shlex
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import AlwaysTrue, HudiExprError, Reference, Translation, from_json
from hudi_expr.bloom import BloomFilterFormatError
from hudi_expr.printer import format_literal, quote_column
from hudi_expr.stats import ColumnStats, leaf_columns
from index_store import (
    IndexConfig,
    IndexCorruptError,
    IndexedTable,
    IndexNotBuiltError,
    IndexStaleError,
    PruneResult,
    Snapshot,
    open_table,
)
from index_store.partitions import read_files
from index_store.partitions.base import open_index_file
from index_store.partitions.record_index import METADATA_KEY as RECORD_INDEX_METADATA
from index_store.tagging import TagStats, tag_stats
from index_store.tagging.stats import TAG_STATS_KEY

__all__ = ["build_parser", "main", "parse_where", "read_argument"]

EPILOG = """\
examples:
  hudi-index build warehouse/orders --bloom order_id
  hudi-index prune warehouse/orders --where "ship_date >= DATE '1995-03-01' AND order_id = 42"
  hudi-index files warehouse/orders --where "order_id IN (1, 2, 3)" | xargs ls -l
  hudi-index query warehouse/orders "SELECT count(*) FROM orders WHERE order_id = 42"
  hudi-index sync warehouse/orders
  hudi-index build warehouse/orders --rebuild      # when the index is reported corrupt
  hudi-index build warehouse/events --record-key user_id,event_id --record-index
  hudi-index tag warehouse/events --keys batch.parquet --out tagged.parquet
  hudi-index check warehouse/events               # record keys held by two files

--where takes SQL (parsed by DuckDB) or the JSON form of an expression; --where @FILE reads it
from a file and --where - from standard input, for predicates too long for a command line.
Exit status: 0 on success, 2 when the command line is at fault (bad path, predicate or option),
1 for any other error.
"""


# ------------------------------------------------------------------------------------ predicates


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


def parse_where(text: str) -> Translation:
    """A predicate given on the command line, with the parts of it pruning cannot use: SQL
    (through the DuckDB adapter, when installed) or the JSON form of ``hudi_expr.to_json``."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")) or stripped in ("true", "false"):
        return Translation(from_json(stripped), ())
    translation: Translation = _duckdb("SQL predicates").translate_sql(stripped)
    return translation


def _where(args: argparse.Namespace) -> Translation:
    """``--where`` parsed; every file (TRUE) when it was not given."""
    if args.where is None:
        return Translation(AlwaysTrue(), ())
    return parse_where(read_argument(args.where))


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


# ------------------------------------------------------------------------------------- output


def _json(value: object) -> None:
    """One JSON document on stdout, ending in a newline (as every line of text should)."""
    sys.stdout.write(json.dumps(value) + "\n")


def _say(args: argparse.Namespace, kind: str, text: str) -> None:
    """A ``note`` or ``warning`` line on stderr, where it never mixes with the output."""
    print(f"hudi-index {args.command}: {kind}: {text}", file=sys.stderr)


def _files(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


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
    return {
        "kept": result.kept,
        "total": result.total,
        "files": result.files,
        "unknown_files": result.unknown_files,
        "changed_files": result.changed_files,
        "index_used": result.index_used,
        "notes": result.notes(),
    }


def _warn_if_unused(args: argparse.Namespace, result: PruneResult) -> None:
    """Say why every file was kept when the index could not be read (``--keep-all-on-corrupt``)."""
    if not result.index_used:
        _say(args, "warning", f"the index is unreadable, every file is kept: {result.index_error}")


# ------------------------------------------------------------------------------------ commands


def _table(args: argparse.Namespace) -> IndexedTable:
    return open_table(args.table, index_path=args.index_path)


def _built(table: IndexedTable) -> IndexedTable:
    """``table``, or ``IndexNotBuiltError`` when it has no index (``compact`` would otherwise commit
    an empty one, and ``stats`` describe nothing as "version 0")."""
    if not table.snapshot().version:
        raise IndexNotBuiltError(table.root)
    return table


def _cmd_build(args: argparse.Namespace) -> int:
    """Index every file; with ``--rebuild`` the old index is moved aside first, and its place said."""
    t0 = time.perf_counter()
    table = _table(args)
    if args.record_key and table.reader.kind != "parquet":
        declared_spec = getattr(table.reader, "record_key_spec", lambda: None)()
        declared = ", ".join(declared_spec.fields) if declared_spec is not None else ""
        raise ValueError(
            f"--record-key is for plain parquet tables: a Hudi table declares its own record key "
            f"(hoodie.table.recordkey.fields: {declared or 'none'}), which build uses"
        )
    if args.record_index and not args.record_key and table.reader.kind == "parquet":
        raise ValueError(
            "--record-index needs the record key of a plain parquet table: "
            "add --record-key COLUMN[,COLUMN...]"
        )
    before = _set_aside(table)
    blooms = args.bloom if args.bloom else None
    version = table.build(
        bloom_columns=blooms,
        fpp=args.fpp,
        progress=None,
        rebuild=args.rebuild,
        record_key=args.record_key or None,
        record_index=args.record_index,
        key_fpp=args.key_fpp,
    )
    for aside in sorted(_set_aside(table) - before):
        print(f"moved the old index aside to {aside}")
    n = table.stats(columns=[]).num_files
    empty = " (the table has no data files yet)" if not n else ""
    print(f"built index version {version}: {_files(n)}{empty} in {time.perf_counter() - t0:.2f} s")
    config = table.snapshot().config
    if _has_keys(config):
        index = "with a record index" if config.record_index else "no record index"
        print(f"record key: {_key_text(config)}; {index}")
    return 0


def _record_key_list(text: str) -> list[str]:
    """An argparse type: ``a,b`` -> the record key's columns, in order."""
    fields = [f.strip() for f in text.split(",")]
    if not text.strip() or not all(fields):
        raise argparse.ArgumentTypeError(f"expected COLUMN[,COLUMN...], got {text!r}")
    if len(set(fields)) != len(fields):
        raise argparse.ArgumentTypeError(f"a column is named twice in {text!r}")
    return fields


def _set_aside(table: IndexedTable) -> set[Path]:
    """The folders ``build(rebuild=True)`` has moved the index to (``<index>.broken-<time>``)."""
    return set(table.index_root.parent.glob(f"{table.index_root.name}.broken-*"))


def _cmd_sync(args: argparse.Namespace) -> int:
    version = _table(args).sync()
    print("index is up to date" if version is None else f"synced: index version {version}")
    return 0


def _cmd_update(args: argparse.Namespace) -> int:
    """One index commit for files a writer added and removed (cheaper than ``sync``'s listing)."""
    if not args.added and not args.removed:
        raise ValueError("nothing to update: give --added PATH... and/or --removed PATH...")
    table = _table(args)
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
    where = _where(args)
    t0 = time.perf_counter()
    result = _table(args).prune(where, on_corrupt="keep_all" if args.keep_all_on_corrupt else "raise")
    elapsed = time.perf_counter() - t0
    _warn_if_unused(args, result)
    if args.json:
        _json(_result_json(result))
        return 0
    print(_shorten(result.explain()))
    print(f"planned in {elapsed * 1e3:.1f} ms")
    if args.list:
        for f in result.files:
            print(f)
    return 0


def _cmd_files(args: argparse.Namespace) -> int:
    """Only the kept files' absolute paths on stdout, one per line, for other tools to read."""
    result = _table(args).prune(_where(args), on_corrupt="keep_all" if args.keep_all_on_corrupt else "raise")
    _warn_if_unused(args, result)
    for note in result.notes():
        if result.index_used or note != result.note:
            _say(args, "note", note)
    if args.json:
        _json(_result_json(result))
    else:
        sys.stdout.write("".join(f"{f}\n" for f in result.files))
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    """Run SQL with each table a DuckDB view, every reference to it read pruned (``plan``).

    DuckDB cannot make a view of a table without data files, so such a table answers no rows.
    """
    duck = _duckdb("SQL queries")
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
    ``--with NAME=PATH``. Each must have an index (``register`` says so; an unreadable index
    lets the query read every file, with a warning)."""
    name = args.name or _default_name(args.table)
    tables = [(name, _table(args))]
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
    """The index's version and size, and per column what its statistics say, as SQL literals."""
    table = _built(_table(args))
    snap = table.snapshot()
    types = leaf_columns(snap.schema)
    unknown = [c for c in args.columns or () if c not in types]
    if unknown:
        raise ValueError(f"unknown column {unknown[0]!r}; the index has {', '.join(types) or 'none'}")
    stats = table.stats(columns=args.columns or None, with_blooms=False)
    columns = {name: _column_summary(cs, types.get(name)) for name, cs in stats.columns.items()}
    keys = _key_summary(table, snap)
    if args.json:
        _json(
            {
                "version": snap.version,
                "checkpoint_version": snap.checkpoint_version,
                "files": stats.num_files,
                "table_instant": snap.table_instant,
                "columns": columns,
                "record_key": keys,
            }
        )
        return 0
    print(
        f"index version {snap.version} (checkpoint {snap.checkpoint_version}), {_files(stats.num_files)}, "
        f"data instant {snap.table_instant or '-'}"
    )
    for line in _key_lines(keys) if keys is not None else ():
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


# ------------------------------------------------------------------------------ record keys

# Keys tagged per call when a progress bar is shown (the bar moves once per chunk).
TAG_CHUNK = 1_000_000
# Columns taken as record key strings when the file has no --key-col and not the key fields.
KEY_COLUMNS = ("_hoodie_record_key", "key")
CHECK_SHOWN = 10  # duplicate keys ``check`` prints (all are counted)


def _has_keys(config: IndexConfig) -> bool:
    return bool(config.key_fields) or config.key_column is not None


def _key_text(config: IndexConfig) -> str:
    """``id, name (complex key generator), stored in _hoodie_record_key``."""
    fields = ", ".join(config.key_fields) or "(not declared)"
    text = f"{fields} ({config.key_generator or 'simple'} key generator)"
    return text + (f", stored in {config.key_column}" if config.key_column else "")


def _command(name: str, args: argparse.Namespace, *extra: str) -> str:
    """``hudi-index NAME TABLE [--index-path DIR] EXTRA...``, quoted for a shell."""
    words = ["hudi-index", name, args.table, *extra]
    if args.index_path:
        words += ["--index-path", args.index_path]
    return " ".join(shlex.quote(w) for w in words)


def _keyed(table: IndexedTable, args: argparse.Namespace) -> IndexConfig:
    """The index's configuration, or a one-line ``ValueError`` when it holds no record keys."""
    config = _built(table).snapshot().config
    if not _has_keys(config):
        if table.reader.kind == "parquet":
            how = f"build it with them: {_command('build', args, '--record-key', 'COLUMN[,COLUMN...]')}"
        elif getattr(table.reader, "record_key_spec", lambda: None)() is not None:
            how = f"it was built without them: rebuild it, {_command('build', args)}"
        else:
            how = "the table declares no record key fields and stores no _hoodie_record_key"
        raise ValueError(f"the index of {table.root} holds no record keys: {how}")
    return config


def _stale(exc: IndexStaleError, args: argparse.Namespace) -> ValueError:
    return ValueError(
        f"the index of {exc.table} is stale ({exc.reason}): run {_command('sync', args)}, or pass --sync"
    )


# -- reading keys


@dataclasses.dataclass(frozen=True)
class _Keys:
    """What ``tag`` is given: key strings or a table of the key fields, partitions, and from where."""

    keys: pa.Array | pa.Table
    partitions: pa.Array | None
    source: str  # "the key fields a, b", "column 'k'", "standard input"

    def __len__(self) -> int:
        return self.keys.num_rows if isinstance(self.keys, pa.Table) else len(self.keys)


def _read_keys(args: argparse.Namespace, config: IndexConfig) -> _Keys:
    if args.keys == "-":
        for option in ("key_col", "partition_col"):
            if getattr(args, option):
                flag = "--" + option.replace("_", "-")
                raise ValueError(
                    f"{flag} needs a parquet or CSV keys file: --keys - reads one key per line from "
                    "standard input"
                )
        return _Keys(_stdin_keys(), None, "standard input")
    data = _read_keys_file(args.keys)
    names = data.column_names
    partitions = None
    if args.partition_col is not None:
        partitions = _string_column(data, args.partition_col, "--partition-col", args.keys).fill_null("")
    fields = list(config.key_fields)
    stored = next((c for c in KEY_COLUMNS if c in names), None)
    # Fields whose encoding is unknown (RecordKeySpec "unknown") cannot be encoded: take the stored keys.
    encodable = config.key_generator != "unknown" or stored is None
    if args.key_col is not None:
        keys: pa.Array | pa.Table = _string_column(data, args.key_col, "--key-col", args.keys)
        source = f"column {args.key_col!r}"
    elif fields and all(f in names for f in fields) and encodable:
        keys, source = (
            data.select(fields),
            "the key field" + ("s " if len(fields) > 1 else " ") + ", ".join(fields),
        )
    elif stored is not None:
        keys, source = _string_column(data, stored, "the key column", args.keys), f"column {stored!r}"
    else:
        missing = [f for f in fields if f not in names]
        wanted = (
            f"lacks the record key field{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(the table's key is {', '.join(fields)})"
            if fields
            else f"has no column {KEY_COLUMNS[0]!r} or {KEY_COLUMNS[1]!r} of record key strings"
        )
        raise ValueError(
            f"--keys {args.keys} {wanted}; its columns are {', '.join(names) or 'none'}: name a column "
            "of record key strings with --key-col COLUMN"
        )
    return _Keys(keys, partitions, source)


def _read_keys_file(path: str) -> pa.Table:
    """A parquet or CSV file (by its name, else by its first bytes); CSV columns as strings, an
    empty unquoted cell null (``""`` is the empty string)."""
    import pyarrow.csv
    import pyarrow.parquet as pq

    if not os.path.exists(path):
        raise ValueError(f"--keys {path}: no such file")
    lower = path.lower()
    try:
        if lower.endswith((".parquet", ".parq", ".pq")) or os.path.isdir(path):
            return pq.read_table(path)
        if not lower.endswith((".csv", ".csv.gz", ".csv.bz2", ".csv.zst")):
            with open(path, "rb") as f:
                if f.read(4) == b"PAR1":
                    return pq.read_table(path)
        with pyarrow.csv.open_csv(path) as reader:
            names = reader.schema.names
        convert = pyarrow.csv.ConvertOptions(
            column_types={name: pa.string() for name in names},
            strings_can_be_null=True,
            null_values=[""],
            quoted_strings_can_be_null=False,
        )
        return pyarrow.csv.read_csv(path, convert_options=convert)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).strip()
        raise ValueError(f"--keys {path}: not a readable parquet or CSV file: {reason}") from None


def _stdin_keys() -> pa.Array:
    """One record key per line of standard input (``\\n`` or ``\\r\\n`` line ends)."""
    buffer = getattr(sys.stdin, "buffer", None)
    try:
        text = buffer.read().decode("utf-8") if buffer is not None else sys.stdin.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"--keys -: standard input is not UTF-8 text ({exc.reason})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    empty = [i for i, line in enumerate(lines) if not line]
    if empty:
        raise ValueError(
            f"--keys -: line {empty[0] + 1} of standard input is empty ({len(empty)} empty lines): "
            "give one record key per line (a record key is never empty)"
        )
    return pa.array(lines, pa.string())


def _string_column(data: pa.Table, name: str, what: str, path: str) -> pa.Array:
    if name not in data.column_names:
        names = ", ".join(data.column_names) or "none"
        raise ValueError(f"{what} {name!r} is not a column of {path}; its columns are {names}")
    column = data[name].combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if not (
        pa.types.is_string(column.type)
        or pa.types.is_large_string(column.type)
        or pa.types.is_string_view(column.type)
    ):
        hint = (
            "record key strings as Hudi writes _hoodie_record_key"
            if what != "--partition-col"
            else "partition paths"
        )
        raise ValueError(f"{what} {name!r} of {path} holds {column.type}, not {hint}")
    return column.cast(pa.string())


# -- tagging


def _show_progress() -> bool:
    return sys.stderr.isatty()


def _tag(table: IndexedTable, keys: _Keys, using: str, sync: bool) -> pa.Table:
    """``table.tag`` of every key; on a terminal, in chunks of ``TAG_CHUNK`` keys with a progress bar
    (chunks in input order, their results concatenated: what a single call returns). Sorting the
    keys first would give each chunk fewer files to read, but costs more than it saves."""
    n = len(keys)
    if n <= TAG_CHUNK or not _show_progress():
        return table.tag(keys.keys, keys.partitions, using, sync=sync)  # type: ignore[arg-type]
    from tqdm import tqdm

    results = []
    with tqdm(total=n, desc="tagging", unit="key", unit_scale=True, file=sys.stderr, leave=False) as bar:
        for start in range(0, n, TAG_CHUNK):
            chunk = keys.keys.slice(start, TAG_CHUNK)
            parts = None if keys.partitions is None else keys.partitions.slice(start, TAG_CHUNK)
            results.append(table.tag(chunk, parts, using, sync=sync and not start))  # type: ignore[arg-type]
            bar.update(len(chunk))
    stats = _merged_stats([tag_stats(r) for r in results])
    result = pa.concat_tables(results).combine_chunks()
    return result.replace_schema_metadata({TAG_STATS_KEY: stats.to_json().encode()})


def _merged_stats(parts: list[TagStats]) -> TagStats:
    """One ``TagStats`` of chunked runs: counters and stage times summed (the file count is one)."""
    first = parts[0]
    seconds: collections.Counter[str] = collections.Counter()
    for p in parts:
        seconds.update(p.seconds)
    summed = {
        f.name: sum(getattr(p, f.name) for p in parts)
        for f in dataclasses.fields(TagStats)
        if f.name != "files" and isinstance(getattr(first, f.name), int)
    }
    return dataclasses.replace(first, **summed, seconds=dict(seconds))


def _cmd_tag(args: argparse.Namespace) -> int:
    """Which data file holds each record key (an update), and which keys are new (inserts)."""
    t0 = time.perf_counter()
    table = _table(args)
    config = _keyed(table, args)
    if args.using == "record" and not config.record_index:
        key = "" if table.reader.kind != "parquet" else " --record-key " + ",".join(config.key_fields)
        raise ValueError(
            f"the index of {table.root} has no record index: build it with one "
            f"({_command('build', args)}{key} --record-index), or tag with --using bloom"
        )
    out = args.out
    if out is not None and not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise ValueError(f"--out {out}: no such folder {os.path.dirname(os.path.abspath(out))}")
    t_read = time.perf_counter()
    keys = _read_keys(args, config)
    read_seconds = time.perf_counter() - t_read
    t1 = time.perf_counter()
    try:
        result = _tag(table, keys, args.using, args.sync)
    except IndexStaleError as exc:
        raise _stale(exc, args) from None
    tag_seconds = time.perf_counter() - t1
    stats = tag_stats(result)
    if out is not None:
        import pyarrow.parquet as pq

        pq.write_table(result, out)
    total = time.perf_counter() - t0
    if args.json:
        _json(
            {
                **dataclasses.asdict(stats),
                "keys_from": keys.source,
                "out": out,
                "read_seconds": read_seconds,
                "tag_seconds": tag_seconds,
                "total_seconds": total,
            }
        )
        return 0
    how = "the record index" if stats.method == "record" else "key ranges and bloom filters"
    scope = "per partition" if keys.partitions is not None else "globally"
    counts = f"{_count(stats.updates, 'update')}, {_count(stats.inserts, 'insert')}"
    print(f"{counts} ({_count(stats.keys, 'key')} from {keys.source})")
    print(f"tagged {scope} with {how} over {_files(stats.files)}:")
    print(stats.table())
    if out is not None:
        print(f"wrote {result.num_rows:,} rows (key, partition, file) to {out}")
    print(f"total {total:.2f} s (reading keys {read_seconds:.2f} s, tagging {tag_seconds:.2f} s)")
    return 0


# -- check


def _stale_reason(table: IndexedTable) -> str | None:
    """Why the index does not describe the files on disk (None: it does)."""
    fresh = table.freshness()
    return None if fresh.current and not fresh.deleted else fresh.reason()


def _cmd_check(args: argparse.Namespace) -> int:
    """Record keys held by more than one live data file: exit 1 if there are any."""
    table = _table(args)
    _keyed(table, args)
    if args.sync:
        table.sync()
    reason = _stale_reason(table)
    if reason is not None:
        raise _stale(IndexStaleError(table.root, reason), args)
    n = table.stats(columns=[]).num_files
    dup = table.duplicate_keys()
    holders: dict[str, dict[str, str]] = {}  # key -> file -> its partition
    for key, part, file in zip(*(dup[c].to_pylist() for c in ("key", "partition", "file")), strict=True):
        holders.setdefault(key, {})[file] = part
    # A key in two partitions only is unique within each: per-partition tagging still works.
    within = {k for k, files in holders.items() if len(set(files.values())) < len(files)}
    shown = list(holders)[: args.limit]
    if args.json:
        _json(
            {
                "files": n,
                "duplicate_keys": len(holders),
                "within_a_partition": len(within),
                "duplicates": [
                    {"key": k, "files": sorted(holders[k]), "within_a_partition": k in within} for k in shown
                ],
            }
        )
        return 1 if holders else 0
    if not holders:
        print(f"record keys are unique across {_files(n)}")
        return 0
    one = len(holders) == 1
    print(
        f"{len(holders):,} record key{'' if one else 's'} {'is' if one else 'are'} held by more than one "
        f"live data file (of {_files(n)}); {len(within):,} within a partition"
    )
    for k in shown:
        where = ", ".join(f"{f} ({holders[k][f] or 'no partition'})" for f in sorted(holders[k]))
        print(f"  {k!r}: {where}")
    if len(shown) < len(holders):
        print(f"  ... and {len(holders) - len(shown):,} more (--limit N shows more)")
    return 1


# -- stats


def _key_summary(table: IndexedTable, snap: Snapshot) -> dict[str, Any] | None:
    """The record key, the record index and the per-file key filters (None: no key information)."""
    config = snap.config
    if not _has_keys(config):
        return None
    summary: dict[str, Any] = {
        "fields": list(config.key_fields),
        "column": config.key_column,
        "generator": config.key_generator or "simple",
        "key_fpp": config.key_fpp,
        "record_index": config.record_index,
    }
    if config.record_index:
        live = snap.live.get("record_index", ())
        summary["record_index_files"] = len(live)
        summary["record_index_entries"] = sum(_record_index_rows(table.index_root / rel) for rel in live)
    summary["key_filters"] = _key_filters(table, snap)
    return summary


def _record_index_rows(path: Path) -> int:
    """Entries of one record index file, from its schema metadata (no record batch is read)."""
    try:
        with pa.memory_map(str(path), "r") as source:
            meta = pa.ipc.open_file(source).schema.metadata or {}
        return int(json.loads(meta[RECORD_INDEX_METADATA])["rows"])
    except FileNotFoundError:
        raise IndexCorruptError(str(path), "the timeline lists it but it does not exist") from None
    except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as exc:
        raise IndexCorruptError(str(path), f"unreadable record index file ({exc})") from None


def _key_filters(table: IndexedTable, snap: Snapshot) -> dict[str, Any]:
    """Per bloom filter type, how many live files have one; their serialized size; files without."""
    file_idx = read_files(table.index_root, snap.live["files"], ["file_idx"])["file_idx"].to_numpy()
    idx_parts: list[np.ndarray] = []
    type_parts: list[pa.Array] = []
    size_parts: list[np.ndarray] = []
    for rel in snap.live.get("record_keys", ()):
        try:
            batches = open_index_file(table.index_root, rel).iter_batches(
                columns=["file_idx", "bloom_type", "bloom"], batch_size=1024
            )
            for batch in batches:  # one batch of filters at a time in memory
                idx_parts.append(batch.column(0).to_numpy(zero_copy_only=False))
                type_parts.append(batch.column(1).cast(pa.string()))
                size_parts.append(
                    pc.binary_length(batch.column(2)).fill_null(0).to_numpy(zero_copy_only=False)
                )
        except (pa.ArrowException, OSError, KeyError) as exc:
            raise IndexCorruptError(str(table.index_root / rel), f"unreadable key filters ({exc})") from None
    rows_idx = np.concatenate(idx_parts) if idx_parts else np.zeros(0, np.int64)
    types = pa.concat_arrays(type_parts) if type_parts else pa.array([], pa.string())
    sizes = np.concatenate(size_parts) if size_parts else np.zeros(0, np.int64)
    # The newest row of each live file: the last written (later files, later rows).
    last = len(rows_idx) - 1 - np.unique(rows_idx[::-1], return_index=True)[1]
    last = last[np.isin(rows_idx[last], file_idx)]
    kinds = collections.Counter(types.take(pa.array(last, pa.int64())).to_pylist())
    without = int(len(file_idx) - len(last) + kinds.pop(None, 0))
    return {
        "types": dict(kinds.most_common()),
        "bytes": int(sizes[last].sum()),
        "files_without": without,
    }


def _key_lines(summary: dict[str, Any]) -> list[str]:
    fields = ", ".join(summary["fields"]) or "(not declared)"
    stored = f", stored in {summary['column']}" if summary["column"] else ""
    lines = [f"record key: {fields} ({summary['generator']} key generator){stored}"]
    if summary["record_index"]:
        lines.append(
            f"record index: on, {summary['record_index_entries']:,} entries in "
            f"{summary['record_index_files']} index file{'' if summary['record_index_files'] == 1 else 's'}"
        )
    else:
        lines.append("record index: off")
    filters = summary["key_filters"]
    kinds = [
        f"{kind}{' (Hudi footer)' if kind == 'DYNAMIC_V0' else ''} x {count}"
        for kind, count in filters["types"].items()
    ]
    if filters["files_without"]:
        kinds.append(f"none x {filters['files_without']}")
    lines.append(f"key filters: {', '.join(kinds) or 'none'}; {_size(filters['bytes'])} in all")
    return lines


def _size(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n:,} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _cmd_compact(args: argparse.Namespace) -> int:
    print(f"compacted: index version {_built(_table(args)).compact()}")
    return 0


def _cmd_clean(args: argparse.Namespace) -> int:
    deleted = _table(args).clean(retention_seconds=args.retention)
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
        p.add_argument(
            "table",
            metavar="TABLE",
            help="the table's folder: plain parquet files, or a Hudi copy-on-write table",
        )
        p.add_argument(
            "--index-path",
            metavar="DIR",
            help="keep the index in DIR, e.g. for a table you cannot write to "
            "(default: TABLE/.hoodie/.index)",
        )
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

    p = add("build", "index every data file of the table from scratch")
    p.add_argument(
        "--bloom",
        action="append",
        metavar="COLUMN",
        help="keep bloom filters on COLUMN (repeatable; default: the table's record key, if it has one)",
    )
    p.add_argument(
        "--fpp", type=_fraction, default=0.01, help="bloom filter false-positive rate (default: %(default)s)"
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="move the existing index aside (to <index>.broken-<time>) first: the way out of a corrupt index",
    )
    p.add_argument(
        "--record-key",
        type=_record_key_list,
        metavar="COLUMN[,COLUMN...]",
        help="the record key of a plain parquet table, for tag and check (several columns: Hudi's "
        "complex key, col1:v1,col2:v2); a Hudi table's own is used without it",
    )
    p.add_argument(
        "--record-index",
        action="store_true",
        help="also keep a record index (key -> file): for random keys, which key ranges cannot narrow",
    )
    p.add_argument(
        "--key-fpp",
        type=_fraction,
        default=1e-6,
        help="false-positive rate of the per-file key bloom filters built here (Hudi's footer filters "
        "are kept as written) (default: %(default)s)",
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
    p.add_argument("--sync", action="store_true", help="sync a stale index first instead of failing")
    p.add_argument("--out", metavar="FILE", help="write the result (key, partition, file) to a parquet file")
    p.add_argument("--json", action="store_true", help="print the counts and stage statistics as JSON")
    p.set_defaults(run=_cmd_tag)

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
    p.set_defaults(run=_cmd_check)

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


if __name__ == "__main__":
    sys.exit(main())
