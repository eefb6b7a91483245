#!/usr/bin/env bash
# [VO23]'s transformer (arch = transformer): the engine's training trajectory against an independent
# PyTorch float64 model (torch_transformer.py).  A missing torch is a failure, not a skip: install
# python3-torch (tools/deps.sh).
# Usage: test_torch_transformer.sh TRAJECTORY_DUMP
# Also runs the benchmark's peer, which shares the model, for two steps of each of its configs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_python torch
# The benchmark's peer (bench/torch_transformer_peer.py) runs this model too: both of its configs, two steps each,
# so a change to the model's settings cannot leave bench/run_bench.sh without its peer.
for config in fig5 fig8; do
  OMP_NUM_THREADS=1 "$py" "$(dirname "$0")/../bench/torch_transformer_peer.py" --config "$config" --batch 16 --steps 2 \
    --warmup 1 > /dev/null || { echo "FAIL: bench/torch_transformer_peer.py --config $config"; exit 1; }
done
exec "$py" "$(dirname "$0")/torch_transformer.py" "$1"
