"""The one list of index sources, in the order they are asked, and the views of it by question."""

from __future__ import annotations

from typing import Any, TypeVar

from index_store.errors import IndexSourceError
from index_store.hudi_source.blooms import HudiBloomFilterSource
from index_store.hudi_source.partition_stats import HudiPartitionStatsSource
from index_store.hudi_source.source import HudiMetadataSource, HudiSecondaryIndexSource
from index_store.sources.base import IndexSource, LocatesKeys, PrunesFiles, SelectsRows
from index_store.sources.builtin import (
    BloomFilters,
    FileStatistics,
    RecordIndex,
    RecordKeys,
    SecondaryIndexSource,
)

__all__ = [
    "file_sources",
    "index_sources",
    "key_sources",
    "register_source",
    "row_sources",
    "unregister_source",
]

# In the order they are asked (the order ``explain`` credits them in).
_SOURCES: list[IndexSource] = [
    FileStatistics(),
    HudiPartitionStatsSource(),
    HudiMetadataSource(),
    HudiBloomFilterSource(),
    BloomFilters(),
    SecondaryIndexSource(),
    RecordKeys(),
    RecordIndex(),
    HudiSecondaryIndexSource(),
]
_CAPABILITIES = (PrunesFiles, SelectsRows, LocatesKeys)
# Per question, the sources answering it: worked out once per change of the list, not per query.
_VIEWS: dict[str, tuple[Any, ...]] = {}

S = TypeVar("S", bound=IndexSource)


def index_sources() -> tuple[IndexSource, ...]:
    """Every registered index source, in order."""
    return tuple(_SOURCES)


def register_source(source: S) -> S:
    """Add ``source`` to the list (after the built-in ones); returns it."""
    if not isinstance(source, IndexSource) or not any(isinstance(source, c) for c in _CAPABILITIES):
        raise TypeError(
            f"{source!r} is not an index source: it needs a name and at least one of available + "
            "answer (files), row_positions (rows), key_locations (keys); see index_store.sources.base"
        )
    if any(s.name == source.name for s in _SOURCES):
        raise IndexSourceError(
            f"an index source named {source.name!r} is registered already: unregister_source it "
            "first, or give this one another name"
        )
    _SOURCES.append(source)
    _VIEWS.clear()
    return source


def unregister_source(name: str) -> None:
    """Remove the source named ``name`` (a test's, once it is done)."""
    _SOURCES[:] = [s for s in _SOURCES if s.name != name]
    _VIEWS.clear()


def file_sources() -> tuple[PrunesFiles, ...]:
    """The sources file pruning asks, in order."""
    if "files" not in _VIEWS:
        _VIEWS["files"] = tuple(s for s in _SOURCES if isinstance(s, PrunesFiles))
    return _VIEWS["files"]


def row_sources() -> tuple[SelectsRows, ...]:
    """The sources row selection asks, in order."""
    if "rows" not in _VIEWS:
        _VIEWS["rows"] = tuple(s for s in _SOURCES if isinstance(s, SelectsRows))
    return _VIEWS["rows"]


def key_sources() -> tuple[LocatesKeys, ...]:
    """The sources tagging asks, in order."""
    if "keys" not in _VIEWS:
        _VIEWS["keys"] = tuple(s for s in _SOURCES if isinstance(s, LocatesKeys))
    return _VIEWS["keys"]
