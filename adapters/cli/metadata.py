"""``hudi-index metadata``: a partition of a Hudi table's own metadata table printed as a table
(``--where`` filters it in DuckDB), as hudi-cli's metadata commands do; and the lines ``hudi-index
stats`` prints about which metadata partitions exist and which questions they answer."""

from __future__ import annotations

import argparse
from typing import Any

import pyarrow as pa

from adapters.cli.support import duckdb_adapter, print_json, read_argument
from index_store import IndexedTable
from index_store.hudi_metadata import HudiMetadataTable

__all__ = ["PARTITION_READERS", "cmd_metadata", "metadata_lines", "metadata_summary"]


def _read(mdt: HudiMetadataTable, partition: str) -> pa.Table:
    readers = {
        "files": lambda: mdt.files(),
        "column_stats": lambda: mdt.column_stats(),
        "partition_stats": lambda: mdt.partition_stats(),
        "bloom_filters": lambda: mdt.bloom_filters(),
        "record_index": lambda: mdt.record_index(),
    }
    if partition in readers:
        return readers[partition]()
    if partition.startswith("secondary_index_"):
        return mdt.secondary_index(partition)
    raise ValueError(
        f"--partition {partition!r}: not a metadata partition (one of {', '.join(PARTITION_READERS)}, "
        "secondary_index_<name>)"
    )


PARTITION_READERS = ("files", "column_stats", "partition_stats", "bloom_filters", "record_index")


def cmd_metadata(args: argparse.Namespace) -> int:
    """Print the records of one metadata partition, filtered by ``--where`` (DuckDB SQL over its
    columns: ``"amount".min > 100`` on ``column_stats``)."""
    mdt = HudiMetadataTable(args.table, require_in_step=False)
    table = _read(mdt, args.partition)
    if args.where is not None:
        duckdb_adapter("--where on a metadata partition")
        import duckdb

        con = duckdb.connect()
        con.register("records", table)
        table = con.sql(f"SELECT * FROM records WHERE {read_argument(args.where)}").to_arrow_table()
    if args.limit is not None:
        table = table.slice(0, args.limit)
    if args.json:
        print_json(_jsonable(table.to_pylist()))
        return 0
    print(_text(table))
    return 0


def _text(table: pa.Table) -> str:
    """A plain text table: a header, then one line per record, columns padded."""
    rows = [table.column_names] + [[_cell(v) for v in r.values()] for r in table.to_pylist()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(table.column_names))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([*lines, f"({table.num_rows} records)"])


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_cell(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return "null" if value is None else str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def metadata_summary(table: IndexedTable) -> dict[str, Any] | None:
    """Which metadata partitions the table's metadata table has, which are being built, whether it
    is in step, and which of them answer which question now; None without a metadata table."""
    if table.hudi is None:
        return None
    state = table.hudi.state()
    return {
        "readable": state.mdt is not None,
        "step": state.step,
        "reason": state.reason,
        "partitions": list(state.available),
        "inflight": list(state.inflight),
        "used": {s.name: s.used_for for s in table.hudi_indexes() if s.used_for},
    }


def metadata_lines(summary: dict[str, Any]) -> list[str]:
    """``metadata_summary`` for people, one line each."""
    if not summary["readable"]:
        return [f"Hudi metadata table: not readable ({summary['reason']})"]
    used = ", ".join(f"{p} ({q})" for p, q in summary["used"].items()) or "none"
    lines = [
        f"Hudi metadata table: {summary['step'].replace('_', ' ')}; partitions "
        f"{', '.join(summary['partitions']) or 'none'}",
        f"  used: {used}",
    ]
    if summary["inflight"]:
        lines.append(f"  being built (not used): {', '.join(summary['inflight'])}")
    return lines
