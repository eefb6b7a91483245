#pragma once
// Rank 0's monitor while a sweep runs: a thread that prints a progress line every `progress_every`
// seconds and merges the logs into OUT.h5 every `merge_every` seconds, so a running sweep can be
// reported.  It only reads the logs and rewrites OUT.h5: it never calls MPI, and rank 0's main thread
// does no HDF5 while it runs.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "icl/cli/sweep_output.hpp"

namespace icl::cli {

// Calls `tick` every `every` seconds from a thread of its own until destroyed (every <= 0: never): the
// periodic lines of long commands and the live files.
class Ticker {
 public:
  Ticker(double every, std::function<void()> tick);
  ~Ticker();
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool over_ = false;
  std::thread thread_;
};

// While a long command works on a sweep (merge, verify, repair, status), a line on stderr every `every`
// seconds with the store's work so far (io_stats.hpp), e.g. "icl-sweep merge: working for 10 s: 412000
// log records decoded, 0 rows read, 65536 rows written": a merge of 10^6 points is not silent for 20 s.
class WorkProgress {
 public:
  explicit WorkProgress(const char* command, double every = 10);

 private:
  std::chrono::steady_clock::time_point start_;
  Ticker ticker_;
};

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
