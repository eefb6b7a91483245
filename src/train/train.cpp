// The training loop of one grid point (docs/science.md section 3):
//   draw a batch (every `refresh` steps)  ->  expand theta to P, Q  ->  per chunk of V tasks:
//   forward, loss, backward  ->  reduce gradients  ->  clip  ->  optimiser step at lr_at(step)
//   and at every evaluation step (is_eval_step: every eval_every steps, optionally log-spaced ones too) an
//   evaluation on a fixed, seeded set of eval_tasks tasks.
// Divergence: a non-finite training loss or gradient stops the point at once; an evaluation loss above
// p.diverge_factor times the evaluation loss at initialisation stops it at that evaluation.  A single
// batch's loss spike is not divergence: deep linear attention under Adam has spikes it recovers from.
#include "icl/train/train.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

#include "icl/base/check.hpp"
#include "icl/data/data.hpp"
#include "icl/model/model.hpp"
#include "icl/model/params.hpp"
#include "icl/train/objective.hpp"
#include "icl/train/optim.hpp"

namespace icl {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// One training run: the state of the loop and one method per thing a step can do.
template <class T>
class TrainingRun {
 public:
  TrainingRun(const Point& p, TrainObserver* observer, const Checkpoint* from, LiveTraining* live)
      : p_(p), observer_(observer), live_(live), law_(training_law(p)), objective_(make_trainable<T>(p)),
        blocks_(objective_->blocks()), theta_(objective_->init(p)), opt_(opt_init(objective_->size())),
        g_(objective_->size()), layer_loss_(p.layers) {
    batch_.resize(p.batch, p.d, p.n);
    eval_set_.resize(p.eval_tasks, p.d, p.n);
    const EvalDraw e = eval_draw(p);   // fresh tasks: the point's own, or the sweep's shared set (eval_seed)
    sample_tasks(make_task_law(p), e.seed, e.which.stream, e.which.block, eval_set_);
    r_.flops_per_step = train_flops_per_task(p) * p.batch;
    const size_t records = static_cast<size_t>(eval_record_bound(p));
    r_.curve_step.reserve(records);
    r_.curve_train_loss.reserve(records);
    r_.curve_test_loss.reserve(records);
    if (from) resume(*from);
  }

  // Trains up to step `until`; a run stopped there (before p.steps, status ok) fills `stopped`.
  Trained run(const std::atomic<bool>* cancel, int64_t until, Checkpoint* stopped) {
    if (start_ == 0) {
      evaluate(0);   // step 0: the reference for divergence
      initial_eval_loss_ = r_.curve_test_loss.back();
    } else if (start_ % p_.refresh != 0) {   // the batch in use at step start_
      const Draw batch = draws::train_batch(start_ / p_.refresh);
      sample_tasks(law_, p_.seed, batch.stream, batch.block, batch_);
    }
    for (int64_t s = start_; s < until && r_.status == Status::ok; ++s) {
      if (cancel && cancel->load(std::memory_order_relaxed)) {
        r_.status = Status::cancelled;
        r_.message = "cancelled at step " + std::to_string(s);
        return std::move(r_);
      }
      if (!step(s)) break;
      if (live_) live_->steps_done.store(s + 1, std::memory_order_relaxed);
      if (is_eval_step(p_, s + 1)) evaluate(s + 1);
    }
    if (until < p_.steps) {
      Trained t = finish();
      if (t.status == Status::ok) {
        static_cast<Trained&>(stopped->run) = t;
        stopped->opt_m = opt_.m;
        stopped->opt_v = opt_.v;
        stopped->opt_t = opt_.t;
        stopped->initial_eval_loss = initial_eval_loss_;
      }
      return t;
    }
    if (r_.status == Status::ok && observer_ && observer_->wanted(p_.steps)) observer_->measure(p_.steps, theta_, {});
    return finish();
  }

 private:
  // The state of a run stopped at an evaluation step (loss_since_eval_ and steps_since_eval_ are 0 there).
  void resume(const Checkpoint& c) {
    static_cast<Trained&>(r_) = c.run;
    start_ = c.run.steps_done;
    theta_ = c.run.theta;
    layer_loss_ = c.run.layer_test_loss;
    opt_.m = c.opt_m;
    opt_.v = c.opt_v;
    opt_.t = c.opt_t;
    initial_eval_loss_ = c.initial_eval_loss;
  }

  // One optimiser step; false when the loss or gradient is not finite (the point diverged).
  bool step(int64_t s) {
    auto t_step = Clock::now();
    if (s % p_.refresh == 0) {
      const Draw batch = draws::train_batch(s / p_.refresh);
      sample_tasks(law_, p_.seed, batch.stream, batch.block, batch_);
    }
    const double loss = objective_->loss_grad(batch_, theta_, &g_);
    const double gnorm = clip_grad(p_, blocks_, g_);
    r_.steps_done = s + 1;
    r_.train_loss = loss;
    if (!std::isfinite(loss) || !std::isfinite(gnorm)) {
      r_.status = Status::diverged;
      r_.message = "non-finite training loss " + std::to_string(loss) + " or gradient norm " + std::to_string(gnorm) +
                   " at step " + std::to_string(s + 1);
      r_.seconds_train += seconds_since(t_step);
      return false;
    }
    if (observer_ && observer_->wanted(s)) {   // measured before this step's update, along it
      const auto t_observer = Clock::now();
      observe(s);
      t_step += Clock::now() - t_observer;
    }
    opt_step(p_, lr_at(p_, s), theta_, g_, opt_);
    loss_since_eval_ += loss;
    ++steps_since_eval_;
    r_.seconds_train += seconds_since(t_step);
    return true;
  }

