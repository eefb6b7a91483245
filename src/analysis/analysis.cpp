// The analyses of analysis.hpp.  Sizes: the point's evaluation set for the headline numbers; tuning sets
// of kTuneTasks for the closed-form baselines (TunedRR's gain over AdaRR, ~0.01 in MSE at d = 10,
// n = 20, sigma ~ U(0, 2), is lost in the noise of 2,000 tasks) and kTuneModelTasks for GD++ (whose
// tuning runs the model: 2K parameters fitted on it to a stationary point, so the set must be large
// enough that the fit does not chase its noise) with kGdppValidationTasks to choose among per-step GD++'s
// stationary points (the deep ones can explode on rare tasks: a large set sees more of them); kNoiseTasks per noise level, kOodTasks per out-of-distribution setting.
#include "icl/analysis/analysis.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "icl/analysis/baselines.hpp"
#include "icl/analysis/context_sums.hpp"
#include "icl/analysis/gdpp.hpp"
#include "icl/analysis/metrics.hpp"
#include "icl/analysis/probes.hpp"
#include "icl/base/cancel.hpp"
#include "icl/base/check.hpp"
#include "icl/model/gram.hpp"
#include "icl/model/model.hpp"
#include "icl/model/params.hpp"
#include "icl/model/transformer.hpp"

