#!/usr/bin/env bash
# The Python package installed offline with pip (docs/install.md, "The Python package"), then used from
# another directory with no PYTHONPATH, so nothing can come from the source tree:
#  (a) a venv of the Python that has numpy, h5py, pandas and matplotlib (--system-site-packages):
#      pip install --no-build-isolation --no-deps --no-index; `import icl_sweep` resolves into the venv,
#      load() gives a DataFrame, the entry points icl-report, icl-halving-check, icl-lu-theory answer --help,
#      icl-report writes a report of a synthetic sweep (tests/test_summaries.py --write), and
#      tests/test_summaries.py passes against the installed package;
#  (b) pip install --target DIR (no venv, no root needed): the entry points run with PYTHONPATH=DIR;
#  (c) another python3 than that one (the first on PATH, e.g. pyenv's), if there is one of the same
#      version: its own venv, the dependencies made present by a .pth line to the first one's site
#      directory (as a site's module would provide them), the same install and checks as (a).
# The install builds from a copy of pyproject.toml and tools/python: pip builds in the tree it is given.
# Usage: test_pip_install.sh TESTS_DIR
set -u
src=$(cd "$1" && pwd)
root=$src/..
. "$src/lib.sh"
need_python numpy h5py pandas matplotlib
dir=$(mktemp -d /tmp/icl-pip.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src/tools/python" "$dir/elsewhere"
cp "$root/pyproject.toml" "$dir/src/"
cp -r "$root/tools/python/icl_sweep" "$dir/src/tools/python/"
rm -rf "$dir/src/tools/python/icl_sweep/__pycache__"
export MPLCONFIGDIR=$dir/mpl PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
unset PYTHONPATH
"$py" "$src/test_summaries.py" --write "$dir/grid.h5" || fail "synthetic sweep"

# check_install NAME PYTHON [BIN_DIR [PYTHONPATH]]: what an installed package must do, from $dir/elsewhere.
check_install() {
  local name=$1 python=$2 bin=${3:-$(dirname "$2")} path=${4:-} out
  local envs=(env ${path:+PYTHONPATH=$path})
  cd "$dir/elsewhere" || return
  out=$("${envs[@]}" "$python" -c 'import icl_sweep, sys; print(icl_sweep.__file__)' 2>&1)
  [[ $out == "$dir"/$name/* ]] && ok "$name: import icl_sweep from the install ($out)" || fail "$name: import: $out"
  out=$("${envs[@]}" "$python" -c 'import icl_sweep, pandas, sys; df = icl_sweep.load(sys.argv[1])
assert isinstance(df, pandas.DataFrame) and len(df) == 30 and list(df.point) == list(range(30)), df
print(df.shape)' "$dir/grid.h5" 2>&1) && ok "$name: load() a DataFrame $out" || fail "$name: load(): $out"
  for tool in icl-report icl-halving-check icl-lu-theory; do
    out=$("${envs[@]}" "$bin/$tool" --help 2>&1) && grep -q "^usage: $tool" <<<"$out" \
      && ok "$name: $tool --help from the entry point" || fail "$name: $tool --help: $out"
  done
  head -1 "$bin/icl-report" | grep -qF "#!$(dirname "$python")" && ok "$name: icl-report runs $(dirname "$python")'s Python" \
    || fail "$name: icl-report's interpreter: $(head -1 "$bin/icl-report")"
  out=$("${envs[@]}" "$bin/icl-report" "$dir/grid.h5" -o "$dir/elsewhere/$name-report" 2>&1) \
    && grep -q "all diverged" <<<"$out" && [ -s "$dir/elsewhere/$name-report/summary.csv" ] \
    && [ -s "$dir/elsewhere/$name-report/index.html" ] && ok "$name: icl-report on a sweep" || fail "$name: icl-report: $out"
  cd "$root" || return
}

# (a) a venv over the Python with the dependencies.
if "$py" -m venv --system-site-packages "$dir/venv" >"$dir/venv.log" 2>&1; then
  "$dir/venv/bin/python" -m pip install --no-build-isolation --no-deps "$dir/src" >"$dir/pip-venv.log" 2>&1 \
    && ok "pip install --no-build-isolation --no-deps (offline) into a venv of $py" \
    || { fail "pip install into a venv: $(tail -20 "$dir/pip-venv.log")"; }
  check_install venv "$dir/venv/bin/python"
  (cd "$dir/elsewhere" && ICL_SWEEP_INSTALLED=1 "$dir/venv/bin/python" "$src/test_summaries.py" >"$dir/unit.log" 2>&1) \
    && ok "tests/test_summaries.py against the installed package" || fail "test_summaries installed: $(tail -20 "$dir/unit.log")"
else
  fail "$py -m venv (Debian: python3-venv): $(tail -5 "$dir/venv.log")"
fi

# (b) pip install --target: no venv.
"$py" -m pip install --no-build-isolation --no-deps --target "$dir/target" "$dir/src" >"$dir/pip-target.log" 2>&1 \
  && ok "pip install --target (offline) with $py" || fail "pip install --target: $(tail -20 "$dir/pip-target.log")"
check_install target "$py" "$dir/target/bin" "$dir/target"

# (c) another python3, of the same version, whose site has none of the dependencies.
other=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
same_version='import sys; print("%d.%d" % sys.version_info[:2])'
if [ -n "$other" ] && [ "$(readlink -f "$other")" != "$(readlink -f "$py")" ] \
   && [ "$("$other" -c "$same_version")" = "$("$py" -c "$same_version")" ] && "$other" -m venv "$dir/other" >/dev/null 2>&1; then
  site=$("$py" -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')
  "$dir/other/bin/python" -c 'import numpy' 2>/dev/null && fail "$other's venv already has numpy"
  echo "$site" > "$("$dir/other/bin/python" -c 'import site; print(site.getsitepackages()[0])')/icl-deps.pth"
  "$dir/other/bin/python" -m pip install --no-build-isolation --no-deps "$dir/src" >"$dir/pip-other.log" 2>&1 \
    && ok "pip install into a venv of $other (not $py)" || fail "pip install with $other: $(tail -20 "$dir/pip-other.log")"
  check_install other "$dir/other/bin/python"
else
  echo "skip (c): no other python3 of $py's version on PATH (python3 is ${other:-none})"
fi

[ $failures -eq 0 ] && echo "all pip install checks passed" || echo "$failures pip install check(s) failed"
[ $failures -eq 0 ]
