"""One base file and one log file of a merge-on-read table, as Hudi writes them, for the writer in
``hudi_mor.py``: their names, Hudi's meta columns, the base file's footer (bloom filter and key
bounds, ``hudi_bloom/footer.py``) and the log blocks (``hudi_log/``).

Names: a base file is ``<fileId>_<writeToken>_<instant>.parquet``; a log file
``.<fileId>_<instant>.log.<version>_<writeToken>``, where the instant is the file slice's base
instant before table version 8 (each delta commit adds the next version) and the writing delta
commit's from version 8 on (each delta commit writes version 1 of its own file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store.datagen.hudi_schema import hudi_arrow_schema
from index_store.hudi_bloom.footer import hudi_footer
from index_store.hudi_log import (
    block_header,
    encode_command_block,
    encode_data_block,
    encode_delete_block,
)
from index_store.hudi_log.format import CommandType

__all__ = [
    "base_file_name",
    "log_file_name",
    "rollback_block",
    "with_meta_columns",
    "write_base_file",
    "write_log_file",
]


_UNIQUE_META = ("_hoodie_commit_seqno", "_hoodie_record_key")


def base_file_name(file_id: str, write_token: str, instant: str) -> str:
    return f"{file_id}_{write_token}_{instant}.parquet"


def log_file_name(file_id: str, instant: str, version: int, write_token: str) -> str:
    return f".{file_id}_{instant}.log.{version}_{write_token}"


def _repeat(value: str, n: int) -> pa.Array:
    return pc.fill_null(pa.nulls(n, pa.string()), pa.scalar(value, pa.string()))


def with_meta_columns(
    rows: pa.Table, keys: pa.Array, *, instant: str, partition: str, file_name: str, task: int
) -> pa.Table:
    """``rows`` behind Hudi's meta columns: the commit time, the sequence number
    ``<instant>_<task>_<row>`` (what breaks ordering ties between commits), the record key, the
    partition path and the file (a base file's name; for log records, the file id)."""
    n = rows.num_rows
    numbers = pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string())
    seqno = pc.binary_join_element_wise(pa.scalar(f"{instant}_{task}_"), numbers, "")
    meta = [_repeat(instant, n), seqno, keys, _repeat(partition, n), _repeat(file_name, n)]
    return pa.Table.from_arrays([*meta, *rows.columns], schema=hudi_arrow_schema(rows.schema))


def write_base_file(path: Path, table: pa.Table, avro_schema: str) -> int:
    """A base file of ``table`` (meta columns first), with the footer Hudi's Avro parquet writer
    leaves: bloom filter and key bounds, and the Avro schema. Returns its size."""
    footer = hudi_footer(table.column("_hoodie_record_key"))
    footer |= {"parquet.avro.schema": avro_schema, "writer.model.name": "avro"}
    # no Arrow schema in the footer (Hudi's files carry none); no dictionary for the columns
    # unique per row, where it only costs time
    dictionary = [name for name in table.column_names if name not in _UNIQUE_META]
    with pq.ParquetWriter(path, table.schema, store_schema=False, use_dictionary=dictionary) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata(footer)
    return path.stat().st_size


def write_log_file(
    path: Path,
    upserts: pa.Table,
    deletes: pa.Table,
    *,
    instant: str,
    avro_schema: str,
) -> int:
    """A log file of one delta commit: an Avro data block of ``upserts`` (meta columns first),
    then a delete block of ``deletes`` (``record_key``, ``partition_path``), each only when it
    has records. Deletes carry Hudi's ordering value "none" (``IntWrapper`` 0), as its SQL
    ``DELETE`` writes them: they apply in commit order. Returns its size."""
    header = block_header(instant, schema=avro_schema)
    blocks = []
    if upserts.num_rows:
        blocks.append(encode_data_block(upserts, header))
    if deletes.num_rows:
        zeros = pa.array(np.zeros(deletes.num_rows, dtype=np.int32))
        blocks.append(encode_delete_block(deletes.append_column("ordering_value", zeros), header))
    data = b"".join(blocks)
    path.write_bytes(data)
    return len(data)


def rollback_block(path: Path, *, instant: str, target: str) -> int:
    """A log file holding one rollback command block: ``instant`` undoes ``target``'s blocks in
    the slice's earlier log files (how table version 6 rolls back a failed delta commit)."""
    header = block_header(instant, target_instant=target, command=CommandType.ROLLBACK)
    data = encode_command_block(header)
    path.write_bytes(data)
    return len(data)
