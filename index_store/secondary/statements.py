"""SQL statements for secondary indexes (Hudi RFC-51's SQL layer), for any engine's SQL entry point.

``parse_statement`` recognizes::

    CREATE INDEX [name] ON [TABLE] table (column, ...) [USING value|term]
    DROP INDEX name ON [TABLE] table
    SHOW INDEXES ON|FROM [TABLE] table            (also SHOW INDEX)
    REFRESH INDEX name ON [TABLE] table [FULL]

and returns None for any other text, which the caller runs as ordinary SQL. ``run_statement`` runs
one on the ``IndexedTable`` the caller's callback opens for the table name (a registered view for
DuckDB, a path for the command line) and answers a pyarrow table, as a query would.

Keywords are case-insensitive; names may be double-quoted (``"my col"``, ``""`` for a quote); a
table may also be a single-quoted string or a bare word such as a path; ``--`` and ``/* */``
comments, whitespace and newlines may appear between tokens; one trailing ``;`` is allowed. Hudi's
order ``USING type (column, ...)`` is accepted too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import pyarrow as pa

from hudi_expr.stats import leaf_columns
from index_store import IndexedTable, IndexStatus
from index_store.secondary.definitions import default_index_name
from index_store.secondary.kinds import index_kind, kinds

__all__ = [
    "CREATE_RESULT",
    "DROP_RESULT",
    "REFRESH_RESULT",
    "SHOW_RESULT",
    "SYNTAX",
    "CreateIndex",
    "DropIndex",
    "IndexStatement",
    "RefreshIndex",
    "ShowIndexes",
    "StatementError",
    "parse_statement",
    "run_statement",
]

SYNTAX = {
    "CREATE INDEX": "CREATE INDEX name ON table (column, ...) [USING value|term]",
    "DROP INDEX": "DROP INDEX name ON table",
    "SHOW INDEXES": "SHOW INDEXES ON table",
    "REFRESH INDEX": "REFRESH INDEX name ON table [FULL]",
}


class StatementError(ValueError):
    """An index statement that starts like one but is malformed: says what is wrong, where, and the
    statement's syntax."""

    def __init__(self, message: str, position: int | None = None, syntax: str | None = None) -> None:
        super().__init__(message + (f"; syntax: {syntax}" if syntax else ""))
        self.position = position  # offset in the text, when the error is at one token
        self.syntax = syntax


# ------------------------------------------------------------------------------------ statements


@dataclass(frozen=True)
class CreateIndex:
    """``CREATE INDEX``: record a definition (its index files are built by ``REFRESH INDEX``)."""

    name: str | None  # None: the default name, idx_<type>_<columns>
    table: str
    columns: tuple[str, ...]
    index_type: str = "value"


@dataclass(frozen=True)
class DropIndex:
    """``DROP INDEX``: forget a definition; its index files stop being live."""

    name: str
    table: str


@dataclass(frozen=True)
class ShowIndexes:
    """``SHOW INDEXES``: every definition of the table and how many live files it covers."""

    table: str


@dataclass(frozen=True)
class RefreshIndex:
    """``REFRESH INDEX``: build the index files missing for live files (``FULL``: rebuild all)."""

    name: str
    table: str
    full: bool = False

    @property
    def strategy(self) -> Literal["incremental", "all"]:
        return "all" if self.full else "incremental"


IndexStatement: TypeAlias = CreateIndex | DropIndex | ShowIndexes | RefreshIndex

# ------------------------------------------------------------------------------------- tokenizer

TokenKind = Literal["word", "quoted", "string", "punct", "end"]

_PUNCT = "(),;"
# A bare word runs to whitespace, punctuation or a quote: keywords, names, and paths like /data/t.
_WORD = re.compile(r"""[^\s(),;'"]+""")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class _Token:
    kind: TokenKind
    value: str  # the text, unquoted for quoted names and strings
    start: int
    end: int

    def is_keyword(self, *words: str) -> bool:
        return self.kind == "word" and self.value.upper() in words


