"""Index types behind one interface (RFC-51's IndexManager factory): ``value`` and ``term``.

An index type says which columns it can index, what (key, row) pairs it stores for a column's
values, and, for a leaf of a query, which keys to look up and whether the rows found are exactly
the rows where the leaf is TRUE (``exact``) or candidates the residual filter must verify. A new
type is one class registered with ``register_kind``; the file format, building, lookups and the
engines need nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
import pyarrow as pa

from hudi_expr import EqualTo, Expression, Predicate, Reference
from hudi_expr.types import describe_type, is_comparable_type, is_float_type, is_string_like

__all__ = [
    "IndexKind",
    "KeyLookup",
    "TermIndex",
    "UnsupportedColumnError",
    "ValueIndex",
    "index_kind",
    "kinds",
    "register_kind",
]


class UnsupportedColumnError(ValueError):
    """A column an index type cannot index (its type, or where it lives)."""


@dataclass(frozen=True)
class KeyLookup:
    """How one leaf is answered by an index: a predicate on the stored keys, and its exactness."""

    keys: Expression  # unbound, over a column named like the indexed column, of the key type
    exact: bool  # True: the rows of the keys found are exactly the rows where the leaf is TRUE


class IndexKind(Protocol):
    """One index type."""

    name: ClassVar[str]

    def check(self, column: str, data_type: pa.DataType) -> None:
        """Raise ``UnsupportedColumnError`` (saying why) unless this type can index the column."""
        ...

    def key_type(self, data_type: pa.DataType) -> pa.DataType:
        """The type of the keys stored for a column of ``data_type``."""
        ...

    def pairs(self, values: pa.Array) -> tuple[pa.Array, np.ndarray]:
        """The (key, row position) pairs to store for one file's values of the column (keys
        plain or dictionary-encoded; a pair may repeat)."""
        ...

    def lookup(self, leaf: Predicate) -> KeyLookup | None:
        """How to answer the bound ``leaf`` on an indexed column, or None if this type cannot."""
        ...

    def estimate(
        self,
        leaf: Predicate,
        rows: np.ndarray,
        distinct: np.ndarray,
        null_rows: np.ndarray,
        pairs: np.ndarray,
    ) -> np.ndarray:
        """Expected rows the leaf selects per file, from the files' index counts (float arrays)."""
        ...


_KINDS: dict[str, IndexKind] = {}


def register_kind(kind: IndexKind) -> None:
    """Make ``kind`` available to ``create_index(..., index_type=kind.name)``."""
    if kind.name in _KINDS:
        raise ValueError(f"an index type named {kind.name!r} is registered already")
    _KINDS[kind.name] = kind


def index_kind(name: str) -> IndexKind:
    """The index type called ``name``, or ``ValueError`` listing the known ones."""
    try:
        return _KINDS[name]
    except KeyError:
        raise ValueError(f"unknown index type {name!r}: use one of {sorted(_KINDS)}") from None


def kinds() -> Iterator[IndexKind]:
    return iter(tuple(_KINDS.values()))


