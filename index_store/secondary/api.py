"""RFC-51's standard API: define, build, drop and list secondary indexes, and use them
(``row_ids``, ``read``, ``count``, ``exists``).

``SecondaryIndexes`` is a part of ``IndexedTable`` (``table.secondary``; the table's methods of the
same names delegate to it). It is given the table's reader, index root and timeline, how to load
the current ``LoadedVersion`` and how to prune files for row selection (``Candidates``).
"""

from __future__ import annotations

import dataclasses
import enum
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import And, BloomFilterSet, ColumnStats, Expression, Predicate
from hudi_expr.stats import leaf_columns
from index_store.builder import top_field
from index_store.commit import commit, writable
from index_store.config import IndexConfig
from index_store.errors import (
    CommitConflictError,
    IndexCorruptError,
    IndexDefinitionError,
    require_built,
)
from index_store.partitions import read_files
from index_store.partitions.base import positions_of, scatter
from index_store.partitions.secondary import (
    MANIFEST,
    MANIFEST_SCHEMA,
    files_by_type,
    live_rows,
    read_manifest,
    write_manifest,
)
from index_store.partitions.secondary_dict import DICTIONARY
from index_store.secondary.build import ComputeIndexFiles, FileTask, build_files, staged_path
from index_store.secondary.cost import (
    FileFacts,
    Known,
    Purpose,
    Work,
    bounds,
    choose,
    conjuncts,
    costs_for,
    integer_bounds,
    range_groups,
)
from index_store.secondary.definitions import IndexDefinition, default_index_name
from index_store.secondary.dictionary import Dictionary, dictionary_changes, fresh_entries, load_dictionaries
from index_store.secondary.kinds import UnsupportedColumnError, index_kind
from index_store.secondary.read import ReadJob, row_reader
from index_store.secondary.select import (
    FileRows,
    IndexUse,
    UseRules,
    expand,
    plan_lookups,
    select_rows,
)
from index_store.sources import RowAnswer, RowQuery, sourced_rows
from index_store.tables.base import TableReader
from index_store.tables.rows import require_file_reads
from index_store.timeline import Commit, IndexTimeline, Operation, Snapshot

if TYPE_CHECKING:
    from index_store.loaded import Candidates, LoadedVersion

__all__ = [
    "Asked",
    "BuildStrategy",
    "ColumnFacts",
    "DictionaryRows",
    "IndexStatus",
    "RowSelection",
    "SecondaryIndexes",
    "asked_of",
]

STAGING = ".staging"

BuildStrategy = Literal["incremental", "all"]
"""``incremental``: index files only for base files without a current one; ``all``: every one anew."""


@dataclass(frozen=True)
class IndexStatus:
    """One secondary index and how far it is built (RFC-51's "show indexing")."""

    name: str
    index_type: str
    columns: tuple[str, ...]
    files_indexed: int  # live base files (as the index knows them) with an index file of every column
    live_files: int
    created: int  # the index version that recorded the definition

    @property
    def complete(self) -> bool:
        return self.files_indexed == self.live_files


class _Uncovered(enum.Enum):
    """A dictionary answer that a file it does not cover left open."""

    UNCOVERED = "uncovered"


_UNCOVERED = _Uncovered.UNCOVERED

Asked = Literal["read", "count", "exists"]  # the row-level call ``explain`` describes


def asked_of(value: str) -> Asked:
    """``value`` as an ``Asked``, or ``ValueError`` listing the calls ``explain`` describes."""
    if value not in ("read", "count", "exists"):
        raise ValueError(f"what must be 'read', 'count' or 'exists', got {value!r}")
    return cast(Asked, value)


@dataclass(frozen=True)
class DictionaryRows:
    """What the global term dictionary alone says of a predicate: how many rows match, and which
    files hold them (absolute paths, index order)."""

    rows: int
    files: tuple[str, ...]
    total: int  # the table's data files (what pruning's "kept n of total" counts)


@dataclass(frozen=True)
class RowSelection:
    """The rows a predicate may match, per candidate file (absolute paths, index order)."""

    files: list[str]
    row_counts: list[int]
    rows: list[FileRows]
    use: IndexUse
    total_files: int
    partition_values: list[dict[str, Any]] = field(default_factory=list)
    # Unreadable secondary index files (or manifest) read past with ``on_corrupt="scan"``: their
    # files' rows are all candidates. One line each, for ``explain()`` and the engines' warnings.
    corrupt: tuple[str, ...] = ()
    # How each index source that answered selected rows (``index_store.sources``), in the order
    # they were asked; ``use`` is the first whose rows were used (else the first).
    uses: tuple[IndexUse, ...] = ()

    def row_ids(self) -> dict[str, pa.Array]:
        """``{file: uint64 row positions}``; files whose selection is empty are left out."""
        out = {}
        for path, n, rows in zip(self.files, self.row_counts, self.rows, strict=True):
            ids = expand(rows, n)
            if len(ids):
                out[path] = pa.array(ids, pa.uint64())
        return out

    @property
    def exact(self) -> bool:
        """True when every candidate's rows are exactly its matching rows (no row to check)."""
        return all(r.exact for r in self.rows)

    def explain(self) -> str:
        kept = sum(1 for r, n in zip(self.rows, self.row_counts, strict=True) if _maybe_rows(r, n))
        selected = [r.count for r in self.rows]
        known = sum(c for c in selected if c is not None)
        lines = [self.use.explain(), *(u.explain() for u in self.uses if u is not self.use)]
        lines.append(f"files with candidate rows: {kept} of {self.total_files}")
        if self.use.used:
            unknown = sum(1 for c in selected if c is None)
            lines.append(
                f"rows selected by the index: {known:,}"
                + (f" (plus every row of {unknown} files without a usable index file)" if unknown else "")
            )
        reader = row_reader()
        decoded = reader.decoded(read_jobs(self))
        candidates = sum(self.row_counts)
        lines.append(
            f"rows a read decodes: {decoded:,} of {candidates:,} candidate rows ({reader.name} reader)"
        )
        lines += self.corrupt
        return "\n".join(lines)


def read_jobs(selection: RowSelection) -> list[ReadJob]:
    """The files of ``selection`` that may hold a selected row, as reads of their positions."""
    return [
        ReadJob(path, n, None if rows.mask is None else np.flatnonzero(rows.mask), values, rows.exact)
        for path, n, rows, values in zip(
            selection.files, selection.row_counts, selection.rows, selection.partition_values, strict=True
        )
        if _maybe_rows(rows, n)
    ]


def _maybe_rows(rows: FileRows, n: int) -> bool:
    return n > 0 and (rows.mask is None or (len(rows.mask) > 0 and bool(rows.mask.any())))


