"""The ``hudi-index`` commands about record keys: ``tag`` (which file holds each incoming key),
``check`` (keys held by two files), and the record-key part of ``stats`` and ``build``."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from adapters.cli.support import count_text, files_text, open_from_args, print_json, require_built
from index_store import IndexConfig, IndexCorruptError, IndexedTable, IndexStaleError, Snapshot
from index_store.partitions import read_files
from index_store.partitions.base import open_index_file
from index_store.partitions.record_index import METADATA_KEY as RECORD_INDEX_METADATA
from index_store.tagging import TagStats, tag_stats
from index_store.tagging.stats import TAG_STATS_KEY

__all__ = [
    "CHECK_SHOWN",
    "TAG_SHOWN",
    "cmd_check",
    "cmd_tag",
    "has_keys",
    "key_lines",
    "key_summary",
    "key_text",
]


# Keys tagged per call when a progress bar is shown (the bar moves once per chunk).
TAG_CHUNK = 1_000_000
# Columns taken as record key strings when the file has no --key-col and not the key fields.
KEY_COLUMNS = ("_hoodie_record_key", "key")
CHECK_SHOWN = 10  # duplicate keys ``check`` prints (all are counted)
TAG_SHOWN = 20  # result rows ``tag`` prints without --out (all are counted)


def has_keys(config: IndexConfig) -> bool:
    return bool(config.key_fields) or config.key_column is not None


def key_text(config: IndexConfig) -> str:
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
    """The index's configuration, or a one-line ``ValueError`` when it holds no record keys. A
    Hudi table tagged from its own metadata table (no index built here, or ``--source hudi``):
    the key fields its ``hoodie.properties`` declares, located by Hudi's record index."""
    spec = table.reader.record_key_spec()
    if (
        table.hudi is not None
        and spec is not None
        and (table.source == "hudi" or not table.snapshot().version)
    ):
        return IndexConfig(
            key_fields=spec.fields, key_column=spec.column, key_generator=spec.generator, record_index=True
        )
    config = require_built(table).snapshot().config
    if not has_keys(config):
        if not table.reader.record_key_declared:
            how = f"build it with them: {_command('build', args, '--record-key', 'COLUMN[,COLUMN...]')}"
        elif table.reader.record_key_spec() is not None:
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


def _tag(table: IndexedTable, keys: _Keys, using: str, sync: bool, on_duplicate: str = "all") -> pa.Table:
    """``table.tag`` of every key; on a terminal, in chunks of ``TAG_CHUNK`` keys with a progress bar
    (chunks in input order, their results concatenated: what a single call returns). Sorting the
    keys first would give each chunk fewer files to read, but costs more than it saves."""
    n = len(keys)
    if n <= TAG_CHUNK or not _show_progress():
        return table.tag(keys.keys, keys.partitions, using, sync=sync, on_duplicate=on_duplicate)  # type: ignore[arg-type]
    from tqdm import tqdm

    results = []
    with tqdm(total=n, desc="tagging", unit="key", unit_scale=True, file=sys.stderr, leave=False) as bar:
        for start in range(0, n, TAG_CHUNK):
            chunk = keys.keys.slice(start, TAG_CHUNK)
            parts = None if keys.partitions is None else keys.partitions.slice(start, TAG_CHUNK)
            results.append(
                table.tag(chunk, parts, using, sync=sync and not start, on_duplicate=on_duplicate)  # type: ignore[arg-type]
            )
            bar.update(len(chunk))
    stats = _merged_stats([tag_stats(r) for r in results])
    result = pa.concat_tables(results).combine_chunks()
    return result.replace_schema_metadata({TAG_STATS_KEY: stats.to_json().encode()})


def _merged_stats(parts: list[TagStats]) -> TagStats:
    """One ``TagStats`` of chunked runs: counters, stage times and the pairs each index source
    answered summed (the file count is one)."""
    first = parts[0]
    seconds: collections.Counter[str] = collections.Counter()
    by_source: collections.Counter[str] = collections.Counter()
    for p in parts:
        seconds.update(p.seconds)
        by_source.update(p.pairs_by_source)
    summed = {
        f.name: sum(getattr(p, f.name) for p in parts)
        for f in dataclasses.fields(TagStats)
        if f.name != "files" and isinstance(getattr(first, f.name), int)
    }
    return dataclasses.replace(first, **summed, seconds=dict(seconds), pairs_by_source=dict(by_source))


