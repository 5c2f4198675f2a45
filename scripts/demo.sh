#!/usr/bin/env bash
# Install from the lock file, then run the demo: generate a table, index it, run pruned queries.
source "$(dirname "$0")/_setup.sh"
python -m scripts.demo "$@"
