#!/usr/bin/env bash
# README command 1: from a fresh Debian machine, install what icl-sweep needs, build it, and run the
# small default example (one grid point: 1 layer, d = 5, n = 20, against the closed-form optimum).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
bash tools/build.sh
mkdir -p results
echo "icl-sweep: training the default example (theory: test loss d(d+1)/(n+d+1) = 1.1538)"
./build/icl-sweep train --d 5 --n 20 --layers 1 --batch 4000 --steps 2500 --lr 0.01 --schedule cosine \
  --init_scale 0.1 --eval_every 500 --eval_tasks 100000 -o results/example.h5 --force
