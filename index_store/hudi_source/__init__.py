"""Hudi's own metadata table used as an index source, with no build of this project's index.

- ``view``: ``HudiMetadataView``, the metadata table of one data table as it stands now (opened
  again only when either timeline or ``hoodie.properties`` moved), whether it may be used, and
  its answers aligned to the files asked about (statistics by path, record keys by file group);
- ``source``: ``HudiMetadataSource``, the index source (``index_store.sources``) answering file
  pruning from ``column_stats``, intersected with the other sources' answers;
- ``partition_stats``: ``HudiPartitionStatsSource``, partition bounds as every file's bounds;
- ``blooms``: ``HudiBloomFilterSource``, the ``bloom_filters`` partition for = and IN on the key;
- ``prune``: ``prune`` of a table with no index of its own, over the table's live listing;
- ``tag``: ``tag`` from the ``record_index`` partition, point lookups only.
"""

from __future__ import annotations

from index_store.hudi_source.source import HudiMetadataSource
from index_store.hudi_source.view import HudiMetadataView, IndexSourceChoice, MetadataState, metadata_view

__all__ = ["HudiMetadataSource", "HudiMetadataView", "IndexSourceChoice", "MetadataState", "metadata_view"]