class SecondaryIndexes:
    """The secondary indexes of one table: definitions, builds, and row selection with them."""

    def __init__(
        self,
        reader: TableReader,
        index_root: Path,
        timeline: IndexTimeline,
        load: Callable[[], LoadedVersion],
        candidates: Callable[[Expression, bool], Candidates],
    ) -> None:
        self.reader = reader
        self.index_root = index_root
        self.timeline = timeline
        self._load = load  # the table's current index version (cached by the table)
        # File pruning by statistics and blooms (False: every live file), checked against disk.
        self._candidates = candidates

    @property
    def root(self) -> str:
        return self.reader.root

    def _abs_all(self, rels: Iterable[str]) -> list[str]:
        # Plain concatenation: os.path.join per file costs more than pruning a million of them.
        prefix = self.root.rstrip(os.sep) + os.sep
        return [prefix + rel for rel in rels]

    # ------------------------------------------------------------------------------ definitions

    def create_index(
        self, columns: str | Sequence[str], index_type: str = "value", name: str | None = None
    ) -> int:
        """Record a secondary index definition (a commit; no index file is built yet: see
        ``build_index``); returns the commit's version."""
        require_file_reads(self.reader, "creating a secondary index (create_index)")
        cols = (columns,) if isinstance(columns, str) else tuple(columns)
        try:
            kind = index_kind(index_type)
        except ValueError as exc:
            raise IndexDefinitionError(str(exc)) from None
        try:
            definition = IndexDefinition(name or default_index_name(cols, index_type), cols, index_type)
        except ValueError as exc:
            raise IndexDefinitionError(str(exc)) from None

        def prepare(snap: Snapshot) -> Commit:
            require_built(snap.version, self.root)
            leaves = leaf_columns(snap.schema)
            for c in cols:
                if c not in leaves:
                    raise IndexDefinitionError(
                        f"cannot index column {c!r}: the table has no such column (columns: "
                        f"{', '.join(list(leaves)[:20])})"
                    )
                if c in snap.config.exact_columns:
                    raise IndexDefinitionError(
                        f"cannot index column {c!r}: it is a partition column, whose files' bounds are its "
                        "values already (file pruning finds its rows exactly)"
                    )
                if c not in snap.schema.names:  # a path into a struct ("a.b" may be one column)
                    raise IndexDefinitionError(
                        f"cannot index column {c!r}: nested struct fields are not supported"
                    )
                try:
                    kind.check(c, leaves[c])
                except UnsupportedColumnError as exc:
                    raise IndexDefinitionError(str(exc)) from None
            if snap.config.secondary_index(definition.name) is not None:
                raise IndexDefinitionError(
                    f"an index named {definition.name!r} exists already: drop it first, or choose "
                    "another name"
                )
            made = dataclasses.replace(definition, created=snap.version + 1)
            config = dataclasses.replace(
                snap.config, secondary_indexes=(*snap.config.secondary_indexes, made)
            )
            return _meta_commit(snap, Operation.CREATE_INDEX, config)

        return commit(self.timeline, prepare)

    def drop_index(self, name: str) -> int:
        """Forget a secondary index (a commit). Its index files stop being live unless another index
        uses them; readers holding an older snapshot keep reading them until ``clean`` runs."""

        def prepare(snap: Snapshot) -> Commit:
            definition = snap.config.secondary_index(name)
            if definition is None:
                known = ", ".join(d.name for d in snap.config.secondary_indexes) or "none"
                raise IndexDefinitionError(f"no secondary index named {name!r} (indexes: {known})")
            remaining = tuple(d for d in snap.config.secondary_indexes if d is not definition)
            config = dataclasses.replace(snap.config, secondary_indexes=remaining)
            manifest = read_manifest(self.index_root, snap.live.get(MANIFEST, ()))
            defined = {(d.index_type, c) for d in remaining for c in d.columns}
            file_idx = manifest["file_idx"].to_numpy() if len(manifest) else np.zeros(0, np.int64)
            rows = live_rows(manifest, file_idx, defined)
            return _manifest_commit(self.index_root, snap, Operation.DROP_INDEX, config, rows)

        return commit(self.timeline, prepare)

    def indexed_columns(self) -> frozenset[str]:
        """The columns a secondary index of this table is defined on (built or not)."""
        return frozenset(c for d in self._load().snap.config.secondary_indexes for c in d.columns)

    def indexes(self) -> list[IndexStatus]:
        """Every secondary index definition, with how many live base files it covers as the index
        knows them (a file rewritten since the last ``sync`` counts until then; it is never
        answered from its old index file)."""
        loaded = self._load()
        snap = loaded.snap
        usable = self.usable_manifest(loaded)
        out = []
        for d in snap.config.secondary_indexes:
            covered: set[int] | None = None
            for c in d.columns:
                rows = usable.filter(
                    pc.and_(pc.equal(usable["index_type"], d.index_type), pc.equal(usable["column"], c))
                )
                ids = set(rows["file_idx"].to_pylist())
                covered = ids if covered is None else covered & ids
            out.append(
                IndexStatus(
                    d.name, d.index_type, d.columns, len(covered or ()), len(loaded.file_idx), d.created
                )
            )
        return out

    # -------------------------------------------------------------------------------- building

    def build_index(
        self,
        name: str | None = None,
        strategy: BuildStrategy = "incremental",
        progress: bool | None = None,
        workers: int | None = None,
        compute: ComputeIndexFiles | None = None,
    ) -> int | None:
        """Build index files: for base files that lack a current one (``incremental``) or for all
        (``all``), for the index ``name`` or every index. Returns the commit's version, None when
        there was nothing to build. Files changed on disk since the last sync are left unindexed
        (sync first); they stay candidates with all their rows. ``compute`` computes the index
        files elsewhere (e.g. ``adapters.spark.build_secondary_index``: one Spark task per base
        file); the files are the same bytes as a local build's."""
        require_file_reads(self.reader, "building secondary index files (build_index)")
        if strategy not in ("incremental", "all"):
            raise ValueError(f"strategy must be 'incremental' or 'all', not {strategy!r}")
        loaded = self._load()
        snap = loaded.snap
        require_built(snap.version, self.root)
        if name is not None and snap.config.secondary_index(name) is None:
            known = ", ".join(d.name for d in snap.config.secondary_indexes) or "none"
            raise IndexDefinitionError(f"no secondary index named {name!r} (indexes: {known})")
        if not snap.config.secondary_indexes:
            raise IndexDefinitionError("the table has no secondary index: create one first (create_index)")
        tasks = self._build_tasks(loaded, name, strategy)
        if not tasks:
            return None
        staging = self.index_root / STAGING / uuid.uuid4().hex
        with writable(self.index_root):
            written = build_files(self.root, staging, tasks, 0, progress, workers, compute)
        built = written.rows
        staged = list(dict.fromkeys(built["index_file"].to_pylist()))
        base_version = snap.version
        # A local build has its dictionary rows at hand; files written elsewhere are read back.
        fresh = written.dictionary if written.dictionary is not None else fresh_entries(staging, built)
        fresh_idx = {
            k: built.filter(pc.and_(pc.equal(built["index_type"], k[0]), pc.equal(built["column"], k[1])))[
                "file_idx"
            ].to_numpy()
            for k in fresh
        }

        def prepare(s: Snapshot) -> Commit:
            version = s.version + 1
            if s.version != base_version:
                _check_still_live(self, s, built)
            # Staged files are linked under the instant of the commit that makes them live.
            final = {rel: _under_instant(rel, version) for rel in staged}
            for rel, dst_rel in final.items():
                dst = self.index_root / dst_rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.link(staged_path(staging, rel), dst)
            new_rows = built.set_column(
                built.schema.get_field_index("index_file"),
                "index_file",
                pa.array([final[r] for r in built["index_file"].to_pylist()], pa.string()),
            ).set_column(
                built.schema.get_field_index("version"),
                "version",
                pa.repeat(pa.scalar(version, pa.int64()), len(built)),
            )
            # Rebuilding every file of every index replaces the whole manifest: it need not be
            # readable (so strategy="all" also repairs a corrupt one).
            rebuild_all = strategy == "all" and name is None
            old = (
                MANIFEST_SCHEMA.empty_table()
                if rebuild_all
                else read_manifest(self.index_root, s.live.get(MANIFEST, ()))
            )
            defined = {(d.index_type, c) for d in s.config.secondary_indexes for c in d.columns}
            live_idx = self._live_file_idx(s)
            kept = live_rows(old, live_idx, defined)
            replaced = pc.is_in(
                pc.binary_join_element_wise(kept["index_type"], kept["file_idx"].cast(pa.string()), ":"),
                value_set=pc.binary_join_element_wise(
                    new_rows["index_type"], new_rows["file_idx"].cast(pa.string()), ":"
                ),
            )
            rows = pa.concat_tables([kept.filter(pc.invert(replaced)), new_rows.cast(kept.schema)])
            return _manifest_commit(
                self.index_root, s, Operation.BUILD_INDEX, s.config, rows, fresh, fresh_idx, rebuild_all
            )

        try:
            return commit(self.timeline, prepare)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _build_tasks(
        self, loaded: LoadedVersion, name: str | None, strategy: BuildStrategy
    ) -> list[FileTask]:
        snap = loaded.snap
        definitions = [
            d for d in snap.config.secondary_indexes if name is None or d.name.lower() == name.lower()
        ]
        kinds = dict.fromkeys(d.index_type for d in definitions)
        leaves = leaf_columns(snap.schema)
        # One index file per (type, base file) holds every column indexed with that type.
        columns = {
            k: tuple(
                dict.fromkeys(
                    c for d in snap.config.secondary_indexes if d.index_type == k for c in d.columns
                )
            )
            for k in kinds
        }
        usable = self.usable_manifest(loaded) if strategy == "incremental" else MANIFEST_SCHEMA.empty_table()
        listing = {f.path: f for f in self.reader.list_files()}
        files = loaded.files
        paths = loaded.paths.to_pylist()
        sizes = files["size"].to_pylist()
        mtimes = files["mtime"].to_pylist() if "mtime" in files.column_names else [None] * len(paths)
        counts = files["row_count"].to_pylist()
        tasks = []
        for kind, cols in columns.items():
            done: set[int] = set()
            if strategy == "incremental":
                mine = usable.filter(pc.equal(usable["index_type"], kind))
                have: dict[int, set[str]] = {}
                for idx, c in zip(mine["file_idx"].to_pylist(), mine["column"].to_pylist(), strict=True):
                    have.setdefault(idx, set()).add(c)
                done = {idx for idx, cs in have.items() if cs >= set(cols)}
            for i, idx in enumerate(loaded.file_idx.tolist()):
                on_disk = listing.get(paths[i])
                if (
                    idx in done
                    or on_disk is None
                    or (on_disk.size, on_disk.mtime_ns) != (sizes[i], mtimes[i])
                ):
                    continue
                tasks.append(
                    FileTask(
                        kind,
                        paths[i],
                        sizes[i],
                        mtimes[i],
                        counts[i],
                        int(idx),
                        on_disk.file_group,
                        cols,
                        tuple(leaves[c] for c in cols),
                    )
                )
        return tasks

    def _live_file_idx(self, snap: Snapshot) -> np.ndarray:
        return read_files(self.index_root, snap.live["files"], ["file_idx"])["file_idx"].to_numpy()

    def usable_manifest(self, loaded: LoadedVersion) -> pa.Table:
        """Manifest rows of defined indexes whose base file is live and unchanged since indexed."""
        cached = loaded.secondary.manifest
        if cached is not None:
            return cached
        snap = loaded.snap
        manifest = read_manifest(self.index_root, snap.live.get(MANIFEST, ()))
        defined = {(d.index_type, c) for d in snap.config.secondary_indexes for c in d.columns}
        rows = live_rows(manifest, loaded.file_idx, defined)
        if len(rows):
            pos = pc.index_in(rows["file_idx"], value_set=pa.array(loaded.file_idx, pa.int64()))
            size = loaded.files["size"].combine_chunks().take(pos)
            mtime = loaded.files["mtime"].combine_chunks().take(pos)
            same = pc.and_(
                pc.equal(size, rows["data_size"]),
                pc.or_kleene(
                    pc.equal(mtime, rows["data_mtime"]),
                    pc.and_(pc.is_null(mtime), pc.is_null(rows["data_mtime"])),
                ),
            )
            rows = rows.filter(pc.fill_null(same, False))
        loaded.secondary.manifest = rows
        return rows

    def bloom_filters(
        self, loaded: LoadedVersion, columns: Sequence[str], kind: str = "value"
    ) -> dict[str, BloomFilterSet]:
        """Per column of ``columns`` indexed with ``kind``: the bloom filters of each live file's
        keys (files without a usable index file have none: anything may be there)."""
        if not loaded.snap.config.secondary_indexes:
            return {}
        cache = loaded.secondary.blooms.setdefault(kind, {})
        wanted = [c for c in columns if c not in cache]
        if wanted:
            usable = self.usable_manifest(loaded)
            mine = usable.filter(pc.equal(usable["index_type"], kind))
            for column in wanted:
                rows = mine.filter(pc.equal(mine["column"], column))
                if not len(rows):
                    cache[column] = None
                    continue
                serialized = scatter(
                    rows["bloom"], positions_of(loaded.file_idx, rows["file_idx"].to_numpy())
                )
                try:
                    cache[column] = BloomFilterSet.from_arrow(serialized)
                except ValueError as exc:
                    raise IndexCorruptError(
                        str(self.index_root / MANIFEST), f"bad bloom filter ({exc})"
                    ) from None
        return {c: f for c in columns if (f := cache.get(c)) is not None}

    # --------------------------------------------------------------------------------- reading

    def select(
        self,
        expr: Expression,
        rules: UseRules | None = None,
        on_corrupt: Literal["raise", "scan", "keep_all"] = "raise",
    ) -> RowSelection:
        """The candidate rows of each file for ``expr`` (see ``row_ids``): every index source that
        selects rows is asked (``index_store.sources``: the secondary indexes, and any registered)
        and their answers intersected. With ``rules`` the index is used only when they say it pays
        (otherwise every candidate file has all its rows).
        ``on_corrupt``: ``raise`` ``IndexCorruptError`` for an unreadable secondary index file or
        manifest, or ``scan`` (also spelled ``keep_all``, as in ``prune``) to treat the files
        concerned as having no index (all their rows)."""
        require_file_reads(self.reader, "selecting rows with the secondary index (select)")
        if on_corrupt not in ("raise", "scan", "keep_all"):
            raise ValueError(f"on_corrupt must be 'raise', 'scan' or 'keep_all', not {on_corrupt!r}")
        corrupt: list[IndexCorruptError] = []
        if on_corrupt != "raise":
            loaded = self._load()
            try:
                self.usable_manifest(loaded)
            except IndexCorruptError as exc:
                loaded.secondary.manifest = MANIFEST_SCHEMA.empty_table()  # as if none was built
                loaded.secondary.by_column.clear()
                loaded.secondary.facts.clear()
                loaded.secondary.covered.clear()
                loaded.secondary.manifest_error = exc
            if loaded.secondary.manifest_error is not None:
                corrupt.append(loaded.secondary.manifest_error)
        elif (error := self._load().secondary.manifest_error) is not None:
            raise error  # read past before, on_corrupt="scan"
        cand = self._candidates(expr, True)
        loaded = cand.loaded
        candidates = np.flatnonzero(cand.kept)
        rel_paths = loaded.paths.take(pa.array(candidates)).to_pylist() if len(candidates) else []
        changed = cand.changed[candidates]
        row_counts = loaded.files["row_count"].to_numpy()[candidates].copy()
        for j in np.flatnonzero(changed):
            # Rewritten since indexed: its rows are the ones on disk now, every one a candidate.
            row_counts[j] = _rows_of(os.path.join(self.root, rel_paths[j]))
        query = RowQuery(
            loaded,
            self.root,
            self.index_root,
            cand.bound,
            candidates,
            rel_paths,
            row_counts,
            changed,
            rules,
            on_corrupt,
            self,
            cand.whole[candidates],
            cand.total,
        )
        found = sourced_rows(query)
        # Files whose statistics prove every row matches: all rows, exactly (counted unread).
        whole = cand.whole[candidates]
        rows = list(found.rows)
        for j in np.flatnonzero(whole):
            rows[j] = FileRows(None, True)
        paths = self._abs_all(rel_paths)
        # Files on disk the index does not know: every row is a candidate.
        unknown = cand.unknown
        values = cand.partition_values
        return RowSelection(
            files=paths + [os.path.join(self.root, u) for u in unknown],
            row_counts=row_counts.tolist() + [_rows_of(os.path.join(self.root, u)) for u in unknown],
            rows=rows + [FileRows(None, False)] * len(unknown),
            use=found.use,
            total_files=cand.total,
            partition_values=(
                [values.get(p, {}) for p in rel_paths + unknown] if values else [{} for _ in paths + unknown]
            ),
            corrupt=tuple(dict.fromkeys([*(_scanned(exc) for exc in corrupt), *found.notes])),
            uses=found.uses,
        )

    def row_positions(self, query: RowQuery) -> RowAnswer:
        """The secondary indexes' answer for ``query`` (``SecondaryIndexSource``): each leaf on an
        indexed column looked up in each candidate's index file, when ``query.rules`` say it pays."""
        loaded, bound, candidates = query.loaded, query.bound, query.candidates
        planned = self._planned(loaded, bound)
        changed = np.asarray(query.changed, bool)
        live: dict[tuple[str, str], ColumnFacts] = {}
        has_file: dict[tuple[str, str], np.ndarray] = {}  # per candidate: a usable index file
        columns: dict[tuple[str, str], FileFacts] = {}
        n = query.row_counts.astype(np.float64)
        for p in {(p.kind, p.column) for p in planned.values()}:
            live[p] = self._column_facts(loaded, p)
            has_file[p] = live[p].has_file[candidates] & ~changed
            columns[p] = live[p].at(candidates, has_file[p], n)
        facts = {leaf: columns[(p.kind, p.column)] for leaf, p in planned.items()}
        absent = self._absent_keys(loaded, planned, candidates)
        key_schemas = self._key_schemas(loaded, planned)
        dict_notes: list[str] = []
        known = self._dictionary_counts(
            loaded, bound, planned, candidates, changed, key_schemas, query.on_corrupt, dict_notes
        )
        for leaf, counts in known.items():
            if isinstance(leaf, Predicate):
                # A file the dictionary says holds none of the leaf's keys: no row, no lookup.
                none = ~np.isnan(counts) & (counts == 0)
                absent[leaf] = none | absent[leaf] if leaf in absent else none
        if query.rules is not None and query.rules.purpose == "exists":
            _first_hit_only(bound, planned, known, absent)
        # Index files the lookups open: per leaf, candidates with one its blooms do not rule out.
        looked = [
            has_file[(p.kind, p.column)] & ~absent[leaf] if leaf in absent else has_file[(p.kind, p.column)]
            for leaf, p in planned.items()
        ]
        opened = max((int(m.sum()) for m in looked), default=0)
        lookups = (sum(int(m.sum()) for m in looked), sum(float(n[m].sum()) for m in looked))
        use, reconsider = _decide(bound, planned, facts, query, opened, lookups, absent, known)
        if not use.used and reconsider is None:
            return RowAnswer(None, use, tuple(dict_notes))
        cand = pa.array(candidates, pa.int64())
        index_files: dict[tuple[str, str], list[str | None]] = {
            p: pc.if_else(pa.array(has_file[p]), f.index_file.take(cand), None).to_pylist()
            for p, f in live.items()
        }
        sizes = loaded.files["size"].to_numpy()[candidates].tolist()
        mtimes = loaded.files["mtime"].combine_chunks().take(pa.array(candidates)).to_pylist()
        expected = list(zip(query.paths, sizes, mtimes, strict=True))
        corrupt: list[IndexCorruptError] = []
        selected = select_rows(
            bound,
            planned,
            range(len(candidates)),
            index_files,
            query.row_counts.tolist(),
            self.index_root,
            loaded.secondary.opened,
            key_schemas,
            query.on_corrupt,
            absent,
            expected,
            corrupt,
        )
        notes = tuple(dict_notes) + tuple(_scanned(exc) for exc in corrupt)
        if reconsider is not None:
            # The bound left the choice open and the lookups were cheap: now the rows are known.
            use = reconsider(
                [r.count if r.count is not None else int(c) for r, c in zip(selected, n, strict=True)]
            )
            if not use.used:
                return RowAnswer(None, use, notes)
        return RowAnswer(selected, use, notes)

    def _planned(self, loaded: LoadedVersion, bound: Expression) -> dict[Predicate, Any]:
        """The lookups of ``bound``'s leaves on columns with a usable index file somewhere."""
        definitions = loaded.secondary.definitions
        if definitions is None:
            usable = self.usable_manifest(loaded)
            pairs = usable.select(["index_type", "column"]).group_by(["index_type", "column"]).aggregate([])
            built = set(zip(pairs["index_type"].to_pylist(), pairs["column"].to_pylist(), strict=True))
            definitions = loaded.secondary.definitions = [
                IndexDefinition(d.name, columns, d.index_type)
                for d in loaded.snap.config.secondary_indexes
                if (columns := tuple(c for c in d.columns if (d.index_type, c) in built))
            ]
        return plan_lookups(bound, definitions)

    def _column_rows(self, loaded: LoadedVersion, key: tuple[str, str]) -> pa.Table:
        """The usable manifest's rows of one (index type, column)."""
        rows = loaded.secondary.by_column.get(key)
        if rows is None:
            usable = self.usable_manifest(loaded)
            rows = loaded.secondary.by_column[key] = usable.filter(
                pc.and_(pc.equal(usable["index_type"], key[0]), pc.equal(usable["column"], key[1]))
            )
        return rows

    def _live_rows(self, loaded: LoadedVersion, key: tuple[str, str]) -> pa.Table:
        """``_column_rows`` aligned with the version's live files: row i is live file i's (all
        null where it has no usable index file)."""
        rows = self._column_rows(loaded, key)
        return rows.take(pc.index_in(pa.array(loaded.file_idx, pa.int64()), value_set=rows["file_idx"]))

    def _column_facts(self, loaded: LoadedVersion, key: tuple[str, str]) -> ColumnFacts:
        """The usable manifest's facts of one (index type, column) aligned with the version's live
        files, worked out once per version (and again once column statistics are loaded)."""
        stats = loaded.columns.get(key[1]) if key[0] == "value" else None
        cached = loaded.secondary.facts.get(key)
        if cached is not None and cached.stats is stats:
            return cached
        mine = self._live_rows(loaded, key)

        def counts(name: str) -> np.ndarray:
            return pc.fill_null(mine[name], 0).to_numpy(zero_copy_only=False).astype(np.float64)

        found = integer_bounds(stats.min, stats.max) if stats is not None else None
        made = ColumnFacts(
            key[0],
            pc.is_valid(mine["file_idx"]).to_numpy(zero_copy_only=False),
            mine["index_file"].combine_chunks(),
            counts("row_count"),
            counts("distinct"),
            counts("null_rows"),
            counts("pairs"),
            counts("max_rows"),
            found[0] if found is not None else None,
            found[1] if found is not None else None,
            stats,
        )
        loaded.secondary.facts[key] = made
        return made

    @staticmethod
    def _key_schemas(
        loaded: LoadedVersion, planned: Mapping[Predicate, Any]
    ) -> dict[tuple[str, str], pa.Schema]:
        """Per (index type, column) of ``planned``: the schema its keys bind to (once per version)."""
        known = loaded.secondary.key_schemas
        for p in planned.values():
            if (p.kind, p.column) not in known:
                t = index_kind(p.kind).key_type(loaded.snap.schema.field(p.column).type)
                known[(p.kind, p.column)] = pa.schema([pa.field(p.column, t)])
        return {(p.kind, p.column): known[(p.kind, p.column)] for p in planned.values()}

    def _dictionaries(
        self, loaded: LoadedVersion, on_corrupt: str, notes: list[str]
    ) -> dict[tuple[str, str], Dictionary]:
        """The version's global term dictionaries (read once); an unreadable one raises
        ``IndexCorruptError``, or with ``on_corrupt`` other than ``raise`` is read past (noted)."""
        cached = loaded.secondary.dictionaries
        if cached is None:
            try:
                cached = load_dictionaries(self.index_root, loaded.snap.live.get(DICTIONARY, ()))
            except IndexCorruptError as exc:
                if on_corrupt == "raise":
                    raise
                notes.append(_scanned_dictionary(exc))
                return {}
            loaded.secondary.dictionaries = cached
        return cached

    def _covered(
        self, loaded: LoadedVersion, column: tuple[str, str], d: Dictionary, candidates: np.ndarray
    ) -> np.ndarray:
        """Per candidate (positions into ``loaded``'s files): does ``d`` answer for its index file?
        Worked out for every live file once per version (and dictionary), then indexed."""
        last = loaded.secondary.covered.get(column)
        if last is None or last[0] is not d:
            mine = self._live_rows(loaded, column)
            last = loaded.secondary.covered[column] = (d, d.covers(mine["file_idx"], mine["version"]))
        found: np.ndarray = last[1][candidates]
        return found

    def _dictionary_counts(
        self,
        loaded: LoadedVersion,
        bound: Expression,
        planned: Mapping[Predicate, Any],
        candidates: np.ndarray,
        changed: np.ndarray,
        key_schemas: Mapping[tuple[str, str], pa.Schema],
        on_corrupt: str,
        notes: list[str],
        only: Predicate | tuple[Predicate, ...] | None = None,
    ) -> dict[Predicate | tuple[Predicate, ...], np.ndarray]:
        """Per leaf (and per group of ranges ANDed on one column, ``range_groups``) on a column
        with a dictionary: the rows of each candidate holding a key it selects, one lookup for
        all candidates; NaN where the dictionary does not answer for the candidate (not covered:
        no usable index file, changed on disk, or indexed after the dictionary was written).
        A leaf within such a group is not looked up alone (half a range selects half the keys:
        a long read, and a loose count); ``only``: that one key alone."""
        dicts = self._dictionaries(loaded, on_corrupt, notes) if planned else {}
        if not dicts:
            return {}
        file_idx = loaded.file_idx[candidates]
        covered: dict[tuple[str, str], np.ndarray] = {}
        out: dict[Predicate | tuple[Predicate, ...], np.ndarray] = {}

        def look(key: Predicate | tuple[Predicate, ...], column: tuple[str, str], keys: Expression) -> None:
            d = dicts[column]
            if column not in covered:
                covered[column] = self._covered(loaded, column, d, candidates) & ~np.asarray(changed, bool)
            bound_keys = keys if keys.is_bound else keys.bind(key_schemas[column])
            try:
                found = d.lookup(bound_keys, file_idx, covered[column])
            except IndexCorruptError as exc:
                if on_corrupt == "raise":
                    raise
                notes.append(_scanned_dictionary(exc))
                return
            out[key] = np.where(found.covered, found.rows, np.nan)

        groups = range_groups(bound)
        grouped = {leaf for g in groups for leaf in g}
        for leaf, p in planned.items():
            if (p.kind, p.column) in dicts and leaf not in grouped and only in (None, leaf):
                look(leaf, (p.kind, p.column), p.lookup.keys)
        for group in groups:
            if only not in (None, group):
                continue
            if not all(leaf in planned and planned[leaf].kind == "value" for leaf in group):
                continue
            ps = [planned[leaf] for leaf in group]
            column = (ps[0].kind, ps[0].column)
            if column in dicts and all((p.kind, p.column) == column for p in ps):
                look(group, column, And(*(p.lookup.keys for p in ps)))
        return out

    def _absent_keys(
        self, loaded: LoadedVersion, planned: Mapping[Predicate, Any], candidates: np.ndarray
    ) -> dict[Predicate, np.ndarray]:
        """Per leaf looked up by equal keys in an index type whose blooms ``stats`` does not apply
        (a term index): per candidate, True where the file's bloom proves no key is there."""
        out = {}
        for leaf, p in planned.items():
            keys = p.lookup.keys
            if p.kind == "value" or keys.op not in ("eq", "in"):
                continue
            blooms = self.bloom_filters(loaded, [p.column], p.kind).get(p.column)
            if blooms is None:
                continue
            values = pa.array([keys.args[1]], pa.string()) if keys.op == "eq" else pa.array(keys.args[1])
            out[leaf] = ~blooms.take(candidates).might_contain_any(values, type=pa.string())
        return out

    def row_ids(self, expr: Expression) -> dict[str, pa.Array]:
        """RFC-51's ``getRowIdSet``: ``{file: uint64 row positions}`` of the rows that may match
        ``expr`` (exactly the matching rows where every leaf is indexed; a superset otherwise).
        Files with no candidate row are left out; files without a usable index file have all rows."""
        require_file_reads(self.reader, "row ids from the secondary index (row_ids)")
        return self.select(expr).row_ids()

    def read(
        self,
        expr: Expression,
        columns: Sequence[str] | None = None,
        rules: UseRules | None = None,
    ) -> pa.Table:
        """The rows where ``expr`` is TRUE, reading only the row groups that hold selected rows
        (when the index pays, by ``rules``; otherwise whole candidate files)."""
        require_file_reads(self.reader, "reading rows (read)")
        if rules is None:
            rules = self.rules_for("rows", expr, columns)
        selection = self.select(expr, rules)
        return self._read_selection(selection, expr, columns)

    def rules_for(self, purpose: Purpose, expr: Expression, columns: Sequence[str] | None = ()) -> UseRules:
        """The rules ``read`` (``purpose="rows"``), ``count`` and ``exists`` use: the cheapest path by
        cost, priced for the reader that would read (``row_reader()``) and the columns read."""
        width = self._width(expr, columns, extra=purpose == "rows")
        return UseRules(purpose=purpose, columns=width, reader=row_reader().name)

    def _width(self, expr: Expression, columns: Sequence[str] | None, extra: bool = True) -> int:
        """How many columns a read of ``expr``'s rows decodes: ``columns`` (None: every one) and
        the columns the predicate needs (only those when ``extra`` is False: a count)."""
        schema = self._load().snap.schema
        refs = _top_fields(schema, expr.bind(schema).references())
        wanted = list(schema.names) if columns is None else list(columns)
        return len(dict.fromkeys((wanted if extra else []) + refs)) or 1

    def _read_selection(
        self, selection: RowSelection, expr: Expression, columns: Sequence[str] | None
    ) -> pa.Table:
        schema = self._load().snap.schema
        wanted = list(schema.names) if columns is None else list(columns)
        for c in wanted:
            if c not in schema.names:
                raise IndexDefinitionError(
                    f"no column {c!r} in the table (columns: {', '.join(schema.names)})"
                )
        bound = expr.bind(schema)
        needed = list(dict.fromkeys(wanted + _top_fields(schema, bound.references())))
        out_schema = pa.schema([schema.field(c) for c in wanted])
        jobs = read_jobs(selection)
        if not jobs:
            return out_schema.empty_table()
        table, _ = row_reader().read(jobs, needed, schema, bound)
        table = table.select(wanted)
        return table if table.schema.equals(out_schema) else table.cast(out_schema)

    def count(self, expr: Expression) -> int:
        """Rows where ``expr`` is TRUE: from the index alone for files whose selection is exact (and
        from row counts where statistics prove every row matches), reading only the others."""
        require_file_reads(self.reader, "counting rows (count)")
        counted = self.dictionary_count(expr)
        if counted is not None:
            return counted
        selection = self.select(expr, self.rules_for("count", expr))
        total = 0
        rest = []
        for i, rows in enumerate(selection.rows):
            if rows.exact:
                total += selection.row_counts[i] if rows.mask is None else int(rows.mask.sum())
            else:
                rest.append(i)
        if rest:
            total += self._count_reading(selection, expr, rest)
        return total

    def exists(self, expr: Expression) -> bool:
        """Is there a row where ``expr`` is TRUE? From the index alone when an exact selection has one."""
        require_file_reads(self.reader, "testing whether a row exists (exists)")
        counted = self.dictionary_count(expr)
        if counted is not None:
            return counted > 0
        selection = self.select(expr, self.rules_for("exists", expr))
        if any(
            r.exact and _maybe_rows(r, n) for r, n in zip(selection.rows, selection.row_counts, strict=True)
        ):
            return True
        rest = [
            i for i, r in enumerate(selection.rows) if not r.exact and _maybe_rows(r, selection.row_counts[i])
        ]
        # Files a few at a time, more each round: a match in the first files stops the reading.
        start, step = 0, 4
        while start < len(rest):
            if self._count_reading(selection, expr, rest[start : start + step]):
                return True
            start, step = start + step, step * 2
        return False

    def explain(self, expr: Expression, what: Asked = "read", columns: Sequence[str] | None = None) -> str:
        """How ``read`` (with ``columns``), ``count`` or ``exists`` of ``expr`` would be answered,
        without reading any row: from the dictionary alone, or the selection the cost model
        chose (its estimates, costs and choice, and how many rows a read decodes)."""
        what = asked_of(what)
        if what != "read":
            found = self.dictionary_rows(expr)
            if found is not None:
                return (
                    f"{what} answered by the secondary index's dictionary (one lookup): {found.rows:,} "
                    f"matching rows in {len(found.files)} of {found.total} files; no index file or "
                    "data file read"
                )
        purpose: Purpose = "rows" if what == "read" else what
        return self.select(expr, self.rules_for(purpose, expr, columns if what == "read" else [])).explain()

    def dictionary_count(self, expr: Expression) -> int | None:
        """The rows where ``expr`` is TRUE from one dictionary lookup, no index file or data file
        read: when ``expr`` is one exactly indexed leaf (or one range on an indexed column) and
        the dictionary answers for every candidate file; None otherwise (ask ``select``)."""
        found = self._dictionary_lookup(expr)
        return None if found is None else int(found[2].sum())

    def dictionary_rows(self, expr: Expression) -> DictionaryRows | None:
        """``dictionary_count``'s answer with the files holding the matching rows (absolute paths,
        index order): an EXISTS reads one of them instead of looking every candidate up."""
        found = self._dictionary_lookup(expr)
        if found is None:
            return None
        cand, candidates, counts = found
        holding = candidates[counts > 0]
        rels = cand.loaded.paths.take(pa.array(holding)).to_pylist() if len(holding) else []
        return DictionaryRows(int(counts.sum()), tuple(self._abs_all(rels)), cand.total)

    def _dictionary_lookup(self, expr: Expression) -> tuple[Candidates, np.ndarray, np.ndarray] | None:
        """The pruning asked, its candidate files (positions into its loaded version) and the rows
        of each where ``expr`` is TRUE, from the dictionary alone; None where it cannot answer."""
        # Every live file first: the lookup is exact, and pruning by statistics and blooms costs
        # more than it (1-2 ms against 0.5). Pruning helps only where the dictionary misses a file.
        cand = self._candidates(expr, False)
        if not cand.loaded.snap.live.get(DICTIONARY):
            return None
        found = self._dictionary_rows(cand)
        if found is _UNCOVERED:
            cand = self._candidates(expr, True)
            found = self._dictionary_rows(cand)
        return None if found is None or found is _UNCOVERED else (cand, *found)

    def _dictionary_rows(self, cand: Candidates) -> tuple[np.ndarray, np.ndarray] | _Uncovered | None:
        """``_dictionary_lookup`` over ``cand``'s kept files; ``_UNCOVERED`` when a kept file is
        one the dictionary does not answer for (pruning may rule it out)."""
        loaded = cand.loaded
        key = _whole_key(cand.bound)
        if key is None or cand.unknown:
            return None
        candidates = np.flatnonzero(cand.kept)
        changed = cand.changed[candidates]
        if changed.any():
            return None
        whole = cand.whole[candidates]
        if whole.all():  # statistics prove every row of every candidate matches
            return candidates, loaded.file_rows[candidates].astype(np.float64)
        planned = self._planned(loaded, cand.bound)
        leaves = [key] if isinstance(key, Predicate) else list(key)
        if not all(leaf in planned and planned[leaf].lookup.exact for leaf in leaves):
            return None
        known = self._dictionary_counts(
            loaded,
            cand.bound,
            planned,
            candidates,
            changed,
            self._key_schemas(loaded, planned),
            "raise",
            [],
            only=key,
        )
        counts = known.get(key)
        if counts is None:
            return None
        if whole.any():
            counts = np.where(whole, loaded.file_rows[candidates], counts)
        if np.isnan(counts).any():
            return _UNCOVERED
        return candidates, counts

    def _count_reading(self, selection: RowSelection, expr: Expression, which: list[int]) -> int:
        schema = self._load().snap.schema
        bound = expr.bind(schema)
        needed = list(dict.fromkeys(_top_fields(schema, bound.references()))) or [schema.names[0]]
        sub = RowSelection(
            [selection.files[i] for i in which],
            [selection.row_counts[i] for i in which],
            [dataclasses.replace(selection.rows[i], exact=False) for i in which],
            selection.use,
            selection.total_files,
            [selection.partition_values[i] for i in which],
        )
        return len(self._read_selection(sub, expr, needed))


