"""The content of a parquet data block (``HoodieParquetDataBlock``): a whole parquet file, its
records in its own schema (the block's ``SCHEMA`` header is the Avro form of the same)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["ParquetContentError", "decode_parquet_content"]


class ParquetContentError(ValueError):
    """A parquet data block whose content is no readable parquet file."""


def decode_parquet_content(content: bytes) -> pa.Table:
    """The records of a parquet data block's content."""
    try:
        return pq.read_table(pa.BufferReader(content))
    except (pa.ArrowException, OSError) as exc:
        raise ParquetContentError(f"the content is no readable parquet file: {exc}") from exc
