"""``TagStats``: what each stage of a tagging run kept and read, carried by its result table."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Literal

import pyarrow as pa

__all__ = ["TAG_STATS_KEY", "TagMethod", "TagStats", "tag_stats"]

TAG_STATS_KEY = b"hudi_index.tag_stats"

TagMethod = Literal["bloom", "record"]
"""How keys were found: key ranges, bloom filters, then reading keys; or the record index."""


@dataclass(frozen=True)
class TagStats:
    """Counters of one ``IndexedTable.tag`` call; pairs are (input key, data file) candidates."""

    method: TagMethod
    keys: int  # input keys
    files: int  # live data files the index holds
    after_range: int = 0  # candidate pairs after the key-range stage
    after_bloom: int = 0  # candidate pairs after the bloom stage
    files_opened: int = 0  # data file footers opened to verify
    files_read: int = 0  # data files whose key column was read
    row_groups_read: int = 0
    bytes_read: int = 0  # compressed bytes of key column chunks (or record index batches) read
    false_positives: int = 0  # pairs the bloom stage kept that reading the keys refuted
    slices_read: int = 0  # merge-on-read file slices read (base file keys and log records)
    log_files_read: int = 0  # merge-on-read log files read
    updates: int = 0  # input keys found in a file
    inserts: int = 0  # input keys found nowhere
    several_files: int = 0  # input keys found in more than one live file (a result row per file)
    seconds: dict[str, float] = field(default_factory=dict)  # per stage
    # Per index source asked (``index_store.sources``): the pairs it answered, before intersecting.
    pairs_by_source: dict[str, int] = field(default_factory=dict)
    # "every": each live file holding a key is named (key ranges and blooms, this project's record
    # index); "one": the location Hudi's record index holds (one per key, as Hudi tags with it).
    locations: str = "every"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> TagStats:
        return cls(**json.loads(text))

    def table(self) -> str:
        """A small per-stage table for people."""
        rows = [("stage", "pairs / files", "bytes read", "seconds")]
        s = self.seconds
        if self.method == "record":
            rows.append(
                ("record index", f"{self.after_bloom} matches", f"{self.bytes_read:,}", _t(s, "record"))
            )
        else:
            rows.append(("key ranges", f"{self.after_range} pairs", "0", _t(s, "range")))
            rows.append(("bloom filters", f"{self.after_bloom} pairs", "0", _t(s, "bloom")))
            rows.append(
                (
                    "read keys",
                    f"{self.files_read} of {self.files_opened} files",
                    f"{self.bytes_read:,}",
                    _t(s, "verify"),
                )
            )
        if self.slices_read or "slices" in s:  # merge-on-read: decided by file slice
            rows.append(
                (
                    "file slices",
                    f"{self.slices_read} slices, {self.log_files_read} log files",
                    "",
                    _t(s, "slices"),
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _t(seconds: dict[str, float], stage: str) -> str:
    return f"{seconds.get(stage, 0.0):.4f}"


def tag_stats(result: pa.Table) -> TagStats:
    """The ``TagStats`` of a table ``IndexedTable.tag`` returned."""
    meta = result.schema.metadata or {}
    if TAG_STATS_KEY not in meta:
        raise ValueError("this table is not a result of IndexedTable.tag (it carries no tag statistics)")
    return TagStats.from_json(meta[TAG_STATS_KEY])
