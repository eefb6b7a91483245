#!/usr/bin/env bash
# ctest python_summaries: tests/test_summaries.py (robust condition summaries, halving winners, the loader's
# DataFrame) with the first Python that has numpy, h5py, pandas and matplotlib (tools/find-python).
set -u
src=$(cd "$(dirname "$0")" && pwd)
. "$src/lib.sh"
need_python numpy h5py pandas matplotlib
export MPLCONFIGDIR=${MPLCONFIGDIR:-$(mktemp -d)}
exec "$py" "$src/test_summaries.py" -v
