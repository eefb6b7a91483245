// Cost of storing a point's results beside its training time: its log record (fdatasync'ed here, the
// worst case) and the point's share of the final HDF5 merge, for the two benchmark configs.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "icl/io/point_log.hpp"
#include "icl/io/results.hpp"
#include "icl/run/options.hpp"
#include "icl/run/run_point.hpp"

using namespace icl;
using Clock = std::chrono::steady_clock;

int main() {
  for (int config = 1; config <= 2; ++config) {
    Point p;
    const std::vector<std::pair<std::string, std::string>> s =
        config == 1 ? std::vector<std::pair<std::string, std::string>>{{"d", "5"}, {"n", "20"}, {"layers", "3"}, {"batch", "1000"}, {"steps", "2000"}, {"clip", "1"}}
                    : std::vector<std::pair<std::string, std::string>>{{"d", "10"}, {"n", "20"}, {"layers", "7"}, {"batch", "2048"}, {"steps", "200"}, {"lr", "1e-4"}, {"init_scale", "0.02"}, {"clip", "1"}};
    for (const auto& [k, v] : s) point_set(p, k, v);
    const Result r = run_point(p);
    const std::string dir = "/tmp/icl_bench_output_" + std::to_string(::getpid());
    const int reps = 20;
    auto t0 = Clock::now();
    {
      io::PointLog log(dir + ".log");
      for (int i = 0; i < reps; ++i) {
        log.append(i, 1, r);
        log.sync();
      }
    }
    const double record = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    t0 = Clock::now();
    for (int i = 0; i < reps; ++i) {
      std::remove((dir + ".h5").c_str());
      io::write_results_file(dir + ".h5", io::MemoryRows({p}, {r}), point_to_text(p));
    }
    const double merge = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    std::remove((dir + ".log").c_str());
    std::remove((dir + ".h5").c_str());
    std::printf("output config=%d train_s=%.3f record_ms=%.3f merge_ms=%.3f share=%.5f\n", config, r.seconds_train,
                record * 1e3, merge * 1e3, (record + merge) / r.seconds_train);
  }
}
