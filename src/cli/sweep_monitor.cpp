#include "icl/cli/sweep_monitor.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace icl::cli {

void Progress::print(int done, Clock::time_point tick) const {
  const double secs = std::chrono::duration<double>(tick - start_).count();
  const double rate = (done - done_before_) / secs;
  const double left = static_cast<double>(total_) - done;
  std::printf("icl-sweep: %d/%zu points done, %.2f points/s, ETA %s\n", done, total_, rate,
              rate > 0 ? (std::to_string(static_cast<long long>(left / rate)) + " s").c_str() : "unknown");
  std::fflush(stdout);
}

SweepMonitor::SweepMonitor(const SweepOutput& output, bool retry_failed, const io::Attributes& extra, int done_before,
                           double progress_every, double merge_every)
    : output_(output), retry_failed_(retry_failed), extra_(extra), progress_every_(progress_every),
      merge_every_(merge_every) {
  if (progress_every_ > 0 || merge_every_ > 0) thread_ = std::thread([this, done_before] { run(done_before); });
}

void SweepMonitor::stop() {
  over_.store(true);
  if (thread_.joinable()) thread_.join();
}

void SweepMonitor::run(int done_before) {
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
    int done = 0;
    const std::vector<Result> so_far = output_.gather(retry_failed_, &done);
    if (merge) {
      last_merge = tick;
      // A live merge costs at most ~5% of rank 0's core: huge sweeps merge less often.
      if (output_.merge_live(so_far, extra_))
        merge_gap = std::max(merge_every_, 20 * std::chrono::duration<double>(Clock::now() - tick).count());
    }
    if (print) {
      last_print = tick;
      progress.print(done, tick);
    }
  }
}

}  // namespace icl::cli
