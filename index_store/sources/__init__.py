"""Index sources: one list of objects, each answering what it knows of one index version.

As Hudi's ``SparkBaseIndexSupport`` keeps its index supports in one list, every question an index
answers is asked of the list, and each source says whether it can answer (``base``):

- file pruning (``prune``, ``stats``): each available source adds what it knows of the files to
  one ``FileStats`` (bounds, bloom filters, membership), and the predicate is evaluated once over
  it, so the answers are intersected leaf by leaf (``files``);
- row positions (``select``, ``row_ids``, ``read``, ``count``, ``exists``): each source that
  selects rows answers per candidate file, and the masks are intersected (``rows``);
- key locations (``tag``): each source that locates keys answers (key, file) pairs, and the pairs
  all of them hold are kept, verified by reading keys unless one answer was exact (``keys``).

Hudi stops at the first index that answers; every one is used here. ``PruneResult.explain``
names the first source after which each removed file is ruled out, ``RowSelection.explain`` how
each source selected rows, ``TagStats.pairs_by_source`` the pairs each source answered.

The built-in sources (``builtin``): column statistics (files), bloom filters (files), the
secondary indexes (files, rows), the files' record keys (files; keys with ``using="bloom"``) and
the record index (keys with ``using="record"``). A source defined elsewhere (a test's, or Hudi's
metadata table) joins with ``register_source``.
"""

from index_store.sources.base import (
    IndexSource,
    KeyAnswer,
    KeyQuery,
    LocatesKeys,
    PrunesFiles,
    RowAnswer,
    RowQuery,
    SelectsRows,
    SourceQuery,
)
from index_store.sources.builtin import (
    BloomFilters,
    FileStatistics,
    RecordIndex,
    RecordKeys,
    SecondaryIndexSource,
)
from index_store.sources.files import SourcedStats, sourced_stats
from index_store.sources.keys import SourcedKeys, sourced_locations
from index_store.sources.registry import (
    file_sources,
    index_sources,
    key_sources,
    register_source,
    row_sources,
    unregister_source,
)
from index_store.sources.rows import SourcedRows, sourced_rows

__all__ = [
    "BloomFilters",
    "FileStatistics",
    "IndexSource",
    "KeyAnswer",
    "KeyQuery",
    "LocatesKeys",
    "PrunesFiles",
    "RecordIndex",
    "RecordKeys",
    "RowAnswer",
    "RowQuery",
    "SecondaryIndexSource",
    "SelectsRows",
    "SourceQuery",
    "SourcedKeys",
    "SourcedRows",
    "SourcedStats",
    "file_sources",
    "index_sources",
    "key_sources",
    "register_source",
    "row_sources",
    "sourced_locations",
    "sourced_rows",
    "sourced_stats",
    "unregister_source",
]