namespace icl {
namespace {

constexpr int kTuneTasks = AnalysisSets::tune, kTuneModelTasks = AnalysisSets::tune_model,
              kGdppValidationTasks = AnalysisSets::gdpp_validation, kNoiseTasks = AnalysisSets::noise, kOodTasks = AnalysisSets::ood;
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

double mse(const std::vector<double>& yhat, const std::vector<double>& y) {
  double s = 0.0;
  for (size_t t = 0; t < y.size(); ++t) s += (yhat[t] - y[t]) * (yhat[t] - y[t]);
  s /= static_cast<double>(y.size());
  return std::isfinite(s) ? s : kInf;
}

// Standard error of the mean over tasks of (a_t - y_t)^2 - (b_t - y_t)^2: the error of a difference of two
// losses on the same tasks (b empty: of the loss of a alone).
double paired_se(const std::vector<double>& a, const std::vector<double>& b, const std::vector<double>& y) {
  const size_t N = y.size();
  if (N < 2) return kNaN;
  double m = 0, m2 = 0;
  for (size_t t = 0; t < N; ++t) {
    const double e = (a[t] - y[t]) * (a[t] - y[t]) - (b.empty() ? 0.0 : (b[t] - y[t]) * (b[t] - y[t]));
    m += e / N;
    m2 += e * e / N;
  }
  const double se = std::sqrt(std::max(m2 - m * m, 0.0) / (N - 1));
  return std::isfinite(se) ? se : kInf;
}

// One set of tasks in double: labels, noise levels, and each task's spectrum in three bases; with a pool,
// the dMMSE prediction of each task (it has nothing to tune).
struct TaskSet {
  std::vector<double> y, sigma;
  Spectra raw;   // plain GD
  const Spectra& prior() const { return prior_is_raw ? raw : prior_own; }   // ridge/Bayes (prior-whitened)
  // Preconditioned GD's spectra, in blocks (its predictions are predict_gd_all's): a matrix basis's own, or the
  // raw ones scaled by a scalar basis c (s c^2, b c, z c) as they are laid out, without a copy of every task's.
  SpectraBlocks input() const { return input_is_raw ? SpectraBlocks(raw, input_scale) : SpectraBlocks(input_own); }
  Spectra prior_own, input_own;   // where their basis is a matrix (no copies of raw)
  bool prior_is_raw = false, input_is_raw = false;
  double input_scale = 1.0;
  std::vector<double> dmmse;
};

// A basis x -> W x, or x -> c x where W is empty (a multiple of the identity: the raw spectra scaled, s c^2,
// b c, z c, without other eigendecompositions).
struct Basis {
  Eigen::MatrixXd W;
  double c = 1.0;
  bool identity() const { return W.size() == 0 && c == 1.0; }
  // A task's context sums (TaskSpectra::add_sums) into `batch`: with a matrix W only.
  void add(TaskSpectra& batch, const Eigen::MatrixXd& XXt, const Eigen::VectorXd& Xy, double yy, int n,
           const Eigen::VectorXd& xq) const {
    if (W.size()) batch.add_sums(W * XXt * W.transpose(), W * Xy, yy, n, W * xq);
  }
};

// Wp makes w ~ N(0, I); Wi makes x ~ N(0, I) (an isotropic Sigma: a scalar).
struct Bases {
  Basis Wp, Wi;
};

Bases make_bases(const TaskLaw& law) {
  Bases b;
  if (law.w_half.size()) b.Wp.W = law.w_half.transpose();
  if (law.Sigma_half.size()) b.Wi.W = law.Sigma_half.inverse();
  else if (std::fabs(law.Sigma(0, 0) - 1.0) > 1e-12) b.Wi.c = 1 / std::sqrt(law.Sigma(0, 0));
  return b;
}

// The Bayes predictor's prior over sigma for the point's noise law (levels floored at 1e-6).
void noise_prior(const TaskLaw& law, std::vector<double>* sigma, std::vector<double>* weight) {
  sigma->clear();
  if (law.noise == NoiseKind::fixed || law.noise == NoiseKind::set) *sigma = law.noise_sigma;
  if (law.noise == NoiseKind::uniform)
    for (int k = 0; k < 64; ++k) sigma->push_back(law.noise_sigma[0] * (k + 0.5) / 64);
  for (double& s : *sigma) s = std::max(s, 1e-6);
  weight->assign(sigma->size(), 1.0 / std::max<size_t>(sigma->size(), 1));
}

// dMMSE under the prior of a law with a pool (pool_law): its columns and noise law.
DmmseSums dmmse_prior(const TaskLaw& law) {
  std::vector<double> sigma, weight;
  noise_prior(law, &sigma, &weight);
  if (sigma.empty()) {   // noiseless: noise_prior's floor
    sigma = {1e-6};
    weight = {1.0};
  }
  return DmmseSums(law.pool, std::move(sigma), std::move(weight));
}

// A TaskSet built from its tasks' context sums (X X^T, X y, |y|^2, n) and queries, a block (context_sums.hpp) or a
// task at a time: all its spectra need; with `dmmse`, each task's dMMSE sums too.
struct TaskSetBuilder {
  const Bases& bases;
  TaskSet s;
  TaskSpectra raw, prior, input;
  Eigen::MatrixXd XXt_j;   // a block's task j, for the matrix bases
  Eigen::VectorXd Xy_j, xq_j;
  TaskSetBuilder(const Bases& b, size_t tasks) : bases(b) {   // room for `tasks`: no copies as the set grows
    s.y.reserve(tasks);
    s.sigma.reserve(tasks);
    raw.reserve(tasks);
    if (bases.Wp.W.size()) prior.reserve(tasks);
    if (bases.Wi.W.size()) input.reserve(tasks);
  }
  void add(const Eigen::MatrixXd& XXt, const Eigen::VectorXd& Xy, double yy, int n, const Eigen::VectorXd& xq,
           double y_query, double sigma) {
    s.y.push_back(y_query);
    s.sigma.push_back(sigma);
    raw.add_sums(XXt, Xy, yy, n, xq);
    bases.Wp.add(prior, XXt, Xy, yy, n, xq);
    bases.Wi.add(input, XXt, Xy, yy, n, xq);
  }
  // A block's tasks, their noise levels from `sigma` (the block's first task's).
  void add_block(const ContextBlock& b, const double* sigma, DmmseSums* dmmse) {
    raw.add_block(b);
    s.y.insert(s.y.end(), b.y_query, b.y_query + b.count);
    s.sigma.insert(s.sigma.end(), sigma, sigma + b.count);
    if (!bases.Wp.W.size() && !bases.Wi.W.size() && !dmmse) return;
    for (int j = 0; j < b.count; ++j) {   // a task at a time where a basis is a matrix, and for dMMSE
      b.task(j, &XXt_j, &Xy_j, &xq_j);
      bases.Wp.add(prior, XXt_j, Xy_j, b.yy[j], b.n, xq_j);
      bases.Wi.add(input, XXt_j, Xy_j, b.yy[j], b.n, xq_j);
      if (dmmse) dmmse->add(XXt_j, Xy_j, b.yy[j], b.n, xq_j);
    }
  }
  TaskSet take() {
    s.raw = raw.take();
    ICL_CHECK(bases.Wp.c == 1.0);   // make_bases: the prior's basis is the identity or a matrix
    s.prior_is_raw = bases.Wp.W.size() == 0;
    s.input_is_raw = bases.Wi.W.size() == 0;   // the identity or a scalar (input_scale)
    s.input_scale = bases.Wi.c;
    if (!s.prior_is_raw) s.prior_own = prior.take();
    if (!s.input_is_raw) s.input_own = input.take();
    return std::move(s);
  }
};

// `pool`: a law with a pool (pool_law), whose columns and noise law make the dMMSE prior; null: no dMMSE.
template <class T>
TaskSet task_set(const TaskBatch<T>& batch, const Bases& bases, const TaskLaw* pool, const std::atomic<bool>* stop) {
  std::optional<DmmseSums> dmmse;
  if (pool) dmmse.emplace(dmmse_prior(*pool));
  TaskSetBuilder s(bases, batch.B);
  ContextBlock block;
  for (int first = 0; first < batch.B; first += kTaskLanes) {
    check_stop(stop);   // per block: its reductions to tridiagonal form and, with a pool, dMMSE against all M pool tasks
    context_block(batch, first, &block);
    s.add_block(block, &batch.sigma[first], dmmse ? &*dmmse : nullptr);
  }
  if (dmmse) s.s.dmmse = dmmse->take();
  return s.take();
}

template <class F>
std::vector<double> predict_all(const Spectra& spectra, F f) {
  std::vector<double> out(spectra.size());
  for (size_t t = 0; t < spectra.size(); ++t) out[t] = f(spectra[t], t);
  return out;
}


// The tuned baselines: what is learned from the tuning set and then applied anywhere.
struct Tuned {
  double const_rr_lambda = kNaN, tuned_rr_c = kNaN, tuned_rr_t = kNaN;
  std::vector<double> gd_eta, pgd_eta;   // per K = 1..L
  std::vector<double> bayes_sigma, bayes_weight;
  bool noiseless = true;
};

struct Losses {   // on one TaskSet
  std::map<Method, double> loss;
  std::map<Method, std::vector<double>> yhat;   // per task, for the standard errors
};

Losses baseline_losses(const Point& p, const TaskSet& s, const Tuned& tuned, bool all) {
  Losses out;
  const int K = p.layers;
  auto keep = [&](Method name, std::vector<double> yhat) {
    out.loss[name] = mse(yhat, s.y);
    out.yhat[name] = std::move(yhat);
  };
  auto put = [&](Method name, auto f) { keep(name, predict_all(s.prior(), f)); };
  put(Method::oracle_ridge, [&](SpectrumRef t, size_t i) {
    return s.sigma[i] > 0 ? predict_ridge(t, s.sigma[i] * s.sigma[i]) : predict_ols(t);
  });
  put(Method::const_rr, [&](SpectrumRef t, size_t) { return predict_ridge(t, tuned.const_rr_lambda); });
  if (p.n > p.d) {
    put(Method::ada_rr, [&](SpectrumRef t, size_t) { return predict_ridge(t, noise_estimate(t)); });
    put(Method::tuned_rr, [&](SpectrumRef t, size_t) {
      return predict_ridge(t, std::min(tuned.tuned_rr_c * noise_estimate(t), tuned.tuned_rr_t));
    });
  }
  put(Method::bayes, [&](SpectrumRef t, size_t) {
    return tuned.noiseless ? predict_ols(t) : predict_bayes(t, tuned.bayes_sigma, tuned.bayes_weight);
  });
  keep(Method::gd,
       predict_all(s.raw, [&](SpectrumRef t, size_t) { return predict_gd(t, tuned.gd_eta[K - 1], K); }));
  if (!s.dmmse.empty()) keep(Method::dmmse, s.dmmse);
  keep(Method::newton, predict_all(s.raw, [&](SpectrumRef t, size_t) { return predict_newton(t, K); }));
  if (all) {
    put(Method::zero, [](SpectrumRef, size_t) { return 0.0; });
    put(Method::ols, [](SpectrumRef t, size_t) { return predict_ols(t); });
    put(Method::ridge, [&](SpectrumRef t, size_t) { return predict_ridge(t, p.ridge_lambda); });
    keep(Method::pgd, predict_gd_all(s.input(), tuned.pgd_eta[K - 1], K));
  }
  return out;
}

Tuned tune_baselines(const Point& p, const TaskLaw& law, const TaskSet& s, bool whitened_inputs, const std::atomic<bool>* stop) {
  Tuned tuned;
  tuned.noiseless = law.noise == NoiseKind::none;
  noise_prior(law, &tuned.bayes_sigma, &tuned.bayes_weight);
  // Every candidate's loss is a pass over the tasks' spectra, kTaskLanes tasks at a time (the same bits as one
  // task at a time).
  const SpectraBlocks raw(s.raw);
  const std::optional<SpectraBlocks> prior_own = s.prior_is_raw ? std::nullopt : std::optional(SpectraBlocks(s.prior()));
  const SpectraBlocks& prior = prior_own ? *prior_own : raw;   // one layout where the prior's basis is the raw one
  std::vector<double> lambda(s.prior().size());
  const auto ridge_loss = [&] { return mse(predict_ridge_all(prior, lambda), s.y); };
  tuned.const_rr_lambda = minimise_log(
      [&](double lam) {
        std::fill(lambda.begin(), lambda.end(), lam);
        return ridge_loss();
      },
      1e-6, 1e4);
  if (p.n > p.d) {
    std::vector<double> est(s.prior().size());
    for (size_t i = 0; i < est.size(); ++i) est[i] = noise_estimate(s.prior()[i]);
    auto f = [&](double c, double thr) {
      for (size_t i = 0; i < est.size(); ++i) lambda[i] = std::min(c * est[i], thr);
      return ridge_loss();
    };
    // A joint log grid first: the optimum sits in a diagonal valley (larger c with a finite threshold)
    // that coordinate descent from t = infinity never enters.  Then coordinate refinement.
    double best = kInf;
    for (int i = 0; i < 24; ++i) {
      check_stop(stop);
      for (int j = 0; j < 24; ++j) {
        const double c = std::exp(std::log(0.05) + std::log(20.0 / 0.05) * i / 23);
        const double thr = std::exp(std::log(1e-3) + std::log(1e7) * j / 23);
        const double v = f(c, thr);
        if (v < best) { best = v; tuned.tuned_rr_c = c; tuned.tuned_rr_t = thr; }
      }
    }
    for (int round = 0; round < 2; ++round) {
      tuned.tuned_rr_c = minimise_log([&](double c) { return f(c, tuned.tuned_rr_t); }, tuned.tuned_rr_c / 2, tuned.tuned_rr_c * 2, 8);
      tuned.tuned_rr_t = minimise_log([&](double thr) { return f(tuned.tuned_rr_c, thr); }, tuned.tuned_rr_t / 2, tuned.tuned_rr_t * 2, 8);
    }
  }
  const SpectraBlocks input = whitened_inputs ? s.input() : SpectraBlocks(Spectra());
  // GD's rate on [1e-6, 10]: in closed form for one step (a quadratic loss), by the search for more.
  auto gd_rate = [&](const SpectraBlocks& set, int K) {
    return K == 1 ? gd_one_step_eta(set, s.y, 1e-6, 10.0)
                  : minimise_log([&](double eta) { return mse(predict_gd_all(set, eta, K), s.y); }, 1e-6, 10.0);
  };
  for (int K = 1; K <= p.layers; ++K) {
    check_stop(stop);
    tuned.gd_eta.push_back(gd_rate(raw, K));
    tuned.pgd_eta.push_back(!whitened_inputs ? tuned.gd_eta.back() : gd_rate(input, K));
  }
  return tuned;
}

// ---- the transformer and the GD / GD++ constructions, through the lane model -----------------------

// A model to run over task sets: the LSA model with expanded P, Q, or (arch = transformer) [VO23]'s
// transformer with its theta.
template <class T>
struct Weights {
  ModelShape shape;
  std::vector<T> P, Q;
  std::optional<TransformerShape> transformer;
  std::vector<double> theta;
  void set_context(int n) {   // the same weights on contexts of length n
    shape.n = n;
    if (!transformer) return;
    transformer->n = n;
    transformer->T = token_count(transformer->tokens, n);
  }
  // Whether the weights run on contexts of length n: not beyond a learnt positional table's rows.
  bool fits(int n) const {
    return !transformer || transformer->pe != PosEnc::learnt ||
           token_count(transformer->tokens, n) <= transformer->positions;
  }
  void set_act_clip(double a) {
    shape.act_clip = a;
    if (transformer) transformer->act_clip = a;
  }
};

ModelShape ref_shape(int d, int n, int layers) {
  ModelShape s;
  s.d = d;
  s.n = n;
  s.layers = layers;
  s.heads = 1;
  s.c = 1.0;
  return s;
}

// GD++ per step: P = diag(-gamma I, -eta), Q = diag(I, 0); gamma = 0 is plain GD with rate eta.
template <class T>
Weights<T> gdpp_weights(int d, int n, const std::vector<double>& eta, const std::vector<double>& gamma) {
  const int D = d + 1, K = static_cast<int>(eta.size());
  Weights<T> w{ref_shape(d, n, K), std::vector<T>(K * D * D, T(0)), std::vector<T>(K * D * D, T(0)), std::nullopt, {}};
  for (int l = 0; l < K; ++l) {
    for (int i = 0; i < d; ++i) {
      w.P[l * D * D + i * D + i] = static_cast<T>(-gamma[l]);
      w.Q[l * D * D + i * D + i] = T(1);
    }
    w.P[l * D * D + D * D - 1] = static_cast<T>(-eta[l]);
  }
  return w;
}

template <class T>
struct Readouts {   // a model run over a task set: every layer's readout and the final one's input sensitivity
  int layers = 0, d = 0;
  std::vector<double> yhat;   // B x layers (readouts)
  std::vector<double> sens;   // B x d: d yhat_L / d x_query
  std::vector<double> final() const {
    std::vector<double> f(yhat.size() / layers);
    for (size_t t = 0; t < f.size(); ++t) f[t] = yhat[t * layers + layers - 1];
    return f;
  }
};

// Every layer's readout of `model` (L layers) over `set`; with `sens` the query's x-sensitivity (query_grad).
template <class T, class M>
Readouts<T> run(M& model, int L, const TaskBatch<T>& set, bool sens, const std::atomic<bool>* stop);

template <class T>
Readouts<T> run_model(const Weights<T>& w, const TaskBatch<T>& set, bool sens, const std::atomic<bool>* stop) {
  if (w.transformer) {
    LaneTransformer<T> model(*w.transformer);
    model.set_weights(w.theta.data());
    return run<T>(model, w.transformer->layers, set, sens, stop);
  }
  LaneModel<T> model(w.shape);
  model.set_weights(w.P.data(), w.Q.data());
  return run<T>(model, w.shape.layers, set, sens, stop);
}

template <class T, class M>
Readouts<T> run(M& model, int L, const TaskBatch<T>& set, bool sens, const std::atomic<bool>* stop) {
  const int V = kLanes<T>;
  LaneVec<T> yhat(L), dx(set.d);
  Readouts<T> r;
  r.layers = L;
  r.d = set.d;
  r.yhat.resize(static_cast<size_t>(set.B) * L);
  if (sens) r.sens.resize(static_cast<size_t>(set.B) * set.d);
  for (int c = 0; c < set.chunks; ++c) {
    check_stop(stop);   // per chunk of kLanes tasks
    model.model_forward(set.chunk_Z(c), yhat.data(), sens ? Next::query_grad : Next::nothing);
    const int live = std::min(V, set.B - c * V);
    for (int v = 0; v < live; ++v)
      for (int l = 0; l < L; ++l) r.yhat[static_cast<size_t>(c * V + v) * L + l] = yhat[l][v];
    if (sens) {
      model.query_grad(Lane<T>{} + T(1), dx.data());
      for (int v = 0; v < live; ++v)
        for (int i = 0; i < set.d; ++i) r.sens[static_cast<size_t>(c * V + v) * set.d + i] = dx[i][v];
    }
  }
  return r;
}

template <class T>
std::vector<double> labels(const TaskBatch<T>& set) {
  std::vector<double> y(set.B);
  for (int t = 0; t < set.B; ++t) y[t] = set.y[t / kLanes<T>][t % kLanes<T>];
  return y;
}

struct Alignment {
  double abs = 0, cos = 0, l2 = 0;
};

template <class T>
Alignment align(const Readouts<T>& a, const Readouts<T>& b) {
  Alignment al;
  const std::vector<double> ya = a.final(), yb = b.final();
  const size_t B = ya.size();
  const int d = a.d;
  for (size_t t = 0; t < B; ++t) {
    al.abs += std::fabs(ya[t] - yb[t]) / B;
    double dot = 0, na = 0, nb = 0, diff = 0;
    for (int i = 0; i < d; ++i) {
      const double sa = a.sens[t * d + i], sb = b.sens[t * d + i];
      dot += sa * sb;
      na += sa * sa;
      nb += sb * sb;
      diff += (sa - sb) * (sa - sb);
    }
    al.cos += (na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0.0) / B;
    al.l2 += std::sqrt(diff) / B;
  }
  return al;
}

template <class T>
TaskBatch<T> draw(const TaskLaw& law, uint64_t seed, Draw which, int B) {
  TaskBatch<T> b;
  b.resize(B, law.d, law.n);
  sample_tasks(law, seed, which.stream, which.block, b);
  return b;
}

Eigen::MatrixXd sym_sqrt(const Eigen::MatrixXd& S) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(S);
  return es.eigenvectors() * es.eigenvalues().cwiseMax(0.0).cwiseSqrt().asDiagonal() * es.eigenvectors().transpose();
}

}  // namespace