def _plain(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


class ValueIndex:
    """Exact values -> rows: answers every leaf on the column exactly, since a leaf's truth depends
    only on the value (=, IN, ranges, IS NULL, prefixes, and their negations)."""

    name: ClassVar[str] = "value"

    def check(self, column: str, data_type: pa.DataType) -> None:
        t = _plain(data_type)
        if is_float_type(t):
            # NaN != NaN and -0.0 == 0.0 make float keys ambiguous; point lookups on floats are rare.
            raise UnsupportedColumnError(
                f"column {column!r} is {describe_type(t)}: a value index does not index floating point "
                "columns (NaN and -0.0 have no single key); index an integer or decimal column"
            )
        # The types predicates bind to and order (floats were refused above).
        if not is_comparable_type(t):
            raise UnsupportedColumnError(
                f"column {column!r} is {describe_type(t)}: a value index needs an integer, decimal, "
                "boolean, string, binary, date or timestamp column"
            )

    def key_type(self, data_type: pa.DataType) -> pa.DataType:
        return _plain(data_type)

    def pairs(self, values: pa.Array) -> tuple[pa.Array, np.ndarray]:
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        return values, np.arange(len(values), dtype=np.int64)

    def lookup(self, leaf: Predicate) -> KeyLookup | None:
        return KeyLookup(leaf, exact=True)

    def estimate(
        self,
        leaf: Predicate,
        rows: np.ndarray,
        distinct: np.ndarray,
        null_rows: np.ndarray,
        pairs: np.ndarray,
    ) -> np.ndarray:
        per_value = (rows - null_rows) / np.maximum(distinct, 1.0)
        if leaf.op == "eq":
            return per_value
        if leaf.op == "in":
            return np.minimum(rows - null_rows, per_value * len(leaf.args[1]))
        if leaf.op == "is_null":
            return null_rows
        if leaf.op == "is_not_null":
            return rows - null_rows
        return (rows - null_rows) / 3  # a range or a prefix: the textbook guess


class TermIndex:
    """RFC-51's inverted index for text: lower-cased word terms -> rows (``hudi_expr.terms``).

    ``contains_term(col, w)`` is answered exactly (it is defined by the same tokenization);
    ``col LIKE 'w%'`` and ``col LIKE '%w%'`` for a one-term ``w`` get candidates: any row that
    starts with (contains) ``w`` has a term that starts with (contains) ``lower(w)``, because
    lower-casing maps each character to one character and a run of term characters lies within
    one term. The residual filter then checks the candidates.
    """

    name: ClassVar[str] = "term"

    def check(self, column: str, data_type: pa.DataType) -> None:
        if not is_string_like(_plain(data_type)):
            raise UnsupportedColumnError(
                f"column {column!r} is {describe_type(data_type)}: a term index needs a string column"
            )

    def key_type(self, data_type: pa.DataType) -> pa.DataType:
        return pa.string()

    def pairs(self, values: pa.Array) -> tuple[pa.Array, np.ndarray]:
        from hudi_expr.terms import term_occurrences

        # Each occurrence, dictionary-encoded: the entries keep a (term, row) pair once and sort
        # the distinct terms only (``entries_of``).
        terms, rows = term_occurrences(values)
        return terms, np.asarray(rows, dtype=np.int64)

    def lookup(self, leaf: Predicate) -> KeyLookup | None:
        from hudi_expr.expressions import leaf_class
        from hudi_expr.terms import normalize_term

        ref = Reference(leaf.term.name)
        literal = leaf.args[1] if len(leaf.args) > 1 else None
        if isinstance(literal, pa.Scalar):  # bound leaves hold their literal as an arrow scalar
            literal = literal.as_py()
        if leaf.op == "contains_term":
            return KeyLookup(EqualTo(ref, literal), exact=True)
        if leaf.op not in ("starts_with", "contains") or not isinstance(literal, str):
            return None
        try:
            term = normalize_term(literal)
        except ValueError:
            return None  # not one term: the index cannot narrow it down
        if len(term) != len(literal):
            return None  # lower-casing changed the length: the character mapping is not 1:1
        cls = leaf_class(leaf.op)
        return None if cls is None else KeyLookup(cls(ref, term), exact=False)  # type: ignore[call-arg]

    def estimate(
        self,
        leaf: Predicate,
        rows: np.ndarray,
        distinct: np.ndarray,
        null_rows: np.ndarray,
        pairs: np.ndarray,
    ) -> np.ndarray:
        per_term = pairs / np.maximum(distinct, 1.0)
        if leaf.op == "contains_term":
            return per_term
        return np.minimum(rows, per_term * 10)  # a prefix or substring may match several terms


register_kind(ValueIndex())
register_kind(TermIndex())
