"""The ``spark`` and ``slow`` markers that conftest.py sets are on the tests they name, and the
fast inner loop ``-m "not slow and not spark"`` leaves both kinds out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = [
    "tests/adapters/test_spark_read.py",  # every test takes the spark fixture
    "tests/adapters/test_walker.py",  # one test starts an interpreter
    "tests/adapters/test_cli_recovery.py",  # three run the CLI through a fixture's class
    "tests/index_store/test_index_freshness.py",  # Spark tests beside plain ones
]
SPARK = "tests/adapters/test_spark_read.py::test_read_and_prune_match_full_read_flat"
SPARK_BESIDE_PLAIN = "tests/index_store/test_index_freshness.py::test_spark_read_keeps_a_rewritten_file"
SPAWNS = "tests/adapters/test_walker.py::test_the_walker_imports_no_engine"
SPAWNS_IN_A_FIXTURE_CLASS = (
    "tests/adapters/test_cli_recovery.py::test_build_on_a_read_only_table_says_to_use_index_path"
)
FAST = "tests/adapters/test_cli_recovery.py::test_an_empty_folder_is_an_empty_table"


def _collected(marks: str) -> set[str]:
    """The ids of FILES' tests that ``-m marks`` selects, from a pytest run that only collects."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            marks,
            *FILES,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {line.split("[")[0] for line in done.stdout.splitlines() if "::" in line}


@pytest.fixture(scope="module")
def fast() -> set[str]:
    return _collected("not slow and not spark")


def test_spark_marks_tests_that_use_the_spark_fixture(fast: set[str]) -> None:
    spark = _collected("spark")
    assert {SPARK, SPARK_BESIDE_PLAIN} <= spark
    assert not spark & {SPAWNS, FAST}
    assert not spark & fast


def test_slow_marks_tests_that_start_processes(fast: set[str]) -> None:
    slow = _collected("slow")
    assert {SPAWNS, SPAWNS_IN_A_FIXTURE_CLASS} <= slow
    assert not slow & {SPARK, FAST}
    assert not slow & fast


def test_the_inner_loop_keeps_the_rest(fast: set[str]) -> None:
    assert FAST in fast
    assert "tests/adapters/test_walker.py::test_toy_engine_translates" in fast