double dist_to_identity(const Eigen::MatrixXd& M) {
  const double norm = M.norm();
  if (norm == 0.0) return kNaN;
  return (M - M.trace() / M.rows() * Eigen::MatrixXd::Identity(M.rows(), M.cols())).norm() / norm;
}

Eigen::MatrixXd layer_product(const Point& p, const std::vector<double>& P, const std::vector<double>& Q, int l) {
  const int D = p.d + 1;
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(p.d, p.d);
  for (int h = 0; h < p.heads; ++h) {
    const size_t off = (static_cast<size_t>(l) * p.heads + h) * D * D;
    for (int i = 0; i < p.d; ++i)
      for (int k = 0; k < p.d; ++k) M(i, k) += P[off + D * D - 1] * Q[off + i * D + k];
  }
  return M;
}

std::vector<double> v24_scalars(const Point& p, const std::vector<double>& P, const std::vector<double>& Q, int l) {
  const int D = p.d + 1;
  std::vector<double> w(4, 0.0);
  for (int h = 0; h < p.heads; ++h) {
    const size_t off = (static_cast<size_t>(l) * p.heads + h) * D * D;
    double px = 0, qx = 0;
    for (int i = 0; i < p.d; ++i) {
      px += P[off + i * D + i] / p.d;
      qx += Q[off + i * D + i] / p.d;
    }
    const double py = P[off + D * D - 1], qy = Q[off + D * D - 1];
    w[0] += px * qx;
    w[1] += px * qy;
    w[2] += py * qx;
    w[3] += py * qy;
  }
  return w;
}

