#!/usr/bin/env bash
# [VO23]'s transformer (arch = transformer): the engine's training trajectory against an independent
# PyTorch float64 model (torch_transformer.py).  A missing torch is a failure, not a skip: install
# python3-torch (tools/deps.sh).
# Usage: test_torch_transformer.sh TRAJECTORY_DUMP
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_python torch
exec "$py" "$(dirname "$0")/torch_transformer.py" "$1"
