// The training loop of one grid point (science.md section 3):
//   draw a batch (every `refresh` steps)  ->  expand theta to P, Q  ->  per chunk of V tasks:
//   forward, loss, backward  ->  reduce gradients  ->  clip  ->  optimiser step at lr_at(step)
//   and every eval_every steps an evaluation on a fixed, seeded set of eval_tasks tasks.
// Divergence: a non-finite training loss or gradient stops the point at once; an evaluation loss above
// p.diverge_factor times the evaluation loss at initialisation stops it at that evaluation.  A single
// batch's loss spike is not divergence: deep linear attention under Adam has spikes it recovers from.
#include "icl/core/train.hpp"

#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

#include "icl/core/analysis.hpp"
#include "icl/core/data.hpp"
#include "icl/core/landscape.hpp"
#include "icl/core/objective.hpp"
#include "icl/core/optim.hpp"
#include "icl/core/params.hpp"

namespace icl {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <class T>
Result train_typed(const Point& p, const std::atomic<bool>* cancel, StageHook* hook) {
  const auto t_start = Clock::now();
  if (hook) hook->enter("train");
  Result r;
  const TaskLaw law = make_task_law(p);
  Objective<T> objective(p);
  const ParamLayout& layout = objective.layout();
  std::vector<double> theta = param_init(p, layout);
  OptState opt = opt_init(layout.size());
  std::vector<double> g(layout.size()), layer_loss(p.layers), update;
  Landscape landscape(p, law);

  TaskBatch<T> batch, eval_set;
  batch.resize(p.batch, p.d, p.n);
  eval_set.resize(p.eval_tasks, p.d, p.n);
  sample_tasks(law, p.seed, Stream::eval, 0, eval_set);
  r.flops_per_step = model_flops_per_task(p) * p.batch;

  const size_t records = static_cast<size_t>(p.steps / p.eval_every + 2);
  r.curve_step.reserve(records);
  r.curve_train_loss.reserve(records);
  r.curve_test_loss.reserve(records);
  objective.layer_losses(eval_set, theta, layer_loss);   // step 0: the reference for divergence
  const double initial_eval_loss = layer_loss[p.layers - 1];
  r.curve_step.push_back(0);
  r.curve_train_loss.push_back(std::numeric_limits<double>::quiet_NaN());
  r.curve_test_loss.push_back(initial_eval_loss);
  double loss_since_eval = 0.0;
  int64_t steps_since_eval = 0;
  for (int64_t s = 0; s < p.steps; ++s) {
    if (cancel && cancel->load(std::memory_order_relaxed)) {
      r.status = Status::cancelled;
      r.message = "cancelled at step " + std::to_string(s);
      return r;
    }
    auto t_step = Clock::now();
    if (s % p.refresh == 0) sample_tasks(law, p.seed, Stream::train, static_cast<uint64_t>(s / p.refresh), batch);
    const double loss = objective.loss_grad(batch, theta, &g);
    const double gnorm = clip_grad(p, layout, g);
    r.steps_done = s + 1;
    r.train_loss = loss;
    if (!std::isfinite(loss) || !std::isfinite(gnorm)) {
      r.status = Status::diverged;
      r.message = "non-finite training loss " + std::to_string(loss) + " or gradient norm " +
                  std::to_string(gnorm) + " at step " + std::to_string(s + 1);
      r.seconds_train += seconds_since(t_step);
      break;
    }
    if (landscape.wanted(s)) {   // measured before this step's update, along it; not training time
      const auto t_landscape = Clock::now();
      const std::vector<double> before = theta;
      OptState probe = opt;
      update = theta;
      opt_step(p, lr_at(p, s), update, g, probe);
      for (size_t i = 0; i < update.size(); ++i) update[i] -= before[i];
      landscape.measure(s, theta, update, r);
      t_step += Clock::now() - t_landscape;
    }
    opt_step(p, lr_at(p, s), theta, g, opt);
    loss_since_eval += loss;
    ++steps_since_eval;
    r.seconds_train += seconds_since(t_step);

    if ((s + 1) % p.eval_every == 0 || s + 1 == p.steps) {
      const auto t_eval = Clock::now();
      objective.layer_losses(eval_set, theta, layer_loss);
      r.curve_step.push_back(s + 1);
      r.curve_train_loss.push_back(loss_since_eval / steps_since_eval);
      r.curve_test_loss.push_back(layer_loss[p.layers - 1]);
      r.train_loss = loss_since_eval / steps_since_eval;
      loss_since_eval = 0.0;
      steps_since_eval = 0;
      r.seconds_eval += seconds_since(t_eval);
      const double eval_loss = layer_loss[p.layers - 1];
      if (!std::isfinite(eval_loss) ||
          (p.diverge_factor > 0 && eval_loss > p.diverge_factor * std::max(initial_eval_loss, 1e-12))) {
        r.status = Status::diverged;
        r.message = "evaluation loss " + std::to_string(eval_loss) + " at step " + std::to_string(s + 1) +
                    " (at initialisation " + std::to_string(initial_eval_loss) + ")";
        break;
      }
    }
  }

  if (r.status == Status::ok && landscape.wanted(p.steps)) landscape.measure(p.steps, theta, {}, r);
  r.theta = theta;
  r.P.resize(layout.PQ_size());
  r.Q.resize(layout.PQ_size());
  layout.expand(theta.data(), r.P.data(), r.Q.data());
  if (r.status == Status::ok) {
    r.layer_test_loss = layer_loss;
    r.test_loss = layer_loss[p.layers - 1];
    if (p.analysis) {
      // A failing analysis keeps the trained weights and the training metrics.
      auto trained_metrics = r.metrics;
      auto trained_series = r.series;
      try {
        if (hook) hook->enter("analysis");
        analyse_point(p, law, theta, eval_set, r);
        r.analysis_status = AnalysisStatus::ok;
      } catch (const std::exception& e) {
        r.analysis_status = AnalysisStatus::failed;
        r.analysis_message = e.what();
        r.metrics = std::move(trained_metrics);   // no half-finished analysis
        r.series = std::move(trained_series);
      }
    }
  } else {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    r.layer_test_loss.assign(p.layers, nan);
    r.test_loss = nan;
  }
  r.seconds_total = seconds_since(t_start);
  return r;
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::diverged: return "diverged";
    case Status::failed: return "failed";
    case Status::pending: return "pending";
    case Status::cancelled: return "cancelled";
  }
  return "?";
}

