#!/usr/bin/env bash
# Mutation testing of the Python functions changed against a base revision; fails below
# 100% killed. Usage: scripts/mutation-changed.sh [BASE]  (default HEAD~1).
set -euo pipefail
cd "$(dirname "$0")/.."
SAFELIGHT_SETUP_QUIET=1 scripts/setup --dev
exec .venv/bin/python scripts/mutation_changed.py "$@"
