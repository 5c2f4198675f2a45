"""The live files of the data table from the ``files`` partition's listing: the latest file slice
of each file group, by the data table's slicing rules (``tables.hudi_slices``), as Hudi's file
system view builds them from the metadata table instead of listing folders. The ``files``
partition lists every file still on storage (older slices until cleaned, files of pending
instants); only the slices a snapshot reads are live."""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from index_store.tables.hudi_files import BaseFileName, LogFileName, parse_base, parse_log_file_name
from index_store.tables.hudi_slices import SlicingRules
from index_store.tables.hudi_timeline import HudiTimeline

__all__ = ["live_files"]


def live_files(listing: pa.Table, timeline: HudiTimeline, table_version: int) -> pa.Table:
    """The rows of ``listing`` (``partitions.FILES_SCHEMA``) that are files of a latest slice."""
    rules = SlicingRules.of(timeline, table_version)
    bases: dict[tuple[str, str], dict[str, BaseFileName]] = defaultdict(dict)
    logs: dict[tuple[str, str], list[LogFileName]] = defaultdict(list)
    partitions = listing["partition"].to_pylist()
    for partition, name in zip(partitions, listing["file_name"].to_pylist(), strict=True):
        base = parse_base(name)
        if base is not None:
            group = (partition, base.file_id)
            if group not in rules.replaced and rules.keeps_base(base.instant):
                current = bases[group].get(base.instant)
                # Two base files of one slice (a retried task): Hudi's listing keeps one per slice;
                # the name order decides here, as it would among equals.
                if current is None or name > current.name:
                    bases[group][base.instant] = base
            continue
        log = parse_log_file_name(name)
        if log is not None and rules.keeps_log(log):
            logs[(partition, log.file_id)].append(log)
    keep: set[tuple[str, str]] = set()
    for group in bases.keys() | logs.keys():
        latest = rules.latest_slice(group, bases.get(group, {}), logs.get(group, ()))
        if latest is None:
            continue
        if latest.base is not None:
            keep.add((group[0], latest.base.name))
        keep.update((group[0], log.name) for log in latest.logs)
    mask = [(p, n) in keep for p, n in zip(partitions, listing["file_name"].to_pylist(), strict=True)]
    return listing.filter(pa.array(mask, pa.bool_()))