def _scanned_dictionary(exc: IndexCorruptError) -> str:
    """What reading past an unreadable dictionary did, and how to repair it, in one line."""
    return (
        f"secondary index dictionary {exc.path} is corrupt ({exc.reason}): each index file was "
        "looked up instead; rebuild it: hudi-index index build TABLE --all "
        "(Python: IndexedTable.build_index(strategy='all'))"
    )


def _whole_key(bound: Expression) -> Predicate | tuple[Predicate, ...] | None:
    """The dictionary key whose counts are exactly ``bound``'s: a leaf, or one range group."""
    if isinstance(bound, Predicate):
        return bound
    if isinstance(bound, And):
        operands = conjuncts(bound)
        groups = range_groups(bound)
        if len(groups) == 1 and len(groups[0]) == len(operands):
            return groups[0]
    return None


def _first_hit_only(
    bound: Expression,
    planned: Mapping[Predicate, Any],
    known: Mapping[Predicate | tuple[Predicate, ...], np.ndarray],
    absent: dict[Predicate, np.ndarray],
) -> None:
    """For an EXISTS whose predicate the dictionary counts exactly on every candidate: look up
    only the first file holding a match (the others answer "no row"; the answer is the same)."""
    key = _whole_key(bound)
    counts = known.get(key) if key is not None else None
    if key is None or counts is None or np.isnan(counts).any():
        return
    leaves = [key] if isinstance(key, Predicate) else list(key)
    if not all(planned[leaf].lookup.exact for leaf in leaves):
        return
    hits = np.flatnonzero(counts > 0)
    others = np.ones(len(counts), dtype=bool)
    if len(hits):
        others[hits[0]] = False
    for leaf in leaves:
        absent[leaf] = others


