// icl-sweep status OUT.h5: progress of a sweep, also while it runs (the plan in OUT.h5 plus the point
// logs in OUT.h5.points/, every record verified).  Exit 0 when readable, 2 when OUT.h5 and its logs are missing.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "icl/cli/cli.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/point_log.hpp"

namespace icl::cli {

int status_main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fprintf(argc == 2 ? stdout : stderr, "usage: icl-sweep status OUT.h5\n");
    return argc == 2 ? kExitOk : kExitUsage;
  }
  const std::string out = argv[1], dir = out + ".points";
  int64_t total = -1;
  std::string state = "unknown", hash_text, started;
  try {
    const io::File f = io::File::open_read(out);
    total = io::get_attr_int64(f, "/", "n_points");
    state = io::has_attr(f, "/", "sweep_state") ? io::get_attr_string(f, "/", "sweep_state") : "single point";
    if (io::has_attr(f, "/", "spec_hash")) hash_text = io::get_attr_string(f, "/", "spec_hash");
    if (io::has_attr(f, "/", "started_utc")) started = io::get_attr_string(f, "/", "started_utc");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "icl-sweep status: cannot read '%s': %s\n", out.c_str(), e.what());
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return kExitUsage;
    std::fprintf(stderr, "icl-sweep status: counting the finished points in %s/ instead\n", dir.c_str());
  }
  const uint64_t hash = hash_text.empty() ? 0 : std::stoull(hash_text, nullptr, 16);
  std::map<std::string, int> by_status;
  int corrupt = 0, records = 0, duplicates = 0;
  double first = 1e300, last = 0;
  if (!hash_text.empty()) {
    const io::LogScan scan = io::scan_point_logs(dir, hash);
    std::vector<bool> seen(total > 0 ? total : 0, false);
    records = static_cast<int>(scan.points.size());
    for (const io::LoggedPoint& p : scan.points) {
      if (p.index >= 0 && p.index < total && seen[p.index]) ++duplicates;
      if (p.index < 0 || p.index >= total || seen[p.index]) continue;
      seen[p.index] = true;
      ++by_status[status_name(p.result.status)];
      first = std::min(first, p.finished_unix);
      last = std::max(last, p.finished_unix);
    }
    corrupt = static_cast<int>(scan.problems.size());
  }
  int done = 0;
  for (const auto& [k, v] : by_status) done += v;
  std::printf("sweep       %s (%s%s)\n", out.c_str(), state.c_str(), started.empty() ? "" : (", started " + started).c_str());
  std::printf("done        %d / %s points", done, total >= 0 ? std::to_string(total).c_str() : "?");
  for (const auto& [k, v] : by_status) std::printf("  %s %d", k.c_str(), v);
  std::printf("\n");
  std::printf("records     %d in the logs, %d duplicate%s\n", records, duplicates, duplicates == 1 ? "" : "s");
  if (corrupt) std::printf("unreadable  %d record(s) (torn by a kill, or damaged): recomputed by the next --resume\n", corrupt);
  if (done >= 2 && total > done && last > first) {
    const double rate = (done - 1) / (last - first);
    std::printf("rate        %.3f points/s; ETA %.0f s if the sweep is running\n", rate, (total - done) / rate);
  }
  return kExitOk;
}

}  // namespace icl::cli
