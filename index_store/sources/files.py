"""File pruning over the sources: each available one adds what it knows of the files to one
``FileStats``, so that the predicate, evaluated once over it, intersects their answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hudi_expr import Expression, FileStats, might_match
from index_store.sources.base import PrunesFiles, SourceQuery
from index_store.sources.registry import file_sources

__all__ = ["SourcedStats", "sourced_stats"]


@dataclass(frozen=True)
class SourcedStats:
    """The statistics of one query, and after which source each part of them was known."""

    stats: FileStats
    base: FileStats  # paths and row counts only: what is known before any source answers
    steps: tuple[tuple[str, FileStats], ...]  # (source name, stats once it had answered)
    notes: tuple[str, ...] = ()  # what the sources said they could not cover
    hudi: object = None  # the metadata table state asked (another one makes these stats stale)

    def removed_by(self, bound: Expression) -> dict[str, int]:
        """Per source, the files it is the first to rule out for ``bound`` (re-evaluated per
        source: done only when someone asks for an explanation)."""
        out: dict[str, int] = {}
        # Empty files are ruled out by their row count, before any source answers.
        ruled_out = ~might_match(bound, self.base).to_numpy(zero_copy_only=False)
        for name, stats in self.steps:
            now = ~might_match(bound, stats).to_numpy(zero_copy_only=False)
            newly = int(np.count_nonzero(now & ~ruled_out))
            if newly:
                out[name] = out.get(name, 0) + newly
            ruled_out |= now
        return out


def sourced_stats(query: SourceQuery, sources: Sequence[PrunesFiles] | None = None) -> SourcedStats:
    """Every available source's answer for ``query``, applied in order (default: every
    registered source that prunes files)."""
    loaded = query.loaded
    base = stats = FileStats(loaded.paths, loaded.row_count, {}, loaded.snap.schema)
    steps = []
    for source in file_sources() if sources is None else sources:
        if source.available(query):
            stats = source.answer(query, stats)
            steps.append((source.name, stats))
    return SourcedStats(stats, base, tuple(steps), tuple(dict.fromkeys(query.notes)), query.hudi)
