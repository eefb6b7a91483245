// icl-sweep status OUT.h5 [--watch [SECONDS]]: progress of a sweep, also while it runs (OUT.h5's intact
// finished rows plus the point logs in OUT.h5.points/, every record and row verified), and the points in
// flight (live_view.hpp).  One pass over the file and one over the logs, keeping a few bytes a point.
// Exit 0 when readable, 2 when OUT.h5 and its logs are missing.  --watch repeats the view until no run
// holds the sweep.
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <map>
#include <string>

#include "icl/cli/cli.hpp"
#include "icl/cli/live_view.hpp"
#include "icl/cli/spec_file.hpp"
#include "icl/cli/stop_merge.hpp"
#include "icl/cli/sweep_monitor.hpp"
#include "icl/cli/sweep_output.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/point_log.hpp"
#include "icl/io/results.hpp"
#include "icl/sweep/spec_keys.hpp"

namespace icl::cli {
namespace {

// What status keeps of a point: the status of its best row or record.
struct Seen {
  int8_t rank = 5;   // record_rank; 5 = nothing
  Status status = Status::pending;
  bool analysis_failed = false;
  double seconds = 0;
  int64_t steps = -1;
};

void note(Seen& s, const Result& r) {
  const int rank = record_rank(r);
  if (rank >= s.rank) return;
  s = {static_cast<int8_t>(rank), r.status, r.analysis_status == AnalysisStatus::failed,
       std::isfinite(r.seconds_total) ? r.seconds_total : 0, r.steps_done};
}

struct LogView {
  int64_t records = 0, duplicates = 0;
  double first = 1e300, last = 0;
  // The records of the latest run (finished at or after `since`, its started_utc): the rate of a resumed
  // sweep, not diluted by the hours it lay stopped.
  double since = 0, recent_first = 1e300, recent_last = 0;
  int64_t recent = 0;
  std::map<int64_t, std::vector<bool>> reached;   // rung step -> points that reached it
  io::LogStats stats;
};

LogView scan(const std::string& dir, uint64_t hash, std::vector<Seen>& seen, std::vector<bool>& logged, double since) {
  LogView v;
  v.since = since;
  const auto total = static_cast<int64_t>(seen.size());
  v.stats = io::visit_point_logs(
      dir, hash,
      [&](io::LoggedPoint&& p, const io::RecordRef&) {
        ++v.records;
        if (p.index < 0 || p.index >= total) return;
        const auto i = static_cast<size_t>(p.index);
        v.duplicates += logged[i];
        logged[i] = true;
        note(seen[i], p.result);
        v.first = std::min(v.first, p.finished_unix);
        v.last = std::max(v.last, p.finished_unix);
        if (since > 0 && p.finished_unix >= since) {
          ++v.recent;
          v.recent_first = std::min(v.recent_first, p.finished_unix);
          v.recent_last = std::max(v.recent_last, p.finished_unix);
        }
      },
      [&](io::LoggedRung&& g, const io::RecordRef&) {
        if (g.index < 0 || g.index >= total) return;
        auto& at = v.reached[g.checkpoint.run.steps_done];
        at.resize(seen.size());
        at[static_cast<size_t>(g.index)] = true;
      });
  return v;
}


// "2026-11-25T20:30:36Z" (started_utc) as unix seconds; 0 if unreadable.
double started_unix(const std::string& utc) {
  std::tm t{};
  if (::strptime(utc.c_str(), "%Y-%m-%dT%H:%M:%SZ", &t) == nullptr) return 0;
  const time_t s = ::timegm(&t);
  return s > 0 ? static_cast<double>(s) : 0;
}

// The points in flight (live_view.hpp), at most `shown` of them.
void print_in_flight(const std::string& dir, size_t shown) {
  const std::vector<InFlight> live = points_in_flight(dir);
  if (live.empty()) return;
  std::printf("in flight   %zu point(s)%s\n", live.size(), live.size() > shown ? ", the first shown" : "");
  for (size_t k = 0; k < std::min(shown, live.size()); ++k) {
    const InFlight& f = live[k];
    std::printf("  point %-8lld %-8s step %lld / %lld (%.0f%%)  test loss %.4g  (%.0f s ago)\n", static_cast<long long>(f.point),
                f.stage.c_str(), static_cast<long long>(f.steps_done), static_cast<long long>(f.steps),
                100.0 * static_cast<double>(f.steps_done) / static_cast<double>(std::max<int64_t>(f.steps, 1)), f.test_loss, f.age_seconds);
  }
}

// What OUT.h5 says: its intact finished rows, its state, its start and the spec hashes to read logs by.
struct Stored {
  int64_t total = -1;
  std::string state = "unknown", started;
  std::vector<uint64_t> hashes;   // the stored spec hash, and the hash of the stored spec (they differ if damaged)
  std::vector<int64_t> rungs;     // successive halving's, from the stored spec (empty: none, or unreadable)
  std::vector<Seen> seen;
  std::vector<std::string> problems;
};

// Fills `s` as far as the file allows; throws when it cannot be read.
void read_stored(const std::string& out, Stored* s) {
  const io::Verification check = io::verify_results_file(out);
  s->problems = check.problems;
  if (check.n_points < 0) throw io::IoError(check.problems.empty() ? "unreadable" : check.problems[0]);
  s->total = check.n_points;
  s->seen.resize(static_cast<size_t>(s->total));
  const std::vector<std::string> status = io::read_text_column(out, "/points/status");
  const std::vector<std::string> analysis = io::read_text_column(out, "/points/analysis_status");
  const io::File f = io::File::open_read(out);
  std::vector<double> steps(s->seen.size()), seconds(s->seen.size());
  io::Rows::open(f, "/metrics/steps_done").read(0, steps.size(), steps.data());
  io::Rows::open(f, "/metrics/wall_seconds").read(0, seconds.size(), seconds.data());
  for (size_t k = 0; k < s->seen.size(); ++k) {
    if (!check.row_intact[k] || status[k] == status_name(Status::pending)) continue;
    Result r;
    for (Status st : {Status::ok, Status::diverged, Status::failed, Status::pruned})
      if (status[k] == status_name(st)) r.status = st;
    r.analysis_status = analysis[k] == analysis_status_name(AnalysisStatus::failed) ? AnalysisStatus::failed : AnalysisStatus::ok;
    r.seconds_total = seconds[k];
    r.steps_done = std::isnan(steps[k]) ? -1 : static_cast<int64_t>(steps[k]);
    note(s->seen[k], r);
  }
  s->state = io::has_attr(f, "/", "sweep_state") ? io::get_attr_string(f, "/", "sweep_state") : "single point";
  if (io::has_attr(f, "/", "started_utc")) s->started = io::get_attr_string(f, "/", "started_utc");
  if (io::has_attr(f, "/", "spec_hash")) {
    try {
      s->hashes.push_back(std::stoull(io::get_attr_string(f, "/", "spec_hash"), nullptr, 16));
    } catch (const std::exception&) {}
    const std::string text = io::get_attr_string(f, "/", "spec");
    const uint64_t of_spec = sweep::spec_hash(text);
    if (s->hashes.empty() || s->hashes[0] != of_spec) s->hashes.push_back(of_spec);
    sweep::Spec spec;
    std::vector<std::string> errors;
    if (parse_spec(text, out + ":/spec", {}, &spec, &errors)) s->rungs = spec.halving.rungs;
  }
}

// The logs of the spec the file names (the candidate with more records, should one hash be damaged);
// `seen` becomes the file's points updated by those logs.
LogView read_logs(const std::string& dir, const Stored& stored, std::vector<Seen>* seen) {
  *seen = stored.seen;
  LogView logs;
  for (uint64_t h : stored.hashes) {
    std::vector<Seen> s = stored.seen;
    std::vector<bool> logged(s.size(), false);
    LogView v = scan(dir, h, s, logged, started_unix(stored.started));
    if (h == stored.hashes[0] || v.records > logs.records) {
      logs = std::move(v);
      *seen = std::move(s);
    }
  }
  return logs;
}

// The state line's words: the file's state, corrected by whether a run holds the sweep now.
std::string state_now(const std::string& stored, bool running, const std::string& dir) {
  if (running) return merge_in_progress(dir) ? "finishing: the merge after a stopped run" : "running";
  if (stored == "running" || stored == "unknown") return "not running: stopped or killed; continue with --resume";
  if (stored == "incomplete") return "incomplete, not running: continue with --resume";
  return stored;
}

// Successive halving: per rung, the points that reached it and those pruned there.  A point reached a rung
// when the logs hold its checkpoint there, or when it finished at or past its step (a row of OUT.h5: the
// logs of a sweep resumed without them hold only the later runs' checkpoints).
void print_rungs(const LogView& logs, const std::vector<Seen>& seen, const std::vector<int64_t>& rungs, double seconds) {
  std::map<int64_t, std::vector<bool>> reached = logs.reached;
  for (int64_t step : rungs) reached[step].resize(seen.size());
  if (reached.empty()) return;
  std::printf("rungs      ");
  for (auto& [step, points] : reached) {
    points.resize(seen.size());
    int64_t pruned = 0;   // points pruned at this rung: their pruned record stops at its step
    for (size_t i = 0; i < seen.size(); ++i) {
      const Seen& p = seen[i];
      if (p.rank < 5 && p.steps >= step) points[i] = true;
      pruned += p.status == Status::pruned && p.steps == step;
    }
    const auto reached_count = std::count(points.begin(), points.end(), true);
    std::printf(" step %lld: %lld reached, %lld pruned;", static_cast<long long>(step), static_cast<long long>(reached_count),
                static_cast<long long>(pruned));
  }
  std::printf(" %.0f core-seconds in the finished points' legs\n", seconds);
}

// The rate of the latest run, once it finished two points (a resumed sweep's earlier runs and the time
// between them would dilute it: 0.19 points/s shown for 1.8); over every record if its start is unknown.
void print_rate(const LogView& logs, int64_t done, int64_t total) {
  const bool latest = logs.since > 0;
  const int64_t n = latest ? logs.recent : done;
  const double span = latest ? logs.recent_last - logs.recent_first : logs.last - logs.first;
  if (n < 2 || total <= done || span <= 0) return;
  const double rate = static_cast<double>(n - 1) / span;
  std::printf("rate        %s; ETA %s\n", rate_text(rate, "points").c_str(), duration_text(static_cast<double>(total - done) / rate).c_str());
}

// One view of the sweep; *running tells whether a run (or its merge) holds the lock.
int print_status(const std::string& out, bool* running) {
  const std::string dir = out + ".points";
  Stored stored;
  try {
    read_stored(out, &stored);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "icl-sweep status: cannot read '%s': %s\n", out.c_str(), e.what());
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return kExitUsage;
    std::fprintf(stderr, "icl-sweep status: counting the finished points in %s/ instead\n", dir.c_str());
  }
  for (const std::string& p : stored.problems) std::fprintf(stderr, "icl-sweep status: warning: '%s': %s\n", out.c_str(), p.c_str());
  std::vector<Seen> seen;
  const LogView logs = read_logs(dir, stored, &seen);
  std::map<std::string, int64_t> by_status;
  int64_t done = 0, analysis_failed = 0;
  double seconds = 0;
  for (const Seen& s : seen)
    if (s.rank < 5) {
      ++done;
      ++by_status[status_name(s.status)];
      analysis_failed += s.analysis_failed;
      seconds += s.seconds;
    }
  *running = sweep_running(dir);
  const std::string& started = stored.started;
  std::printf("sweep       %s (%s%s)\n", out.c_str(), state_now(stored.state, *running, dir).c_str(),
              started.empty() ? "" : (", started " + started).c_str());
  std::printf("done        %lld / %s points", static_cast<long long>(done), stored.total >= 0 ? std::to_string(stored.total).c_str() : "?");
  for (const auto& [k, v] : by_status) std::printf("  %s %lld", k.c_str(), static_cast<long long>(v));
  if (analysis_failed) std::printf("  (analysis failed %lld)", static_cast<long long>(analysis_failed));
  std::printf("\n");
  std::printf("records     %lld in the logs, %lld duplicate%s\n", static_cast<long long>(logs.records), static_cast<long long>(logs.duplicates),
              logs.duplicates == 1 ? "" : "s");
  print_rungs(logs, seen, stored.rungs, seconds);
  print_other_specs(logs.stats.other_specs);
  if (!logs.stats.problems.empty())
    std::printf("unreadable  %zu record(s) (torn by a kill, or damaged): recomputed by the next --resume\n", logs.stats.problems.size());
  if (*running) print_rate(logs, done, stored.total);
  if (*running && !merge_in_progress(dir)) print_in_flight(dir, 20);   // after a kill -9, the merge: no point is in flight
  return kExitOk;
}

}  // namespace

