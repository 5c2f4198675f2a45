"""Metadata table log files written for the tests, as Hudi writes them: HoodieMetadataRecord
values (Avro binary against the table's own writer schema) in an HFile data block, or record
keys in a delete block, appended to a metadata file group under a given instant."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa

from index_store.hfile.writer import write_hfile
from index_store.hudi_log import (
    BlockType,
    CommandType,
    block_header,
    encode_command_block,
    encode_delete_block,
    frame,
    read_log_file,
)
from index_store.hudi_log.format import HeaderKey

NS = "org.apache.hudi.avro.model."


def writer_schema(root: Path) -> str:
    """The HoodieMetadataRecord schema the table's own log blocks carry."""
    for log in sorted((root / ".hoodie" / "metadata" / "files").glob(".files-*.log.*")):
        for block in read_log_file(str(log)):
            schema = getattr(block, "header", {}).get(HeaderKey.SCHEMA)
            if schema:
                return str(schema)
    raise AssertionError(f"{root}: no HFile data block with a schema")


def encode(records: Sequence[Mapping[str, Any]], schema: str) -> tuple[list[bytes], list[bytes]]:
    """Sorted cell keys and Avro values of ``records`` (every field of the schema filled)."""
    parsed = fastavro.parse_schema(json.loads(schema))
    names = [f["name"] for f in json.loads(schema)["fields"]]
    cells = []
    for record in records:
        full = {n: None for n in names} | dict(record)
        full.setdefault("type", 0)
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {**full, "key": ""})
        cells.append((str(record["key"]).encode(), buf.getvalue()))
    cells.sort()
    return [k for k, _ in cells], [v for _, v in cells]


def append_log(
    root: Path,
    partition: str,
    file_id: str,
    instant: str,
    records: Sequence[Mapping[str, Any]] = (),
    *,
    deleted_keys: Sequence[str] = (),
    version: int = 9,
    block_size: int = 64 * 1024,
    rollback: str | None = None,
) -> Path:
    """A new log file of metadata file group ``file_id`` holding one HFile data block of
    ``records`` (HFile data blocks of ``block_size`` bytes) and/or one delete block of
    ``deleted_keys``, written by ``instant``, then a rollback command block of ``rollback``."""
    schema = writer_schema(root)
    blocks = b""
    if records:
        keys, values = encode(records, schema)
        content = write_hfile(
            keys, values, file_info={"schema": schema.encode()}, block_size=block_size, index_fanout=8
        )
        blocks += frame(BlockType.HFILE_DATA, block_header(instant, schema=schema), content)
    if deleted_keys:
        table = pa.table(
            {"record_key": list(deleted_keys), "partition_path": [partition] * len(deleted_keys)}
        )
        blocks += encode_delete_block(table, block_header(instant, schema=schema))
    if rollback is not None:
        header = block_header(instant, target_instant=rollback, command=CommandType.ROLLBACK)
        blocks += encode_command_block(header)
    path = root / ".hoodie" / "metadata" / partition / f".{file_id}_{instant}.log.{version}_0-0-0"
    path.write_bytes(blocks)
    return path


def column_stats_record(
    key: str,
    file_name: str,
    column: str,
    min_value: tuple[str, Any] | None,
    max_value: tuple[str, Any] | None,
    *,
    value_type: int | None = None,
    type_info: str | None = None,
    deleted: bool = False,
    tight: bool = False,
    counts: tuple[int, int, int, int] = (1, 0, 1, 1),
    record_type: int = 3,
) -> dict[str, Any]:
    """A column_stats (type 3) or partition_stats (type 6) record; bounds as (wrapper, value)."""

    def wrap(bound: tuple[str, Any] | None) -> Any:
        return None if bound is None else (NS + bound[0], {"value": bound[1]})

    return {
        "key": key,
        "type": record_type,
        "ColumnStatsMetadata": {
            "fileName": file_name,
            "columnName": column,
            "minValue": wrap(min_value),
            "maxValue": wrap(max_value),
            "valueCount": counts[0],
            "nullCount": counts[1],
            "totalSize": counts[2],
            "totalUncompressedSize": counts[3],
            "isDeleted": deleted,
            "isTightBound": tight,
            "valueType": None
            if value_type is None
            else {"typeOrdinal": value_type, "additionalInfo": type_info},
        },
    }


def latest_commit(root: Path) -> str:
    """The data table's latest completed commit (the metadata table's latest delta commit)."""
    from index_store.tables.hudi import HudiTable

    latest = HudiTable(root).timeline().latest_completed_commit()
    assert latest is not None
    return latest


def set_table_property(root: Path, key: str, value: str) -> None:
    """``key=value`` in the table's ``hoodie.properties``, replacing any earlier value."""
    props = root / ".hoodie" / "hoodie.properties"
    lines = [line for line in props.read_text().splitlines() if not line.startswith(f"{key}=")]
    props.write_text("\n".join([*lines, f"{key}={value}"]) + "\n")
