"""Hudi's metadata table (``.hoodie/metadata``) read as Hudi reads it, each partition as Arrow.

- ``HudiMetadataTable``: the front (``partitions``, ``files``, ``column_stats``,
  ``partition_stats``, ``bloom_filters``, ``record_index``, ``secondary_index``, ``in_step_with``,
  ``index_definitions``); its errors (``MetadataTableError`` and subclasses);
- ``layout``: the metadata table's timeline, file slices and valid instants; ``source``: the
  cells of a slice (``index_store.hfile``); ``records``: Avro decoding (``avro_columns``: column by
  column for fixed-field records); ``index_ids``: the hashed key parts; ``kinds`` / ``values``:
  bounds to exact Arrow types; ``merge``: Hudi's per-key merges; ``keys``: file ids, instants and
  secondary keys; ``routing``: a record index key's file group (Hudi's key hash); ``partitions``:
  the Arrow tables.
"""

from __future__ import annotations

from index_store.errors import MetadataOutOfStepError, MetadataPartitionUnavailableError, MetadataTableError
from index_store.hudi_metadata.layout import MetadataLayout, MetadataSlice
from index_store.hudi_metadata.records import Cells, decode_cells, raw_table
from index_store.hudi_metadata.table import HudiIndexDefinition, HudiMetadataTable, MetadataPartitions

__all__ = [
    "Cells",
    "HudiIndexDefinition",
    "HudiMetadataTable",
    "MetadataLayout",
    "MetadataOutOfStepError",
    "MetadataPartitionUnavailableError",
    "MetadataPartitions",
    "MetadataSlice",
    "MetadataTableError",
    "decode_cells",
    "raw_table",
]
