"""Builds whose index files are written elsewhere (Spark executors), then committed by the driver.

A staged build (``IndexedTable.build(stage=...)``) hands a ``StageBuild`` function the build's
files, configuration and a fresh staging folder inside the index (``<index>/.staging/<id>/``);
it writes each partition's files there, laid out as in the index (``<partition>/<name>.idx``),
and names them in ``Staged``. The driver then makes one commit (``index_store.commit``): the
staged files are linked into their partition folders and the timeline entry names them. Nothing
outside the staging folder is touched before that commit, so a build that fails leaves the index
as it was, and its staging folder is removed (or, after a crash, by ``clean``). Files a retried
or duplicated task wrote and no ``Staged`` names are never linked.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from index_store.config import IndexConfig
from index_store.partitions import REGISTRY, Batch, Partition
from index_store.record_key import RecordKeySpec
from index_store.secondary.api import STAGING
from index_store.tables.base import DataFile

__all__ = [
    "STAGING",
    "StageBuild",
    "StageRequest",
    "Staged",
    "new_staging",
    "publish",
    "write_batch",
]


@dataclass(frozen=True)
class StageRequest:
    """What a staged build asks for: the index files of ``files`` (numbered 0..n-1, in order) for
    the commit ``version``, written under ``staging``."""

    root: str  # the table root
    files: Sequence[DataFile]
    partition_schema: pa.Schema
    config: IndexConfig
    spec: RecordKeySpec | None  # the record key (None: the index keeps no keys)
    staging: Path
    version: int


@dataclass(frozen=True)
class Staged:
    """What a staged build wrote: per partition, its files relative to the staging folder, in the
    order a reader takes them (files in ``file_idx`` order); and the table schema of the stats."""

    added: Mapping[str, Sequence[str]]
    schema: pa.Schema


StageBuild = Callable[[StageRequest], Staged]


def new_staging(index_root: Path) -> Path:
    """A fresh staging folder of ``index_root`` (not created)."""
    return index_root / STAGING / uuid.uuid4().hex


def write_batch(
    root: Path, batch: Batch, partitions: Iterable[Partition] | None = None
) -> dict[str, list[str]]:
    """Offer ``batch`` to ``partitions`` (default: every registered one; a task elsewhere is given
    the driver's, plug-ins included); what each wrote under ``root``."""
    added = {}
    for partition in REGISTRY if partitions is None else partitions:
        rel = partition.write(root, batch)
        if rel is not None:
            added[partition.name] = [rel]
    return added


def publish(staging: Path, index_root: Path, added: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Link the staged files into the index at the same relative paths (unique names: nothing is
    replaced); what a commit lists as added."""
    for files in added.values():
        for rel in files:
            dst = index_root / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.link(staging / rel, dst)
    return {name: list(files) for name, files in added.items()}
