// Fu et al.'s per-layer probes (probes.hpp): the probes from the normal equations of each layer's features
// at every x token, their errors per task and position, and the cosine per task with the errors of Newton,
// gradient descent and least squares on the same prefixes.
#include "icl/analysis/probes.hpp"

#include <algorithm>
#include <functional>

#include "icl/analysis/analysis.hpp"
#include "icl/analysis/baselines.hpp"
#include "icl/analysis/metrics.hpp"
#include "icl/base/cancel.hpp"
#include "icl/base/rng.hpp"

namespace icl {
namespace {

using L = Lane<double>;

// The features layer l (1..L) reads at the x tokens of the last forward: its output, the last layer's as
// its read-out reads it.  Row r, x token j of lane v: f[r * T + x_token(j)][v].
const L* features(const LaneTransformer<double>& model, int l) {
  return l == model.shape().layers ? model.readout_features() : model.tokens(l);
}

// phi (E + 1) of x token j, lane v: the features, then 1 (the bias).
Eigen::VectorXd phi(const TransformerShape& s, const L* f, int j, int v) {
  Eigen::VectorXd x(s.E + 1);
  for (int r = 0; r < s.E; ++r) x(r) = f[r * s.T + s.x_token(j)][v];
  x(s.E) = 1.0;
  return x;
}

}  // namespace

bool probes_apply(const Point& p) { return p.arch == Arch::transformer && p.causal && p.prefix_loss && p.analysis; }

Eigen::VectorXd prefix_labels(const TaskBatch<double>& set, int t) {
  const int c = t / kLanes<double>, v = t % kLanes<double>, N = set.n + 1;
  Eigen::VectorXd y(N);
  for (int j = 0; j < set.n; ++j) y(j) = set.chunk_Z(c)[set.d * N + j][v];
  y(set.n) = set.y[c][v];
  return y;
}

std::vector<Eigen::VectorXd> fit_probes(const TransformerShape& s, const std::vector<double>& theta,
                                        const TaskBatch<double>& set) {
  const int Ls = s.layers, N = s.n + 1, P = s.E + 1;
  LaneTransformer<double> model(s);
  model.set_weights(theta.data());
  LaneVec<double> yhat(Ls);
  std::vector<Eigen::MatrixXd> A(Ls, Eigen::MatrixXd::Zero(P, P));
  std::vector<Eigen::VectorXd> b(Ls, Eigen::VectorXd::Zero(P));
  Eigen::MatrixXd Phi(P, kLanes<double> * N);
  Eigen::VectorXd y(kLanes<double> * N);
  for (int c = 0; c < set.chunks; ++c) {
    model.model_forward(set.chunk_Z(c), yhat.data());
    const int tasks = std::min(kLanes<double>, set.B - c * kLanes<double>);
    for (int v = 0; v < tasks; ++v) y.segment(v * N, N) = prefix_labels(set, c * kLanes<double> + v);
    for (int l = 1; l <= Ls; ++l) {
      const L* f = features(model, l);
      for (int v = 0; v < tasks; ++v)
        for (int j = 0; j < N; ++j) Phi.col(v * N + j) = phi(s, f, j, v);
      const auto used = Phi.leftCols(tasks * N);
      A[l - 1].noalias() += used * used.transpose();
      b[l - 1].noalias() += used * y.head(tasks * N);
    }
  }
  std::vector<Eigen::VectorXd> probes;
  for (int l = 0; l < Ls; ++l) probes.push_back(A[l].completeOrthogonalDecomposition().solve(b[l]));
  return probes;
}

std::vector<std::vector<Eigen::VectorXd>> probe_errors(const TransformerShape& s, const std::vector<double>& theta,
                                                       const std::vector<Eigen::VectorXd>& probes,
                                                       const TaskBatch<double>& set) {
  const int Ls = s.layers, N = s.n + 1;
  LaneTransformer<double> model(s);
  model.set_weights(theta.data());
  LaneVec<double> yhat(Ls);
  std::vector<std::vector<Eigen::VectorXd>> e(Ls, std::vector<Eigen::VectorXd>(set.B, Eigen::VectorXd(N)));
  for (int c = 0; c < set.chunks; ++c) {
    model.model_forward(set.chunk_Z(c), yhat.data());
    for (int v = 0; v < kLanes<double> && c * kLanes<double> + v < set.B; ++v) {
      const int t = c * kLanes<double> + v;
      const Eigen::VectorXd y = prefix_labels(set, t);
      for (int l = 1; l <= Ls; ++l) {
        const L* f = features(model, l);
        for (int j = 0; j < N; ++j) e[l - 1][t](j) = probes[l - 1].dot(phi(s, f, j, v)) - y(j);
      }
    }
  }
  return e;
}

namespace {

// Every eval task's prefixes as spectra, [t * n + j - 1]: the plain X X^T of its first j = 1..n pairs,
// predicting x_j.
Spectra prefix_spectra(const TaskBatch<double>& eval) {
  const int d = eval.d, N = eval.n + 1;
  TaskSpectra spectra;
  spectra.reserve(static_cast<size_t>(eval.B) * eval.n);
  for (int t = 0; t < eval.B; ++t) {
    const L* Z = eval.chunk_Z(t / kLanes<double>);
    const int v = t % kLanes<double>;
    Eigen::MatrixXd XXt = Eigen::MatrixXd::Zero(d, d);
    Eigen::VectorXd Xy = Eigen::VectorXd::Zero(d), x(d);
    double yy = 0;
    for (int j = 1; j < N; ++j) {
      for (int i = 0; i < d; ++i) x(i) = Z[i * N + j - 1][v];
      const double yj = Z[d * N + j - 1][v];
      XXt.noalias() += x * x.transpose();
      Xy += yj * x;
      yy += yj * yj;
      for (int i = 0; i < d; ++i) x(i) = Z[i * N + j][v];
      spectra.add_sums(XXt, Xy, yy, j, x);
    }
  }
  return spectra.take();
}

// A prefix's predictions for every column: row[c], c = 0..columns-1.
using Method = std::function<void(SpectrumRef, double* row)>;

// L x columns row-major: per layer l and column c, the mean over the tasks t of the cosine of the probe's
// errors e[l][t] with the method's, row_c(prefix j) - y[t](j) (j = 0, no example: the prediction 0).  A task's
// rows are computed once for all columns; each cosine sum still adds the tasks in order.
std::vector<double> similarity(const std::vector<std::vector<Eigen::VectorXd>>& e,
                               const Spectra& prefixes, const std::vector<Eigen::VectorXd>& y,
                               int columns, const Method& method, const std::atomic<bool>* stop) {
  const int Ls = static_cast<int>(e.size()), B = static_cast<int>(y.size()), n = static_cast<int>(y[0].size()) - 1;
  std::vector<double> cos(static_cast<size_t>(Ls) * columns, 0.0), rows(static_cast<size_t>(n) * columns);
  Eigen::VectorXd r(n + 1);
  for (int t = 0; t < B; ++t) {
    check_stop(stop);
    for (int j = 1; j <= n; ++j) method(prefixes[static_cast<size_t>(t) * n + j - 1], &rows[static_cast<size_t>(j - 1) * columns]);
    for (int c = 0; c < columns; ++c) {
      r(0) = -y[t](0);
      for (int j = 1; j <= n; ++j) r(j) = rows[static_cast<size_t>(j - 1) * columns + c] - y[t](j);
      for (int l = 0; l < Ls; ++l)
        cos[static_cast<size_t>(l) * columns + c] += e[l][t].dot(r) / std::max(e[l][t].norm() * r.norm(), 1e-300) / B;
    }
  }
  return cos;
}

// Per layer, the column of the largest similarity.
std::vector<int> best_columns(const std::vector<double>& cos, int columns) {
  std::vector<int> best;
  for (auto row = cos.begin(); row != cos.end(); row += columns)
    best.push_back(static_cast<int>(std::max_element(row, row + columns) - row));
  return best;
}

}  // namespace

void probe_similarity(const Point& p, const std::vector<double>& theta, Analysis& out, const std::atomic<bool>* stop) {
  const TransformerShape s = transformer_shape(p);
  const TaskLaw law = make_task_law(p);
  const auto draw = [&](Draw which) {
    TaskBatch<double> set;
    set.resize(AnalysisSets::probe, p.d, p.n);
    sample_tasks(law, p.seed, which.stream, which.block, set);
    return set;
  };
  const TaskBatch<double> fit = draw(draws::probe_fit), eval = draw(draws::probe_eval);
  check_stop(stop);
  const std::vector<Eigen::VectorXd> probes = fit_probes(s, theta, fit);
  check_stop(stop);
  const std::vector<std::vector<Eigen::VectorXd>> e = probe_errors(s, theta, probes, eval);
  const int Ls = p.layers, N = p.n + 1, B = eval.B, K_max = std::min(64, std::max(12, 4 * Ls));
  Named S(out.series);
  for (int l = 0; l < Ls; ++l) {
    double sum = 0;
    for (int t = 0; t < B; ++t) sum += e[l][t].squaredNorm();
    S[Metric::probe_loss].push_back(sum / (static_cast<double>(B) * N));
  }
  check_stop(stop);
  const Spectra prefixes = prefix_spectra(eval);
  std::vector<Eigen::VectorXd> y;
  for (int t = 0; t < B; ++t) y.push_back(prefix_labels(eval, t));
  const std::vector<double> newton = similarity(
      e, prefixes, y, K_max + 1, [&](SpectrumRef t, double* row) { predict_newton_steps(t, K_max, row); }, stop);
  const std::vector<double> gd = similarity(
      e, prefixes, y, kProbeGdSteps,
      [](SpectrumRef t, double* row) {
        for (int c = 0; c < kProbeGdSteps; ++c) row[c] = predict_gd(t, kProbeGdRate, 1 << c);
      },
      stop);
  const std::vector<double> ols =
      similarity(e, prefixes, y, 1, [](SpectrumRef t, double* row) { row[0] = predict_ols(t); }, stop);
  S[Metric::probe_newton_similarity] = newton;
  S[Metric::probe_gd_similarity] = gd;
  S[Metric::probe_ols_similarity] = ols;
  for (int k : best_columns(newton, K_max + 1)) S[Metric::probe_newton_best_step].push_back(k);
  for (int c : best_columns(gd, kProbeGdSteps)) S[Metric::probe_gd_best_step].push_back(1 << c);
}

}  // namespace icl
