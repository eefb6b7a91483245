#pragma once
// Training of one grid point (docs/science.md section 3): train(point) -> Trained.  Pure and deterministic:
// no I/O, no MPI, no clocks in anything but the timing fields.  A run that diverges is returned as data
// (status + message); an exception means the point failed (run_point.hpp records it).
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "icl/base/point.hpp"
#include "icl/base/result.hpp"

namespace icl {

// Measurements taken along the trajectory ([A24]'s landscape, [VO23]'s copy analysis: analysis/trajectory.hpp):
// at every step s it wants, before that step's update, with `update` the optimiser's step from theta; once
// more after the last step (update empty) if it wants step `steps`.  Its time is not training time.  What
// it measured (names of metrics.hpp's registry) is taken when training ends.
struct TrainObserver {
  virtual ~TrainObserver() = default;
  virtual bool wanted(int64_t step) const = 0;
  virtual void measure(int64_t step, const std::vector<double>& theta, const std::vector<double>& update) = 0;
  virtual Analysis take() { return {}; }
};

// Several observers as one: each measures at the steps it wants, all from the same update; take() merges
// what each measured.
class TrainObservers final : public TrainObserver {
 public:
  explicit TrainObservers(std::vector<std::unique_ptr<TrainObserver>> list) : list_(std::move(list)) {}
  bool empty() const { return list_.empty(); }
  bool wanted(int64_t step) const override;
  void measure(int64_t step, const std::vector<double>& theta, const std::vector<double>& update) override;
  Analysis take() override;

 private:
  std::vector<std::unique_ptr<TrainObserver>> list_;
};

// One leg of a training run: from the initialisation or from a checkpoint (`from`), up to step `until`
// (0: p.steps).  Legs compose bit for bit: training to step s, then from that checkpoint to the end, gives
// the bits of one run straight through (timings aside).  `until` must be an evaluation step
// (a multiple of p.eval_every) and no observer may watch a leg that starts or stops midway.
struct Leg {
  const Checkpoint* from = nullptr;
  int64_t until = 0;
  bool partial(const Point& p) const { return from != nullptr || (until > 0 && until < p.steps); }
};

// The evaluation schedule (the curves' records): step 0, every p.eval_every steps and the last step, and
// with eval_log = K > 0 also the log-spaced steps round(10^(j/K)), j = 0, 1, .. (Raventos et al. 2023).
// Evaluations never change the trajectory; a record's train loss is the mean since the previous record.
bool is_eval_step(const Point& p, int64_t step);
int64_t eval_record_bound(const Point& p);   // at most this many records (reservations, estimates)

// What a driver may show of a point in flight (status --watch): written by the training thread (relaxed
// atomics, once a step and at each evaluation, then `analysing` by run_point), read by any other thread.
// Never read back by the science.
struct LiveTraining {
  std::atomic<int64_t> steps_done{0};
  std::atomic<double> test_loss{std::numeric_limits<double>::quiet_NaN()};   // at the latest evaluation
  std::atomic<bool> analysing{false};
};

// `cancel` (optional) is polled once per step; when it becomes true the point stops with status
// cancelled, which a driver discards: cancellation never changes a recorded result.  A leg that stops
// before p.steps with status ok fills `stopped` (required then) with its checkpoint, whose `run` is the
// returned Trained.
Trained train(const Point& p, const std::atomic<bool>* cancel = nullptr, TrainObserver* observer = nullptr,
              const Leg& leg = {}, Checkpoint* stopped = nullptr, LiveTraining* live = nullptr);

}  // namespace icl
