"""Secondary indexes (Hudi RFC-51): exact row sets per base file, behind one index-type interface.

The table-level API (``create_index``, ``build_index``, ``row_ids``, ``read``...) is on
``IndexedTable``, from ``index_store.secondary.api``; this package's modules hold the parts:
definitions, index types, the index file format, building, and row selection.
"""

from index_store.secondary.cost import Choice, Costs, calibrate, costs_for, stored_costs, use_costs
from index_store.secondary.definitions import IndexDefinition, default_index_name
from index_store.secondary.kinds import (
    IndexKind,
    KeyLookup,
    TermIndex,
    UnsupportedColumnError,
    ValueIndex,
    index_kind,
    kinds,
    register_kind,
)
from index_store.secondary.read import ReadJob, RowReader, register_row_reader, row_reader
from index_store.secondary.select import FileRows, IndexUse, UseRules

__all__ = [
    "Choice",
    "Costs",
    "FileRows",
    "IndexDefinition",
    "IndexKind",
    "IndexUse",
    "KeyLookup",
    "ReadJob",
    "RowReader",
    "TermIndex",
    "UnsupportedColumnError",
    "UseRules",
    "ValueIndex",
    "calibrate",
    "costs_for",
    "default_index_name",
    "index_kind",
    "kinds",
    "register_kind",
    "register_row_reader",
    "row_reader",
    "stored_costs",
    "use_costs",
]
