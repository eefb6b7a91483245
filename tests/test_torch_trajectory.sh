#!/usr/bin/env bash
# The engine's training trajectory against PyTorch float64 (torch_trajectory.py).  A missing torch is a
# failure, not a skip: install python3-torch (tools/deps.sh).
# Usage: test_torch_trajectory.sh TRAJECTORY_DUMP
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_python torch
exec "$py" "$(dirname "$0")/torch_trajectory.py" "$1"
