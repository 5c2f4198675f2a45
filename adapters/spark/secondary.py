"""Secondary indexes (RFC-51) on Spark: index files built by executors, and file skipping for reads.

``build_secondary_index`` runs ``IndexedTable.build_index`` with its per-file computation swapped
for a Spark job of one task per base file: each task runs ``write_index_file_for`` (the file's
bytes, a pure function of the base file and the definition) and writes the file itself into the
build's staging folder inside the index, at the path the driver chose; only the file's counts come
back. The driver commits exactly as a local build does (linking the staged files under the
commit's instant), so the index files are the same bytes, and their size is no concern of
``spark.driver.maxResultSize``. A retried or speculative task rewrites the same bytes at the
same path, all at once.

``skip_files`` is the read side: after file pruning by statistics, the index's row selection drops
the files it proves hold no matching row. Spark still reads the remaining files and applies the
filter itself, so the answer never depends on row positions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from pyspark.sql import SparkSession

from adapters.spark.jobs import run_job
from hudi_expr import And, Expression, Or, Predicate
from index_store import IndexedTable, open_table
from index_store.errors import IndexCorruptError, IndexStaleError, TableFormatError
from index_store.secondary import IndexUse, UseRules
from index_store.secondary.api import RowSelection
from index_store.secondary.build import Counts, FileTask, write_index_file_for
from index_store.tables.rows import require_file_reads

__all__ = [
    "SecondarySkip",
    "build_secondary_index",
    "compute_index_files_on_spark",
    "skip_files",
    "without_implied_not_null",
]

# Leaves that are never TRUE on a NULL value: beside one of them, ``c IS NOT NULL`` adds nothing.
_NULL_REJECTING = frozenset({"eq", "not_eq", "lt", "lt_eq", "gt", "gt_eq", "in", "starts_with", "contains"})


def build_secondary_index(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    name: str | None = None,
    strategy: str = "incremental",
    progress: bool | None = None,
    index_path: str | os.PathLike[str] | None = None,
) -> int | None:
    """``IndexedTable.build_index`` with the index files computed on Spark executors (one task per
    base file); returns the commit's version, None when there was nothing to build.

    Executors read the base files at the driver's paths and write the index files into the
    index's staging folder (a shared file system); only each file's entry counts come back to the
    driver. A data error (an unreadable file, a file changed while indexing) is raised on the
    driver as the local build raises it, and nothing is committed (the staging folder is removed).
    """
    if strategy not in ("incremental", "all"):
        raise ValueError(f"strategy must be 'incremental' or 'all', not {strategy!r}")
    indexed = table if isinstance(table, IndexedTable) else open_table(table, index_path)
    require_file_reads(indexed.reader, "building secondary index files on Spark (build_secondary_index)")
    return indexed.build_index(
        name,
        "all" if strategy == "all" else "incremental",
        progress=progress,
        compute=partial(compute_index_files_on_spark, spark),
    )


def compute_index_files_on_spark(
    spark: SparkSession, root: str, staging: Path, tasks: Sequence[FileTask], rels: Sequence[str]
) -> list[Counts]:
    """``write_index_file_for(root, staging, task, rel)`` of every task, one Spark task each, the
    files written by the executors; their counts in order (the ``compute`` hook of
    ``IndexedTable.build_index``)."""
    if not tasks:
        return []
    results = run_job(
        spark,
        _IndexFileTask(root, str(staging)),
        list(zip(tasks, rels, strict=True)),
        f"hudi-index build_index: secondary index files of {len(tasks)} base files",
    )
    out = []
    for r in results:
        if r.error is not None:
            raise r.error.exception()
        assert r.counts is not None
        out.append(r.counts)
    return out


# --------------------------------------------------------------------------------- executors


@dataclass(frozen=True)
class _Error:
    """A data error as plain values (the index errors' constructors do not survive pickling)."""

    kind: Literal["stale", "format"]
    message: str
    table: str = ""
    reason: str = ""

    def exception(self) -> Exception:
        if self.kind == "stale":
            return IndexStaleError(self.table, self.reason)
        return TableFormatError(self.message)


@dataclass(frozen=True)
class _FileResult:
    counts: Counts | None = None
    error: _Error | None = None


@dataclass(frozen=True)
class _IndexFileTask:
    """The function of ``mapPartitions``: writes the index file of each ``(position, (task, rel))``
    it is given under the staging folder."""

    root: str
    staging: str

    def __call__(
        self, tasks: Iterable[tuple[int, tuple[FileTask, str]]]
    ) -> Iterator[tuple[int, _FileResult]]:
        for index, (task, rel) in tasks:
            yield index, self.compute(task, rel)

    def compute(self, task: FileTask, rel: str) -> _FileResult:
        try:
            counts = write_index_file_for(self.root, Path(self.staging), task, rel)
        except IndexStaleError as exc:
            return _FileResult(error=_Error("stale", str(exc), exc.table, exc.reason))
        except TableFormatError as exc:
            return _FileResult(error=_Error("format", str(exc)))
        return _FileResult(counts)


# ------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class SecondarySkip:
    """What the secondary index did to a read's files: whether it was used and why, and which
    files it dropped (absolute paths) because it proves they hold no matching row."""

    use: IndexUse
    dropped: list[str] = field(default_factory=list)
    selection: RowSelection | None = None  # None: the index was not consulted

    def notes(self) -> list[str]:
        lines = [self.use.explain()]
        if self.use.used:
            n = len(self.dropped)
            lines.append(f"secondary index dropped {n} file{'' if n == 1 else 's'} holding no matching row")
        return lines


def skip_files(
    table: IndexedTable, expr: Expression, files: Sequence[str], rules: UseRules | None = None
) -> tuple[list[str], SecondarySkip]:
    """``files`` (kept by statistics for ``expr``) minus those the secondary index proves hold no
    row where ``expr`` is TRUE, when ``rules`` (default ``UseRules()``: by cost, priced as a reader
    that decodes whole row groups) say the index pays.

    Only files whose selection is an empty row set are dropped: files without a usable index file
    (never built, rewritten since), files the index does not know, and any file ``select`` did not
    name are kept.
    """
    if not files:
        return [], SecondarySkip(IndexUse(False, "no file left after statistics"))
    definitions = table.snapshot().config.secondary_indexes
    if not definitions:
        return list(files), SecondarySkip(IndexUse(False, "the table has no secondary index"))
    indexed = {c.lower() for d in definitions for c in d.columns}
    if not any(c.lower() in indexed for c in expr.references()):
        return list(files), SecondarySkip(IndexUse(False, "no predicate on an indexed column"))
    try:
        lookups = without_implied_not_null(expr)
        # Spark decodes the row groups of the files it reads, as pyarrow does: priced with its constants.
        selection = table.select(lookups, rules=rules or UseRules(), on_corrupt="keep_all")
    except IndexCorruptError as exc:
        return list(files), SecondarySkip(IndexUse(False, f"its manifest is unreadable ({exc.reason})"))
    if not selection.use.used:
        return list(files), SecondarySkip(selection.use, selection=selection)
    empty = {
        os.path.normpath(path)
        for path, rows in zip(selection.files, selection.rows, strict=True)
        if rows.mask is not None and not (len(rows.mask) and rows.mask.any())
    }
    kept = [f for f in files if os.path.normpath(f) not in empty]
    dropped = [f for f in files if os.path.normpath(f) in empty]
    return kept, SecondarySkip(selection.use, dropped, selection)


def without_implied_not_null(expr: Expression) -> Expression:
    """``expr`` without the ``c IS NOT NULL`` conjuncts that a sibling comparison on ``c`` implies.

    Spark adds them to every comparison on a nullable column; each would be one more index lookup
    (reading the column's whole block of entries) counted against ``UseRules.max_predicates``.
    Equivalent: ``c IS NOT NULL AND c = 5`` is TRUE exactly where ``c = 5`` is.
    """
    if isinstance(expr, Or):
        return Or(*[without_implied_not_null(e) for e in expr.operands()])
    if not isinstance(expr, And):
        return expr
    parts = [without_implied_not_null(e) for e in expr.operands()]
    rejecting = {p.term.name for p in parts if isinstance(p, Predicate) and p.op in _NULL_REJECTING}
    return And(
        *[
            p
            for p in parts
            if not (isinstance(p, Predicate) and p.op == "is_not_null" and p.term.name in rejecting)
        ]
    )
