#!/usr/bin/env bash
# The build's identity names the code it was built from (stored as @git_revision in every output file): the
# revision is written at every build (cmake/BuildInfo.cmake), not only when CMake configured the tree, so a binary
# rebuilt after a commit names the commit, "-dirty" while tracked files differ from it.
#   test_build_info.sh SOURCE_DIR BUILD_DIR ICL_SWEEP CMAKE
set -uo pipefail
src=$1 bld=$2 bin=$3 cmake=$4
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The script on a repository of its own: a commit, a second commit, an edit, then nothing changed.
repo=$tmp/repo hdr=$tmp/out/build_info.hpp
git init -q "$repo" && git -C "$repo" config user.email t@t && git -C "$repo" config user.name t
echo a > "$repo/f" && git -C "$repo" add f && git -C "$repo" commit -qm one
info() {
  "$cmake" -DSOURCE_DIR="$repo" -DTEMPLATE="$src/cmake/build_info.hpp.in" -DOUTPUT="$hdr" -DPROJECT_VERSION=9.9.9 \
    "-DICL_BUILD_FLAGS=flags x" -P "$src/cmake/BuildInfo.cmake"
}
revision() { sed -n 's/.*git_revision = "\(.*\)";/\1/p' "$hdr"; }
info
[ "$(revision)" = "$(git -C "$repo" rev-parse --short=12 HEAD)" ] && ok "the revision of the commit" || fail "revision $(revision)"
grep -q 'version = "9.9.9"' "$hdr" && grep -q 'flags = "flags x"' "$hdr" && ok "version and flags" || fail "version or flags"
echo b > "$repo/f" && git -C "$repo" commit -qam two
info
[ "$(revision)" = "$(git -C "$repo" rev-parse --short=12 HEAD)" ] && ok "a later commit: its revision" || fail "after a commit: $(revision)"
echo c > "$repo/f"
info
[ "$(revision)" = "$(git -C "$repo" rev-parse --short=12 HEAD)-dirty" ] && ok "an edited tracked file: -dirty" || fail "edited: $(revision)"
before=$(stat -c %Y.%y "$hdr")
sleep 1.1
info
[ "$(stat -c %Y.%y "$hdr")" = "$before" ] && ok "nothing changed: the header is not rewritten (nothing recompiles)" \
  || fail "the header was rewritten with the same text"

# This build: every build writes it (the target icl_build_info; not built here, as other tests may be building
# in this tree), and the binary names this tree.
grep -q '/icl_build_info.dir' "$bld/CMakeFiles/TargetDirectories.txt" && ok "the build has the target icl_build_info" \
  || fail "no target icl_build_info in $bld"
if git -C "$src" rev-parse HEAD > /dev/null 2>&1; then
  want=$(git -C "$src" rev-parse --short=12 HEAD)
  [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ] && want=$want-dirty
  got=$("$bin" version | sed -n 's/.*(git \(.*\))$/\1/p')
  [ "$got" = "$want" ] && ok "icl-sweep names this tree's revision ($got)" \
    || fail "icl-sweep names $got, the tree is at $want (was the binary rebuilt after the last commit?)"
fi
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all build-info checks passed"
