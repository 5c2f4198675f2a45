"""The content of an HFile data block (``HoodieHFileDataBlock``, what Hudi writes in its metadata
table's log files): a whole HFile whose cells map record keys to records in Avro's binary encoding
under the block's ``SCHEMA`` header.

Hudi empties a record's ``key`` field before writing it (the cell's key holds it) and puts it back
on reading; so does this decoder, for schemas with a ``key`` field. The values, back to back in
the scanned Arrow array, decode in one fastavro call."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from index_store.hfile import KEY, VALUE, HFileReader
from index_store.hudi_log.avro_data import AvroContentError, decode_avro_records

__all__ = ["KEY_FIELD", "decode_hfile_content"]

KEY_FIELD = "key"  # HoodieMetadataRecord's key field, which Hudi leaves empty in the value


def decode_hfile_content(content: bytes, schema_json: str, path: str = "") -> pa.Table:
    """The records of an HFile data block's content as an Arrow table (the schema's columns),
    in key order. HFile errors (``HFileCorruptError``, ``UnsupportedHFileError``) pass through."""
    cells = HFileReader(content, path=path).scan()
    values = cells.column(VALUE).combine_chunks()
    rows = decode_avro_records(_concatenated(values), len(values), schema_json, record_unions=True)
    at = rows.schema.get_field_index(KEY_FIELD)
    if at >= 0 and rows.num_rows:
        field = rows.schema.field(at)
        keys = cells.column(KEY).combine_chunks()
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            try:
                text = keys.cast(pa.string())
            except pa.ArrowInvalid as exc:
                raise AvroContentError(f"record keys that are not UTF-8 text ({exc})") from exc
            rows = rows.set_column(at, field, text.cast(field.type))
    return rows


def _concatenated(values: pa.Array) -> bytes:
    """A binary array's values back to back, straight from its data buffer."""
    if not len(values):
        return b""
    offsets = np.frombuffer(values.buffers()[1], np.int32, len(values) + 1, values.offset * 4)
    data = values.buffers()[2]
    return b"" if data is None else data.to_pybytes()[int(offsets[0]) : int(offsets[-1])]