def cmd_tag(args: argparse.Namespace) -> int:
    """Which data file holds each record key (an update), and which keys are new (inserts)."""
    t0 = time.perf_counter()
    table = open_from_args(args)
    config = _keyed(table, args)
    if args.using == "record" and not config.record_index:
        key = "" if table.reader.record_key_declared else " --record-key " + ",".join(config.key_fields)
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
        result = _tag(table, keys, args.using, args.sync, args.on_duplicate)
    except IndexStaleError as exc:
        raise _stale(exc, args) from None
    tag_seconds = time.perf_counter() - t1
    stats = tag_stats(result)
    if out is not None:
        import pyarrow.parquet as pq

        pq.write_table(result, out)
    total = time.perf_counter() - t0
    if args.json:
        print_json(
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
    if stats.locations == "one":  # Hudi's record index: one location per key
        how = "Hudi's record index (its metadata table; one location per key)"
    scope = "per partition" if keys.partitions is not None else "globally"
    counts = f"{count_text(stats.updates, 'update')}, {count_text(stats.inserts, 'insert')}"
    print(f"{counts} ({count_text(stats.keys, 'key')} from {keys.source})")
    if stats.several_files:
        held = "key is" if stats.several_files == 1 else "keys are"
        print(
            f"{stats.several_files:,} {held} in more than one live file: "
            "a row per file (each copy is updated)"
        )
    print(f"tagged {scope} with {how} over {files_text(stats.files)}:")
    print(stats.table())
    if out is not None:
        print(f"wrote {result.num_rows:,} rows (key, partition, file, file_id) to {out}")
    else:
        for line in _result_lines(result, table.root):
            print(line)
    print(f"total {total:.2f} s (reading keys {read_seconds:.2f} s, tagging {tag_seconds:.2f} s)")
    return 0


def _result_lines(result: pa.Table, root: str) -> list[str]:
    """The first ``TAG_SHOWN`` result rows as an aligned table (files relative to the table), and
    how many more there are."""
    shown = result.slice(0, TAG_SHOWN)
    prefix = root.rstrip(os.sep) + os.sep
    rows = [("key", "partition", "file", "file_id", "status")]
    columns = (shown[c].to_pylist() for c in ("key", "partition", "file", "file_id"))
    for key, part, file, file_id in zip(*columns, strict=True):
        where = "-" if file is None else file[len(prefix) :] if file.startswith(prefix) else file
        rows.append((key, part or "-", where, file_id or "-", "insert" if file is None else "update"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines[0] += f"  (files in {root})"
    if result.num_rows > TAG_SHOWN:
        lines.append(f"... and {result.num_rows - TAG_SHOWN:,} more rows (--out FILE writes them all)")
    return lines


# -- check


def _stale_reason(table: IndexedTable) -> str | None:
    """Why the index does not describe the files on disk (None: it does)."""
    fresh = table.freshness()
    return None if fresh.current and not fresh.deleted else fresh.reason()


def cmd_check(args: argparse.Namespace) -> int:
    """Record keys held by more than one live data file: exit 1 if there are any."""
    table = open_from_args(args)
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
        print_json(
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
        print(f"record keys are unique across {files_text(n)}")
        return 0
    one = len(holders) == 1
    print(
        f"{len(holders):,} record key{'' if one else 's'} {'is' if one else 'are'} held by more than one "
        f"live data file (of {files_text(n)}); {len(within):,} within a partition"
    )
    for k in shown:
        where = ", ".join(f"{f} ({holders[k][f] or 'no partition'})" for f in sorted(holders[k]))
        print(f"  {k!r}: {where}")
    if len(shown) < len(holders):
        print(f"  ... and {len(holders) - len(shown):,} more (--limit N shows more)")
    return 1


# -- stats


def key_summary(table: IndexedTable, snap: Snapshot) -> dict[str, Any] | None:
    """The record key, the record index and the per-file key filters (None: no key information)."""
    config = snap.config
    if not has_keys(config):
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


def key_lines(summary: dict[str, Any]) -> list[str]:
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