const char* analysis_status_name(AnalysisStatus s) {
  switch (s) {
    case AnalysisStatus::skipped: return "skipped";
    case AnalysisStatus::ok: return "ok";
    case AnalysisStatus::failed: return "failed";
  }
  return "?";
}

double model_flops_per_task(const Point& p) {
  const double D = p.d + 1, N = p.n + 1, n = p.n, H = p.heads;
  double per_layer;
  if (p.attention == Attention::linear) {
    per_layer = D * (D + 1) / 2 * n + 2 * H * D * D * D + D * D * N      // forward
                + 2 * D * D * N + 4 * H * D * D * D + D * D * n;          // backward
  } else {
    per_layer = H * (D * D * N + n * N * D + D * n * N + D * D * N) * 3;  // forward + ~2x backward
  }
  return 2.0 * per_layer * p.layers;
}

Result pending_result() {
  Result r;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.status = Status::pending;
  r.steps_done = -1;   // unknown: stored as NaN
  r.test_loss = r.train_loss = nan;
  r.seconds_train = r.seconds_eval = r.seconds_total = r.flops_per_step = nan;
  return r;
}

Result failed_result(const std::string& why) {
  Result r = pending_result();
  r.status = Status::failed;
  r.message = why;
  return r;
}

Result train_point(const Point& p, const std::atomic<bool>* cancel, StageHook* hook) {
  try {
    return p.precision == Precision::f32 ? train_typed<float>(p, cancel, hook) : train_typed<double>(p, cancel, hook);
  } catch (const std::exception& e) {
    return failed_result(e.what());
  }
}

}  // namespace icl
