"""Row selection over the sources: each one that selects rows answers per candidate file, and
the answers are intersected file by file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from index_store.secondary.select import FileRows, IndexUse
from index_store.sources.base import RowAnswer, RowQuery, SelectsRows
from index_store.sources.registry import row_sources

__all__ = ["SourcedRows", "sourced_rows"]


@dataclass(frozen=True)
class SourcedRows:
    """The rows of each candidate every source's answer leaves, and how each source was used."""

    rows: Sequence[FileRows]  # per candidate
    use: IndexUse  # the first source whose rows were used, else the first that answered
    uses: tuple[IndexUse, ...]  # every answering source's, in the order they were asked
    notes: tuple[str, ...]


def sourced_rows(query: RowQuery, sources: Sequence[SelectsRows] | None = None) -> SourcedRows:
    """Every source's rows for ``query``, intersected (default: every registered source that
    selects rows). A file no source narrows has all its rows, as candidates."""
    answers: list[RowAnswer] = []
    for source in row_sources() if sources is None else sources:
        answer = source.row_positions(query)
        if answer is not None:
            answers.append(answer)
    used = [a for a in answers if a.rows is not None]
    if not answers:
        none = IndexUse(False, "no index source selects rows", candidate_rows=int(query.row_counts.sum()))
        answers.append(RowAnswer(None, none))
    rows: Sequence[FileRows]
    if not used:
        rows = [FileRows(None, False)] * len(query.candidates)
    elif len(used) == 1:
        rows = used[0].rows or ()  # one answer: taken as it is, no copy
    else:
        per_source = [a.rows or () for a in used]
        rows = [_intersect(file_rows) for file_rows in zip(*per_source, strict=True)]
    return SourcedRows(
        rows,
        (used or answers)[0].use,
        tuple(a.use for a in answers),
        tuple(note for a in answers for note in a.notes),
    )


def _intersect(answers: Sequence[FileRows]) -> FileRows:
    """One file's rows that every answer leaves. Each answer holds every matching row, so the
    intersection does too; it is exact when one of them is (its rows are the matching ones)."""
    exact = any(a.exact for a in answers)
    masks = [a.mask for a in answers if a.mask is not None]
    if not masks:
        return FileRows(None, exact)
    if any(len(m) == 0 for m in masks):
        return FileRows(np.zeros(0, dtype=bool), True)  # an empty mask: no row, exactly
    out = masks[0]
    for m in masks[1:]:
        out = out & m  # a new mask: the answers' own are left as they are
    return FileRows(out, exact)
