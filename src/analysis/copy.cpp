// The copy analysis of copy.hpp: per chunk, one forward and, per k, one backward from the first layer's
// output with dLoss/dH_1 = 1 in column k (masked to the chunk's tasks), summing dX over the tasks.
#include "icl/analysis/copy.hpp"

#include <cmath>

#include "icl/analysis/metrics.hpp"
#include "icl/base/rng.hpp"

namespace icl {

CopyNorms copy_norms(const TransformerShape& s, const std::vector<double>& theta, const TaskBatch<double>& set) {
  using L = Lane<double>;
  const int T = s.T, E = s.E, d = s.d_tok, ks = T - 2;   // k = 0 .. 2n-2
  LaneTransformer<double> model(s);
  model.set_weights(theta.data());
  std::vector<double> mean(static_cast<size_t>(ks) * d * T, 0.0);   // [k][r][t]: sum over tasks of dt_k/dX(r, t)
  LaneVec<double> yhat(s.layers), G(static_cast<size_t>(E) * T);
  for (int c = 0; c < set.chunks; ++c) {
    model.model_forward(set.chunk_Z(c), yhat.data());
    for (int k = 0; k < ks; ++k) {
      for (auto& g : G) g = L{};
      for (int r = 0; r < E; ++r) G[r * T + k] = set.mask[c];
      model.tokens_backward(0, G.data());
      const L* dX = model.input_grad();
      for (int x = 0; x < d * T; ++x) mean[static_cast<size_t>(k) * d * T + x] += lane_sum<double>(dX[x]);
    }
  }
  CopyNorms out;
  for (int k = 0; k < ks; ++k) {
    std::vector<double> g(T, 0.0);
    double total = 0;
    for (int t = 0; t < T; ++t) {
      for (int r = 0; r < d; ++r) {
        const double m = mean[(static_cast<size_t>(k) * d + r) * T + t] / set.B;
        g[t] += m * m;
      }
      g[t] = std::sqrt(g[t]);
      total += g[t];
    }
    out.own += g[k] / ks;
    out.next += g[k + 1] / ks;
    out.other += (total - g[k]) / (T - 2) / ks;
  }
  return out;
}

bool copy_applies(const Point& p) { return p.arch == Arch::transformer && p.tokens == Tokens::classic && p.analysis; }

CopyCurve::CopyCurve(const Point& p) : p_(p) {
  set_.resize(p.eval_tasks, p.d, p.n);
  const EvalDraw e = eval_draw(p);
  sample_tasks(make_task_law(p), e.seed, e.which.stream, e.which.block, set_);
}

bool CopyCurve::wanted(int64_t step) const { return step % p_.eval_every == 0 || step == p_.steps; }

void CopyCurve::measure(int64_t step, const std::vector<double>& theta, const std::vector<double>&) {
  const CopyNorms c = copy_norms(transformer_shape(p_), theta, set_);
  Named S(measured_.series);
  S[Metric::copy_step].push_back(static_cast<double>(step));
  S[Metric::copy_own].push_back(c.own);
  S[Metric::copy_next].push_back(c.next);
  S[Metric::copy_other].push_back(c.other);
}

}  // namespace icl
