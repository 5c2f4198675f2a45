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

from index_store.secondary.definitions import IndexDefinition

__all__ = ["IndexConfig"]


@dataclass(frozen=True)
class IndexConfig:
    """How an index is built; the same for every file of one index version."""

    # The table format's name ("parquet", "hudi_cow", or a registered format's): an open set, since
    # formats are plug-ins (index_store.tables.registry), so a str and not a Literal.
    table_kind: str = ""
    record_key: str | None = None  # the column holding record keys, if the table has one
    bloom_columns: tuple[str, ...] = ()  # columns with a bloom filter per file
    fpp: float = 0.01  # the bloom filters' false-positive rate
    exact_columns: tuple[str, ...] = ()  # columns whose per-file bounds are the values
    # Record keys (tagging): the key generator's fields, and the column holding the encoded key
    # when data files store it (Hudi's ``_hoodie_record_key``). Empty: no key information.
    key_fields: tuple[str, ...] = ()
    key_column: str | None = None
    key_generator: str = ""  # "simple" or "complex" (index_store.record_key.RecordKeySpec)
    key_fpp: float = 1e-6  # false-positive rate of the per-file key filters this library writes
    record_index: bool = False  # whether the ``record_index`` partition is maintained
    record_index_shards: int | None = None  # its hash shards per file (None: from the key count)
    secondary_indexes: tuple[IndexDefinition, ...] = ()  # RFC-51 definitions, built or not

    VERSION: ClassVar[int] = 3
    # Version 1 had no record key settings, version 2 no secondary indexes.
    READS: ClassVar[tuple[int, ...]] = (1, 2, 3)

    def secondary_index(self, name: str) -> IndexDefinition | None:
        """The secondary index definition called ``name`` (case-insensitive, as SQL names are)."""
        return next((d for d in self.secondary_indexes if d.name.lower() == name.lower()), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "config_version": self.VERSION,
            "table_kind": self.table_kind,
            "record_key": self.record_key,
            "bloom_columns": list(self.bloom_columns),
            "fpp": self.fpp,
            "exact_columns": list(self.exact_columns),
            "key_fields": list(self.key_fields),
            "key_column": self.key_column,
            "key_generator": self.key_generator,
            "key_fpp": self.key_fpp,
            "record_index": self.record_index,
            "record_index_shards": self.record_index_shards,
            "secondary_indexes": [d.to_json() for d in self.secondary_indexes],
        }

    @classmethod
    def from_json(cls, info: Mapping[str, Any]) -> IndexConfig:
        """Read what ``to_json`` wrote (entries from before ``config_version`` are version 1).

        Raises ``ValueError`` for a version this release does not know, or malformed values.
        """
        version = info.get("config_version", 1)
        if version not in cls.READS:
            raise ValueError(
                f"index configuration version {version!r} (this release reads {list(cls.READS)}): "
                "the index was written by a newer release; upgrade, or rebuild it with this one"
            )
        record_key = info.get("record_key")
        key_column = info.get("key_column")
        shards = info.get("record_index_shards")
        return cls(
            table_kind=str(info.get("table_kind", "")),
            record_key=None if record_key is None else str(record_key),
            bloom_columns=tuple(str(c) for c in info.get("bloom_columns", ())),
            fpp=float(info.get("fpp", 0.01)),
            exact_columns=tuple(str(c) for c in info.get("exact_columns", ())),
            key_fields=tuple(str(c) for c in info.get("key_fields", ())),
            key_column=None if key_column is None else str(key_column),
            key_generator=str(info.get("key_generator", "")),
            key_fpp=float(info.get("key_fpp", 1e-6)),
            record_index=bool(info.get("record_index", False)),
            record_index_shards=None if shards is None else int(shards),
            secondary_indexes=tuple(IndexDefinition.from_json(d) for d in info.get("secondary_indexes", ())),
        )
