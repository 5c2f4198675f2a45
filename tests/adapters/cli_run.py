"""Running ``hudi-index`` in-process for the CLI tests: exit code, stdout and stderr."""

from __future__ import annotations

import pytest

from adapters.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``hudi-index ARGS...`` through ``adapters.cli.main``, with what it printed."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err