  // Hands the observer this step's update, computed on a copy of the optimiser state.
  void observe(int64_t s) {
    OptState probe = opt_;
    update_ = theta_;
    opt_step(p_, lr_at(p_, s), update_, g_, probe);
    for (size_t i = 0; i < update_.size(); ++i) update_[i] -= theta_[i];
    observer_->measure(s, theta_, update_);
  }

  // Records the curves at `step`; an evaluation loss that is not finite or above diverge_factor x the
  // initial one stops the point.
  void evaluate(int64_t step) {
    const auto t_eval = Clock::now();
    objective_->layer_losses(eval_set_, theta_, layer_loss_);
    const double eval_loss = layer_loss_[p_.layers - 1];
    r_.curve_step.push_back(step);
    r_.curve_train_loss.push_back(step == 0 ? kNaN : loss_since_eval_ / steps_since_eval_);
    r_.curve_test_loss.push_back(eval_loss);
    if (live_) live_->test_loss.store(eval_loss, std::memory_order_relaxed);
    if (step > 0) r_.train_loss = loss_since_eval_ / steps_since_eval_;
    loss_since_eval_ = 0.0;
    steps_since_eval_ = 0;
    r_.seconds_eval += seconds_since(t_eval);
    if (step > 0 && (!std::isfinite(eval_loss) ||
                     (p_.diverge_factor > 0 && eval_loss > p_.diverge_factor * std::max(initial_eval_loss_, 1e-12)))) {
      r_.status = Status::diverged;
      r_.message = "evaluation loss " + std::to_string(eval_loss) + " at step " + std::to_string(step) +
                   " (at initialisation " + std::to_string(initial_eval_loss_) + ")";
    }
  }

  Trained finish() {
    r_.theta = theta_;
    if (p_.arch == Arch::lsa) {   // the expanded P, Q of docs/science.md section 2
      const ParamLayout layout(p_);
      r_.P.resize(layout.PQ_size());
      r_.Q.resize(layout.PQ_size());
      layout.expand(theta_.data(), r_.P.data(), r_.Q.data());
    }
    if (r_.status == Status::ok) {
      r_.layer_test_loss = layer_loss_;
      r_.test_loss = layer_loss_[p_.layers - 1];
    } else {
      r_.layer_test_loss.assign(p_.layers, kNaN);
      r_.test_loss = kNaN;
    }
    return std::move(r_);
  }

  const Point& p_;
  TrainObserver* observer_;
  LiveTraining* live_;
  const TaskLaw law_;   // of the training batches (a pool or fixed contexts when set)
  std::unique_ptr<Trainable<T>> objective_;
  const std::vector<std::pair<int, int>> blocks_;
  std::vector<double> theta_;
  OptState opt_;
  std::vector<double> g_, layer_loss_, update_;
  TaskBatch<T> batch_, eval_set_;
  Trained r_;
  double initial_eval_loss_ = kNaN, loss_since_eval_ = 0.0;
  int64_t steps_since_eval_ = 0, start_ = 0;
};

int64_t log_step(int K, int j) { return std::llround(std::pow(10.0, static_cast<double>(j) / K)); }

}  // namespace

bool TrainObservers::wanted(int64_t step) const {
  for (const auto& o : list_)
    if (o->wanted(step)) return true;
  return false;
}

void TrainObservers::measure(int64_t step, const std::vector<double>& theta, const std::vector<double>& update) {
  for (const auto& o : list_)
    if (o->wanted(step)) o->measure(step, theta, update);
}

Analysis TrainObservers::take() {
  Analysis all;
  for (const auto& o : list_) all.merge(o->take());
  return all;
}

bool is_eval_step(const Point& p, int64_t step) {
  if (step % p.eval_every == 0 || step == p.steps) return true;
  if (p.eval_log <= 0 || step < 1 || step > p.steps) return false;
  const int j = static_cast<int>(std::floor(p.eval_log * std::log10(static_cast<double>(step))));
  for (int i = std::max(0, j - 1); i <= j + 1; ++i)
    if (log_step(p.eval_log, i) == step) return true;
  return false;
}

int64_t eval_record_bound(const Point& p) {
  const int64_t logs =
      p.eval_log > 0 ? static_cast<int64_t>(std::ceil(p.eval_log * std::log10(static_cast<double>(p.steps)))) + 1 : 0;
  return p.steps / p.eval_every + 2 + logs;
}

Trained train(const Point& p, const std::atomic<bool>* cancel, TrainObserver* observer, const Leg& leg, Checkpoint* stopped,
              LiveTraining* live) {
  const int64_t until = leg.until > 0 ? std::min(leg.until, p.steps) : p.steps;
  ICL_CHECK(until == p.steps || (until % p.eval_every == 0 && stopped != nullptr));
  ICL_CHECK(!leg.partial(p) || observer == nullptr);
  ICL_CHECK(leg.from == nullptr || (leg.from->run.steps_done % p.eval_every == 0 && leg.from->run.steps_done < until));
  if (p.precision == Precision::f32) return TrainingRun<float>(p, observer, leg.from, live).run(cancel, until, stopped);
  return TrainingRun<double>(p, observer, leg.from, live).run(cancel, until, stopped);
}

}  // namespace icl
