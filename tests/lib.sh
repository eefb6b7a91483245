# Sourced by the script tests: MPI as root, check bookkeeping, and the Python a test needs.
#   ok MESSAGE / fail MESSAGE     record a check ($failures counts the failed ones)
#   need_python MODULE...         sets $py to an interpreter that imports them (tools/find-python)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
need_python() {
  py=$("$(dirname "${BASH_SOURCE[0]}")/../tools/find-python" "$@") || { echo "FAIL: no Python with $*"; exit 1; }
}
# The sweep tests' helpers (after need_python h5py numpy; $src is the tests directory).
mpi() { local n=$1; shift; mpiexec --oversubscribe -n "$n" "$@"; }
compare() { "$py" "$src/compare_sweeps.py" "$1" "$2" && ok "$3" || fail "$3"; }
state() { "$py" -c "import h5py,sys; print(h5py.File(sys.argv[1],'r').attrs['sweep_state'])" "$1"; }
