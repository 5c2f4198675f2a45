"""Word terms of text: the one tokenization behind ``contains_term`` and the term index (RFC-51).

A term is a maximal run of Unicode letters and digits (RE2's ``\\p{L}\\p{N}``, as arrow compiles
it) in the text lower-cased by arrow's ``utf8_lower`` (one character to one character). Row
filters, DuckDB's ``contains_term`` macro and the index all derive from the definitions here, so
they cannot disagree on which rows hold a term.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["TERM_CHARS", "normalize_term", "term_regex", "tokenize"]

TERM_CHARS = r"\p{L}\p{N}"
"""The characters of a term, as the body of an RE2 character class."""

_SEPARATORS = f"[^{TERM_CHARS}]+"
_ONE_TERM = f"^[{TERM_CHARS}]+$"


def tokenize(strings: pa.Array | pa.ChunkedArray) -> tuple[pa.StringArray, np.ndarray]:
    """Every distinct (term, row) pair of ``strings`` once: the terms, and their rows (int64
    positions in ``strings``). Null strings and empty terms give nothing; the order is unspecified
    but the same for the same input."""
    chunks = strings.chunks if isinstance(strings, pa.ChunkedArray) else [strings]
    terms: list[pa.Array] = []
    rows: list[np.ndarray] = []
    offset = 0
    for chunk in chunks:
        chunk_terms, chunk_rows = _tokenize_chunk(_as_text(chunk))
        terms.append(chunk_terms)
        rows.append(chunk_rows + offset)
        offset += len(chunk)
    if not terms:
        return pa.array([], pa.string()), np.zeros(0, dtype=np.int64)
    out = pa.concat_arrays(terms) if len(terms) > 1 else terms[0]
    return out, np.concatenate(rows)


def _as_text(values: pa.Array) -> pa.Array:
    """String values in a type arrow's string kernels take (dictionaries and views decoded)."""
    t = values.type
    if pa.types.is_dictionary(t):
        values = values.cast(t.value_type)
        t = values.type
    if pa.types.is_string_view(t):
        return values.cast(pa.large_string())
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        raise TypeError(f"terms are taken from strings, not {t}")
    return values


def _tokenize_chunk(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    parts = pc.split_pattern_regex(pc.utf8_lower(values), pattern=_SEPARATORS)
    flat = pc.list_flatten(parts)
    parents = pc.list_parent_indices(parts)
    nonempty = pc.greater(pc.binary_length(flat), 0)
    flat = flat.filter(nonempty)
    rows = np.asarray(parents.filter(nonempty).to_numpy(zero_copy_only=False), dtype=np.int64)
    if not len(flat):
        return pa.array([], pa.string()), rows
    # A pair is one int64 key: row * (number of distinct terms) + the term's dictionary code.
    encoded = pc.dictionary_encode(flat)
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    _, first = np.unique(rows * len(encoded.dictionary) + codes, return_index=True)
    return flat.take(pa.array(first)).cast(pa.string()), rows[first]


@functools.lru_cache(maxsize=4096)  # compiling the Unicode classes costs about a millisecond
def normalize_term(word: str) -> str:
    """``word`` lower-cased as terms are; ``ValueError`` unless that is exactly one term."""
    if not isinstance(word, str):
        raise TypeError(f"a term is a string, got {word!r}")
    if not word:
        raise ValueError("contains_term needs a word, got an empty string")
    lowered: str = pc.utf8_lower(pa.scalar(word, pa.string())).as_py()
    if not pc.match_substring_regex(pa.scalar(lowered, pa.string()), pattern=_ONE_TERM).as_py():
        raise ValueError(
            f"contains_term needs one word of letters and digits, got {word!r}: test each word with "
            "its own contains_term (AND them), or use contains() for text with other characters"
        )
    return lowered


def term_regex(term: str) -> str:
    """An RE2 pattern that, matched against lower-cased text, is TRUE exactly when the text's
    terms include ``term`` (a normalized term, see ``normalize_term``)."""
    escaped = "".join(f"\\x{{{ord(ch):x}}}" if ch.isascii() and not ch.isalnum() else ch for ch in term)
    return f"(^|[^{TERM_CHARS}]){escaped}([^{TERM_CHARS}]|$)"