namespace {

// What the tuning sets give: the closed-form baselines' parameters and GD++ for every K = 1..L, tied (one
// (eta, gamma) for all K steps) and per step, each tuned to a stationary point (gdpp.hpp), in double.
struct Tuning {
  Tuned closed_form;
  std::vector<GdppTuned> gdpp_K, tied_K;
};

template <class T>
Tuning tune(const Point& p, const TaskLaw& law, const Bases& bases, Analysis& out, const std::atomic<bool>* stop) {
  Tuning t;
  const TaskBatch<T> tune = draw<T>(law, p.seed, draws::tune_closed_form, kTuneTasks);   // in the point's precision
  t.closed_form = tune_baselines(p, law, task_set(tune, bases, nullptr, stop), !bases.Wi.identity(), stop);
  const Tuned& cf = t.closed_form;
  const GdppTasks tune_model = gdpp_tasks(draw<double>(law, p.seed, draws::tune_gdpp, kTuneModelTasks));
  std::optional<GdppTasks> validation;   // drawn where per-step GD++ needs it to choose: where a search ends
                                         // off the tied optimum's bits (at L = 1 only if one stopped short)
  const GdppSet validation_set = [&]() -> const GdppTasks& {
    if (!validation) validation = gdpp_tasks(draw<double>(law, p.seed, draws::validate_gdpp, kGdppValidationTasks));
    return *validation;
  };
  Named S(out.series);
  for (int K = 1; K <= p.layers; ++K) {   // a K-step method is compared with the K-th readout
    t.tied_K.push_back(tune_gdpp_tied(tune_model, K, cf.gd_eta[K - 1], stop));
    t.gdpp_K.push_back(tune_gdpp_per_step(tune_model, t.tied_K.back(), K > 1 ? &t.gdpp_K.back() : nullptr,
                                          cf.gd_eta[K - 1], validation_set, stop));
    S[Metric::gdpp_tied_eta].push_back(t.tied_K.back().eta[0]);
    S[Metric::gdpp_tied_gamma].push_back(t.tied_K.back().gamma[0]);
    S[Metric::gdpp_tune_grad].push_back(t.gdpp_K.back().grad_norm);
    S[Metric::gdpp_tied_tune_grad].push_back(t.tied_K.back().grad_norm);
  }
  Named M(out.metrics);
  M[Metric::const_rr_lambda] = cf.const_rr_lambda;
  M[Metric::tuned_rr_c] = cf.tuned_rr_c;
  M[Metric::tuned_rr_t] = cf.tuned_rr_t;
  S[Metric::gd_eta] = cf.gd_eta;
  S[Metric::pgd_eta] = cf.pgd_eta;
  S[Metric::gdpp_eta] = t.gdpp_K.back().eta;
  S[Metric::gdpp_gamma] = t.gdpp_K.back().gamma;
  return t;
}

// The trained model and the L-step references run through the same lane model; `interp` where [VO23]
// interpolates (recurrent single-head lsa models).
template <class T>
struct Models {
  Weights<T> tf, gd, gdpp, gdpp_tied;   // the trained model, L steps of GD, of GD++ per step, of tied GD++
  std::optional<Weights<T>> interp;
  bool tied_is_per_step = false;   // the same weights (at one layer: per-step GD++ is the tied optimum there): run once
  // GD through the trained model's act_clip, as [VO23]'s code runs it (train.py: tr_gd has clip =
  // config.clip; its rate tuned through it). GD++ stays unclipped, as it is tuned: at its unclipped optimum
  // the clip binds in distribution (measured at act_clip 10, L = 4-6: loss 2-15 times its own), where the
  // code's GD++, trained through the clip, is another model (docs/vo23_protocol.md, Fig. 6).
  Models gd_clipped_like_tf() const {
    Models c = *this;
    c.gd.set_act_clip(tf.shape.act_clip);
    return c;
  }
};

// [VO23] App. A.3 (constructed_token_setup.ipynb, cell 7, interpolate_weights): the trained layer's scale
// corrected, Q / beta and P * beta with beta the mean of Q's x-block diagonal, then averaged with the
// construction `ref` (same depth, c = 1), layer by layer, in the trained model's shape (c, act_clip).
template <class T>
Weights<T> interpolated(const Weights<T>& tf, const Weights<T>& ref) {
  const int d = tf.shape.d, D = d + 1;
  const double c = tf.shape.c;
  Weights<T> w = tf;
  for (int l = 0; l < tf.shape.layers; ++l) {
    const size_t off = static_cast<size_t>(l) * D * D;
    double beta = 0;
    for (int i = 0; i < d; ++i) beta += static_cast<double>(tf.Q[off + i * D + i]) / d;
    for (int k = 0; k < D * D; ++k) {
      w.Q[off + k] = static_cast<T>((tf.Q[off + k] / beta + ref.Q[off + k]) / 2);
      w.P[off + k] = static_cast<T>((tf.P[off + k] * beta + ref.P[off + k] / c) / 2);
    }
  }
  return w;
}

template <class T>
Models<T> models(const Point& p, const std::vector<double>& theta, const Tuning& t) {
  const int L = p.layers;
  Models<T> m{{model_shape(p), {}, {}, std::nullopt, {}},
              gdpp_weights<T>(p.d, p.n, std::vector<double>(L, t.closed_form.gd_eta[L - 1]), std::vector<double>(L, 0.0)),
              gdpp_weights<T>(p.d, p.n, t.gdpp_K[L - 1].eta, t.gdpp_K[L - 1].gamma),
              gdpp_weights<T>(p.d, p.n, t.tied_K[L - 1].eta, t.tied_K[L - 1].gamma),
              std::nullopt};
  m.tied_is_per_step = t.gdpp_K[L - 1].eta == t.tied_K[L - 1].eta && t.gdpp_K[L - 1].gamma == t.tied_K[L - 1].gamma;
  if (p.arch == Arch::transformer) {
    m.tf.transformer = transformer_shape(p);
    m.tf.theta = theta;
    return m;
  }
  const ParamLayout layout(p);
  m.tf.P.resize(layout.PQ_size());
  m.tf.Q.resize(layout.PQ_size());
  layout.expand(theta.data(), m.tf.P.data(), m.tf.Q.data());
  if (p.heads == 1 && (L == 1 || p.tie)) m.interp = interpolated(m.tf, L == 1 ? m.gd : m.gdpp_tied);
  return m;
}

// Fu et al. 2023's per-layer comparison with iterative Newton: the cosine similarity, over the evaluation
// tasks, of layer l's errors (yhat_l - y) and Newton step k's, for k = 0..K_max (K_max = min(64, max(12, 4L))),
// L x (K_max + 1) row-major, and the best-matching step of each layer.
template <class T>
void newton_similarity(const Readouts<T>& tf, const TaskSet& es, const std::vector<double>& y, Analysis& out, const std::atomic<bool>* stop) {
  const int L = tf.layers, K_max = std::min(64, std::max(12, 4 * L));
  const size_t B = y.size();
  std::vector<std::vector<double>> newton_error(K_max + 1, std::vector<double>(B));
  std::vector<double> yhat(K_max + 1);
  check_stop(stop);
  for (size_t t = 0; t < B; ++t) {
    predict_newton_steps(es.raw[t], K_max, yhat.data());
    for (int k = 0; k <= K_max; ++k) newton_error[k][t] = yhat[k] - y[t];
  }
  Named S(out.series);
  for (int l = 0; l < L; ++l) {
    std::vector<double> e(B);
    for (size_t t = 0; t < B; ++t) e[t] = tf.yhat[t * L + l] - y[t];
    int best = 0;
    double best_cos = -2.0;
    for (int k = 0; k <= K_max; ++k) {
      const Eigen::Map<const Eigen::VectorXd> a(e.data(), B), b(newton_error[k].data(), B);
      const double cos = a.dot(b) / std::max(a.norm() * b.norm(), 1e-300);
      S[Metric::newton_similarity].push_back(cos);
      if (cos > best_cos) {
        best_cos = cos;
        best = k;
      }
    }
    S[Metric::newton_best_step].push_back(best);
  }
}

// The headline numbers on the point's evaluation set: every method's loss, [V24]'s adjusted losses with
// their paired standard errors, the per-K losses of the references, and the alignment of TF with GD, GD++.
// Returns the set's spectra (the roll-out's GD reads them).
template <class T>
TaskSet evaluation_set(const Point& p, const Bases& bases, const Tuning& t, const Models<T>& m, const TaskBatch<T>& eval_set,
                       const TaskLaw* pool, Analysis& out, const std::atomic<bool>* stop) {
  const int L = p.layers, d = p.d;
  const Tuned& cf = t.closed_form;
  Named M(out.metrics);
  const Readouts<T> run_tf = run_model(m.tf, eval_set, true, stop), run_gd = run_model(m.gd, eval_set, true, stop),
               run_gdpp = run_model(m.gdpp, eval_set, true, stop),
               run_gdpp_tied = m.tied_is_per_step ? run_gdpp : run_model(m.gdpp_tied, eval_set, true, stop);
  const std::vector<double> y = labels(eval_set);
  const TaskSet es = task_set(eval_set, bases, pool, stop);
  const Losses base = baseline_losses(p, es, cf, true);
  std::map<Method, std::vector<double>> yhat = base.yhat;
  yhat[Method::tf] = run_tf.final();
  yhat[Method::gdpp] = run_gdpp.final();
  yhat[Method::gdpp_tied] = run_gdpp_tied.final();
  if (m.interp) yhat[Method::interp] = run_model(*m.interp, eval_set, false, stop).final();
  if (p.act_clip > 0) {   // the same weights without the clip: what act_clip does to the numbers
    Weights<T> off = m.tf;
    off.set_act_clip(0.0);
    yhat[Method::tf_unclipped] = run_model(off, eval_set, false, stop).final();
    M[Metric::se_clip_effect] = paired_se(yhat[Method::tf_unclipped], yhat[Method::tf], y);
  }
  for (const auto& [name, v] : yhat) M[{Family::loss, name}] = base.loss.count(name) ? base.loss.at(name) : mse(v, y);
  for (const auto& [name, v] : yhat)
    if (name != Method::oracle_ridge) {
      M[{Family::adjusted, name}] = M[{Family::loss, name}] - M[{Family::loss, Method::oracle_ridge}];
      M[{Family::se_adjusted, name}] = paired_se(v, yhat[Method::oracle_ridge], y);
    }
  M[Metric::se_loss_tf] = paired_se(yhat[Method::tf], {}, y);
  double lo = kInf, hi = 0.0;
  for (size_t i = 0; i < es.raw.size(); ++i) {   // eigenvalues ascending
    const SpectrumRef s = es.raw[i];
    lo = std::min(lo, s.s(0));
    hi = std::max(hi, s.s(s.s.size() - 1));
  }
  M[Metric::spectrum_min] = lo;
  M[Metric::spectrum_max] = hi;

  // Each method's loss after K = 1 .. L steps; at K = L the loss above (the same predictions).
  Named S(out.series);
  const std::optional<SpectraBlocks> es_input = L > 1 ? std::optional(es.input()) : std::nullopt;
  for (int K = 1; K <= L; ++K) {
    check_stop(stop);
    auto series = [&](Method name, auto loss_K) {
      S[{Family::layer_loss, name}].push_back(K == L ? M[{Family::loss, name}] : loss_K());
    };
    series(Method::gd, [&] {
      return mse(predict_all(es.raw, [&](SpectrumRef s, size_t) { return predict_gd(s, cf.gd_eta[K - 1], K); }), y);
    });
    series(Method::pgd, [&] { return mse(predict_gd_all(*es_input, cf.pgd_eta[K - 1], K), y); });
    auto gdpp_loss_K = [&](const GdppTuned& g) {
      return mse(run_model(gdpp_weights<T>(d, p.n, g.eta, g.gamma), eval_set, false, stop).final(), y);
    };
    series(Method::gdpp, [&] { return gdpp_loss_K(t.gdpp_K[K - 1]); });
    series(Method::gdpp_tied, [&] { return gdpp_loss_K(t.tied_K[K - 1]); });
    series(Method::newton, [&] {
      return mse(predict_all(es.raw, [&](SpectrumRef s, size_t) { return predict_newton(s, K); }), y);
    });
  }

  newton_similarity(run_tf, es, y, out, stop);

  struct Aligned {
    const Readouts<T>& run;
    Metric abs, cos, l2;
  };
  for (const Aligned& r : {Aligned{run_gd, Metric::align_gd_abs, Metric::align_gd_cos, Metric::align_gd_l2},
                           Aligned{run_gdpp, Metric::align_gdpp_abs, Metric::align_gdpp_cos, Metric::align_gdpp_l2},
                           Aligned{run_gdpp_tied, Metric::align_gdpp_tied_abs, Metric::align_gdpp_tied_cos,
                                   Metric::align_gdpp_tied_l2}}) {
    const Alignment a = align(run_tf, r.run);
    M[r.abs] = a.abs;
    M[r.cos] = a.cos;
    M[r.l2] = a.l2;
  }
  return es;
}

// Finite task diversity: every method on pool tasks (fresh inputs and noise, w from the training pool),
// the in-distribution counterpart of the evaluation set's fresh tasks (Raventos et al.'s two test sets).
template <class T>
void pool_tasks(const Point& p, const TaskLaw& pool, const Bases& bases, const Tuning& t, const Models<T>& m,
                Analysis& out, const std::atomic<bool>* stop) {
  const TaskBatch<T> set = draw<T>(pool, p.seed, draws::pool_eval_set, p.eval_tasks);
  const std::vector<double> y = labels(set);
  const Losses base = baseline_losses(p, task_set(set, bases, &pool, stop), t.closed_form, true);
  Named M(out.metrics);
  for (const auto& [name, v] : base.loss) M[{Family::pool_loss, name}] = v;
  const std::vector<double> tf = run_model(m.tf, set, false, stop).final();
  M[{Family::pool_loss, Method::tf}] = mse(tf, y);
  M[{Family::pool_loss, Method::gdpp}] = mse(run_model(m.gdpp, set, false, stop).final(), y);
  M[Metric::se_pool_loss_tf] = paired_se(tf, {}, y);
  M[Metric::se_pool_tf_minus_dmmse] = paired_se(tf, base.yhat.at(Method::dmmse), y);
}

// Losses per noise level, inside and outside the training range.
template <class T>
void noise_levels(const Point& p, const TaskLaw& law, const Bases& bases, const Tuning& t, const Models<T>& m,
                  Analysis& out, const std::atomic<bool>* stop) {
  Named S(out.series);
  std::vector<double> levels;
  const double top = law.noise == NoiseKind::none ? 1.0 : *std::max_element(law.noise_sigma.begin(), law.noise_sigma.end());
  for (double f : {0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0}) levels.push_back(f * std::max(top, 1e-12));
  S[Metric::noise_sigma] = levels;
  for (size_t k = 0; k < levels.size(); ++k) {
    TaskLaw lk = law;
    lk.noise = NoiseKind::fixed;
    lk.noise_sigma = {levels[k]};
    const TaskBatch<T> set = draw<T>(lk, p.seed, draws::noise_level(k), kNoiseTasks);
    const std::vector<double> yk = labels(set);
    const Losses lb = baseline_losses(p, task_set(set, bases, nullptr, stop), t.closed_form, false);
    auto push = [&](Method name, double v) {
      auto& s = S[{Family::noise_loss, name}];
      s.resize(levels.size(), kNaN);
      s[k] = v;
    };
    push(Method::tf, mse(run_model(m.tf, set, false, stop).final(), yk));
    push(Method::gdpp, mse(run_model(m.gdpp, set, false, stop).final(), yk));
    for (const auto& [name, v] : lb.loss) push(name, v);
  }
}

// The trained model and the references applied to contexts of length n_k (c = 1/n_k under norm = 1/n).
template <class T>
Models<T> at_length(const Point& p, const Models<T>& m, int n_k) {
  Models<T> mk = m;
  for (Weights<T>* w : {&mk.tf, &mk.gd, &mk.gdpp, &mk.gdpp_tied}) w->set_context(n_k);
  if (!mk.tf.transformer) mk.tf.shape.c = attention_c(p, n_k);
  if (mk.interp) {
    mk.interp->set_context(n_k);
    mk.interp->shape.c = mk.tf.shape.c;
  }
  return mk;
}

// The models every out-of-distribution curve follows: the trained one, GD, GD++, tied GD++ and (where made)
// interp.
template <class T>
std::vector<std::pair<Method, const Weights<T>*>> ood_models(const Models<T>& m) {
  std::vector<std::pair<Method, const Weights<T>*>> v = {{Method::tf, &m.tf}, {Method::gd, &m.gd}, {Method::gdpp, &m.gdpp},
                                                         {Method::gdpp_tied, m.tied_is_per_step ? &m.gdpp : &m.gdpp_tied}};
  if (m.interp) v.push_back({Method::interp, &*m.interp});
  return v;
}

// Every ood_models model's loss on `set` (labels y) into S[{family, method}], each distinct model run once; NaN for
// a model that does not run on contexts of length n (Weights::fits).
template <class T>
void ood_losses(const Models<T>& m, const TaskBatch<T>& set, const std::vector<double>& y, Family family,
                Named<std::vector<double>>& S, const std::atomic<bool>* stop) {
  std::vector<std::pair<const Weights<T>*, double>> run;
  for (const auto& [method, w] : ood_models(m)) {
    auto same = std::find_if(run.begin(), run.end(), [&](const auto& r) { return r.first == w; });
    if (same == run.end())
      same = run.insert(run.end(), {w, w->fits(set.n) ? mse(run_model(*w, set, false, stop).final(), y) : kNaN});
    S[{family, method}].push_back(same->second);
  }
}

// One out-of-distribution curve at the training length: for each value, AnalysisSets::ood tasks of the law
// `shift(law, value)` drawn from `which(k)`, and the loss of every ood_models model on them.
template <class T, size_t K, class Shift>
void ood_curve(const Point& p, const TaskLaw& law, const Models<T>& m, const double (&values)[K], Metric axis,
               Family family, Draw (*which)(int), Shift shift, Named<std::vector<double>>& S, const std::atomic<bool>* stop) {
  S[axis] = std::vector<double>(values, values + K);
  for (size_t k = 0; k < K; ++k) {
    TaskLaw lk = law;
    shift(lk, values[k]);
    const TaskBatch<T> set = draw<T>(lk, p.seed, which(static_cast<int>(k)), kOodTasks);
    ood_losses(m, set, labels(set), family, S, stop);
  }
}

// Out of distribution (OodScales): input scale, teacher scale, [VO23]'s other input laws at an input range
// and with a teacher scale; and context length M != n (c = 1/M under norm = 1/n).  GD runs through the
// trained model's act_clip, as in [VO23]'s code: far out, a clipped model's loss plateaus.
template <class T>
void out_of_distribution(const Point& p, const TaskLaw& law, const Models<T>& trained, Analysis& out, const std::atomic<bool>* stop) {
  Named S(out.series);
  const Models<T> m = trained.gd_clipped_like_tf();
  ood_curve(p, law, m, OodScales::input, Metric::ood_alpha, Family::ood_alpha_loss, draws::ood_alpha,
            [](TaskLaw& l, double a) { l.x_scale = a; }, S, stop);
  ood_curve(p, law, m, OodScales::teacher, Metric::ood_teacher, Family::ood_teacher_loss, draws::ood_teacher,
            [](TaskLaw& l, double a) { l.w_scale = a; }, S, stop);
  ood_curve(p, law, m, OodScales::other, Metric::ood_other, Family::ood_other_loss, draws::ood_other,
            [](TaskLaw& l, double a) { l.other_inputs = true; l.x_scale = a; }, S, stop);
  ood_curve(p, law, m, OodScales::other, Metric::ood_other_teacher, Family::ood_other_teacher_loss,
            draws::ood_other_teacher, [](TaskLaw& l, double a) { l.other_inputs = true; l.w_scale = a; }, S, stop);
  const std::vector<double> lengths = {std::max(1.0, std::floor(p.n / 2.0)), double(p.n), 2.0 * p.n};
  S[Metric::ood_context] = lengths;
  for (size_t k = 0; k < lengths.size(); ++k) {
    TaskLaw lk = law;
    lk.n = static_cast<int>(lengths[k]);
    const TaskBatch<T> set = draw<T>(lk, p.seed, draws::ood_context(k), kOodTasks);
    ood_losses(at_length(p, m, lk.n), set, labels(set), Family::ood_context_loss, S, stop);   // NaN beyond a learnt positional table
  }
}

// The tasks of `set` cut to their first k context tokens and their query.
template <class T>
TaskBatch<T> prefix(const TaskBatch<T>& set, int k) {
  TaskBatch<T> out;
  out.resize(set.B, set.d, k);
  const size_t D = set.d + 1, N = set.n + 1, Nk = k + 1;
  for (size_t c = 0; c < static_cast<size_t>(set.chunks); ++c)
    for (size_t i = 0; i < D; ++i)
      for (size_t j = 0; j < Nk; ++j) out.Z[(c * D + i) * Nk + j] = set.Z[(c * D + i) * N + (j < Nk - 1 ? j : N - 1)];
  out.y = set.y;
  out.mask = set.mask;
  out.sigma = set.sigma;
  out.w = set.w;
  return out;
}

// The final readouts of `w` on the prefixes of length k of `set`: from each task's token Gram `G` when the model
// is of the Gram form (gram.hpp), else by running it on the prefixes (built once a length, in `cut`).
template <class T>
std::vector<double> readouts_at(const Weights<T>& w, const TaskBatch<T>& set, int k, const std::vector<Eigen::MatrixXd>& G,
                                const std::vector<Eigen::VectorXd>& zq, std::optional<TaskBatch<T>>& cut,
                                const std::atomic<bool>* stop) {
  if (!w.transformer && gram_form(w.shape)) {
    const std::vector<double> P(w.P.begin(), w.P.end()), Q(w.Q.begin(), w.Q.end());
    std::vector<double> yhat(set.B);
    for (int t = 0; t < set.B; ++t) yhat[t] = gram_forward(w.shape, P.data(), Q.data(), G[t], zq[t])(w.shape.layers - 1);
    return yhat;
  }
  if (!cut) cut = prefix(set, k);
  return run_model(w, *cut, false, stop).final();
}

// Loss against context length (context_curve = C; Garg et al. 2022's curves): every method at every length
// k = 1..C on the prefixes of one set of AnalysisSets::context tasks of length C (each task's first k context
// tokens and its query), the trained weights and the tuned baselines as they are (nothing retuned per length;
// the ridge family and Bayes need no tuning, dMMSE with a pool).  Linear in C: each task's token Gram (whose
// blocks are X X^T, X y and |y|^2) grows a token a length, and the baselines, dMMSE and every model of the
// Gram form (linear attention without a clip) read it; another model runs on each prefix: quadratic in C
// for a clipped linear model, cubic for softmax or mixed attention and the transformer.
template <class T>
void context_curve(const Point& p, const TaskLaw& law, const Bases& bases, const Tuning& t, const Models<T>& m,
                   const TaskLaw* pool, Analysis& out, const std::atomic<bool>* stop) {
  Named S(out.series);
  const int C = p.context_curve, d = p.d, D = d + 1;
  TaskLaw lC = law;
  lC.n = C;
  const TaskBatch<T> set = draw<T>(lC, p.seed, draws::context_length(C), AnalysisSets::context);
  const std::vector<double> y = labels(set);
  std::optional<DmmseSums> dmmse;
  if (pool) dmmse.emplace(dmmse_prior(*pool));
  auto token = [&](int i, int j) {   // token j of task i: (x_j, y_j), the query (x_q, 0)
    Eigen::VectorXd z(D);
    const Lane<T>* Z = set.chunk_Z(i / kLanes<T>);
    for (int r = 0; r < D; ++r) z(r) = static_cast<double>(Z[r * (C + 1) + j][i % kLanes<T>]);
    return z;
  };
  std::vector<Eigen::MatrixXd> G(set.B, Eigen::MatrixXd::Zero(D, D));
  std::vector<Eigen::VectorXd> zq(set.B);
  for (int i = 0; i < set.B; ++i) zq[i] = token(i, C);
  for (int k = 1; k <= C; ++k) {
    check_stop(stop);   // per context length: the Grams, the models and the baselines' task set
    for (int i = 0; i < set.B; ++i) {
      const Eigen::VectorXd z = token(i, k - 1);
      G[i].noalias() += z * z.transpose();
    }
    Point pk = p;
    pk.n = k;
    const Models<T> mk = at_length(p, m, k);
    std::optional<TaskBatch<T>> cut;
    const bool fits = mk.tf.fits(k);   // NaN beyond a learnt positional table
    const std::vector<double> tf = fits ? readouts_at(mk.tf, set, k, G, zq, cut, stop) : std::vector<double>{};
    S[Metric::context_length].push_back(k);
    S[{Family::context_loss, Method::tf}].push_back(fits ? mse(tf, y) : kNaN);
    S[Metric::se_context_loss_tf].push_back(fits ? paired_se(tf, {}, y) : kNaN);
    S[{Family::context_loss, Method::gdpp}].push_back(mse(readouts_at(mk.gdpp, set, k, G, zq, cut, stop), y));
    TaskSetBuilder ts(bases, set.B);
    for (int i = 0; i < set.B; ++i) {
      const Eigen::MatrixXd XXt = G[i].topLeftCorner(d, d);
      const Eigen::VectorXd Xy = G[i].col(d).head(d), xq = zq[i].head(d);
      ts.add(XXt, Xy, G[i](d, d), k, xq, y[i], set.sigma[i]);
      if (dmmse) dmmse->add(XXt, Xy, G[i](d, d), k, xq);
    }
    if (dmmse) ts.s.dmmse = dmmse->take();
    const Losses base = baseline_losses(pk, ts.take(), t.closed_form, true);
    for (const auto& [name, v] : base.loss) {
      auto& s = S[{Family::context_loss, name}];
      s.resize(k - 1, kNaN);   // AdaRR and TunedRR start at n > d
      s.push_back(v);
    }
  }
}

// [VO23]'s roll-out (Fig. 10, Fig. 1 right; constructed_token_setup.ipynb cell 10): the trained recurrent
// layer applied `rollout` times, each application damped by rollout_damping and updating only the label
// channel (its code's dampening and y_update), against as many GD steps at rollout_damping x the tuned
// 1-step rate, every layer's readout on the evaluation set.  The layer's roll-out is weight surgery on a
// deeper tied model: the attention's output map keeps only its label row (lsa: P's last row; transformer:
// W_O's last column and b_O's last entry), times the damping.  GD's K steps are the closed form on the set's
// spectra `es`, as GD's other losses (the code runs its construction, the same steps in float).
template <class T>
void rollout(const Point& p, const Tuning& t, const Models<T>& m, const TaskBatch<T>& eval_set, const TaskSet& es,
             Analysis& out, const std::atomic<bool>* stop) {
  const int K = p.rollout, D = p.d + 1;
  const double damp = p.rollout_damping;
  Weights<T> tf = m.tf;
  if (tf.transformer) {
    const TransformerLayout layout(*tf.transformer);
    const LayerOffsets& o = layout.layer(0);
    const int E = tf.transformer->E, HK = tf.transformer->heads * tf.transformer->key;
    for (int r = 0; r < HK; ++r)
      for (int c = 0; c < E; ++c) tf.theta[o.Wo + r * E + c] *= c == E - 1 ? damp : 0.0;
    if (o.bo >= 0)
      for (int c = 0; c < E; ++c) tf.theta[o.bo + c] *= c == E - 1 ? damp : 0.0;
    tf.transformer->layers = K;
  } else {
    const size_t block = static_cast<size_t>(p.heads) * D * D;
    std::vector<T> P(block * K), Q(block * K);
    for (int l = 0; l < K; ++l)
      for (size_t x = 0; x < block; ++x) {
        const bool label_row = (x % (D * D)) / D == static_cast<size_t>(D - 1);
        P[l * block + x] = label_row ? static_cast<T>(damp * tf.P[x]) : T(0);
        Q[l * block + x] = tf.Q[x];
      }
    tf.P = std::move(P);
    tf.Q = std::move(Q);
  }
  tf.shape.layers = K;
  const std::vector<double> y = labels(eval_set);
  const Readouts<T> r_tf = run_model(tf, eval_set, false, stop);
  const SpectraBlocks raw(es.raw);
  Named S(out.series);
  for (int l = 0; l < K; ++l) {
    std::vector<double> a(y.size());
    for (size_t i = 0; i < y.size(); ++i) a[i] = r_tf.yhat[i * K + l];
    S[Metric::rollout_loss_tf].push_back(mse(a, y));
    S[Metric::rollout_loss_gd].push_back(mse(predict_gd_all(raw, damp * t.closed_form.gd_eta[0], l + 1), y));
  }
}

// Learned preconditioners ([A23]) and the [V24] scalars, per layer, from the expanded weights.
void learned_weights(const Point& p, const TaskLaw& law, const Trained& trained, Analysis& out) {
  const int d = p.d, D = d + 1;
  Named S(out.series);
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < d; ++k) S[Metric::sigma].push_back(law.Sigma(i, k));   // the input covariance, row-major
  const Eigen::MatrixXd Sigma_half = sym_sqrt(law.Sigma);
  for (int l = 0; l < p.layers; ++l) {
    const Eigen::MatrixXd A = layer_product(p, trained.P, trained.Q, l), W = Sigma_half * A * Sigma_half;
    for (int i = 0; i < d; ++i)
      for (int k = 0; k < d; ++k) {
        S[Metric::precond_product].push_back(A(i, k));
        S[Metric::precond_whitened].push_back(W(i, k));
      }
    S[Metric::precond_dist].push_back(dist_to_identity(A));
    S[Metric::precond_dist_whitened].push_back(dist_to_identity(W));
    S[Metric::precond_a].push_back(-W.trace() / d);
    if (p.param == Param::sparse_ab) {
      Eigen::MatrixXd B = Eigen::MatrixXd::Zero(d, d);
      for (int h = 0; h < p.heads; ++h)
        for (int i = 0; i < d; ++i)
          for (int k = 0; k < d; ++k) B(i, k) += trained.P[(static_cast<size_t>(l) * p.heads + h) * D * D + i * D + k];
      S[Metric::precond_b_dist].push_back(dist_to_identity(B));
      S[Metric::precond_b].push_back(B.trace() / d);
    }
    const std::vector<double> w = v24_scalars(p, trained.P, trained.Q, l);
    S[Metric::v24_w_xx].push_back(w[0]);
    S[Metric::v24_w_xy].push_back(w[1]);
    S[Metric::v24_w_yx].push_back(w[2]);
    S[Metric::v24_w_yy].push_back(w[3]);
  }
}

