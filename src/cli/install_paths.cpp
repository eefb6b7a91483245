// Data files relative to the executable (include/icl/cli/install_paths.hpp).
#include "icl/cli/install_paths.hpp"

#include <limits.h>
#include <unistd.h>

namespace icl::cli {

std::string executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  const std::string exe(buf, static_cast<size_t>(n));
  const size_t slash = exe.find_last_of('/');
  return slash == std::string::npos ? "" : exe.substr(0, slash == 0 ? 1 : slash);
}

std::vector<std::string> preset_candidates(const std::string& name) {
  const std::string dir = executable_dir();
  if (dir.empty()) return {};
  const size_t slash = dir.find_last_of('/');
  const std::string prefix = slash == 0 || slash == std::string::npos ? "" : dir.substr(0, slash);
  return {prefix + "/share/icl-sweep/presets/" + name,   // installed: P/bin/icl-sweep
          dir + "/share/icl-sweep/presets/" + name};     // build tree: BUILD/icl-sweep
}

}  // namespace icl::cli