def _scanned(exc: IndexCorruptError) -> str:
    """What reading past an unreadable index file did, and how to repair it, in one line."""
    return (
        f"secondary index file {exc.path} is corrupt ({exc.reason}): every row of the files it "
        "indexes was read instead; rebuild it: hudi-index index build TABLE --all "
        "(Python: IndexedTable.build_index(strategy='all'))"
    )


def _top_fields(schema: pa.Schema, columns: Iterable[str]) -> list[str]:
    """The top-level fields holding ``columns`` (a column named ``"a.b"`` is its own field)."""
    return [top_field(schema, c) or c for c in columns]


def _under_instant(rel: str, version: int) -> str:
    """``<type>/<instant>/<file id>/<name>`` with the instant replaced by ``version``."""
    kind, _, rest = rel.split("/", 2)
    return f"{kind}/{version:020d}/{rest}"


def _rows_of(path: str) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


@dataclass(frozen=True)
class ColumnFacts:
    """What the usable manifest and the column statistics say about one indexed column of each
    live file of a version (float arrays; 0 where a file has no usable index file), kept per
    version: a query's ``FileFacts`` are its candidates' rows of them."""

    kind: str
    has_file: np.ndarray  # per live file: a usable index file (built for it as it is now)
    index_file: pa.Array  # its path under the index root, null where none
    rows: np.ndarray
    distinct: np.ndarray
    null_rows: np.ndarray
    pairs: np.ndarray
    max_rows: np.ndarray
    low: np.ndarray | None  # the column's per-file min/max as integers (None: not known as such)
    high: np.ndarray | None
    stats: ColumnStats | None  # the statistics ``low``/``high`` came from

    def at(self, candidates: np.ndarray, indexed: np.ndarray, n: np.ndarray) -> FileFacts:
        """The candidates' facts; ``indexed``: those whose index file answers (not changed on
        disk), ``n`` their row counts (a changed file's as on disk now)."""
        return FileFacts(
            self.kind,
            np.where(indexed, self.rows[candidates], n),
            self.distinct[candidates],
            self.null_rows[candidates],
            self.pairs[candidates],
            self.max_rows[candidates],
            indexed,
            self.low[candidates] if self.low is not None else None,
            self.high[candidates] if self.high is not None else None,
        )