class _LexError(Exception):
    """A malformed token (an unterminated quote or comment), at ``position``."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


class _Lexer:
    """Tokens on demand: the first two decide whether the text is an index statement at all, and a
    text that is not (e.g. a query with an unterminated string) must not fail here."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def next(self) -> _Token:
        self._skip_space_and_comments()
        text, start = self.text, self.pos
        if start >= len(text):
            return _Token("end", "", start, start)
        ch = text[start]
        if ch in _PUNCT:
            self.pos += 1
            return _Token("punct", ch, start, self.pos)
        if ch in "\"'":
            return self._quoted(ch)
        match = _WORD.match(text, start)
        assert match is not None  # any other character starts a word
        self.pos = match.end()
        return _Token("word", match.group(), start, self.pos)

    def _skip_space_and_comments(self) -> None:
        text = self.text
        while self.pos < len(text):
            if text[self.pos].isspace():
                self.pos += 1
            elif text.startswith("--", self.pos):
                newline = text.find("\n", self.pos)
                self.pos = len(text) if newline < 0 else newline + 1
            elif text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise _LexError("unterminated /* comment", self.pos)
                self.pos = close + 2
            else:
                return

    def _quoted(self, quote: str) -> _Token:
        """``"name"`` or ``'string'``, a doubled quote standing for one."""
        text, start = self.text, self.pos
        what = "quoted name" if quote == '"' else "string"
        parts = []
        i = start + 1
        while True:
            close = text.find(quote, i)
            if close < 0:
                raise _LexError(f"unterminated {what}", start)
            parts.append(text[i:close])
            if text.startswith(quote * 2, close):
                parts.append(quote)
                i = close + 2
                continue
            self.pos = close + 1
            break
        value = "".join(parts)
        if not value:
            raise _LexError(f"empty {what}", start)
        return _Token("quoted" if quote == '"' else "string", value, start, self.pos)


def _where(text: str, pos: int) -> str:
    """``at column C`` (one-line text) or ``at line L, column C``, 1-based."""
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"at column {column}" if "\n" not in text.strip() else f"at line {line}, column {column}"


# ---------------------------------------------------------------------------------------- parser

# The two leading keywords of each statement; any other start is not an index statement.
_HEADS = {
    ("CREATE", "INDEX"): "CREATE INDEX",
    ("DROP", "INDEX"): "DROP INDEX",
    ("SHOW", "INDEXES"): "SHOW INDEXES",
    ("SHOW", "INDEX"): "SHOW INDEXES",
    ("REFRESH", "INDEX"): "REFRESH INDEX",
}


