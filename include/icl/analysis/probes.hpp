#pragma once
// Fu et al. 2023's own comparison of a transformer's layers with iterative Newton (their code,
// DeqingFu/transformers-icl-higher-order: src/probing.py, src/train_linear.py, src/eval_similarity.py), for a
// causal transformer trained at every prefix (causal, prefix_loss):
//   probe    per layer l = 1..L a linear read-out with bias, yhat = w_l^T phi + b_l, of the layer's output phi at
//            every x token (the last layer's: LN_f of it with readout = head, as HF GPT-2's last hidden state),
//            fitted to the labels y_j over the positions j = 0..n of a probe set.  Theirs is trained by Adam with
//            the model frozen (train_linear.py); ours is the least-squares optimum of the same loss (the
//            minimum-norm solution of the normal equations: a LayerNorm's output spans a hyperplane).
//   errors   per evaluation task, the vector over the positions j = 0..n of the probe's errors yhat_j - y_j, and
//            of iterative Newton's after k steps (baselines.hpp predict_newton; position 0, no example: 0, as
//            their models.py)
//   similarity  the cosine of the two vectors, averaged over the tasks (get_average_resid_similarity), per layer
//            and step k = 0..K_max (K_max = min(64, max(12, 4L)), as newton_similarity), L x (K_max + 1)
//            row-major; the best step of each layer; and each probe's MSE over the positions.
//   the same against their other methods (eval_similarity.py): gradient descent from w = 0 on
//            1/2 sum_i (<w, x_i> - y_i)^2 at their rate 0.01 (models.py LeastSquaresModelGradientDescent) after
//            their log grid of 2^0 .. 2^12 steps, L x 13, and its best step count per layer; and the
//            minimum-norm least-squares fit (their LeastSquaresModel, in eval_similarity.py's first version,
//            32b1021), one cosine per layer.
// In double on sets of AnalysisSets::probe fresh tasks of their own (rng.hpp draws::probe_fit, probe_eval).
#include <atomic>
#include <vector>

#include "icl/base/eigen.hpp"
#include "icl/base/point.hpp"
#include "icl/base/result.hpp"
#include "icl/data/data.hpp"
#include "icl/model/transformer.hpp"

namespace icl {

// True for the points the probes apply to: arch = transformer, causal, prefix_loss, analysis on.
bool probes_apply(const Point& p);

// The least-squares probe (w_l, b_l) of every layer on `set`: L vectors of E + 1 entries (the bias last).
std::vector<Eigen::VectorXd> fit_probes(const TransformerShape& s, const std::vector<double>& theta,
                                        const TaskBatch<double>& set);

// The probes' errors on `set`: [layer][task] vectors of n + 1 entries, yhat_j - y_j.
std::vector<std::vector<Eigen::VectorXd>> probe_errors(const TransformerShape& s, const std::vector<double>& theta,
                                                       const std::vector<Eigen::VectorXd>& probes,
                                                       const TaskBatch<double>& set);

// The labels of x_0 .. x_n of task t of `set`: the context's, then the query's.
Eigen::VectorXd prefix_labels(const TaskBatch<double>& set, int t);

// Fu et al.'s gradient descent: rate and step counts 2^0 .. 2^(kProbeGdSteps - 1) (eval_similarity.py).
constexpr double kProbeGdRate = 0.01;
constexpr int kProbeGdSteps = 13;

// Series probe_newton_similarity, probe_newton_best_step, probe_gd_similarity, probe_gd_best_step,
// probe_ols_similarity and probe_loss of the point's trained theta.
void probe_similarity(const Point& p, const std::vector<double>& theta, Analysis& out, const std::atomic<bool>* stop);

}  // namespace icl
