"""``hudi_expr.types.is_string_like`` / ``is_binary_like``: the one answer to "is this type text, or
bytes compared bytewise", and the DuckDB adapter reading literals of every such type."""

from __future__ import annotations

import pyarrow as pa
import pytest

from adapters.duckdb.parse import _to_literal
from hudi_expr.types import coerce_literal, is_binary_like, is_comparable_type, is_string_like

STRINGS = [pa.string(), pa.large_string(), pa.string_view()]
BINARIES = [pa.binary(), pa.large_binary(), pa.binary_view(), pa.binary(4)]
NEITHER = [
    pa.int64(),
    pa.float64(),
    pa.decimal128(10, 2),
    pa.bool_(),
    pa.date32(),
    pa.timestamp("us"),
    pa.dictionary(pa.int32(), pa.string()),  # callers look at value_type
    pa.dictionary(pa.int32(), pa.binary()),
    pa.uuid(),  # an extension type stored as fixed-size binary
    pa.list_(pa.string()),
    pa.struct([("s", pa.string())]),
    pa.null(),
]


@pytest.mark.parametrize("t", STRINGS + BINARIES + NEITHER, ids=str)
def test_one_answer_per_type(t: pa.DataType) -> None:
    assert is_string_like(t) == (t in STRINGS)
    assert is_binary_like(t) == (t in BINARIES)
    if t in STRINGS + BINARIES:
        assert is_comparable_type(t)


@pytest.mark.parametrize("t", BINARIES, ids=str)
def test_binary_like_columns_take_bytes_and_text(t: pa.DataType) -> None:
    assert coerce_literal(b"abcd", t, "c").value == pa.scalar(b"abcd", t)
    assert coerce_literal("abcd", t, "c").value == pa.scalar(b"abcd", t)


@pytest.mark.parametrize("t", STRINGS, ids=str)
def test_string_like_columns_take_text(t: pa.DataType) -> None:
    assert coerce_literal("é", t, "c").value == pa.scalar("é", t)


BYTES = b"\x00\xff\x01x"
LITERALS = [(pa.scalar("x", t), "x") for t in STRINGS] + [(pa.scalar(BYTES, t), BYTES) for t in BINARIES]


@pytest.mark.parametrize(("scalar", "value"), LITERALS, ids=str)
def test_duckdb_literals_of_every_text_and_bytes_type(scalar: pa.Scalar, value: object) -> None:
    assert _to_literal(scalar) == value
