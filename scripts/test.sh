#!/usr/bin/env bash
# Install everything from the lock file, then run lint and every test (unit, integration, property).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh --hypothesis-profile=deep`.
source "$(dirname "$0")/_setup.sh"
ruff check .
ruff format --check .
python -m pytest --hypothesis-profile="${HYPOTHESIS_PROFILE:-ci}" "$@"
