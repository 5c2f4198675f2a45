"""The ASCII tokenizer (numpy on the bytes) finds exactly the terms of the regex split it stands in
for, on random ASCII text with every kind of separator, case, empty and null values, and slices."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

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
