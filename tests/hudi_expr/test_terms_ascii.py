"""The ASCII tokenizer (numpy on the bytes) finds exactly the terms of the regex split it stands in
for, on random ASCII text with every kind of separator, case, empty and null values, and slices."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_expr import terms
from hudi_expr.terms import term_occurrences, tokenize


def _by_regex(values: pa.Array) -> list[tuple[str, int]]:
    parts = pc.split_pattern_regex(pc.utf8_lower(values), pattern=terms._SEPARATORS)
    flat = pc.list_flatten(parts).to_pylist()
    rows = pc.list_parent_indices(parts).to_pylist()
    return [(t, r) for t, r in zip(flat, rows, strict=True) if t]


@pytest.mark.parametrize("seed", range(20))
def test_ascii_occurrences_are_the_regex_split(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "aAzZ09 .,-_!\t\n'\"~\x00\x7fqQ"
    values = [
        None if rng.random() < 0.1 else "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        for _ in range(rng.randrange(1, 40))
    ]
    array = pa.array(values, pa.string())
    if len(array) > 2:
        array = array.slice(1, len(array) - 2)  # a slice: offsets not starting at zero
    flat, rows = terms._ascii_occurrences(array)
    assert list(zip(flat.to_pylist(), rows.tolist(), strict=True)) == _by_regex(array)


def test_ascii_and_unicode_chunks_give_each_pair_once() -> None:
    chunked = pa.chunked_array([["Ab ab AB", None, "x-y x"], ["Ünï ünÏ ok", "", "ok OK"]])
    got, rows = tokenize(chunked)
    assert sorted(zip(got.to_pylist(), rows.tolist(), strict=True)) == [
        ("ab", 0), ("ok", 3), ("ok", 5), ("x", 2), ("y", 2), ("ünï", 3),
    ]  # fmt: skip
    occurrences, rows = term_occurrences(chunked)
    assert isinstance(occurrences, pa.DictionaryArray)
    assert occurrences.to_pylist() == ["ab", "ab", "ab", "x", "y", "x", "ünï", "ünï", "ok", "ok", "ok"]
    assert np.array_equal(rows, [0, 0, 0, 2, 2, 2, 3, 3, 3, 5, 5])


_ADVERSARIAL = st.one_of(
    st.none(),
    st.text(alphabet=st.sampled_from("aZ09 .-_\t\n\x00\x7f'"), max_size=12),  # ASCII: the byte path
    st.text(max_size=8),  # any Unicode (a chunk with any of it takes the regex path)
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_ADVERSARIAL, max_size=12), min_size=1, max_size=3), st.booleans())
def test_occurrences_and_pairs_are_the_regex_split_of_each_value(
    chunks: list[list[str | None]], sliced: bool
) -> None:
    # The reference: the definition (lower-case, split on runs of non-term characters) value by value.
    arrays = [pa.array(c, pa.string()) for c in chunks]
    if sliced:
        arrays = [a.slice(1) if len(a) > 1 else a for a in arrays]
    expected: list[tuple[str, int]] = []
    offset = 0
    for a in arrays:
        expected += [(term, row + offset) for term, row in _by_regex(a)]
        offset += len(a)
    occurrences, rows = term_occurrences(pa.chunked_array(arrays, pa.string()))
    assert list(zip(occurrences.to_pylist(), rows.tolist(), strict=True)) == expected
    got, pair_rows = tokenize(pa.chunked_array(arrays, pa.string()))
    assert sorted(zip(got.to_pylist(), pair_rows.tolist(), strict=True)) == sorted(set(expected))