template <class T>
Analysis analyse_typed(const Point& p, const Trained& trained, const std::atomic<bool>* stop) {
  const auto t0 = std::chrono::steady_clock::now();
  Analysis out;
  check_stop(stop);   // and between every method below, and inside each between tasks or chunks of them
  const TaskLaw law = make_task_law(p);
  const Bases bases = make_bases(law);
  const Tuning t = tune<T>(p, law, bases, out, stop);
  const Models<T> m = models<T>(p, trained.theta, t);
  check_stop(stop);
  const EvalDraw e = eval_draw(p);
  const TaskBatch<T> eval_set = draw<T>(law, e.seed, e.which, p.eval_tasks);   // training's set
  const TaskLaw pool = pool_law(p);   // w from the training pool (task_pool > 0), else the fresh law
  check_stop(stop);
  {
    const TaskSet es = evaluation_set(p, bases, t, m, eval_set, p.task_pool > 0 ? &pool : nullptr, out, stop);
    check_stop(stop);
    if (p.rollout > 0) rollout(p, t, m, eval_set, es, out, stop);
  }   // the set's spectra freed before the other sets are drawn
  check_stop(stop);
  if (probes_apply(p)) probe_similarity(p, trained.theta, out, stop);
  check_stop(stop);
  if (p.task_pool > 0) pool_tasks(p, pool, bases, t, m, out, stop);
  check_stop(stop);
  if (p.context_curve > 0) context_curve(p, law, bases, t, m, p.task_pool > 0 ? &pool : nullptr, out, stop);
  check_stop(stop);
  noise_levels(p, law, bases, t, m, out, stop);
  check_stop(stop);
  out_of_distribution(p, law, m, out, stop);
  check_stop(stop);
  if (p.arch == Arch::lsa) learned_weights(p, law, trained, out);
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - t0;
  Named(out.metrics)[Metric::analysis_seconds] = spent.count();
  return out;
}

}  // namespace

Analysis analyse(const Point& p, const Trained& trained, const std::atomic<bool>* stop) {
  return p.precision == Precision::f32 ? analyse_typed<float>(p, trained, stop) : analyse_typed<double>(p, trained, stop);
}

}  // namespace icl
