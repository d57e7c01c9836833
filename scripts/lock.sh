#!/usr/bin/env bash
# Regenerate requirements.lock (runtime) and requirements-dev.lock (runtime + dev) from
# pyproject.toml. Pins stay where they are unless asked: `scripts/lock.sh --upgrade`.
# Needs uv (`python -m pip install uv`); installing from the locks needs only pip.
set -euo pipefail
cd "$(dirname "$0")/.."
common=(--universal --python-version 3.11 --quiet --custom-compile-command "scripts/lock.sh")
uv pip compile pyproject.toml "${common[@]}" "$@" -o requirements.lock
uv pip compile pyproject.toml --extra dev -c requirements.lock "${common[@]}" "$@" \
  -o requirements-dev.lock
