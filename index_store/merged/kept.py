"""The file slices a pruned read of a merge-on-read table reads, from the files pruning keeps.

A slice's rows are its base file merged with its log files, so a slice is read whole when any of
its files is kept: a row may match through its base file (not updated since) or through a log
record (inserted or updated), and hudi-rs needs every file of the slice to merge either.

Pruning already keeps whole slices and names them (``PruneResult.file_slices``); ``kept_slices``
finds them among the table's live slices (``FileSlice``: the files with their instants and
partition values, what a merged read needs). A result made by hand, whose slices are its files one
by one, is mapped by its files instead (``slices_of_files``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from index_store.errors import IndexNotBuiltError
from index_store.tables.base import FileSlice

if TYPE_CHECKING:
    from hudi_expr import Expression
    from index_store.table import IndexedTable, PruneResult

__all__ = ["kept_slices", "pruned_slices", "slices_of_files"]


def slices_of_files(slices: Sequence[FileSlice], root: str, files: Iterable[str]) -> list[FileSlice]:
    """The ``slices`` (of the table at ``root``) holding one of ``files`` (absolute paths, or paths
    relative to ``root``), in their order."""
    prefix = root.rstrip(os.sep) + os.sep
    wanted = {f[len(prefix) :] if f.startswith(prefix) else f for f in map(os.path.normpath, files)}
    return [s for s in slices if any(f.path in wanted for f in s.files)]


def kept_slices(table: IndexedTable, result: PruneResult | None) -> list[FileSlice]:
    """The live slices of ``table`` that ``result`` keeps (all of them for None: no index)."""
    slices = table.reader.file_slices()
    if result is None:
        return slices
    if not result.whole_slices:  # made by hand (every file, no index): its files say which
        return slices_of_files(slices, table.root, result.files)
    kept = {(s.partition, s.file_id) for s in result.file_slices}
    return [s for s in slices if (s.partition, s.file_id) in kept]


def pruned_slices(table: IndexedTable, expr: Expression) -> list[FileSlice]:
    """The live slices of ``table`` that may hold a row where ``expr`` is TRUE: pruned by the index
    when it is built (an unreadable index keeps every slice), every slice when it is not."""
    try:
        result = table.prune(expr, on_corrupt="keep_all")
    except IndexNotBuiltError:
        result = None
    return kept_slices(table, result)
