"""Typed errors of the metadata index, each with a message a user can act on."""

from __future__ import annotations

from hudi_expr.errors import HudiExprError


class IndexStoreError(HudiExprError):
    """Base class of every error raised by ``index_store``."""


class IndexCorruptError(IndexStoreError):
    """An index file (parquet partition file or timeline entry) is unreadable or inconsistent."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"index file {path} is corrupt: {reason}. Rebuild the index: hudi-index build --rebuild "
            "TABLE (Python: IndexedTable.build(rebuild=True)); until then hudi-index prune "
            "--keep-all-on-corrupt (Python: prune(..., on_corrupt='keep_all')) reads every file."
        )
        self.path = path
        self.reason = reason


class CommitConflictError(IndexStoreError):
    """Another writer committed a conflicting change to the index first."""


class UnsupportedTableError(IndexStoreError):
    """The table is of a kind this library does not read (yet), e.g. a Delta Lake table."""


class MergedReadError(UnsupportedTableError):
    """An operation would read a merge-on-read table's rows (or tag its keys) file by file, which
    gives wrong rows: a file slice's rows are its base file merged with its log files."""

    def __init__(self, root: str, action: str) -> None:
        super().__init__(
            f"{action} is not supported on merge-on-read table {root} yet: its rows are base files "
            "merged with log files of updates and deletes, and this would read its files one by one, "
            "which gives wrong rows. Its merged rows are read by IndexedTable.read, "
            "adapters.duckdb.register (sql, execute, hudi-index query) and adapters.spark.read; the "
            "index works on it: build, update, sync, prune (hudi-index prune/files), explain, stats."
        )
        self.root = root
        self.action = action


class TableFormatError(IndexStoreError):
    """The table's own metadata (e.g. Hudi's .hoodie) is missing or malformed."""


class NotATableError(TableFormatError, ValueError):
    """The path is a folder but no table: no parquet data file (not even an empty one, a write in
    progress) and no Hudi table, yet other files (a typo'd path, a folder of CSV files). An empty
    table is a folder with no files at all, or a Hudi table with no data commit."""

    def __init__(self, root: str, found: list[str]) -> None:
        shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
        super().__init__(
            f"{root} is not a table: it holds no parquet data file and no Hudi table "
            f"(.hoodie/hoodie.properties), only other files ({shown}); check the path (an empty "
            "table is a folder with no files at all)"
        )
        self.root = root
        self.found = found


class IndexNotBuiltError(IndexStoreError, ValueError):
    """The table has no index yet: it must be built before it can prune or be updated."""

    def __init__(self, table: str) -> None:
        super().__init__(f"{table} has no index yet: run build first (hudi-index build {table})")
        self.table = table


def require_built(version: int, table: str) -> None:
    """``IndexNotBuiltError`` unless the index has a version (the one check every reader and
    writer of a built index makes first)."""
    if not version:
        raise IndexNotBuiltError(table)


class IndexNotWritableError(IndexStoreError, PermissionError):
    """The index folder cannot be written (a read-only table, or no permission)."""

    def __init__(self, index_root: str, reason: str) -> None:
        super().__init__(
            f"cannot write the index at {index_root} ({reason}): keep it elsewhere with --index-path "
            "DIR (Python: open_table(table, index_path=DIR))"
        )
        self.index_root = index_root


class RecordKeyError(IndexStoreError, ValueError):
    """Record keys given for tagging (or found in a table) that cannot be used: a key column
    missing or of an unsupported type, null keys, no key configured for the table."""


class PartitionPathError(RecordKeyError):
    """A partition value given for tagging that maps to no partition path of the table: the wrong
    number of levels, a ``k=v`` level with another key than the table's, or an empty level. Tagging
    such a key in a partition of its own would call a present key an insert."""


class IndexStaleError(IndexStoreError):
    """The table changed since the index was last synced, and the operation needs it current
    (tagging: a key in an unindexed file would be reported as an insert)."""

    def __init__(self, table: str, reason: str) -> None:
        super().__init__(
            f"the index of {table} is stale ({reason}): run hudi-index sync {table} "
            "(Python: IndexedTable.sync(), or tag(..., sync=True))"
        )
        self.table = table
        self.reason = reason


class DuplicateKeyError(IndexStoreError):
    """A record key is in more than one live data file: the table breaks its own key uniqueness,
    so no single file can be named as the key's location."""