def _decide(
    bound: Expression,
    planned: Mapping[Predicate, Any],
    facts: Mapping[Predicate, FileFacts],
    query: RowQuery,
    opened: int = 0,
    lookups: tuple[int, float] = (0, 0.0),
    absent: Mapping[Predicate, np.ndarray] | None = None,
    known: Known | None = None,
) -> tuple[IndexUse, Reconsider | None]:
    """Whether the index is used: RFC-51's rule on the number of indexed leaves, then by cost.
    When the bound says no but the expected count says yes and the lookups cost at most
    ``PROBE_SHARE`` of the read, also a second opinion to ask once the lookups' exact counts are
    known (``Reconsider``): the bound on selected rows may be loose."""
    rules = query.rules
    candidate_rows = int(query.row_counts.sum())
    named = {str(leaf): p.kind for leaf, p in planned.items()}
    n = len(planned)
    if not n:
        return IndexUse(False, "no predicate on an indexed column", 0, None, candidate_rows, named), None
    if rules is None:
        return IndexUse(True, f"{n} indexed predicate(s) looked up", n, None, candidate_rows, named), None
    if n > rules.max_predicates:
        return IndexUse(
            False,
            f"{n} indexed predicates, more than {rules.max_predicates}: too many lookups to pay",
            n,
            None,
            candidate_rows,
            named,
        ), None
    if rules.max_index_files is not None and opened > rules.max_index_files:
        return IndexUse(
            False,
            f"lookups would open {opened:,} index files, more than {rules.max_index_files}: scanning "
            "the candidate files instead",
            n,
            None,
            candidate_rows,
            named,
        ), None
    upper, expected = bounds(bound, facts, query.row_counts, absent, known)
    leaves = list(bound.leaves())
    exact = all(leaf in planned and planned[leaf].lookup.exact for leaf in leaves)
    schema = query.loaded.snap.schema
    work = Work(
        rules.purpose,
        query.row_counts,
        query.whole if query.whole is not None else np.zeros(len(query.candidates), dtype=bool),
        rules.columns if rules.columns is not None else len(schema.names),
        len(bound.references()),
        sum(1 for leaf in leaves if leaf.op in _TEXT_OPS),
        max(query.total_files, len(query.candidates)),
        max(int(pc.sum(query.loaded.row_count).as_py() or 0), candidate_rows),
    )
    costs = rules.costs or costs_for(rules.reader)
    choice = choose(costs, work, upper, expected, lookups[0], lookups[1], exact)
    said = f"at most {choice.selected_upper:,.0f} of {candidate_rows:,} candidate rows match"
    if not rules.by_cost:
        reason = f"{said} (used whatever it costs)"
        return IndexUse(True, reason, n, choice.selected_upper, candidate_rows, named, choice=choice), None
    if choice.path == "index":
        reason = f"{said} ({n} indexed predicate(s)): the index is cheaper"
        return IndexUse(True, reason, n, choice.selected_upper, candidate_rows, named, choice=choice), None
    alone = "a plain scan" if choice.path == "scan" else "pruning by statistics and blooms alone"
    reason = f"{said}: {alone} is cheaper"
    refused = IndexUse(False, reason, n, choice.selected_upper, candidate_rows, named, choice=choice)
    # Where the bound is the expected count (the dictionary counted every candidate) the second
    # opinion is the first.
    same = np.array_equal(upper, expected)
    hopeful = choice if same else choose(costs, work, expected, expected, lookups[0], lookups[1], exact)
    if hopeful.path != "index" or choice.lookup_ms > PROBE_SHARE * choice.pruning_ms:
        return refused, None  # not even the expected count would choose the index

    def reconsider(counts: Sequence[int]) -> IndexUse:
        found = np.asarray(counts, dtype=np.float64)
        second = choose(costs, work, found, found, 0, 0.0, exact)  # the lookups are done
        used = second.path == "index"
        path = "index" if used else choice.path
        second = dataclasses.replace(
            second, path=path, index_ms=second.index_ms + choice.lookup_ms, lookup_ms=choice.lookup_ms
        )
        looked = f"looked up ({choice.lookup_ms:,.1f} ms estimated): {found.sum():,.0f} rows selected"
        if used:
            reason = f"{looked}: reading them is cheaper (a bound of {choice.selected_upper:,.0f} was not)"
        else:
            reason = f"{looked}: {alone} is still cheaper"
        return IndexUse(used, reason, n, float(found.sum()), candidate_rows, named, choice=second)

    return refused, reconsider


