"""Callers ask a table reader its capabilities; none tests which format it is.

A format is found by ``index_store.tables.FORMATS``; anywhere else, a test of ``reader.kind``
against a format's name, an ``isinstance`` on a reader class or a ``getattr`` probe of a reader is a
branch the next format would have to be added to. This test fails on one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hudi_expr", "index_store", "adapters", "scripts", "benchmarks")
REGISTRY = ROOT / "index_store" / "tables"  # where formats are defined and detected

FORBIDDEN = {
    "a test of a reader's kind": re.compile(
        r"""\b(reader\.kind|table_kind)\s*(==|!=|in\b|not in\b)"""
        r"""|\bkind\s*(==|!=)\s*["'](parquet|hudi_cow|hudi_mor)["']"""
    ),
    "an isinstance on a reader class": re.compile(
        r"isinstance\([^)]*\b(PlainParquetTable|HudiTable|HudiCowTable)\b"
    ),
    "a getattr probe of a reader": re.compile(r"getattr\(\s*[\w.]*reader\b"),
}


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def _found(text: str) -> list[str]:
    return [
        f"{what}: {line.strip()}"
        for line in text.splitlines()
        for what, rx in FORBIDDEN.items()
        if rx.search(line)
    ]


def test_no_source_outside_the_registry_tests_a_reader_kind() -> None:
    sources = [p for p in _sources() if REGISTRY not in p.parents]
    assert len(sources) > 50  # the tree was found
    found = {str(p.relative_to(ROOT)): hits for p in sources if (hits := _found(p.read_text()))}
    assert not found, found


@pytest.mark.parametrize(
    "line",
    [
        'if table.reader.kind != "parquet":',
        "if reader.kind == 'hudi_cow':",
        'elif indexed.reader.kind in ("parquet",):',
        "if isinstance(table.reader, PlainParquetTable):",
        "if isinstance(reader, HudiTable):",
        'fields = getattr(self.reader, "partition_fields", None)',
        'if config.table_kind == "parquet":',
    ],
)
def test_the_check_sees_each_form(line: str) -> None:
    assert _found(line)
