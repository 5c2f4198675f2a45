"""``IndexConfig``: the settings an index is built with, typed and versioned.

Every timeline entry carries it (as its ``info`` object, with a ``config_version``), so a reader
knows how the index it replays was made: which columns have bloom filters, at what false-positive
rate, which columns are exact (partition values). An entry written by a newer release with a
version this one does not know is refused rather than half understood.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["IndexConfig"]


@dataclass(frozen=True)
class IndexConfig:
    """How an index is built; the same for every file of one index version."""

    table_kind: str = ""  # "parquet" or "hudi_cow"
    record_key: str | None = None  # the column holding record keys, if the table has one
    bloom_columns: tuple[str, ...] = ()  # columns with a bloom filter per file
    fpp: float = 0.01  # the bloom filters' false-positive rate
    exact_columns: tuple[str, ...] = ()  # columns whose per-file bounds are the values

    VERSION: ClassVar[int] = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "config_version": self.VERSION,
            "table_kind": self.table_kind,
            "record_key": self.record_key,
            "bloom_columns": list(self.bloom_columns),
            "fpp": self.fpp,
            "exact_columns": list(self.exact_columns),
        }

    @classmethod
    def from_json(cls, info: Mapping[str, Any]) -> IndexConfig:
        """Read what ``to_json`` wrote (entries from before ``config_version`` are version 1).

        Raises ``ValueError`` for a version this release does not know, or malformed values.
        """
        version = info.get("config_version", 1)
        if version != cls.VERSION:
            raise ValueError(f"index configuration version {version!r} (this release reads {cls.VERSION})")
        record_key = info.get("record_key")
        return cls(
            table_kind=str(info.get("table_kind", "")),
            record_key=None if record_key is None else str(record_key),
            bloom_columns=tuple(str(c) for c in info.get("bloom_columns", ())),
            fpp=float(info.get("fpp", 0.01)),
            exact_columns=tuple(str(c) for c in info.get("exact_columns", ())),
        )
