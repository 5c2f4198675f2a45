#!/usr/bin/env bash
# Install everything from the lock file, then lint, type-check and run every test (unit,
# integration, property).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh --hypothesis-profile=deep`.
source "$(dirname "$0")/_setup.sh"
ruff check .
ruff format --check .
mypy
python -m pytest --hypothesis-profile="${HYPOTHESIS_PROFILE:-ci}" "$@"
