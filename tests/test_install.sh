#!/usr/bin/env bash
# The cluster user's path (docs/install.md), on this machine:
#  (a) a fresh configure finds every dependency without pkg-config (disabled, and PKG_CONFIG=/bin/false),
#      HDF5 given only by HDF5_ROOT (a module's way); the HDF5 source file compiles against it;
#  (b) `cmake --install BUILD --prefix P`, then, as an unprivileged user (nobody, when run as root) and from
#      another directory: P/bin/icl-sweep run with no spec (the installed quickstart preset, shrunk by
#      overrides) under mpiexec -n 1, and P/bin/icl-report on its output from a third directory;
#  (c) the installed tree holds the presets (reduced/ too), the job templates, the Python package (importable
#      from there: load() gives a DataFrame) and the tools, and the executable carries no path to the source
#      tree to find them. (pip's install of the package: tests/test_pip_install.sh.)
# Usage: test_install.sh SOURCE_DIR BUILD_DIR (BUILD_DIR: the configured and built tree to install).
set -uo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
t0=$(date +%s)
tmp=$(mktemp -d /tmp/icl-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

# --- (a) configure with no pkg-config, HDF5 from HDF5_ROOT only -----------------------------------------
arch=$(gcc -print-multiarch 2>/dev/null || true)
h5root=/usr/lib/${arch:-x86_64-linux-gnu}/hdf5/serial
if [ -f "$h5root/include/hdf5.h" ]; then
  fresh=$tmp/build-fresh
  if PKG_CONFIG=/bin/false HDF5_ROOT=$h5root cmake -S "$src" -B "$fresh" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=TRUE -DICL_BUILD_TESTS=OFF -DICL_BUILD_BENCH=OFF >"$tmp/fresh.log" 2>&1; then
    echo "ok: configure without pkg-config, HDF5_ROOT=$h5root"
    inc=$(sed -n 's/^HDF5_C_INCLUDE_DIR:PATH=//p' "$fresh/CMakeCache.txt")
    lib=$(sed -n 's/^HDF5_hdf5_LIBRARY_RELEASE:FILEPATH=//p' "$fresh/CMakeCache.txt")
    check "HDF5 headers from HDF5_ROOT ($inc)" '[[ $inc == "$h5root"/* ]]'
    check "HDF5 library from HDF5_ROOT ($lib)" '[[ $lib == "$h5root"/* ]]'
    check "no pkg-config in the configuration" '! grep -q "^PKG_CONFIG_EXECUTABLE:FILEPATH=/" "$fresh/CMakeCache.txt"'
    # Only the file that includes hdf5.h: the whole build twice would take too long on 2 cores.
    check "src/io/h5.cpp compiles against HDF5_ROOT" \
      'make -C "$fresh" -s src/io/h5.cpp.o >"$tmp/fresh-build.log" 2>&1 || { tail -20 "$tmp/fresh-build.log"; false; }'
  else
    echo "FAIL: configure without pkg-config, HDF5_ROOT=$h5root"; tail -30 "$tmp/fresh.log"; fail=1
  fi
else
  echo "skip (a): no Debian serial HDF5 tree at $h5root"
fi
echo "(a) $(( $(date +%s) - t0 )) s"

# --- (b) install, run as nobody from elsewhere --------------------------------------------------------
prefix=$tmp/prefix
if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  echo "FAIL: cmake --install"; tail -20 "$tmp/install.log"; exit 1
fi
check "P/bin/icl-sweep" '[ -x "$prefix/bin/icl-sweep" ]'
check "presets with reduced/" '[ -f "$prefix/share/icl-sweep/presets/quickstart.ini" ] &&
  [ "$(ls "$src/jobs/presets/reduced" | wc -l)" -eq "$(ls "$prefix/share/icl-sweep/presets/reduced" | wc -l)" ]'
check "job templates" '[ -f "$prefix/share/icl-sweep/jobs/slurm/icl-sweep.sbatch" ] && [ -f "$prefix/share/icl-sweep/jobs/pbs/icl-sweep.pbs" ]'
check "Python package" '[ -f "$prefix/share/icl-sweep/python/icl_sweep/report.py" ] && [ ! -e "$prefix/share/icl-sweep/python/icl_sweep/__pycache__" ]'
check "tools" '(for t in icl-report icl-halving-check icl-lu-theory icl-costs icl-job; do [ -x "$prefix/bin/$t" ] || exit 1; done) &&
  [ -x "$prefix/libexec/icl-sweep/find-python" ] && [ -x "$prefix/share/icl-sweep/tools/icl-job" ]'
# (Source file names from __FILE__ in error messages may remain; the source directory itself must not.)
check "no source directory compiled into the executable" '! tr "\0" "\n" <"$prefix/bin/icl-sweep" | grep -qxF "$src"'

work=$tmp/work report=$tmp/report
mkdir -p "$work" "$report"
chmod 777 "$work" "$report"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  if command -v setpriv >/dev/null; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  else as_user=(runuser -u nobody --); fi
  check "the source tree is not writable by the test user" '! "${as_user[@]}" test -w "$src"'
fi
# The unprivileged user's environment: no root allowances for Open MPI, its own HOME and TMPDIR.
user_env=(env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM HOME="$work" TMPDIR="$work" MPLCONFIGDIR="$work/.mpl")
check "icl-sweep run, the installed quickstart by default (from $work)" \
  '(cd "$work" && "${as_user[@]}" "${user_env[@]}" mpiexec -n 1 "$prefix/bin/icl-sweep" run --steps 20 --warmup 5 --batch 32 \
     --eval_tasks 100 --quiet >"$tmp/run.log" 2>&1) || { tail -20 "$tmp/run.log"; false; }'
check "its output, quickstart.h5, in the working directory" '[ -s "$work/quickstart.h5" ]'
check "icl-sweep status on it" '"${as_user[@]}" "${user_env[@]}" "$prefix/bin/icl-sweep" status "$work/quickstart.h5" | grep -q "(complete"'
check "icl-report (from $report)" \
  '(cd "$report" && "${as_user[@]}" "${user_env[@]}" "$prefix/bin/icl-report" "$work/quickstart.h5" -o "$report/out" --quiet \
     >"$tmp/report.log" 2>&1) || { tail -20 "$tmp/report.log"; false; }'
check "the report's page and tables" '[ -s "$report/out/index.html" ] && ls "$report"/out/*.csv >/dev/null 2>&1'
# The installed package itself (what the tools import): a notebook's import, with PYTHONPATH to P only.
check "import icl_sweep from P/share/icl-sweep/python: load() a DataFrame (from $report)" \
  '(cd "$report" && "${as_user[@]}" "${user_env[@]}" PYTHONPATH="$prefix/share/icl-sweep/python" \
     "$("$prefix/libexec/icl-sweep/find-python" numpy h5py pandas)" -c "import icl_sweep, pandas, sys
assert icl_sweep.__file__.startswith(sys.argv[2]), icl_sweep.__file__
assert isinstance(icl_sweep.load(sys.argv[1]), pandas.DataFrame)" "$work/quickstart.h5" "$prefix" >"$tmp/import.log" 2>&1) \
   || { tail -5 "$tmp/import.log"; false; }'
check "icl-job writes a Slurm script from the installed templates" \
  '"${as_user[@]}" "${user_env[@]}" "$prefix/bin/icl-job" --cluster slurm --spec "$prefix/share/icl-sweep/presets/quickstart.ini" \
     --out "$work/q.h5" -o "$work/job.sbatch" >/dev/null 2>&1 && grep -qF "$prefix/bin/icl-sweep" "$work/job.sbatch"'
echo "(a)+(b) $(( $(date +%s) - t0 )) s"
exit $fail
