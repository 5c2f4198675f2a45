"""The range stage against brute force: Java ``String`` order (UTF-16 code units, i.e. the bytes of
UTF-16-BE) and UTF-8 byte order, with NUL bytes, characters above U+FFFF, empty strings, null
bounds, and both the fixed-width and the sorting paths."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from index_store.tagging import ranges
from index_store.tagging.ranges import key_ranks, needs_both_orders, stab

ALPHABET = ["a", "b", "\x00", "\U0001f600", "\uffff", "\ue000", "ab", ""]


@pytest.mark.parametrize("path", ["fixed", "sorting"])
@pytest.mark.parametrize("with_nul", [True, False])
def test_stabbing_equals_brute_force(path: str, with_nul: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "sorting":
        monkeypatch.setattr(ranges, "_MAX_FIXED_WIDTH", 0)
    alphabet = ALPHABET if with_nul else [a for a in ALPHABET if a != "\x00"]
    rng = np.random.default_rng(7)

    def text() -> str:
        return "".join(rng.choice(alphabet, rng.integers(0, 4)))

    for _ in range(300):
        nf, nk = int(rng.integers(0, 25)), int(rng.integers(0, 40))
        lows = [text() for _ in range(nf)]
        highs = [max(lo, text(), key=lambda s: s.encode("utf-16-be")) for lo in lows]
        null = rng.random(nf) < 0.1
        low_arr = pa.array([None if n else v for v, n in zip(lows, null, strict=True)], pa.string())
        high_arr = pa.array([None if n else v for v, n in zip(highs, null, strict=True)], pa.string())
        keys = [text() for _ in range(nk)]
        for java in (True, False):
            order = (lambda s: s.encode("utf-16-be")) if java else (lambda s: s.encode())
            k, lo, hi = key_ranks(pa.array(keys, pa.string()), low_arr, high_arr, java)
            got = set()
            for key_idx, file_idx in stab(k, lo, hi, max_pairs=5):
                got |= set(zip(key_idx.tolist(), file_idx.tolist(), strict=True))
            expected = {
                (i, j)
                for i, key in enumerate(keys)
                for j in range(nf)
                if not null[j] and order(lows[j]) <= order(key) <= order(highs[j])
            }
            assert got == expected


def test_only_characters_above_the_bmp_need_both_orders() -> None:
    assert not needs_both_orders(pa.array(["abc", "\uffff", "\ue000"]), pa.array([None], pa.string()))
    assert needs_both_orders(pa.array(["abc"]), pa.array(["x\U00010000"]))