class IndexDefinitionError(IndexStoreError, ValueError):
    """A secondary index definition that cannot be made or used: a column that does not exist or
    of a type the index type cannot index, a name taken or unknown."""


class LogFormatError(TableFormatError):
    """A Hudi log file (``.<fileId>_<instant>.log.<version>_<token>``) or one of its blocks that
    cannot be read: a block whose content does not decode, a data or delete block without its
    ``INSTANT_TIME``, ordering values of types that do not mix. Truncated and corrupt blocks are
    not errors: the reader reports them as corrupt blocks and skips them, as Hudi does."""

    def __init__(self, path: str, offset: int | None, reason: str) -> None:
        where = path or "(bytes not read from a file)"
        at = "" if offset is None else f", block at byte {offset}"
        super().__init__(f"Hudi log file {where}{at}: {reason}")
        self.path = path
        self.offset = offset
        self.reason = reason


class UnsupportedLogBlockError(LogFormatError):
    """A log block that counts for a read but is of a kind this library does not decode (yet):
    HFile data blocks (Hudi's metadata table), CDC blocks, delete blocks of versions 1 and 2
    (Java-serialized keys), a block type or command unknown here."""


class HFileError(TableFormatError):
    """An HFile (the base files of Hudi's metadata table, ``.hoodie/metadata``, and the content of
    its log files' HFile data blocks) that cannot be read."""

    def __init__(self, path: str, reason: str) -> None:
        where = path or "(bytes not read from a file)"
        super().__init__(f"HFile {where}: {reason}")
        self.path = path
        self.reason = reason


class HFileCorruptError(HFileError):
    """An HFile that is truncated or damaged: a trailer or block magic that is not there, lengths
    that run past the file, a block that does not decompress. Never read as if it were whole."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            path,
            f"{reason}; the file is truncated or damaged: restore it, or rebuild Hudi's metadata table "
            "(hudi-cli: metadata delete, then metadata create) so it is rewritten",
        )


class UnsupportedHFileError(HFileError):
    """A well-formed HFile of a kind this library does not read: a major version other than 3, a
    compression codec it has no decompressor for, cells with MVCC timestamps."""


class IndexSourceError(IndexStoreError, ValueError):
    """The list of index sources (``index_store.sources``) cannot do what is asked: a name taken
    twice, or no source left that answers a question (one of the built-in ones unregistered)."""


class MergedReaderMissingError(IndexStoreError, ImportError):
    """Reading a merge-on-read table's rows needs hudi-rs (the Python package ``hudi``), the Hudi
    project's own reader, which merges each file slice's log files onto its base file; it is an
    optional dependency (the ``hudi`` extra)."""

    def __init__(self, root: str, reason: str) -> None:
        super().__init__(
            f"reading the rows of merge-on-read table {root} needs hudi-rs, the Python package 'hudi' "
            f"({reason}): install it with pip install 'hudi-index[hudi]' (or pip install 'hudi>=0.5,<0.6'). "
            "Pruning and the index work without it; so does query_type='read_optimized' (base files only)."
        )
        self.root = root


class MetadataTableError(TableFormatError):
    """Hudi's metadata table (``.hoodie/metadata``) cannot be read as Hudi reads it: no metadata
    table, a record that does not decode against ``HoodieMetadata.avsc``, an entry that
    contradicts the table's own listing (a record index entry pointing at a replaced file group)."""


class MetadataPartitionUnavailableError(MetadataTableError):
    """A metadata table partition that is not there to read: not built
    (``hoodie.table.metadata.partitions``) or still being built
    (``hoodie.table.metadata.partitions.inflight``). Hudi itself does not read such a partition."""

    def __init__(self, table: str, partition: str, reason: str) -> None:
        super().__init__(
            f"the metadata table of {table} has no usable {partition!r} partition ({reason}): use the "
            "data table's own files (hudi-index build), or let Hudi finish building the partition"
        )
        self.table = table
        self.partition = partition
        self.reason = reason


class MetadataOutOfStepError(MetadataTableError):
    """The metadata table does not reflect the data table's latest completed commit (a writer with
    the metadata table disabled, a failed metadata update): its listing and indexes would miss
    files, so they are not used."""

    def __init__(self, table: str, reason: str) -> None:
        super().__init__(
            f"the metadata table of {table} is out of step with its data table ({reason}): read the "
            "data table's own listing (hudi-index build), or let a Hudi writer re-sync the metadata table"
        )
        self.table = table
        self.reason = reason