class _Parser:
    """Recursive descent over the tokens of one statement (looking at most two tokens ahead)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lexer = _Lexer(text)
        self.ahead: list[_Token] = []
        self.statement = ""  # "CREATE INDEX"..., once known: names the syntax in errors

    def peek(self, n: int = 0) -> _Token:
        while len(self.ahead) <= n:
            try:
                self.ahead.append(self.lexer.next())
            except _LexError as exc:
                raise StatementError(
                    f"{self.statement}: {exc} {_where(self.text, exc.position)}",
                    exc.position,
                    SYNTAX[self.statement],
                ) from None
        return self.ahead[n]

    def take(self) -> _Token:
        token = self.peek()
        self.ahead.pop(0)
        return token

    def error(self, expected: str) -> StatementError:
        """``expected`` was not found at the next token."""
        token = self.peek()
        got = "the end of the statement" if token.kind == "end" else repr(self.text[token.start : token.end])
        return StatementError(
            f"{self.statement}: expected {expected}, got {got} {_where(self.text, token.start)}",
            token.start,
            SYNTAX[self.statement],
        )

    def keyword(self, *words: str) -> _Token:
        if not self.peek().is_keyword(*words):
            raise self.error(" or ".join(words))
        return self.take()

    def optional(self, *words: str) -> bool:
        if self.peek().is_keyword(*words):
            self.take()
            return True
        return False

    def punct(self, ch: str, expected: str) -> None:
        token = self.peek()
        if token.kind != "punct" or token.value != ch:
            raise self.error(expected)
        self.take()

    # -- statements

    def statement_head(self) -> str | None:
        """The statement the text starts as, or None when it is not an index statement."""
        try:
            first, second = self.lexer.next(), self.lexer.next()
        except _LexError:
            return None  # e.g. an unterminated string early in some other statement
        self.ahead = [first, second]
        if first.kind != "word" or second.kind != "word":
            return None
        return _HEADS.get((first.value.upper(), second.value.upper()))

    def parse(self, head: str) -> IndexStatement:
        self.statement = head
        self.take()
        self.take()
        statement: IndexStatement
        if head == "CREATE INDEX":
            statement = self.create()
        elif head == "DROP INDEX":
            name = self.index_name()
            statement = DropIndex(name, self.on_table())
        elif head == "SHOW INDEXES":
            statement = ShowIndexes(self.on_table(("ON", "FROM")))
        else:
            name = self.index_name()
            table = self.on_table()
            statement = RefreshIndex(name, table, full=self.optional("FULL"))
        self.end()
        return statement

    def create(self) -> CreateIndex:
        name = None if self.peek().is_keyword("ON") else self.index_name()
        table = self.on_table()
        index_type = self.using() if self.peek().is_keyword("USING") else None
        columns = self.columns()
        if self.peek().is_keyword("USING"):
            if index_type is not None:
                raise self.error("the end of the statement (USING is given once)")
            index_type = self.using()
        return CreateIndex(name, table, columns, index_type or "value")

    def end(self) -> None:
        if self.peek().kind == "punct" and self.peek().value == ";":
            self.take()
        if self.peek().kind != "end":
            raise self.error("the end of the statement")

    # -- parts

    def index_name(self) -> str:
        token = self.peek()
        if token.is_keyword("IF") and self.peek(1).is_keyword("NOT", "EXISTS"):
            raise StatementError(
                f"{self.statement}: IF NOT EXISTS and IF EXISTS are not supported "
                f"({_where(self.text, token.start)}): SHOW INDEXES ON table lists the indexes there are",
                token.start,
                SYNTAX[self.statement],
            )
        named = token.kind == "word" and _IDENTIFIER.fullmatch(token.value) and not token.is_keyword("ON")
        if token.kind == "quoted" or named:
            return self.take().value
        raise self.error("an index name (letters, digits and _, or a double-quoted name)")

    def on_table(self, words: tuple[str, ...] = ("ON",)) -> str:
        self.keyword(*words)
        # Hudi's optional TABLE keyword, unless TABLE is itself the table's name.
        if self.peek().is_keyword("TABLE") and self.peek(1).kind in ("word", "quoted", "string"):
            self.take()
        token = self.peek()
        if token.kind not in ("word", "quoted", "string") or token.is_keyword("USING"):
            raise self.error(f"the table after {' or '.join(words)} (a name, a path, or a quoted string)")
        return self.take().value

    def columns(self) -> tuple[str, ...]:
        self.punct("(", "'(' and the indexed columns")
        columns = [self.column(())]
        while self.peek().kind == "punct" and self.peek().value == ",":
            self.take()
            columns.append(self.column(columns))
        self.punct(")", "',' or ')' after a column")
        return tuple(columns)

    def column(self, before: Sequence[str]) -> str:
        token = self.peek()
        if not (token.kind == "quoted" or (token.kind == "word" and _COLUMN.fullmatch(token.value))):
            raise self.error("a column name (letters, digits and _, or a double-quoted name)")
        if token.value in before:
            raise self.error(f"another column than {token.value!r}, which is listed already")
        return self.take().value

    def using(self) -> str:
        self.take()
        token = self.peek()
        try:
            index_kind(token.value.lower())
        except ValueError:
            raise self.error("an index type after USING (" + " or ".join(_kind_names()) + ")") from None
        return self.take().value.lower()


def _kind_names() -> list[str]:
    return sorted(k.name for k in kinds())


def parse_statement(text: str) -> IndexStatement | None:
    """The index statement ``text`` is, or None when it is not one (run it as ordinary SQL).
    Raises ``StatementError`` when it starts like one (``CREATE INDEX``...) but is malformed."""
    parser = _Parser(text)
    head = parser.statement_head()
    return None if head is None else parser.parse(head)


# ------------------------------------------------------------------------------------- running

CREATE_RESULT = pa.schema(
    [("name", pa.string()), ("index_type", pa.string()), ("columns", pa.string()), ("version", pa.int64())]
)
DROP_RESULT = pa.schema([("name", pa.string()), ("version", pa.int64())])
SHOW_RESULT = pa.schema(
    [
        ("name", pa.string()),
        ("index_type", pa.string()),
        ("columns", pa.string()),
        ("files_indexed", pa.int64()),
        ("live_files", pa.int64()),
        ("complete", pa.bool_()),
    ]
)
REFRESH_RESULT = pa.schema(
    [
        ("name", pa.string()),
        ("version", pa.int64()),  # null: nothing to build
        ("files_indexed", pa.int64()),
        ("live_files", pa.int64()),
    ]
)


def run_statement(
    statement: IndexStatement,
    open_table: Callable[[str], IndexedTable],
    progress: bool | None = None,
) -> pa.Table:
    """Run ``statement`` on ``open_table(statement.table)``; the result as a table (one row, or one
    per index for ``SHOW INDEXES``). ``progress`` is ``build_index``'s (None: a bar on a terminal)."""
    table = open_table(statement.table)
    if isinstance(statement, CreateIndex):
        columns = _resolve_columns(table, statement.columns)
        version = table.create_index(columns, statement.index_type, statement.name)
        made = next((s for s in table.indexes() if s.created == version), None)
        name = made.name if made else statement.name or default_index_name(columns, statement.index_type)
        return _rows(CREATE_RESULT, [(name, statement.index_type, ",".join(columns), version)])
    if isinstance(statement, DropIndex):
        name = _spelled(table, statement.name)
        return _rows(DROP_RESULT, [(name, table.drop_index(statement.name))])
    if isinstance(statement, ShowIndexes):
        return _rows(
            SHOW_RESULT,
            [
                (s.name, s.index_type, ",".join(s.columns), s.files_indexed, s.live_files, s.complete)
                for s in table.indexes()
            ],
        )
    built = table.build_index(statement.name, statement.strategy, progress)
    status = _find(table, statement.name)
    if status is None:  # dropped by someone else since it was built
        return _rows(REFRESH_RESULT, [(statement.name, built, None, None)])
    return _rows(REFRESH_RESULT, [(status.name, built, status.files_indexed, status.live_files)])


def _rows(schema: pa.Schema, rows: list[tuple[object, ...]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema)


def _find(table: IndexedTable, name: str) -> IndexStatus | None:
    """The index called ``name``, case-insensitively (as ``drop_index`` and ``build_index`` match)."""
    return next((s for s in table.indexes() if s.name.lower() == name.lower()), None)


def _spelled(table: IndexedTable, name: str) -> str:
    """``name`` as the index was created (``IDX_A`` finds ``idx_a``); as given when there is none."""
    found = _find(table, name)
    return found.name if found is not None else name


def _resolve_columns(table: IndexedTable, columns: tuple[str, ...]) -> tuple[str, ...]:
    """Each column as the table spells it: exactly, else the one column equal but for case (SQL
    engines such as DuckDB match names case-insensitively). Unknown names are left for
    ``create_index`` to report."""
    names = list(leaf_columns(table.snapshot().schema))
    resolved = []
    for c in columns:
        folded = [n for n in names if n.lower() == c.lower()]
        resolved.append(c if c in names or len(folded) != 1 else folded[0])
    return tuple(resolved)
