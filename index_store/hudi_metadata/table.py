"""``HudiMetadataTable``: Hudi's metadata table of a data table, each partition as Arrow.

Every read is of the latest file slices of the metadata partition, records merged per key
(``merge``) from the base file and the log blocks that count (``layout``: valid instants). Reads
refuse, with a typed error, a partition that is not built or still being built, and a metadata
table behind its data table (its listing and indexes would miss the newest files); one ahead of
it is read as Hudi reads it, the blocks of uncompleted data instants skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store.errors import MetadataOutOfStepError, MetadataTableError
from index_store.hudi_metadata.index_ids import bloom_filter_keys, column_ids
from index_store.hudi_metadata.layout import MetadataLayout, MetadataSlice
from index_store.hudi_metadata.live import live_files
from index_store.hudi_metadata.partitions import (
    bloom_filters_table,
    files_table,
    record_index_table,
    secondary_index_table,
    stats_table,
)
from index_store.hudi_metadata.records import Cells, raw_table
from index_store.hudi_metadata.routing import route_keys
from index_store.hudi_metadata.source import slice_cells
from index_store.tables.hudi import HudiTable

__all__ = ["HudiIndexDefinition", "HudiMetadataTable", "MetadataPartitions"]

_SECONDARY_PREFIX = "secondary_index_"


@dataclass(frozen=True)
class HudiIndexDefinition:
    """An index Hudi declares (``hoodie.table.index.defs.path``): its metadata partition, type
    (``column_stats``, ``secondary_index``, ``record_index``, ...), function and source columns."""

    name: str
    index_type: str
    function: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class MetadataPartitions:
    """The metadata partitions: ``available`` (complete, readable) and ``inflight`` (being built)."""

    available: tuple[str, ...]
    inflight: tuple[str, ...]


class HudiMetadataTable:
    """The metadata table (``.hoodie/metadata``) of a Hudi data table, read as Hudi reads it.
    Both timelines are read when it is opened (the listing once, on first use): open a new one to
    see later commits."""

    def __init__(self, table: HudiTable | str | os.PathLike[str], *, require_in_step: bool = True) -> None:
        self.table = HudiTable(table) if isinstance(table, str | os.PathLike) else table
        self.layout = MetadataLayout(self.table.hoodie_dir, self.table.properties, self.table.timeline())
        self.require_in_step = require_in_step
        # Why the last record index lookup looked in every file group (None: keys routed).
        self.routing_note: str | None = None

    def __repr__(self) -> str:
        return f"HudiMetadataTable({self.table.root!r})"

    # --- state ----------------------------------------------------------------------------------

    def partitions(self) -> MetadataPartitions:
        """Which partitions may be read, and which are still being built."""
        state = self.layout.partitions
        available = tuple(p for p in state.complete if state.is_available(p))
        return MetadataPartitions(available, state.inflight)

    def index_definitions(self) -> dict[str, HudiIndexDefinition]:
        """The indexes the data table declares, by metadata partition name (empty when it keeps
        no definitions file: tables written before Hudi 1.0)."""
        rel = self.table.properties.get("hoodie.table.index.defs.path", "").strip()
        path = os.path.join(self.table.root, rel) if rel else ""
        if not path or not os.path.isfile(path):
            return {}
        try:
            with open(path, encoding="utf-8") as f:
                defs = json.load(f).get("indexDefinitions") or {}
        except (OSError, ValueError, AttributeError) as exc:
            raise MetadataTableError(f"{path}: Hudi's index definitions do not read ({exc})") from exc
        return {
            name: HudiIndexDefinition(
                name,
                str(d.get("indexType", "")),
                str(d.get("indexFunction", "")),
                tuple(str(c) for c in d.get("sourceFields") or ()),
            )
            for name, d in defs.items()
            if isinstance(d, dict)
        }

    def in_step_with(self, data_table: HudiTable | None = None) -> bool:
        """Whether the metadata table reflects the data table's latest completed instant, and
        nothing the data table has not completed."""
        layout = self.layout
        if data_table is not None and data_table is not self.table:
            layout = MetadataLayout(data_table.hoodie_dir, data_table.properties, data_table.timeline())
        return layout.step()[0] == "in_step"

    def _check(self, partition: str) -> None:
        self.layout.require_partition(partition)
        if self.require_in_step:
            state, reason = self.layout.step()
            if state == "behind":
                raise MetadataOutOfStepError(self.table.root, reason)

    def _raw(
        self,
        partition: str,
        kind: str,
        keys: Sequence[bytes] | None = None,
        prefixes: Sequence[bytes] | None = None,
    ) -> pa.Table:
        """The records of ``partition`` (of ``keys``, or of keys starting with ``prefixes``, only)."""
        self._check(partition)
        valid = self.layout.valid_instant
        pieces = self.layout.slices(partition)
        wanted: list[Sequence[bytes] | None] = [keys] * len(pieces)
        if keys is not None and kind == "record_index":
            wanted = self._routed(pieces, keys)
        sources: list[Cells] = []
        for piece, piece_keys in zip(pieces, wanted, strict=True):
            if piece_keys is None or len(piece_keys):
                sources.extend(slice_cells(piece, valid, piece_keys, prefixes))
        return raw_table(kind, sources)

    def _routed(self, pieces: Sequence[MetadataSlice], keys: Sequence[bytes]) -> list[Sequence[bytes] | None]:
        """The keys each record index file group can hold (Hudi's key hash, ``routing``): only
        those groups are opened. Every key in every group when the groups are not laid out as
        the hash needs; ``routing_note`` says so."""
        arr = pa.array(keys, pa.binary())
        routed = route_keys([p.file_id for p in pieces], arr)
        if routed is None:
            self.routing_note = (
                f"the record_index file groups of {self.table.root} are not Hudi's numbered hash "
                f"buckets ({', '.join(p.file_id for p in pieces[:3])}{', ...' if len(pieces) > 3 else ''}): "
                "every file group is looked in for every key"
            )
            return [keys] * len(pieces)
        self.routing_note = None
        return [arr.take(pa.array(positions)).to_pylist() for positions in routed]

    # --- partitions -----------------------------------------------------------------------------

    @cached_property
    def _files(self) -> pa.Table:
        return files_table(self._raw("files", "files"))

    @cached_property
    def _live(self) -> pa.Table:
        return live_files(self._files, self.layout.data_timeline, self.table.table_version)

    def files(self, *, all_versions: bool = False) -> pa.Table:
        """The live files of the data table (each file group's latest slice) from the ``files``
        partition (``partition``, ``file_name``, ``path``, ``size``), sorted by path;
        ``all_versions``: every file the partition lists (older slices until cleaned too)."""
        return (self._files if all_versions else self._live).sort_by("path")

    def _newest_base_schema(self) -> pa.Schema | None:
        listing = self._files.filter(pc.match_substring(self._files["file_name"], ".parquet"))
        if not len(listing):
            return None
        newest = max(listing["file_name"].to_pylist(), key=lambda n: n.rsplit("_", 1)[-1])
        path = listing.filter(pc.equal(listing["file_name"], newest))["path"][0].as_py()
        return pq.read_schema(os.path.join(self.table.root, path))

    def column_stats(
        self, columns: Iterable[str] | None = None, *, schema: pa.Schema | None = None
    ) -> pa.Table:
        """Per live data file, the statistics of each indexed column (of ``columns``), bounds in
        the column's type in ``schema`` (default: the newest listed base file's footer schema).
        Statistics of files that are not live (an older slice, a file cleaned since) are left
        out: nothing reads them, and a live file without statistics has none here (unknown).
        With ``columns``, only their records are read: every key of a column starts with its
        hashed id (``index_ids``), so only the HFile blocks holding them are decoded."""
        wanted = None if columns is None else list(columns)
        raw = self._raw("column_stats", "column_stats", prefixes=_column_prefixes(wanted))
        listing = self._live
        lookup = dict(zip(listing["file_name"].to_pylist(), listing["partition"].to_pylist(), strict=True))
        live = pc.is_in(raw["file_name"], value_set=listing["file_name"].combine_chunks())
        raw = raw.filter(pc.or_(pc.fill_null(live, False), raw["removed"]))
        schema = schema if schema is not None else self._newest_base_schema()
        return stats_table(raw, schema, wanted, partitions=lookup)

    def partition_stats(
        self, columns: Iterable[str] | None = None, *, schema: pa.Schema | None = None
    ) -> pa.Table:
        """Per data partition, the statistics of each indexed column over its files (of
        ``columns`` only: only their records are read)."""
        wanted = None if columns is None else list(columns)
        raw = self._raw("partition_stats", "partition_stats", prefixes=_column_prefixes(wanted))
        schema = schema if schema is not None else self._newest_base_schema()
        table = stats_table(raw, schema, wanted, by="partition")
        names = table["partition"].combine_chunks()
        return table.set_column(0, "partition", pc.if_else(pc.equal(names, "."), "", names))

    def bloom_filters(self, files: pa.Table | None = None) -> pa.Table:
        """The bloom filter of each live data file that has one (a file without one: unknown); of
        the live files of ``files`` (``partition``, ``file_name``) only, through point lookups of
        their keys, when given."""
        listing = self._live
        keys = None
        if files is not None:
            live = pc.is_in(files["file_name"], value_set=listing["file_name"].combine_chunks())
            files = files.filter(pc.fill_null(live, False))
            found = bloom_filter_keys(files["partition"], files["file_name"])
            keys = found.cast(pa.binary()).to_pylist()
            listing = files
        return bloom_filters_table(self._raw("bloom_filters", "bloom_filters", keys), listing)

    def record_index(self, keys: Iterable[str] | None = None) -> pa.Table:
        """Record key -> ``partition``, ``file_id`` (file group), ``instant``, ``position`` of every
        key (of ``keys`` only, through point lookups in the one file group Hudi hashes each key
        to, ``routing``, when given). An entry naming a file group
        with no live slice (replaced, cleaned) is an error: the key's file is unknown, and calling
        it an insert or skipping its file would be wrong."""
        wanted = None if keys is None else sorted({k.encode("utf-8") for k in keys})
        raw = self._raw("record_index", "record_index", wanted)
        timeline = self.layout.data_timeline
        known = set(timeline.completed) | {i.requested for i in timeline.instants}
        timezone = self.table.properties.get("hoodie.table.timeline.timezone", "LOCAL")
        table = record_index_table(raw, known, timezone)
        self._check_file_groups(table)
        return table

    def _check_file_groups(self, table: pa.Table) -> None:
        listing = self._live
        names = listing["file_name"].combine_chunks()
        base_ids = pc.extract_regex(names, r"^\.?(?P<id>[^_]+)_").field("id")
        groups = pc.binary_join_element_wise(listing["partition"].combine_chunks(), base_ids, "\0")
        entries = pc.binary_join_element_wise(table["partition"], table["file_id"], "\0")
        unknown = pc.invert(pc.fill_null(pc.is_in(entries, value_set=groups.drop_null()), False))
        if pc.any(unknown).as_py():
            bad = table.filter(unknown).slice(0, 1).to_pylist()[0]
            raise MetadataTableError(
                f"the record index of {self.table.root} places key {bad['record_key']!r} in file group "
                f"{bad['file_id']} of partition {bad['partition']!r}, which has no live slice "
                f"(replaced or cleaned; {pc.sum(unknown).as_py()} such keys): the key's location is unknown, "
                "so the record index cannot be used for it"
            )

    def secondary_index(self, name: str) -> pa.Table:
        """``secondary_key`` -> ``record_key`` of secondary index ``name`` (with or without its
        ``secondary_index_`` prefix)."""
        partition = name if name.startswith(_SECONDARY_PREFIX) else _SECONDARY_PREFIX + name
        return secondary_index_table(self._raw(partition, "secondary_index"))


def _column_prefixes(columns: Sequence[str] | None) -> list[bytes] | None:
    """The key prefix of each column's statistics records (None: every record)."""
    if columns is None:
        return None
    return column_ids(pa.array(columns, pa.string())).cast(pa.binary()).to_pylist()
