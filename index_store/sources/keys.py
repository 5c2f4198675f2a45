"""Key locations over the sources: each one that locates keys answers (key, file) pairs, and the
pairs every answer holds are kept."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from index_store.errors import IndexSourceError
from index_store.sources.base import KeyAnswer, KeyQuery, LocatesKeys
from index_store.sources.registry import key_sources

__all__ = ["SourcedKeys", "sourced_locations"]


@dataclass(frozen=True)
class SourcedKeys:
    """The (key, file) pairs every source's answer holds, and what the sources counted."""

    key_idx: np.ndarray
    file_pos: np.ndarray
    exact: bool  # one answer was exact: nothing to verify
    counters: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    pairs_by_source: dict[str, int] = field(default_factory=dict)


def sourced_locations(query: KeyQuery, sources: Sequence[LocatesKeys] | None = None) -> SourcedKeys:
    """Every source's pairs for ``query``, intersected (default: every registered source that
    locates keys). Each answer holds every pair whose file holds the key, so the intersection
    does too; it is exact when one of them is."""
    asked = key_sources() if sources is None else sources
    answers: list[tuple[str, KeyAnswer]] = []
    for source in asked:
        answer = source.key_locations(query)
        if answer is not None:
            answers.append((source.name, answer))
    if not answers:
        # Every key would look new: refused rather than tagging updates as inserts.
        names = ", ".join(s.name for s in asked) or "none"
        raise IndexSourceError(
            f"no index source locates record keys for a {query.method!r} tag (sources asked: {names}): "
            "register one (index_store.sources.register_source), e.g. the built-in RecordKeys() "
            "or RecordIndex() if it was unregistered"
        )
    key_idx, file_pos = answers[0][1].key_idx, answers[0][1].file_pos
    if len(answers) > 1:
        n = max(len(query.context.paths), 1)
        common = _codes(answers[0][1], n)
        for _, answer in answers[1:]:
            common = np.intersect1d(common, _codes(answer, n))
        key_idx, file_pos = common // n, common % n
    counters: Counter[str] = Counter()
    seconds: dict[str, float] = {}
    for _, answer in answers:
        counters.update(answer.counters)
        seconds.update(answer.seconds)
    return SourcedKeys(
        key_idx,
        file_pos,
        any(a.exact for _, a in answers),
        dict(counters),
        seconds,
        {name: int(a.key_idx.size) for name, a in answers},
    )


def _codes(answer: KeyAnswer, n: int) -> np.ndarray:
    """One integer per pair, ordered by key then file (``n``: the number of files)."""
    return answer.key_idx.astype(np.int64, copy=False) * n + answer.file_pos
