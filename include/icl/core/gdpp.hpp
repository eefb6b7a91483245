#pragma once
// GD++ ([VO23] App. A.10) tuned to a stationary point of its MSE on a tuning set.
// K steps of GD++ from w = 0 are the gdpp transformer with c = 1, q_x = 1 (science.md section 2):
//   x_j <- x_j - gamma_l S x_j,   y_j <- y_j - eta_l <alpha, x_j>,   S = sum_i x_i x_i^T, alpha = sum_i y_i x_i
// over the context i = 1..n, every token j updated, yhat = -y_query after K steps.
//   per step:  (eta_l, gamma_l) for l = 1..K, 2K numbers
//   tied:      one (eta, gamma) for every step, the recurrent GD++ that [VO23] Fig. 3 plots beside its
//              tied models (official code: gd_deq = True)
// The last step's gamma never reaches the readout (it only moves x after y has read it): it is fixed at 0.
#include <cstdint>
#include <vector>

#include "icl/core/data.hpp"

namespace icl {

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
double gdpp_loss(const TaskBatch<double>& set, const std::vector<double>& eta, const std::vector<double>& gamma,
                 std::vector<double>* grad = nullptr);

// GD++ for K steps minimised on `tune` by BFGS with an Armijo line search, in units of eta_gd (the tuned
// K-step GD rate), until grad_norm <= kGdppTolerance or no descent step is left (double precision).
// Tied (2 numbers): from the better of plain GD (eta_gd, 0) and the best point of a 9 x 9 grid around
// it; tested against a dense grid.  Per step (2K - 1 numbers): the loss has several basins, and the
// deeper ones use geometrically growing (eta_l, gamma_l) (a polynomial approximation of S^-1 tuned to
// the spectra of the tuning set, which can explode on a task outside them), so BFGS runs from the tied
// optimum, from the (K-1)-step optimum `shorter` plus one step, from a geometric start (eta_l = gamma_l
// = eta_gd / 2 x 9^(l-1), the shape of the deep basins found in [VO23]'s setting) and from
// kGdppRandomStarts starts drawn from (seed, Stream::tune).  Without `validation` the lowest tuning loss wins (the per-step loss is then
// never above the tied one); with it, the lowest validation loss among those stationary points and the
// tied optimum.  A best-of-starts optimum, not a proven global one.
constexpr int kGdppRandomStarts = 3;
GdppTuned tune_gdpp_tied(const TaskBatch<double>& tune, int K, double eta_gd);
GdppTuned tune_gdpp_per_step(const TaskBatch<double>& tune, const GdppTuned& tied, const GdppTuned* shorter,
                             double eta_gd, uint64_t seed, const TaskBatch<double>* validation = nullptr);

}  // namespace icl
