"""Whether a table's rows can be read file by file, and the refusal when they cannot.

A merge-on-read table (``read_as == "slices"``) holds a file group's rows as a base file merged with
its log files: a reader that opens its parquet files alone would return rows later updated or
deleted, and a tagger would miss keys whose newest version is in a log. Every such path asks here
first, so the refusal is one rule and one message (``MergedReadError``)."""

from __future__ import annotations

from index_store.errors import MergedReadError
from index_store.tables.base import TableReader

__all__ = ["reads_whole_files", "require_file_reads"]


def reads_whole_files(reader: TableReader) -> bool:
    """Each live data file holds its rows whole (no log file to merge onto it)."""
    return reader.read_as != "slices"


def require_file_reads(reader: TableReader, action: str) -> None:
    """``MergedReadError`` naming ``action`` unless ``reader``'s files hold their rows whole."""
    if not reads_whole_files(reader):
        raise MergedReadError(reader.root, action)
