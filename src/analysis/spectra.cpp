// Task spectra (baselines.hpp) without the eigenvectors.  Per task, X X^T scaled to largest entry 1 is reduced
// to a tridiagonal T = Q^T (X X^T) Q by Householder reflections (Eigen's Tridiagonalization), and Q^T applied
// to X y and x_q.  Then T = W^T diag(s) W by implicit symmetric QR steps with Wilkinson's shift (Golub and Van
// Loan, Matrix Computations, 4th ed., Alg. 8.3.2-8.3.3), every Givens rotation applied to the two projections
// instead of to a d x d matrix: O(d^2) where the eigenvectors cost O(d^3).
//
// A QR step is a chain of dependent square roots and divisions, one per rotation, so one task's steps are
// bound by their latency (before it, perf found 87% of a d = 10 analysis in Eigen's solver, most of it accumulating eigenvectors).  The steps
// run kTaskLanes tasks side by side instead, one lane each: every lane has its own unreduced block, shift and
// step count; a lane outside its block keeps its values (its rotation is the identity, and it is not
// applied), so a lane computes exactly its own task's sequence of steps, whatever its neighbours.
// The frozen reference, the eigendecomposition itself, is task_spectrum_ref in tests/test_baselines.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "icl/analysis/baselines.hpp"

