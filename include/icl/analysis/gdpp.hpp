#pragma once
// GD++ ([VO23] App. A.10) tuned to a stationary point of its MSE on a tuning set.
// K steps of GD++ from w = 0 are the gdpp transformer with c = 1, q_x = 1 (docs/science.md section 2):
//   x_j <- x_j - gamma_l S x_j,   y_j <- y_j - eta_l <alpha, x_j>,   S = sum_i x_i x_i^T, alpha = sum_i y_i x_i
// over the context i = 1..n, every token j updated, yhat = -y_query after K steps.
//   per step:  (eta_l, gamma_l) for l = 1..K, 2K numbers
//   tied:      one (eta, gamma) for every step, the recurrent GD++ that [VO23] Fig. 3 plots beside its
//              tied models (official code: gd_deq = True)
// The last step's gamma never reaches the readout (it only moves x after y has read it): it is fixed at 0.
#include <atomic>
#include <functional>
#include <vector>

#include "icl/analysis/baselines.hpp"
#include "icl/data/data.hpp"

namespace icl {

// A set of tasks as GD++ sees them.  Every update keeps the eigenvectors U of the context's S = X X^T, so
// K steps act on each task through its spectrum alone (baselines.hpp: s, b = U^T alpha, z = U^T x_q), per
// step l, all from the values before it:
//   yhat += eta_l <b, z>,   b_i <- (1 - gamma_l s_i)(1 - eta_l s_i) b_i,   z_i <- (1 - gamma_l s_i) z_i,
//   s_i <- s_i (1 - gamma_l s_i)^2
// (gamma = 0: predict_gd's K steps).  O(K d) per task after one eigendecomposition, against the
// transformer's O(K n d^2) per evaluation: the tuning below runs on this; gdpp_loss_transformer is the
// transformer's loss, the same function up to rounding (tests/test_gdpp.cpp).
struct GdppTasks {
  Spectra spectra;
  std::vector<double> y;   // the query labels
};
GdppTasks gdpp_tasks(const TaskBatch<double>& set);

struct GdppTuned {
  std::vector<double> eta, gamma;   // K each (tied: K equal values)
  double loss = 0.0;                // MSE on the tuning set
  double grad_norm = 0.0;           // |d loss / d(eta, gamma)| at the result, times the rate unit, over loss
  int iterations = 0;
  bool converged = false;           // grad_norm <= kGdppTolerance
};

// The stationarity criterion: |grad| in units of the starting GD rate, relative to the loss.
constexpr double kGdppTolerance = 1e-6;

// MSE of K-step GD++ (eta, gamma per step) on `set`; with grad != nullptr also its gradient, ordered
// (d/d eta_1, d/d gamma_1, ..., d/d eta_K, d/d gamma_K).
double gdpp_loss(const GdppTasks& set, const std::vector<double>& eta, const std::vector<double>& gamma,
                 std::vector<double>* grad = nullptr);
// The same loss by the gdpp transformer itself (Objective, c = 1): the reference of the one above.
double gdpp_loss_transformer(const TaskBatch<double>& set, const std::vector<double>& eta,
                             const std::vector<double>& gamma, std::vector<double>* grad = nullptr);

// GD++ for K steps minimised on `tune` by BFGS with an Armijo line search, in units of eta_gd (the tuned
// K-step GD rate), until grad_norm <= kGdppTolerance or no descent step is left (double precision).
// Tied (2 numbers): from the better of plain GD (eta_gd, 0) and the best point of a 9 x 9 grid around
// it; tested against a dense grid.  Per step (2K - 1 numbers): a LOCAL refinement, BFGS from the tied
// optimum and from the (K-1)-step optimum `shorter` plus one step.  The per-step loss has other,
// deeper basins (rates growing about ninefold per step: a polynomial approximation of S^-1 fitted to the
// tuning tasks' spectra) that random starts find and that explode on rarer tasks, so they are not
// searched.  Without `validation` the lower tuning loss wins (never above the tied one); with it, the
// lowest validation loss among the refined points and the tied optimum.  `validation` gives the set when it is
// first needed: never where every refined point is the tied optimum itself (K = 1, where BFGS stays there), so
// that the caller draws it only where it chooses.
// `stop` (optional, cancel.hpp) is polled before every evaluation of the loss; when set they throw Cancelled.
using GdppSet = std::function<const GdppTasks&()>;
GdppTuned tune_gdpp_tied(const GdppTasks& tune, int K, double eta_gd, const std::atomic<bool>* stop = nullptr);
GdppTuned tune_gdpp_per_step(const GdppTasks& tune, const GdppTuned& tied, const GdppTuned* shorter, double eta_gd,
                             const GdppSet& validation = nullptr, const std::atomic<bool>* stop = nullptr);

}  // namespace icl
