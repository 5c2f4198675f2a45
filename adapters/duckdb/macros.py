"""SQL macros giving DuckDB the ``hudi_expr`` functions it lacks: ``contains_term(s, w)``.

``contains_term(s, w)`` is TRUE when the lower-cased ``s`` has the word ``w`` (lower-cased) among its
terms, NULL when ``s`` or ``w`` is NULL, and an error when ``w`` is not one term: exactly the rows
``ContainsTerm`` keeps through ``to_pyarrow`` (``hudi_expr.terms``). DuckDB's Unicode tables are
older than arrow's, so the macros do not rely on DuckDB's ``\\p{L}`` or ``lower`` where the two
differ: the term characters are spelled out as code point ranges read from arrow, and
``utf8_lower(s)``, also registered, maps the few characters DuckDB's ``lower`` leaves alone as
arrow's ``utf8_lower`` does.
"""

from __future__ import annotations

import functools

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.terms import TERM_CHARS

__all__ = ["macros_sql", "register_macros"]


def register_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Create the macros on ``con``, as temporary macros (this connection only; read-only databases
    too); calling again replaces them."""
    con.execute(macros_sql())


@functools.cache
def macros_sql() -> str:
    """The ``CREATE OR REPLACE TEMP MACRO`` statements of ``utf8_lower(s)`` and ``contains_term(s, w)``."""
    term = _term_class()
    message = "contains_term needs one word of letters and digits, got "
    # hudi_expr.terms.term_regex, in SQL.
    pattern = f"'(^|[^{term}])' || regexp_escape(utf8_lower(w)) || '([^{term}]|$)'"
    return (
        f"CREATE OR REPLACE TEMP MACRO utf8_lower(s) AS {_lower('s')};\n"
        "CREATE OR REPLACE TEMP MACRO contains_term(s, w) AS CASE"
        " WHEN w IS NULL THEN NULL"
        f" WHEN NOT regexp_full_match(utf8_lower(w), '[{term}]+') THEN error({_quote(message)} || w)"
        f" ELSE regexp_matches(utf8_lower(s), {pattern})"
        " END;"
    )


def _lower(x: str) -> str:
    """SQL lower-casing ``x`` exactly as arrow's ``utf8_lower`` does."""
    fixes = _lower_fixes()
    if not fixes:
        return f"lower({x})"
    sources = "".join(chr(c) for c in fixes)
    targets = "".join(chr(fixes[c]) for c in fixes)
    listed = "".join(_escape(c) for c in fixes)
    # translate is slow (it builds its map per row): only rows holding such a character take it.
    mapped = f"translate({x}, {_quote(sources)}, {_quote(targets)})"
    return f"lower(CASE WHEN regexp_matches({x}, '[{listed}]') THEN {mapped} ELSE {x} END)"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _escape(code_point: int) -> str:
    return f"\\x{{{code_point:x}}}"


@functools.cache
def _code_points() -> tuple[np.ndarray, pa.StringArray]:
    """Every Unicode scalar value but NUL, and each as a one-character string."""
    points = np.concatenate([np.arange(1, 0xD800), np.arange(0xE000, 0x110000)]).astype(np.uint32)
    data = points.astype("<u4").tobytes().decode("utf-32-le").encode("utf-8")
    widths = np.select([points < 0x80, points < 0x800, points < 0x10000], [1, 2, 3], 4).astype(np.int32)
    offsets = np.zeros(len(points) + 1, dtype=np.int32)
    np.cumsum(widths, out=offsets[1:])
    chars = pa.StringArray.from_buffers(len(points), pa.py_buffer(offsets), pa.py_buffer(data))
    return points, chars


@functools.cache
def _term_class() -> str:
    """The term characters per arrow's RE2, as the body of a character class of code point ranges."""
    points, chars = _code_points()
    is_term = pc.match_substring_regex(chars, pattern=f"^[{TERM_CHARS}]$")
    members = points[np.asarray(is_term.to_numpy(zero_copy_only=False), dtype=bool)]
    breaks = np.flatnonzero(np.diff(members) != 1)
    starts = np.concatenate([members[:1], members[breaks + 1]])
    ends = np.concatenate([members[breaks], members[-1:]])
    return "".join(
        _escape(int(a)) if a == b else f"{_escape(int(a))}-{_escape(int(b))}"
        for a, b in zip(starts, ends, strict=True)
    )


@functools.cache
def _lower_fixes() -> dict[int, int]:
    """Code point -> arrow's lower case, for the characters DuckDB's ``lower`` maps otherwise."""
    points, chars = _code_points()
    lowered = pc.utf8_lower(chars)
    changed = np.asarray(pc.not_equal(lowered, chars).to_numpy(zero_copy_only=False), dtype=bool)
    arrow = {
        int(p): ord(c) for p, c in zip(points[changed], lowered.filter(changed).to_pylist(), strict=True)
    }
    with duckdb.connect() as con:
        rows = con.execute(
            "SELECT i, lower(chr(i::INTEGER)) FROM range(1, 1114112) r(i)"
            " WHERE (i < 55296 OR i > 57343) AND lower(chr(i::INTEGER)) <> chr(i::INTEGER)"
        ).fetchall()
    duck = {int(i): ord(lower) for i, lower in rows}
    fixes = {
        c: arrow.get(c, c) for c in sorted(arrow.keys() | duck.keys()) if arrow.get(c, c) != duck.get(c, c)
    }
    # Mapping before ``lower`` is exact only if DuckDB leaves both sides of each fix as they are.
    if any(duck.get(c, c) != c or duck.get(t, t) != t for c, t in fixes.items()):
        raise RuntimeError(
            f"DuckDB {duckdb.__version__} lower-cases differently from pyarrow {pa.__version__} in a way "
            "the contains_term macro cannot correct: use matching versions"
        )
    return fixes
