"""Formats recognised only to be refused: Delta Lake and Iceberg tables.

Their folders hold files their logs have removed, so reading them as plain directories would
return wrong results; they are registry entries whose ``open`` raises ``UnsupportedTableError``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from index_store.errors import UnsupportedTableError
from index_store.tables.base import TableReader
from index_store.tables.registry import OpenOptions

__all__ = ["DELTA_FORMAT", "ICEBERG_FORMAT", "RefusedFormat"]


@dataclass(frozen=True)
class RefusedFormat:
    """A ``TableFormat`` whose tables are recognised and refused with ``why`` (``{root}`` in it)."""

    name: str
    recognise: Callable[[str], bool]
    why: str

    def detect(self, root: str) -> bool:
        return self.recognise(root)

    def open(self, root: str, options: OpenOptions) -> TableReader:
        raise UnsupportedTableError(self.why.format(root=root))


def _is_delta(root: str) -> bool:
    return os.path.isdir(os.path.join(root, "_delta_log"))


def _is_iceberg(root: str) -> bool:
    metadata = os.path.join(root, "metadata")
    if not os.path.isdir(metadata):
        return False
    with os.scandir(metadata) as entries:
        return any(e.name.endswith(".metadata.json") for e in entries)


DELTA_FORMAT = RefusedFormat(
    "delta", _is_delta, "{root} is a Delta Lake table (it has _delta_log): not supported"
)
ICEBERG_FORMAT = RefusedFormat(
    "iceberg", _is_iceberg, "{root} is an Iceberg table (metadata/*.metadata.json): not supported"
)
