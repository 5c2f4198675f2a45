"""Secondary index definitions (Hudi RFC-51): which columns are indexed, by which index type.

A definition is recorded by a commit of its own (``create_index``) and carried by every later
timeline entry inside ``IndexConfig``; building its index files is a separate step
(``build_index``), so a definition may exist with no file built yet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["IndexDefinition", "default_index_name"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class IndexDefinition:
    """One secondary index: a name, the columns it covers, and its index type."""

    name: str
    columns: tuple[str, ...]
    index_type: str  # "value", "term", or a type registered in ``index_store.secondary.kinds``
    created: int = 0  # the index version whose commit recorded it

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(
                f"index name {self.name!r} must be a SQL identifier (letters, digits, _; not starting "
                "with a digit)"
            )
        if not self.columns or len(set(self.columns)) != len(self.columns):
            raise ValueError(
                f"index {self.name!r} needs one or more distinct columns, got {list(self.columns)}"
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "columns": list(self.columns),
            "type": self.index_type,
            "created": self.created,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> IndexDefinition:
        return cls(
            str(d["name"]), tuple(str(c) for c in d["columns"]), str(d["type"]), int(d.get("created", 0))
        )


def default_index_name(columns: Sequence[str], index_type: str) -> str:
    """``idx_<type>_<col>_<col>``, with characters outside identifiers replaced by ``_``."""
    body = "_".join(re.sub(r"[^A-Za-z0-9_]", "_", c) for c in columns)
    return f"idx_{index_type}_{body}"
