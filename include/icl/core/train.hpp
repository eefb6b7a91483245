#pragma once
// The seam between driver and science: train_point(point) -> result.  Pure and deterministic: no I/O,
// no MPI, no clocks in anything but the timing fields.  The same point gives the same bits (timings
// aside) on any machine running the same build.  A run that diverges or throws is returned as data
// (status + message), never as an exception.
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "icl/core/point.hpp"

namespace icl {

enum class Status { ok, diverged, failed, pending, cancelled };
const char* status_name(Status s);

// Loss convention: plain mean squared error over tasks, mean((yhat - y_query)^2), not halved.
struct Result {
  Status status = Status::ok;
  std::string message;                      // why a point diverged or failed
  int64_t steps_done = 0;
  double test_loss = 0;                     // final, on the fixed evaluation set
  double train_loss = 0;                    // mean over the last eval_every training steps
  std::vector<double> layer_test_loss;      // per-layer readouts yhat_l, l = 1..L, on the evaluation set
  std::vector<int64_t> curve_step;          // steps at which the curves were recorded: 0 (initialisation),
                                            // then every eval_every steps and the last step
  std::vector<double> curve_train_loss;     // mean training loss since the previous record (NaN at step 0)
  std::vector<double> curve_test_loss;      // evaluation loss
  std::vector<double> theta;                // learned parameters (flat, params.hpp layout)
  std::vector<double> P, Q;                 // expanded weights, layers x heads x (d+1) x (d+1)
  double seconds_train = 0, seconds_eval = 0, seconds_total = 0;
  double flops_per_step = 0;                // model multiply-adds x 2 of one step (forward + backward)
  // Analyses (analysis.hpp), by name: scalars go to /metrics/<name>, series to /analysis/<name>.
  std::map<std::string, double> metrics;
  std::map<std::string, std::vector<double>> series;
};

// `cancel` (optional) is polled once per step; when it becomes true the point stops with status
// cancelled, which a driver discards: cancellation never changes a recorded result.
Result train_point(const Point& p, const std::atomic<bool>* cancel = nullptr);

// A result that has not been computed: status pending, every loss NaN.
Result pending_result();

// Multiply-adds x 2 of one forward + backward pass of the linear model on one task (see model.cpp).
double model_flops_per_task(const Point& p);

}  // namespace icl
