"""``hudi_expr.terms``: the tokenization of ``contains_term`` and the term index, and its row filter."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_expr import col
from hudi_expr.terms import TERM_CHARS, normalize_term, term_regex, tokenize


def pairs(strings: pa.Array | pa.ChunkedArray) -> set[tuple[str, int]]:
    terms, rows = tokenize(strings)
    assert isinstance(terms, pa.StringArray) and terms.type == pa.string()
    assert isinstance(rows, np.ndarray) and rows.dtype == np.int64
    found = list(zip(terms.to_pylist(), rows.tolist(), strict=True))
    assert len(set(found)) == len(found), "a (term, row) pair is given once"
    return set(found)


TEXTS = [
    "Hello, World! hello",  # case folds, duplicates go
    None,
    "",
    "  --  ",
    "e-mail: Bob@Example.COM",
    "x_y 3.14 ÉTÉ",  # _ and . separate; accented capitals lower-case
    "İstanbul straße ΣΟΦΙΑ",  # arrow's utf8_lower: İ is i; ß stays; no final sigma
    "de\u0301ja vu",  # a combining accent is no letter: it separates
    "日本語テキスト 123abc",
    "tab\there\nnew",
]
EXPECTED = {
    0: {"hello", "world"},
    4: {"e", "mail", "bob", "example", "com"},
    5: {"x", "y", "3", "14", "été"},
    6: {"istanbul", "straße", "σοφια"},
    7: {"de", "ja", "vu"},
    8: {"日本語テキスト", "123abc"},
    9: {"tab", "here", "new"},
}


def test_tokenize_fixed_strings() -> None:
    got = pairs(pa.array(TEXTS))
    assert got == {(term, row) for row, terms in EXPECTED.items() for term in terms}


def test_tokenize_is_deterministic_and_takes_any_string_layout() -> None:
    plain = tokenize(pa.array(TEXTS))
    again = tokenize(pa.array(TEXTS))
    assert plain[0].equals(again[0]) and np.array_equal(plain[1], again[1])
    want = pairs(pa.array(TEXTS))
    assert pairs(pa.array(TEXTS, pa.large_string())) == want
    assert pairs(pa.array(TEXTS, pa.string_view())) == want
    assert pairs(pa.array(TEXTS).dictionary_encode()) == want
    # Rows of a chunked array count across its chunks.
    chunked = pa.chunked_array([pa.array(TEXTS[:3]), pa.array([], pa.string()), pa.array(TEXTS[3:])])
    assert pairs(chunked) == want


def test_tokenize_of_nothing() -> None:
    assert pairs(pa.array([], pa.string())) == set()
    assert pairs(pa.array([None, None], pa.string())) == set()
    assert pairs(pa.array(["", " !"], pa.string())) == set()
    assert pairs(pa.chunked_array([], pa.string())) == set()
    with pytest.raises(TypeError, match="strings"):
        tokenize(pa.array([1, 2]))


@pytest.mark.parametrize(
    ("word", "term"),
    [("word", "word"), ("WoRd", "word"), ("ÉTÉ2024", "été2024"), ("İ", "i"), ("日本", "日本"), ("٣", "٣")],
)
def test_normalize_term(word: str, term: str) -> None:
    assert normalize_term(word) == term
    assert pairs(pa.array([word])) == {(term, 0)}  # the same as the text's own term


@pytest.mark.parametrize("word", ["", " ", "two words", "e-mail", "x_y", "a.", "de\u0301ja", "'"])
def test_normalize_term_refuses_what_is_not_one_term(word: str) -> None:
    with pytest.raises(ValueError, match="contains_term needs"):
        normalize_term(word)


def test_term_regex() -> None:
    assert term_regex("abc") == rf"(^|[^{TERM_CHARS}])abc([^{TERM_CHARS}]|$)"
    # Anything but a letter or digit is escaped (a term has none, but the pattern stays literal).
    assert term_regex("a.b") == rf"(^|[^{TERM_CHARS}])a\x{{2e}}b([^{TERM_CHARS}]|$)"
    text = pa.array(["abc", "xabc", "abc.", "a.b", "axb", None])
    assert pc.match_substring_regex(text, term_regex("abc")).to_pylist() == [
        True,
        False,
        True,
        False,
        False,
        None,
    ]
    assert pc.match_substring_regex(text, term_regex("a.b")).to_pylist() == [False] * 3 + [True, False, None]


# ----------------------------------------------------------- the row filter is the tokenization

ALPHABET = st.one_of(
    st.sampled_from(
        [*"aAbBzZ09 ,.-_'!\t\nÉéßİΣ", "\u0131", "\u03c3", "\u03c2", "\u0301", "日", "\U0001d400"]
    ),
    st.sampled_from(
        ["٣", "Ⅻ", "ǅ"]
    ),  # an Arabic-Indic digit, a Roman numeral (a letter), a title case letter
    st.characters(codec="utf-8"),
)


@st.composite
def texts_and_words(draw: st.DrawFn) -> tuple[list[str | None], list[str]]:
    """Strings, and words: terms of them as written or in another case, and random text."""
    texts = draw(st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=12)), min_size=1, max_size=8))
    found = sorted({t for t, _ in pairs(pa.array(texts, pa.string()))})
    words = draw(st.lists(st.sampled_from(found), max_size=4)) if found else []
    words = [draw(st.sampled_from([w, w.upper(), w.title()])) for w in words]
    words += draw(st.lists(st.text(ALPHABET, min_size=1, max_size=3), max_size=3))
    return texts, words


@settings(max_examples=200, deadline=None)
@given(texts_and_words())
def test_row_filter_agrees_with_tokenize(example: tuple[list[str | None], list[str]]) -> None:
    texts, words = example
    table = pa.table({"s": pa.array(texts, pa.string())})
    found = pairs(table.column("s"))
    checks = []
    for word in words:
        try:
            term = normalize_term(word)
        except ValueError:
            continue
        has = [None if t is None else (term, i) in found for i, t in enumerate(texts)]
        checks.append((col("s").contains_term(word), has))
        checks.append((col("s").not_contains_term(word), [None if v is None else not v for v in has]))
    if not checks:
        return
    columns = {f"m{i}": expr.to_pyarrow(table.schema) for i, (expr, _) in enumerate(checks)}
    result = ds.dataset(table).to_table(columns=columns)  # one scan: NULL rows stay NULL
    for i, (expr, want) in enumerate(checks):
        assert result.column(f"m{i}").to_pylist() == want, expr
