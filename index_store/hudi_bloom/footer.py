"""A base file's footer: its bloom filter entry, its key bounds, and footers written as Hudi does."""

from __future__ import annotations

from typing import Any

from index_store.hudi_bloom.filter import HudiBloomFilter, _footer
from index_store.hudi_bloom.format import (
    BLOOM_FOOTER_KEY,
    DEFAULT_FPP,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_NUM_ENTRIES,
    DYNAMIC_V0,
    MAX_KEY_FOOTER_KEY,
    MIN_KEY_FOOTER_KEY,
    TYPE_CODE_FOOTER_KEY,
    Keys,
)
from index_store.hudi_bloom.hashing import _as_binary
from index_store.hudi_bloom.java_order import java_argsort


def footer_key_bounds(metadata: Any) -> tuple[str, str] | None:
    """``(hoodie_min_record_key, hoodie_max_record_key)`` of a base file's footer, or None unless
    both are there (no keys in the file, or a table without meta fields).

    The bounds are in the order of the writer that made the file: Hudi's Avro writer compares
    ``String``s (UTF-16 code units, :func:`java_sort_keys`), its Spark row writer compares
    ``UTF8String``s (UTF-8 bytes). The two differ only for keys with characters above U+FFFF, so a
    range test that must not miss a key admits it when either order puts it inside the bounds.
    """
    footer = _footer(metadata)
    low, high = footer.get(MIN_KEY_FOOTER_KEY), footer.get(MAX_KEY_FOOTER_KEY)
    if low is None or high is None:
        return None
    return low, high


def hudi_footer(
    keys: Keys,
    type_code: str = DYNAMIC_V0,
    num_entries: int = DEFAULT_NUM_ENTRIES,
    fpp: float = DEFAULT_FPP,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> dict[str, str]:
    """The footer entries Hudi's writer would put on a base file holding ``keys`` (in row order):
    the filter, its type code (written for DYNAMIC_V0 only, as Hudi does) and, when there are keys,
    the min/max key in Java ``String`` order. With Hudi's defaults unless told otherwise."""
    bloom = HudiBloomFilter.create(num_entries, fpp, type_code, max_entries)
    bloom.add_all(keys)
    out = {BLOOM_FOOTER_KEY: bloom.to_serialized()}
    if bloom.type_code == DYNAMIC_V0:
        out[TYPE_CODE_FOOTER_KEY] = DYNAMIC_V0
    binary = _as_binary(keys)
    if len(binary):
        order = java_argsort(binary)
        out[MIN_KEY_FOOTER_KEY] = binary[int(order[0])].as_py().decode("utf-8")
        out[MAX_KEY_FOOTER_KEY] = binary[int(order[-1])].as_py().decode("utf-8")
    return out