namespace icl {
namespace {

constexpr double kEps2 = std::numeric_limits<double>::epsilon() * std::numeric_limits<double>::epsilon();
constexpr double kTiny = std::numeric_limits<double>::min();

// kTaskLanes tridiagonals and their projections, entry i of lane j at [i * kTaskLanes + j].
struct Lanes {
  int d;
  std::vector<double> a, e, p, q;   // diagonal, sub-diagonal (d - 1 rows and a spare), Q^T X y, Q^T x_q
  explicit Lanes(int dim) : d(dim), a(dim * kTaskLanes, 0.0), e(dim * kTaskLanes, 0.0), p(dim * kTaskLanes, 0.0), q(dim * kTaskLanes, 0.0) {}
  double& at(std::vector<double>& v, int i, int j) { return v[i * kTaskLanes + j]; }
};

// Zeroes every sub-diagonal entry negligible beside T's norm (about 1): |e_i|^2 <= eps^2 (|a_i| + |a_{i+1}|),
// Eigen's test; the eigenvalues move by at most eps.
void deflate(Lanes& t) {
  for (int i = 0; i + 1 < t.d; ++i) {
    const double* a = &t.a[i * kTaskLanes];
    double* e = &t.e[i * kTaskLanes];
    for (int j = 0; j < kTaskLanes; ++j)
      e[j] = e[j] * e[j] <= kEps2 * (std::fabs(a[j]) + std::fabs(a[kTaskLanes + j])) ? 0.0 : e[j];
  }
}

// Lane j's last unreduced block lo..hi (hi = 0: diagonal) and the start (x, z) of its next step: the first
// column of T - mu I, mu Wilkinson's shift from the block's trailing 2 x 2.
void next_block(Lanes& t, int j, int& lo, int& hi, double& x, double& z) {
  while (hi > 0 && t.at(t.e, hi - 1, j) == 0) --hi;
  lo = hi;
  if (hi <= 0) return;
  lo = hi - 1;
  while (lo > 0 && t.at(t.e, lo - 1, j) != 0) --lo;
  const double delta = (t.at(t.a, hi - 1, j) - t.at(t.a, hi, j)) / 2, f = t.at(t.e, hi - 1, j);
  const double mu = delta == 0 ? t.at(t.a, hi, j) - std::fabs(f)
                               : t.at(t.a, hi, j) - f * (f / (delta + std::copysign(std::sqrt(delta * delta + f * f), delta)));
  x = t.at(t.a, lo, j) - mu;
  z = t.at(t.e, lo, j);
}

// One rotation in the plane (k, k+1) of every lane whose step is there: T <- R T R^T, R = [c s; -s c] mapping
// (x, z) to (r, 0), which also sets e_{k-1} = r past the block's start; the projections rotate alike; then
// (x, z) become the bulge R leaves at T(k+2, k) when the block goes on.  A lane's step ends at its block's
// end or where the bulge vanishes (z = 0).  Selects over all lanes rather than branches per lane.
void rotate(Lanes& t, int k, const int* lo, const int* hi, double* x, double* z) {
  double c[kTaskLanes], s[kTaskLanes], r[kTaskLanes], below[kTaskLanes] = {};
  bool on[kTaskLanes];
  for (int j = 0; j < kTaskLanes; ++j) {
    on[j] = k >= lo[j] && k < hi[j] && z[j] != 0;
    r[j] = std::sqrt(x[j] * x[j] + z[j] * z[j]);
  }
  for (int j = 0; j < kTaskLanes; ++j)   // T is scaled to 1: hypot's care only where the square underflows
    if (on[j] && !(r[j] * r[j] >= kTiny)) r[j] = std::hypot(x[j], z[j]);
  for (int j = 0; j < kTaskLanes; ++j) {
    c[j] = on[j] ? x[j] / r[j] : 1.0;
    s[j] = on[j] ? z[j] / r[j] : 0.0;
  }
  double* a0 = &t.a[k * kTaskLanes];
  double* a1 = a0 + kTaskLanes;
  double* e0 = &t.e[k * kTaskLanes];
  double* em = k > 0 ? e0 - kTaskLanes : below;   // e_{k-1}
  double* e1 = e0 + kTaskLanes;                   // e_{k+1} (t.e has a spare last row)
  double* p0 = &t.p[k * kTaskLanes];
  double* p1 = p0 + kTaskLanes;
  double* q0 = &t.q[k * kTaskLanes];
  double* q1 = q0 + kTaskLanes;
  for (int j = 0; j < kTaskLanes; ++j) {
    const double ak = a0[j], ak1 = a1[j], ek = e0[j], cj = c[j], sj = s[j];
    const double na0 = cj * cj * ak + 2 * cj * sj * ek + sj * sj * ak1;
    const double na1 = sj * sj * ak - 2 * cj * sj * ek + cj * cj * ak1;
    const double ne0 = cj * sj * (ak1 - ak) + (cj * cj - sj * sj) * ek;
    const double np0 = cj * p0[j] + sj * p1[j], np1 = cj * p1[j] - sj * p0[j];
    const double nq0 = cj * q0[j] + sj * q1[j], nq1 = cj * q1[j] - sj * q0[j];
    const bool goes_on = on[j] && k + 1 < hi[j];
    em[j] = on[j] && k > lo[j] ? r[j] : em[j];
    a0[j] = on[j] ? na0 : ak;
    a1[j] = on[j] ? na1 : ak1;
    e0[j] = on[j] ? ne0 : ek;
    p0[j] = on[j] ? np0 : p0[j];
    p1[j] = on[j] ? np1 : p1[j];
    q0[j] = on[j] ? nq0 : q0[j];
    q1[j] = on[j] ? nq1 : q1[j];
    x[j] = goes_on ? ne0 : x[j];
    z[j] = goes_on ? sj * e1[j] : z[j];
    e1[j] = goes_on ? cj * e1[j] : e1[j];
  }
}

// QR steps until every lane is diagonal, at most 30 d steps per lane (Eigen's bound; beyond: NaN).
void diagonalise(Lanes& t) {
  int lo[kTaskLanes], hi[kTaskLanes];
  double x[kTaskLanes] = {}, z[kTaskLanes] = {};
  std::fill_n(hi, kTaskLanes, t.d - 1);
  for (int steps = 0;; ++steps) {
    deflate(t);
    int first = t.d, last = 0;
    for (int j = 0; j < kTaskLanes; ++j) {
      next_block(t, j, lo[j], hi[j], x[j], z[j]);
      if (hi[j] > 0 && steps >= 30 * t.d) {
        for (int i = 0; i < t.d; ++i) t.at(t.a, i, j) = std::numeric_limits<double>::quiet_NaN();
        lo[j] = hi[j] = 0;
      }
      if (hi[j] > 0) {
        first = std::min(first, lo[j]);
        last = std::max(last, hi[j]);
      }
    }
    if (last == 0) return;
    for (int k = first; k < last; ++k) rotate(t, k, lo, hi, x, z);
  }
}

// A (symmetric, d x d) = Q T Q^T by Householder reflections H_k = I - beta v v^T, k = 0..d-3, each zeroing
// column k below its sub-diagonal (Golub and Van Loan Alg. 8.3.1): a and e get T's diagonal and sub-diagonal,
// and P's columns become Q^T P (H_0 first).  Plain loops: at the analyses' d (5-40) Eigen's blocked reduction
// spent more on its bookkeeping than on its arithmetic.
void tridiagonalise(Eigen::MatrixXd& A, Eigen::MatrixXd& P, Eigen::VectorXd& a, Eigen::VectorXd& e) {
  const int d = static_cast<int>(A.rows());
  Eigen::VectorXd v(d), w(d);
  for (int k = 0; k + 2 < d; ++k) {
    const int m = d - k - 1;   // the entries k+1..d-1 of column k
    double sigma = 0;            // below the sub-diagonal (Golub and Van Loan Alg. 5.1.1): on its own, so that
    for (int i = 1; i < m; ++i) sigma += A(k + 1 + i, k) * A(k + 1 + i, k);   // tiny entries are not lost in x0^2
    if (sigma == 0) continue;    // already zero there: H_k = I
    const double x0 = A(k + 1, k), mu = std::sqrt(x0 * x0 + sigma);
    const double alpha = x0 > 0 ? -mu : mu, beta = 1 / (mu * (mu + std::fabs(x0)));
    for (int i = 0; i < m; ++i) v(i) = A(k + 1 + i, k);
    v(0) = x0 - alpha;
    // A' = H A H on the trailing block: w = beta A v - (beta^2 v^T A v / 2) v, A' = A - v w^T - w v^T.
    double vAv = 0;
    for (int i = 0; i < m; ++i) {
      double Av = 0;
      for (int j = 0; j < m; ++j) Av += A(k + 1 + i, k + 1 + j) * v(j);
      w(i) = beta * Av;
      vAv += v(i) * w(i);
    }
    const double half = beta * vAv / 2;
    for (int i = 0; i < m; ++i) w(i) -= half * v(i);
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < m; ++i) A(k + 1 + i, k + 1 + j) -= v(i) * w(j) + w(i) * v(j);
    A(k + 1, k) = A(k, k + 1) = alpha;
    for (int i = 1; i < m; ++i) A(k + 1 + i, k) = A(k, k + 1 + i) = 0.0;
    for (int c = 0; c < P.cols(); ++c) {
      double vp = 0;
      for (int i = 0; i < m; ++i) vp += v(i) * P(k + 1 + i, c);
      for (int i = 0; i < m; ++i) P(k + 1 + i, c) -= beta * vp * v(i);
    }
  }
  a = A.diagonal();
  e.resize(std::max(d - 1, 0));
  for (int i = 0; i + 1 < d; ++i) e(i) = A(i + 1, i);
}

}  // namespace

