"""Typed errors of the metadata index, each with a message a user can act on."""

from __future__ import annotations

from hudi_expr.errors import HudiExprError


class IndexStoreError(HudiExprError):
    """Base class of every error raised by ``index_store``."""


class IndexCorruptError(IndexStoreError):
    """An index file (parquet partition file or timeline entry) is unreadable or inconsistent."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"index file {path} is corrupt: {reason}. Rebuild the index (hudi-index build), or open "
            "the table with on_corrupt='keep_all' to skip pruning until then."
        )
        self.path = path
        self.reason = reason


class CommitConflictError(IndexStoreError):
    """Another writer committed a conflicting change to the index first."""


class UnsupportedTableError(IndexStoreError):
    """The table is of a kind this library does not read (yet), e.g. a merge-on-read Hudi table."""


class TableFormatError(IndexStoreError):
    """The table's own metadata (e.g. Hudi's .hoodie) is missing or malformed."""
