#pragma once
// The result of one grid point: what the seam run_point(point) returns and what every store
// (point logs, OUT.h5) holds.  for_each_field is the one description of its fields: the log record's
// encoder and decoder are both driven by it, so a new field is added here once.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace icl {

// pruned: stopped at a rung of successive halving (sweep/halving.hpp), its curves kept up to there.
enum class Status { ok, diverged, failed, pending, cancelled, pruned };
const char* status_name(Status s);

// The analysis of a trained point has a status of its own: a failing analysis keeps the training.
enum class AnalysisStatus { skipped, ok, failed };
const char* analysis_status_name(AnalysisStatus s);

// Loss convention: plain mean squared error over tasks, mean((yhat - y_query)^2), not halved.
// Every loss, time and count of a point that did not finish is NaN (never 0: a zero reads as a perfect model).

// What training produces (train.hpp): the run's status, curves and learned weights.
struct Trained {
  Status status = Status::ok;
  std::string message;                      // why a point diverged or failed
  int64_t steps_done = 0;
  double test_loss = 0;                     // final, on the fixed evaluation set
  double train_loss = 0;                    // mean over the training steps since the previous record
  std::vector<double> layer_test_loss;      // per-layer readouts yhat_l, l = 1..L, on the evaluation set
  std::vector<int64_t> curve_step;          // steps at which the curves were recorded: 0 (initialisation),
                                            // then each evaluation step (is_eval_step, train.hpp)
  std::vector<double> curve_train_loss;     // mean training loss since the previous record (NaN at step 0)
  std::vector<double> curve_test_loss;      // evaluation loss
  std::vector<double> theta;                // learned parameters (flat, params.hpp layout)
  std::vector<double> P, Q;                 // expanded weights, layers x heads x (d+1) x (d+1)
  double seconds_train = 0, seconds_eval = 0;
  double flops_per_step = 0;                // model multiply-adds x 2 of one step (forward + backward)
};

// What the analyses measure (analysis.hpp, landscape.hpp), by name: scalars go to /metrics/<name>,
// series to /analysis/<name>.  Every name is documented in the registry of metrics.hpp.
struct Analysis {
  std::map<std::string, double> metrics;
  std::map<std::string, std::vector<double>> series;
  void merge(Analysis&& other);             // other's names are added; a name present in both is an error
};

// One point's result: its training, then its analysis, which has a status of its own.
struct Result : Trained, Analysis {
  double seconds_total = 0;                 // wall-clock seconds of the whole point
  AnalysisStatus analysis_status = AnalysisStatus::skipped;
  std::string analysis_message;             // why the analysis failed
};

// Every field, in a fixed order, as visit(name, field&).  R is Result or const Result.
template <class R, class Visit>
void for_each_field(R& r, Visit&& visit) {
  visit("status", r.status);
  visit("message", r.message);
  visit("steps_done", r.steps_done);
  visit("test_loss", r.test_loss);
  visit("train_loss", r.train_loss);
  visit("layer_test_loss", r.layer_test_loss);
  visit("curve_step", r.curve_step);
  visit("curve_train_loss", r.curve_train_loss);
  visit("curve_test_loss", r.curve_test_loss);
  visit("theta", r.theta);
  visit("P", r.P);
  visit("Q", r.Q);
  visit("seconds_train", r.seconds_train);
  visit("seconds_eval", r.seconds_eval);
  visit("seconds_total", r.seconds_total);
  visit("flops_per_step", r.flops_per_step);
  visit("analysis_status", r.analysis_status);
  visit("analysis_message", r.analysis_message);
  visit("metrics", r.metrics);
  visit("series", r.series);
}

// A training run stopped at a step (a rung of successive halving, sweep/halving.hpp), with everything the
// loop needs to go on bit for bit as if it had never stopped: `run` is the result so far (status ok,
// steps_done = the step it stopped at, its curves, theta; no analysis; seconds_total of the legs so far),
// then the optimiser state and the evaluation loss at initialisation (the divergence reference).
struct Checkpoint {
  Result run;
  std::vector<double> opt_m, opt_v;
  int64_t opt_t = 0;
  double initial_eval_loss = 0;
};

// Every field of a checkpoint, as for_each_field.  C is Checkpoint or const Checkpoint.
template <class C, class Visit>
void for_each_checkpoint_field(C& c, Visit&& visit) {
  for_each_field(c.run, visit);
  visit("opt_m", c.opt_m);
  visit("opt_v", c.opt_v);
  visit("opt_t", c.opt_t);
  visit("initial_eval_loss", c.initial_eval_loss);
}

// A result that has not been computed: status pending, every loss, time and count NaN.
Result pending_result();
// A point that could not be computed (an exception in training): status failed, `why`, NaN everywhere.
Result failed_result(const std::string& why);

}  // namespace icl
