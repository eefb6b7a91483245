// icl-sweep status OUT.h5: progress of a sweep, also while it runs (OUT.h5's finished rows plus the
// point logs in OUT.h5.points/, every record and row verified).  Exit 0 when readable, 2 when OUT.h5
// and its logs are missing.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "icl/cli/cli.hpp"
#include "icl/cli/sweep_output.hpp"
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
  std::string state = "unknown", started;
  std::vector<uint64_t> hashes;   // the stored spec hash, and the hash of the stored spec (they differ if damaged)
  std::vector<Result> rows;
  io::Verification check;
  try {
    rows = io::read_results_file(out, &check);
    const io::File f = io::File::open_read(out);
    total = check.n_points;
    state = io::has_attr(f, "/", "sweep_state") ? io::get_attr_string(f, "/", "sweep_state") : "single point";
    if (io::has_attr(f, "/", "started_utc")) started = io::get_attr_string(f, "/", "started_utc");
    if (io::has_attr(f, "/", "spec_hash")) {
      try {
        hashes.push_back(std::stoull(io::get_attr_string(f, "/", "spec_hash"), nullptr, 16));
      } catch (const std::exception&) {}
      hashes.push_back(sweep::spec_hash(io::get_attr_string(f, "/", "spec")));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "icl-sweep status: cannot read '%s': %s\n", out.c_str(), e.what());
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return kExitUsage;
    std::fprintf(stderr, "icl-sweep status: counting the finished points in %s/ instead\n", dir.c_str());
  }
  for (const std::string& p : check.problems) std::fprintf(stderr, "icl-sweep status: warning: '%s': %s\n", out.c_str(), p.c_str());
  // The logs of the spec the file names (the candidate with more records, should one hash be damaged).
  io::LogScan scan;
  for (uint64_t h : hashes) {
    io::LogScan s = io::scan_point_logs(dir, h);
    if (scan.points.empty() || s.points.size() > scan.points.size()) scan = std::move(s);
  }
  std::vector<const Result*> best(total > 0 ? total : 0, nullptr);
  for (size_t i = 0; i < rows.size() && i < best.size(); ++i)
    if (rows[i].status != Status::pending) best[i] = &rows[i];
  int duplicates = 0;
  std::vector<bool> logged(best.size(), false);
  double first = 1e300, last = 0;
  for (const io::LoggedPoint& p : scan.points) {
    if (p.index < 0 || p.index >= total) continue;
    if (logged[p.index]) ++duplicates;
    logged[p.index] = true;
    if (!best[p.index]) best[p.index] = &p.result;
    first = std::min(first, p.finished_unix);
    last = std::max(last, p.finished_unix);
  }
  std::map<std::string, int> by_status;
  int done = 0, analysis_failed = 0;
  for (const Result* r : best)
    if (r) {
      ++done;
      ++by_status[status_name(r->status)];
      analysis_failed += r->analysis_status == AnalysisStatus::failed;
    }
  const bool running = sweep_running(dir);
  if (!running && (state == "running" || state == "unknown")) state = "not running: stopped or killed; continue with --resume";
  else if (running) state = "running";
  std::printf("sweep       %s (%s%s)\n", out.c_str(), state.c_str(), started.empty() ? "" : (", started " + started).c_str());
  std::printf("done        %d / %s points", done, total >= 0 ? std::to_string(total).c_str() : "?");
  for (const auto& [k, v] : by_status) std::printf("  %s %d", k.c_str(), v);
  if (analysis_failed) std::printf("  (analysis failed %d)", analysis_failed);
  std::printf("\n");
  std::printf("records     %zu in the logs, %d duplicate%s\n", scan.points.size(), duplicates, duplicates == 1 ? "" : "s");
  if (!scan.rungs.empty()) {   // successive halving: checkpoints and pruned points per rung
    std::map<int64_t, std::set<int64_t>> reached;
    std::map<int64_t, int> pruned;
    for (const io::LoggedRung& g : scan.rungs) reached[g.checkpoint.run.steps_done].insert(g.index);
    double seconds = 0;
    for (const Result* r : best)
      if (r) {
        if (r->status == Status::pruned) ++pruned[r->steps_done];
        if (std::isfinite(r->seconds_total)) seconds += r->seconds_total;
      }
    std::printf("rungs      ");
    for (const auto& [step, points] : reached) std::printf(" step %lld: %zu reached, %d pruned;", static_cast<long long>(step), points.size(), pruned[step]);
    std::printf(" %.0f core-seconds in the finished points' legs\n", seconds);
  }
  if (!scan.problems.empty())
    std::printf("unreadable  %zu record(s) (torn by a kill, or damaged): recomputed by the next --resume\n", scan.problems.size());
  if (running && done >= 2 && total > done && last > first) {
    const double rate = (done - 1) / (last - first);
    std::printf("rate        %.3f points/s; ETA %.0f s\n", rate, (total - done) / rate);
  }
  return kExitOk;
}

}  // namespace icl::cli