void TaskSpectra::add(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq) {
  add_sums(X * X.transpose(), X * y, y.squaredNorm(), static_cast<int>(y.size()), xq);
}

void TaskSpectra::add_sums(Eigen::MatrixXd G, const Eigen::VectorXd& Xy, double yy, int n, const Eigen::VectorXd& xq) {
  Reduced r;
  r.yy = yy;
  r.n = n;
  const int d = static_cast<int>(G.rows());
  r.P.resize(d, 2);
  r.P << Xy, xq;
  r.scale = d > 0 ? G.cwiseAbs().maxCoeff() : 0.0;
  if (r.scale > 0) {
    G /= r.scale;
    tridiagonalise(G, r.P, r.a, r.e);
  } else {
    r.a = Eigen::VectorXd::Constant(d, r.scale);   // X = 0 (every direction null; X y = 0), or not finite (NaN)
    r.e = Eigen::VectorXd::Zero(std::max(d - 1, 0));
  }
  pending_.push_back(std::move(r));
}

std::vector<TaskSpectrum> TaskSpectra::take() {
  std::vector<TaskSpectrum> out(pending_.size());
  for (size_t t0 = 0; t0 < pending_.size(); t0 += kTaskLanes) {
    const size_t count = std::min<size_t>(kTaskLanes, pending_.size() - t0);
    const int d = static_cast<int>(pending_[t0].a.size());
    Lanes lanes(d);   // unused lanes: zero matrices, diagonal at once
    for (size_t j = 0; j < count; ++j) {
      const Reduced& r = pending_[t0 + j];
      if (r.a.size() != d) throw std::logic_error("TaskSpectra: tasks of different dimensions");
      for (int i = 0; i < d; ++i) {
        lanes.at(lanes.a, i, j) = r.a(i);
        lanes.at(lanes.e, i, j) = i + 1 < d ? r.e(i) : 0.0;
        lanes.at(lanes.p, i, j) = r.P(i, 0);
        lanes.at(lanes.q, i, j) = r.P(i, 1);
      }
    }
    diagonalise(lanes);
    for (size_t j = 0; j < count; ++j) {
      const Reduced& r = pending_[t0 + j];
      std::vector<int> order(d);   // ascending, as Eigen's solver
      for (int i = 0; i < d; ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](int u, int v) { return lanes.at(lanes.a, u, j) < lanes.at(lanes.a, v, j); });
      TaskSpectrum& s = out[t0 + j];
      s.s.resize(d);
      s.b.resize(d);
      s.z.resize(d);
      for (int i = 0; i < d; ++i) {
        s.s(i) = std::max(lanes.at(lanes.a, order[i], j) * r.scale, 0.0);
        s.b(i) = lanes.at(lanes.p, order[i], j);
        s.z(i) = lanes.at(lanes.q, order[i], j);
      }
      s.yy = r.yy;
      s.n = r.n;
    }
  }
  pending_.clear();
  return out;
}

TaskSpectrum task_spectrum(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq) {
  TaskSpectra one;
  one.add(X, y, xq);
  return one.take()[0];
}

}  // namespace icl
