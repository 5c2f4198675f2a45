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

__all__ = ["TERM_CHARS", "normalize_term", "term_occurrences", "term_regex", "tokenize"]

TERM_CHARS = r"\p{L}\p{N}"
"""The characters of a term, as the body of an RE2 character class."""

_SEPARATORS = f"[^{TERM_CHARS}]+"
_ONE_TERM = f"^[{TERM_CHARS}]+$"


def tokenize(strings: pa.Array | pa.ChunkedArray) -> tuple[pa.StringArray, np.ndarray]:
    """Every distinct (term, row) pair of ``strings`` once: the terms, and their rows (int64
    positions in ``strings``). Null strings and empty terms give nothing; the order is unspecified
    but the same for the same input."""
    terms, rows = term_occurrences(strings)
    if not len(rows):
        return pa.array([], pa.string()), rows
    # A pair is one int64 key: row * (number of distinct terms) + the term's dictionary code;
    # each pair keeps its first occurrence.
    codes = np.asarray(terms.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    _, first = np.unique(rows * len(terms.dictionary) + codes, return_index=True)
    return terms.dictionary.take(pa.array(codes[first])).cast(pa.string()), rows[first]


def term_occurrences(strings: pa.Array | pa.ChunkedArray) -> tuple[pa.DictionaryArray, np.ndarray]:
    """Every term occurrence of ``strings`` in text order, dictionary-encoded (the dictionary holds
    each term once), and its row (int64, ascending). A term repeated within a row occurs twice:
    ``tokenize`` keeps each (term, row) once."""
    chunks = strings.chunks if isinstance(strings, pa.ChunkedArray) else [strings]
    terms: list[pa.Array] = []
    rows: list[np.ndarray] = []
    offset = 0
    for chunk in chunks:
        chunk_terms, chunk_rows = _occurrences(_as_text(chunk))
        terms.append(chunk_terms)
        rows.append(chunk_rows + offset)
        offset += len(chunk)
    flat = pa.concat_arrays(terms) if len(terms) > 1 else (terms[0] if terms else pa.array([], pa.string()))
    out = pc.dictionary_encode(flat.cast(pa.string()))
    return out, (np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64))


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


# Per byte: is it an ASCII letter or digit (the whole of ``\p{L}\p{N}`` within ASCII), as a
# ``bytes.translate`` table to 0/1 (twice as fast as numpy's gather through a lookup array).
_ASCII_TERM = np.zeros(256, dtype=bool)
_ASCII_TERM[[*range(48, 58), *range(65, 91), *range(97, 123)]] = True
_ASCII_TERM_TABLE = _ASCII_TERM.astype(np.uint8).tobytes()


def _occurrences(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The terms of ``values`` in text order and their rows: on the bytes when the text is ASCII,
    else by arrow's regex split of the lower-cased text."""
    if pc.all(pc.string_is_ascii(values)).as_py() is not False:
        return _ascii_occurrences(values)
    parts = pc.split_pattern_regex(pc.utf8_lower(values), pattern=_SEPARATORS)
    flat = pc.list_flatten(parts)
    parents = pc.list_parent_indices(parts)
    nonempty = pc.greater(pc.binary_length(flat), 0)
    rows = np.asarray(parents.filter(nonempty).to_numpy(zero_copy_only=False), dtype=np.int64)
    return flat.filter(nonempty), rows


def _ascii_occurrences(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """``_occurrences`` of ASCII text with numpy: a term is a run of letters and digits within one
    value (several times faster than the regex split, and the same terms)."""
    values = pc.fill_null(values, "").cast(pa.large_string())  # a null holds no term
    _, offsets_buf, data_buf = values.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[values.offset : values.offset + len(values) + 1]
    lo, hi = int(offsets[0]), int(offsets[-1])
    if data_buf is None or hi <= lo:
        return pa.array([], pa.string()), np.zeros(0, dtype=np.int64)
    raw = data_buf.slice(lo, hi - lo).to_pybytes()
    data = np.frombuffer(raw, dtype=np.uint8)
    term = np.frombuffer(raw.translate(_ASCII_TERM_TABLE), dtype=bool)
    # A term starts at a term byte after a non-term byte or at a value's first byte, and ends
    # before a non-term byte or a value's end.
    boundary = np.zeros(len(data) + 1, dtype=bool)
    boundary[offsets - lo] = True
    prev = np.concatenate([[False], term[:-1]]) & ~boundary[:-1]
    starts = np.flatnonzero(term & ~prev)
    nxt = np.concatenate([term[1:], [False]]) & ~boundary[1:]
    ends = np.flatnonzero(term & ~nxt) + 1
    # A value's terms are the starts from its offset on: count them per value (a search per value,
    # not per term) and repeat the value's row that many times.
    per_value = np.diff(np.searchsorted(starts, offsets - lo))
    rows = np.repeat(np.arange(len(values), dtype=np.int64), per_value)
    # Every term byte in order (the terms concatenated), lower-cased: setting bit 5 maps A-Z to
    # a-z and leaves a-z and 0-9 as they are.
    lowered = data[term] | np.uint8(32)
    term_offsets = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int32)
    flat = pa.StringArray.from_buffers(len(starts), pa.py_buffer(term_offsets), pa.py_buffer(lowered))
    return flat, rows


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
