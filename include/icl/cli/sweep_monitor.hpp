#pragma once
// Rank 0's monitor while a sweep runs: a thread that prints a progress line every `progress_every`
// seconds and merges the logs into OUT.h5 every `merge_every` seconds, so a running sweep can be
// reported.  It only reads the logs and rewrites OUT.h5: it never calls MPI, and rank 0's main thread
// does no HDF5 while it runs.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

#include "icl/cli/sweep_output.hpp"

namespace icl::cli {

// "0.00253 points/s" -> "0.152 points/min", "7260 s" -> "2 h 01 min": three significant digits, in the
// units a person reads (a slow sweep's rate is never "0 points/s").
std::string rate_text(double per_second, const char* what);
std::string duration_text(double seconds);

// "icl-sweep: N/M points done, R points/s, ETA S s": the rate counts only this run's points.
class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  Progress(int64_t total, int64_t done_before, Clock::time_point start)
      : total_(total), done_before_(done_before), start_(start) {}
  void print(int64_t done, Clock::time_point tick) const;

 private:
  int64_t total_;
  int64_t done_before_;
  Clock::time_point start_;
};

class SweepMonitor {
 public:
  // Starts the thread unless both periods are 0 (= never); `done_before` points finished in earlier runs.
  SweepMonitor(const SweepOutput& output, const io::Attributes& extra, int64_t done_before, double progress_every,
               double merge_every);
  ~SweepMonitor() { stop(); }
  SweepMonitor(const SweepMonitor&) = delete;
  SweepMonitor& operator=(const SweepMonitor&) = delete;
  void stop();   // ends and joins the thread

 private:
  void run(int64_t done_before);

  const SweepOutput& output_;
  const io::Attributes extra_;
  const double progress_every_, merge_every_;
  std::atomic<bool> over_{false};
  std::thread thread_;
};

}  // namespace icl::cli
