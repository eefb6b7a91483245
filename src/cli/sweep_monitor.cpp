#include "icl/cli/sweep_monitor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "icl/io/io_error.hpp"
#include "icl/io/io_stats.hpp"

namespace icl::cli {

Ticker::Ticker(double every, std::function<void()> tick) {
  if (every <= 0) return;
  thread_ = std::thread([this, every, tick = std::move(tick)] {
    std::unique_lock<std::mutex> lock(mu_);
    // At most a day: a longer wait_for overflows the clock and returns at once (a busy loop that also
    // starves the destructor of the mutex: the run never ends).
    const auto period = std::chrono::duration<double>(std::min(every, 86400.0));
    while (!wake_.wait_for(lock, period, [this] { return over_; })) tick();
  });
}

Ticker::~Ticker() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> guard(mu_);
    over_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

WorkProgress::WorkProgress(const char* command, double every)
    : start_(std::chrono::steady_clock::now()), ticker_(every, [this, command] {
        const io::IoStats& s = io::io_stats();
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        std::fprintf(stderr, "icl-sweep %s: working for %s: %lld log records decoded, %lld rows read, %lld rows written\n", command,
                     duration_text(secs).c_str(), static_cast<long long>(s.records_decoded.load()),
                     static_cast<long long>(s.rows_read.load()), static_cast<long long>(s.rows_written.load()));
      }) {}

std::string rate_text(double per_second, const char* what) {
  char b[64];
  if (!std::isfinite(per_second)) std::snprintf(b, sizeof b, "? %s/s", what);   // no time elapsed, or none measured
  else if (per_second >= 100) std::snprintf(b, sizeof b, "%.0f %s/s", per_second, what);
  else if (per_second >= 0.1 || per_second <= 0) std::snprintf(b, sizeof b, "%.3g %s/s", per_second, what);
  else if (per_second * 60 >= 0.1) std::snprintf(b, sizeof b, "%.3g %s/min", per_second * 60, what);
  else std::snprintf(b, sizeof b, "%.3g %s/h", per_second * 3600, what);
  return b;
}

std::string duration_text(double s) {
  char b[64];
  if (!(s >= 0) || !std::isfinite(s)) return "unknown";   // NaN, infinite or negative: a rate of 0 or garbage
  if (s < 120) std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s < 7200) std::snprintf(b, sizeof b, "%.0f min", s / 60);
  else if (s < 172800) std::snprintf(b, sizeof b, "%.0f h %02.0f min", std::floor(s / 3600), std::floor(std::fmod(s, 3600) / 60));
  else if (s < 1e4 * 86400) std::snprintf(b, sizeof b, "%.1f days", s / 86400);
  else std::snprintf(b, sizeof b, "%.3g days", s / 86400);   // not a 300-digit number
  return b;
}

void Progress::print(int64_t done, Clock::time_point tick) const {
  const double secs = std::chrono::duration<double>(tick - start_).count();
  const double rate = (done - done_before_) / secs;
  const double left = static_cast<double>(total_) - done;
  std::printf("icl-sweep: %lld/%lld points done, %s, ETA %s\n", static_cast<long long>(done), static_cast<long long>(total_),
              rate_text(rate, "points").c_str(), rate > 0 ? duration_text(left / rate).c_str() : "unknown");
  std::fflush(stdout);
}

SweepMonitor::SweepMonitor(const SweepOutput& output, const io::Attributes& extra, int64_t done_before, double progress_every,
                           double merge_every)
    : output_(output), extra_(extra), progress_every_(progress_every),
      merge_every_(merge_every) {
  if (progress_every_ > 0 || merge_every_ > 0) thread_ = std::thread([this, done_before] { run(done_before); });
}

void SweepMonitor::stop() {
  over_.store(true);
  if (thread_.joinable()) thread_.join();
}

void SweepMonitor::run(int64_t done_before) {
  using Clock = Progress::Clock;
  const auto start = Clock::now();
  const Progress progress(output_.points(), done_before, start);
  auto last_print = start, last_merge = start;
  double merge_gap = merge_every_;
  while (!over_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto tick = Clock::now();
    const bool print = progress_every_ > 0 && std::chrono::duration<double>(tick - last_print).count() >= progress_every_;
    const bool merge = merge_every_ > 0 && std::chrono::duration<double>(tick - last_merge).count() >= merge_gap;
    if (!print && !merge) continue;
    if (merge) {
      last_merge = tick;
      // A live merge costs at most ~5% of rank 0's core: huge sweeps merge less often.
      if (output_.merge_live(extra_))
        merge_gap = std::max(merge_every_, 20 * std::chrono::duration<double>(Clock::now() - tick).count());
    }
    if (print) {
      last_print = tick;
      int64_t done = -1;
      try {
        done = output_.index(false).done();   // reads only what the logs gained since the last look
      } catch (const io::IoError& e) {
        std::fprintf(stderr, "icl-sweep: warning: %s\n", e.what());
      }
      if (done >= 0) progress.print(done, tick);
    }
  }
}

}  // namespace icl::cli
