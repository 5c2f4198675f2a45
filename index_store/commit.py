"""Committing to the index: prepare on the newest state, create the next timeline entry, retry.

Writers (``build``, ``update``, ``sync``, ``compact``) write their index files first, then race for
the next timeline version (``IndexTimeline.create``: exactly one of two racing writers wins). The
loser deletes the files it wrote (orphans nobody will read) and prepares again on the new state,
after a random pause so that writers racing in step fall out of step. A writer whose commit
cannot be redone on the new state raises ``CommitConflictError`` from its ``prepare``.
"""

from __future__ import annotations

import contextlib
import errno
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from index_store.errors import CommitConflictError, IndexNotWritableError
from index_store.timeline import Commit, IndexTimeline, Snapshot

__all__ = ["MAX_RETRIES", "commit", "writable"]

MAX_RETRIES = 50


def commit(
    timeline: IndexTimeline,
    prepare: Callable[[Snapshot], Commit],
    state: Callable[[], Snapshot] | None = None,
) -> int:
    """Prepare a commit on the newest state (``state``, default the replayed snapshot) and create
    its timeline entry, retrying on a lost race; returns the committed version."""
    for attempt in range(MAX_RETRIES):
        with writable(timeline.root):
            prepared = prepare((state or timeline.snapshot)())
            if timeline.create(prepared):
                return prepared.version
        for files in prepared.added.values():
            for rel in files:
                (timeline.root / rel).unlink(missing_ok=True)
        time.sleep(random.uniform(0, 0.005 * (attempt + 1)))
    raise CommitConflictError(f"gave up after {MAX_RETRIES} attempts: the index keeps changing under us")


@contextlib.contextmanager
def writable(index_root: Path) -> Iterator[None]:
    """Turn "permission denied" and "read-only file system" into ``IndexNotWritableError``."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise IndexNotWritableError(str(index_root), exc.strerror or str(exc)) from exc
        raise