# Lookups that cost at most this share of reading the candidates are made when the bound alone
# does not choose the index: the exact counts they give may (at most this much slower otherwise).
PROBE_SHARE = 0.25
Reconsider = Callable[[Sequence[int]], IndexUse]


# Leaves whose per-row test tokenizes text (a regex over words), priced as ``Costs.text_value``.
_TEXT_OPS = frozenset({"contains_term", "not_contains_term"})


def _meta_commit(snap: Snapshot, operation: Operation, config: IndexConfig, **changes: Any) -> Commit:
    return Commit(
        version=snap.version + 1,
        operation=operation,
        added=changes.get("added", {}),
        removed=changes.get("removed", {}),
        schema=snap.schema,
        next_file_idx=snap.next_file_idx,
        table_instant=snap.table_instant,
        config=config,
    )


def _manifest_commit(
    root: Path,
    snap: Snapshot,
    operation: Operation,
    config: IndexConfig,
    rows: pa.Table,
    fresh: Mapping[tuple[str, str], pa.Table] | None = None,
    fresh_idx: Mapping[tuple[str, str], np.ndarray] | None = None,
    replace_all: bool = False,
) -> Commit:
    """A commit whose manifest is ``rows``: index files it no longer names stop being live. The
    dictionaries follow (``dictionary_changes``): ``fresh`` entries of the base files ``fresh_idx``
    just indexed; ``replace_all``: the old dictionaries are retired unread (a full rebuild)."""
    old_files = {k: set(v) for k, v in snap.live.items() if k not in (MANIFEST,) and _is_kind(k)}
    new_files = files_by_type(rows)
    added: dict[str, list[str]] = {MANIFEST: [write_manifest(root, rows)]} if len(rows) else {}
    removed: dict[str, list[str]] = {MANIFEST: list(snap.live.get(MANIFEST, ()))}
    old_dicts = list(snap.live.get(DICTIONARY, ()))
    dict_added, dict_removed = dictionary_changes(
        root, [] if replace_all else old_dicts, rows, fresh or {}, fresh_idx or {}
    )
    if replace_all:
        dict_removed = old_dicts
    if dict_added:
        added[DICTIONARY] = dict_added
    if dict_removed:
        removed[DICTIONARY] = dict_removed
    for kind in set(old_files) | set(new_files):
        before, after = old_files.get(kind, set()), set(new_files.get(kind, ()))
        if after - before:
            added[kind] = sorted(after - before)
        if before - after:
            removed[kind] = sorted(before - after)
    return _meta_commit(snap, operation, config, added=added, removed=removed)


def _is_kind(name: str) -> bool:
    try:
        index_kind(name)
        return True
    except ValueError:
        return False


def _check_still_live(table: SecondaryIndexes, snap: Snapshot, built: pa.Table) -> None:
    """After losing a race: the base files we indexed must still be live (else retry the build)."""
    live = table._live_file_idx(snap)
    gone = pc.invert(pc.is_in(built["file_idx"], value_set=pa.array(live, pa.int64())))
    if pc.any(gone).as_py():
        raise CommitConflictError(
            "a concurrent commit replaced base files while their secondary index was built: "
            "run build_index again"
        )