int status_main(int argc, char** argv) {
  const char* usage = "usage: icl-sweep status OUT.h5 [--watch [SECONDS]]\n"
                      "  --watch: a view every SECONDS (default 10) while the sweep runs, the points in flight included\n";
  std::string out;
  double watch = 0;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      return kExitOk;
    }
    if (a == "--watch") {
      watch = 10;
      char* end = nullptr;
      const double s = k + 1 < argc ? std::strtod(argv[k + 1], &end) : 0;
      if (end && end != argv[k + 1] && *end == '\0') {   // --watch SECONDS
        if (!(s >= 0.5 && s <= 86400)) {
          std::fprintf(stderr, "icl-sweep status: --watch '%s': the seconds between views must be from 0.5 to 86400\n", argv[k + 1]);
          return kExitUsage;
        }
        watch = s;
        ++k;
      }
    } else if (out.empty() && a[0] != '-') {
      out = a;
    } else {
      std::fprintf(stderr, "icl-sweep status: unexpected argument '%s'\n%s", a.c_str(), usage);
      return kExitUsage;
    }
  }
  if (out.empty()) {
    std::fputs(usage, stderr);
    return kExitUsage;
  }
  bool running = false;
  if (watch <= 0) return print_status(out, &running);
  const bool terminal = ::isatty(STDOUT_FILENO);
  for (;;) {
    if (terminal) std::printf("\033[H\033[2J");
    std::printf("%s\n", io::utc_now().c_str());
    const int code = print_status(out, &running);
    std::fflush(stdout);
    if (code != kExitOk || !running) return code;
    std::this_thread::sleep_for(std::chrono::duration<double>(watch));
    if (!terminal) std::printf("\n");
  }
}

}  // namespace icl::cli
