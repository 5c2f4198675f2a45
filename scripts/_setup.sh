# Sourced by the top-level scripts: make sure uv is there and the locked environment is installed.
# Works on a fresh machine with only python3 and pip: uv comes from PyPI, everything else from uv.lock.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export UV_PYTHON_DOWNLOADS=never   # use this machine's Python; never fetch an interpreter
if command -v uv >/dev/null 2>&1; then
  UV=(uv)
else
  python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet "uv>=0.5"
  UV=(python3 -m uv)
fi
"${UV[@]}" sync --frozen --all-extras --all-groups --quiet
export PATH="$PWD/.venv/bin:$PATH"
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
