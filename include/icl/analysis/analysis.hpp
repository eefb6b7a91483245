#pragma once
// What a trained point learned, measured on its own evaluation tasks (docs/science.md sections 4-5):
// analyse(point, trained) -> Analysis (result.hpp), scalars in metrics and vectors in series, every
// name documented in the registry (metrics.hpp); all losses are plain MSE.
//
// Reference algorithms are evaluated two ways, and agree where both apply: the ridge family, OLS, the
// Bayes predictor and K-step (preconditioned) GD by their closed forms on each task's spectrum
// (baselines.hpp); L-step GD and GD++ also as the transformer itself with constructed weights
// (docs/science.md section 2: P corner -eta, Q block I; GD++: x <- (I - gamma S) x, y <- y - eta <alpha, x>),
// which gives their readouts per step, their sensitivities d yhat / d x_query and their
// out-of-distribution curves through the same code as the trained model.
// Tuning (ConstRR's lambda, TunedRR's (c, t), GD's eta per K, GD++'s (eta, gamma) per step) uses a
// separate seeded tuning set (Stream::tune), never the evaluation set.
#include <atomic>
#include <iterator>
#include <vector>

#include "icl/base/point.hpp"
#include "icl/base/result.hpp"
#include "icl/data/data.hpp"

namespace icl {

// The analysis's own task sets (sizes also used by the sweep's memory estimate, sweep/memory.cpp):
// closed-form tuning, GD++ tuning and its validation (both double), per noise level, per OOD setting.
struct AnalysisSets {
  static constexpr int tune = 16000, tune_model = 2000, gdpp_validation = 10000, noise = 1000, ood = 1000,
                       context = 2000,   // context_curve's set (of length n_test; every length is its prefixes)
                       probe = 2000;     // each of the probes' two sets (probes.hpp)
};

// The out-of-distribution curves at the training length, AnalysisSets::ood tasks per value, each with the
// trained model, GD (through the model's act_clip, as [VO23]'s code), GD++, tied GD++ and (where made) the
// interpolation ([VO23] Fig. 2 right, Fig. 6):
//   input      x -> alpha x (the point's own input law)
//   teacher    w -> alpha w
//   other      [VO23]'s other input laws (create_ood_data: exponential, normal or Laplace per task) at input
//              range alpha: x = alpha s / |S|_F, |S|_F the Frobenius norm of the task's context draws
//   other_teacher  the other laws at input range 1, w -> alpha w
// The context-length curve (ood_context) is separate: its sets have other lengths.
struct OodScales {
  static constexpr double input[] = {0.25, 0.5, 1.0, 2.0, 4.0};
  static constexpr double teacher[] = {0.5, 1.0, 2.0, 3.0, 4.0, 5.0};
  static constexpr double other[] = {0.5, 1.0, 2.0, 3.0, 4.0, 5.0};
  static constexpr int sets = std::size(input) + std::size(teacher) + 2 * std::size(other);
};

// Runs every analysis on `trained` (status ok) of point p, on the same evaluation set as training (redrawn
// from its seed) and on sets of its own.  Throws on failure (run_point.hpp then keeps the training).
// `stop` (optional, cancel.hpp) is polled between methods and between tasks or chunks of tasks (task sets,
// model runs, GD++ evaluations, context lengths): when set, analyse throws Cancelled promptly.
Analysis analyse(const Point& p, const Trained& trained, const std::atomic<bool>* stop = nullptr);

// Dist(M, I) = |M - (tr M / d) I|_F / |M|_F  ([A23]): 0 for a multiple of the identity.
double dist_to_identity(const Eigen::MatrixXd& M);

// The gauge-free product of layer l: sum_h P_h[d][d] * Q_h[0:d, 0:d] (d x d), from expanded P, Q.
Eigen::MatrixXd layer_product(const Point& p, const std::vector<double>& P, const std::vector<double>& Q, int l);

// [V24] per-layer scalars (w_xx, w_xy, w_yx, w_yy) = sum_h (p_x q_x, p_x q_y, p_y q_x, p_y q_y), with
// p_x = tr(P_h[0:d,0:d]) / d, p_y = P_h[d][d] (likewise q): exact for diag/gdpp, a projection for full.
std::vector<double> v24_scalars(const Point& p, const std::vector<double>& P, const std::vector<double>& Q, int l);

}  // namespace icl
