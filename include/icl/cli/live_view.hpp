#pragma once
// The points in flight, for `icl-sweep status --watch`.  Each process of a sweep keeps one small file
// beside its point log, OUT.h5.points/<log>.live, one fixed-size line rewritten in place (no new file,
// no rename: a metadata operation per rank and period would load a parallel file system) every `every`
// seconds by a thread of its own:
//   "<point> <steps done> <steps> <test loss at the latest evaluation> <train|analyse|idle> <unix time> <every>"
// Advisory: no merge, resume, verify or loader reads it; the process removes it when it ends, and a
// reader ignores a file not rewritten for three of its periods (a killed process leaves it behind).
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "icl/cli/sweep_monitor.hpp"
#include "icl/train/train.hpp"

namespace icl::cli {

class LiveFile {
 public:
  // every <= 0: no file, no thread (begin still returns a state to write into).
  LiveFile(const std::string& log_path, double every);
  ~LiveFile();
  LiveFile(const LiveFile&) = delete;
  LiveFile& operator=(const LiveFile&) = delete;
  LiveTraining* begin(int64_t point, int64_t steps);   // the point now trained: pass the state to run_point
  void end();                                          // no point in flight

 private:
  void write_line();

  std::string path_;
  double every_;
  int fd_ = -1;
  LiveTraining live_;
  std::atomic<int64_t> point_{-1}, steps_{0};
  std::unique_ptr<Ticker> ticker_;   // last: stopped first
};

struct InFlight {
  int64_t point = -1, steps_done = 0, steps = 0;
  double test_loss = 0, age_seconds = 0;
  std::string stage;
};

// The points the fresh .live files of `dir` train or analyse, by point index.
std::vector<InFlight> points_in_flight(const std::string& dir);

// Removes the .live files of `dir`: those of processes that ended, for a caller that holds the sweep's lock
// before its own processes start (a killed run's would show its points in flight in the next run's status).
void remove_live_files(const std::string& dir);

}  // namespace icl::cli
