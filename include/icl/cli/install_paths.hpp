#pragma once
// Where the running icl-sweep finds its data files, relative to the executable itself (no source path is
// compiled in): installed, P/bin/icl-sweep reads P/share/icl-sweep; in a build tree, BUILD/icl-sweep reads
// BUILD/share/icl-sweep, which CMake links to the source tree's files at configure time.
#include <string>
#include <vector>

namespace icl::cli {

// The directory holding the running executable (/proc/self/exe, symbolic links resolved); "" if unknown.
std::string executable_dir();

// Candidate locations of a preset file NAME (e.g. "quickstart.ini"), most specific first: the installed
// tree's share/icl-sweep/presets, then the build tree's.  Existing or not.
std::vector<std::string> preset_candidates(const std::string& name);

}  // namespace icl::cli
