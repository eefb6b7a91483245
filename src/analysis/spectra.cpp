// Task spectra (baselines.hpp) without the eigenvectors.  Per task, X X^T scaled to largest entry 1 is reduced
// to a tridiagonal T = Q^T (X X^T) Q by Householder reflections, and Q^T applied to X y and x_q.  Then
// T = W^T diag(s) W by implicit symmetric QR steps with Wilkinson's shift (Golub and Van Loan, Matrix
// Computations, 4th ed., Alg. 8.3.2-8.3.3), every Givens rotation applied to the two projections instead of
// to a d x d matrix: O(d^2) where the eigenvectors cost O(d^3).
//
// A QR step is a chain of dependent square roots and divisions, one per rotation, so one task's steps are
// bound by their latency (before it, perf found 87% of a d = 10 analysis in Eigen's solver, most of it
// accumulating eigenvectors).  Both stages run tasks side by side instead, one lane each, in registers of
// the target's width (the reduction kTaskLanes, the QR steps kQrLanes = two blocks, so that two registers'
// chains overlap: the QR steps 0-16% faster than with one block at d = 5-20, n = d and 2d); in the QR steps
// every lane has its own unreduced block, shift and step count; a
// lane outside its block keeps its values (its rotation is the identity, and it is not applied), so a lane
// computes exactly its own task's sequence of steps, whatever its neighbours.
// The frozen reference, the eigendecomposition itself, is task_spectrum_ref in tests/test_baselines.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "icl/analysis/baselines.hpp"
#include "icl/analysis/context_sums.hpp"
#include "icl/analysis/lanes.hpp"

namespace icl {
namespace {

constexpr double kEps2 = std::numeric_limits<double>::epsilon() * std::numeric_limits<double>::epsilon();
constexpr double kTiny = std::numeric_limits<double>::min();

using lanes::load;
using lanes::madd;
using lanes::Mask;
using lanes::store;
using lanes::vabs;
using lanes::kWidth;
using lanes::Vd;

// The QR steps take two blocks of tasks at a time: each rotation's square root and divisions are a chain
// of dependent latencies per register, and two independent registers overlap them (four gained nothing more).
constexpr int kQrLanes = 2 * kTaskLanes;

// kQrLanes tridiagonals and their projections, entry i of lane j at [i * kQrLanes + j].
struct Lanes {
  int d;
  std::vector<double> a, e, p, q;   // diagonal, sub-diagonal (d - 1 rows and a spare), Q^T X y, Q^T x_q
  explicit Lanes(int dim) : d(dim), a(dim * kQrLanes, 0.0), e(dim * kQrLanes, 0.0), p(dim * kQrLanes, 0.0), q(dim * kQrLanes, 0.0) {}
  double& at(std::vector<double>& v, int i, int j) { return v[i * kQrLanes + j]; }
};

// Zeroes every sub-diagonal entry negligible beside T's norm (about 1): |e_i|^2 <= eps^2 (|a_i| + |a_{i+1}|),
// Eigen's test; the eigenvalues move by at most eps.
void deflate(Lanes& t) {
  for (int i = 0; i + 1 < t.d; ++i) {
    const double* a = &t.a[i * kQrLanes];
    double* e = &t.e[i * kQrLanes];
    for (int j = 0; j < kQrLanes; ++j)
      e[j] = e[j] * e[j] <= kEps2 * (std::fabs(a[j]) + std::fabs(a[kQrLanes + j])) ? 0.0 : e[j];
  }
}

// Every lane's last unreduced block lo..hi (hi = 0: diagonal) and the start (x, z) of its next step: the
// first column of T - mu I, mu Wilkinson's shift from the block's trailing 2 x 2; a diagonal lane keeps its
// (x, z).  Branch-free over the lanes, a register at a time (the searches' lengths differ from lane to lane and
// step to step, so per-lane loops mispredicted): hi = the largest i <= hi with e_{i-1} != 0 (else 0), lo = the
// largest i < hi with e_{i-1} = 0 (else 0).  Each sum is the fused form GCC had chosen for the per-lane code
// before it (f^2 rounded, then delta^2 + f^2 fused; a_hi - f q fused), so the spectra kept their bits.
void next_blocks(const Lanes& t, long* lo, long* hi, double* x, double* z) {
  for (int h = 0; h < kQrLanes; h += kWidth) {
    const Mask top = load<Mask>(hi + h);
    Mask b = {}, a = {};
    for (int i = 1; i < t.d; ++i) {
      const Mask li = Mask{} + i;
      b = (load<Vd>(&t.e[(i - 1) * kQrLanes + h]) != 0) & (li <= top) ? li : b;
    }
    for (int i = 1; i < t.d; ++i) {
      const Mask li = Mask{} + i;
      a = (load<Vd>(&t.e[(i - 1) * kQrLanes + h]) == 0) & (li < b) ? li : a;
    }
    Vd am = {}, ah = {}, f = {}, alo = {}, elo = {};
    for (int i = 0; i < t.d; ++i) {
      const Mask li = Mask{} + i;
      const Vd ai = load<Vd>(&t.a[i * kQrLanes + h]), ei = load<Vd>(&t.e[i * kQrLanes + h]);
      am = li + 1 == b ? ai : am;
      f = li + 1 == b ? ei : f;
      ah = li == b ? ai : ah;
      alo = li == a ? ai : alo;
      elo = li == a ? ei : elo;
    }
    const Vd delta = (am - ah) * 0.5;
    Vd r = madd(delta, delta, f * f);
    for (int i = 0; i < kWidth; ++i) r[i] = std::copysign(std::sqrt(r[i]), delta[i]);
    const Vd mu = delta == 0 ? ah - vabs(f) : madd(-f, f / (delta + r), ah);
    const Mask live = b > 0;
    store(x + h, live ? alo - mu : load<Vd>(x + h));
    store(z + h, live ? elo : load<Vd>(z + h));
    std::memcpy(lo + h, &a, sizeof a);
    std::memcpy(hi + h, &b, sizeof b);
  }
}

// r where `tiny` is clear, hypot(x, z) where it is set: out of line and cold (with the loop in line, the QR steps
// of 16,000 tasks at d = 10 took 7.0 ms against 5.8).
[[gnu::noinline, gnu::cold]] Vd hypot_where(Mask tiny, Vd x, Vd z, Vd r) {
  for (int i = 0; i < kWidth; ++i)
    if (tiny[i]) r[i] = std::hypot(x[i], z[i]);
  return r;
}

// One rotation in the plane (k, k+1) of every lane whose step is there: T <- R T R^T, R = [c s; -s c] mapping
// (x, z) to (r, 0), which also sets e_{k-1} = r past the block's start; the projections rotate alike; then
// (x, z) become the bulge R leaves at T(k+2, k) when the block goes on.  A lane's step ends at its block's
// end or where the bulge vanishes (z = 0).  Selects over all lanes rather than branches per lane, in
// registers: an idle lane's (c, s) = (1, 0) is selected, never applied.  Each sum is written as the fused
// form GCC had chosen for the one-lane-at-a-time loop before it (the first product rounded, the other fused),
// so the spectra kept their bits.
void rotate(Lanes& t, int k, const long* lo, const long* hi, double* x, double* z) {
  double below[kQrLanes] = {};
  double* a0 = &t.a[k * kQrLanes];
  double* a1 = a0 + kQrLanes;
  double* e0 = &t.e[k * kQrLanes];
  double* em = k > 0 ? e0 - kQrLanes : below;   // e_{k-1}
  double* e1 = e0 + kQrLanes;                   // e_{k+1} (t.e has a spare last row)
  double* p0 = &t.p[k * kQrLanes];
  double* p1 = p0 + kQrLanes;
  double* q0 = &t.q[k * kQrLanes];
  double* q1 = q0 + kQrLanes;
  for (int h = 0; h < kQrLanes; h += kWidth) {
    const Mask first = load<Mask>(lo + h), end = load<Mask>(hi + h);
    const Vd one = Vd{} + 1.0, zero = Vd{}, xv = load<Vd>(x + h), zv = load<Vd>(z + h);
    const Mask o = (first <= k) & (end > k) & (zv != 0);
    const Mask past = o & (first < k), more = o & (end > k + 1);
    Vd rv = madd(xv, xv, zv * zv);
    for (int i = 0; i < kWidth; ++i) rv[i] = std::sqrt(rv[i]);
    const Mask tiny = o & ~(rv * rv >= kTiny);   // T is scaled to 1: hypot's care only where the square underflows
    if (lanes::any(tiny)) rv = hypot_where(tiny, xv, zv, rv);
    const Vd c = o ? xv / rv : one, s = o ? zv / rv : zero;
    const Vd ak = load<Vd>(a0 + h), ak1 = load<Vd>(a1 + h), ek = load<Vd>(e0 + h);
    const Vd pk = load<Vd>(p0 + h), pk1 = load<Vd>(p1 + h), qk = load<Vd>(q0 + h), qk1 = load<Vd>(q1 + h);
    const Vd ek1 = load<Vd>(e1 + h);
    const Vd cc = c * c, ss = s * s, cs2 = 2 * c * s;
    const Vd na0 = madd(ss, ak1, madd(cs2, ek, cc * ak));          // c^2 a_k + 2cs e_k + s^2 a_k+1
    const Vd na1 = madd(cc, ak1, madd(-cs2, ek, ss * ak));         // s^2 a_k - 2cs e_k + c^2 a_k+1
    const Vd ne0 = madd(cc - ss, ek, s * c * (ak1 - ak));          // cs (a_k+1 - a_k) + (c^2 - s^2) e_k
    store(em + h, past ? rv : load<Vd>(em + h));
    store(a0 + h, o ? na0 : ak);
    store(a1 + h, o ? na1 : ak1);
    store(e0 + h, o ? ne0 : ek);
    store(p0 + h, o ? madd(pk1, s, pk * c) : pk);
    store(p1 + h, o ? madd(-pk, s, pk1 * c) : pk1);
    store(q0 + h, o ? madd(qk1, s, qk * c) : qk);
    store(q1 + h, o ? madd(-qk, s, qk1 * c) : qk1);
    store(x + h, more ? ne0 : xv);
    store(z + h, more ? s * ek1 : zv);
    store(e1 + h, more ? c * ek1 : ek1);
  }
}

// QR steps until every lane is diagonal, at most 30 d steps per lane (Eigen's bound; beyond: NaN).
void diagonalise(Lanes& t) {
  alignas(64) long lo[kQrLanes], hi[kQrLanes];
  alignas(64) double x[kQrLanes] = {}, z[kQrLanes] = {};
  std::fill_n(hi, kQrLanes, t.d - 1);
  for (int steps = 0;; ++steps) {
    deflate(t);
    next_blocks(t, lo, hi, x, z);
    long first = t.d, last = 0;
    for (int j = 0; j < kQrLanes; ++j) {
      if (hi[j] > 0 && steps >= 30 * t.d) {
        for (int i = 0; i < t.d; ++i) t.at(t.a, i, j) = std::numeric_limits<double>::quiet_NaN();
        lo[j] = hi[j] = 0;
      }
      first = std::min(first, hi[j] > 0 ? lo[j] : t.d);
      last = std::max(last, hi[j]);
    }
    if (last == 0) return;
    for (long k = first; k < last; ++k) rotate(t, static_cast<int>(k), lo, hi, x, z);
  }
}

// A (symmetric, d x d) = Q T Q^T by Householder reflections H_k = I - beta v v^T, k = 0..d-3, each zeroing
// column k below its sub-diagonal (Golub and Van Loan Alg. 8.3.1): T's diagonal and sub-diagonal, and P's
// columns become Q^T P (H_0 first).  A block of kTaskLanes tasks side by side, lane j of A(r, c) at
// A[(r d + c) kTaskLanes + j] and of P(r, c) at P[(2 r + c) kTaskLanes + j]; a lane whose column is already zero
// below its sub-diagonal (sigma = 0) keeps its values (H_k = I).  Every multiply-add is written out, fused
// where the target fuses, so the bits do not depend on how the compiler vectorises: the one-task loops before
// this (to 2026-11-27) summed partly fused, partly not, as GCC had vectorised them, and their last bits
// differ from these (tests/test_baselines.cpp holds both to an eigendecomposition).  v, w: room for d registers each.
void tridiagonalise(int d, double* A, double* P, double* a, double* e, Vd* v, Vd* w) {
  for (int h = 0; h < kTaskLanes; h += kWidth) {
    const auto at = [&](int r, int c) { return A + (r * d + c) * kTaskLanes + h; };
    const auto pt = [&](int r, int c) { return P + (2 * r + c) * kTaskLanes + h; };
    for (int k = 0; k + 2 < d; ++k) {
      const int m = d - k - 1;   // the entries k+1..d-1 of column k
      Vd sigma{};                // below the sub-diagonal (Golub and Van Loan Alg. 5.1.1): on its own, so that
      for (int i = 1; i < m; ++i) {   // tiny entries are not lost in x0^2
        const Vd g = load<Vd>(at(k + 1 + i, k));
        sigma = madd(g, g, sigma);
      }
      const Mask act = sigma != 0;
      bool any = false;
      for (int j = 0; j < kWidth; ++j) any = any || act[j];
      if (!any) continue;
      const Vd x0 = load<Vd>(at(k + 1, k));
      Vd mu = madd(x0, x0, sigma);
      for (int j = 0; j < kWidth; ++j) mu[j] = std::sqrt(mu[j]);
      const Vd alpha = x0 > 0 ? -mu : mu, beta = 1 / ((vabs(x0) + mu) * mu);
      for (int i = 0; i < m; ++i) v[i] = load<Vd>(at(k + 1 + i, k));
      v[0] = x0 - alpha;
      // A' = H A H on the trailing block: w = beta A v - (beta^2 v^T A v / 2) v, A' = A - v w^T - w v^T.
      Vd vAv{};
      for (int i = 0; i < m; ++i) {
        Vd Av{};
        for (int j = 0; j < m; ++j) Av = madd(load<Vd>(at(k + 1 + i, k + 1 + j)), v[j], Av);
        w[i] = beta * Av;
        vAv = madd(v[i], w[i], vAv);
      }
      const Vd half = beta * vAv / 2;
      for (int i = 0; i < m; ++i) w[i] = madd(-v[i], half, w[i]);
      for (int j = 0; j < m; ++j)
        for (int i = 0; i < m; ++i) {
          const Vd g = load<Vd>(at(k + 1 + i, k + 1 + j));
          store(at(k + 1 + i, k + 1 + j), act ? g - madd(v[i], w[j], w[i] * v[j]) : g);
        }
      for (int i = 0; i < m; ++i) {
        const Vd below = i == 0 ? alpha : Vd{};
        store(at(k + 1 + i, k), act ? below : load<Vd>(at(k + 1 + i, k)));
        store(at(k, k + 1 + i), act ? below : load<Vd>(at(k, k + 1 + i)));
      }
      for (int c = 0; c < 2; ++c) {
        Vd vp{};
        for (int i = 0; i < m; ++i) vp = madd(v[i], load<Vd>(pt(k + 1 + i, c)), vp);
        const Vd bvp = beta * vp;
        for (int i = 0; i < m; ++i) {
          const Vd q = load<Vd>(pt(k + 1 + i, c));
          store(pt(k + 1 + i, c), act ? madd(-v[i], bvp, q) : q);
        }
      }
    }
    for (int i = 0; i < d; ++i) {
      store(a + i * kTaskLanes + h, load<Vd>(at(i, i)));
      store(e + i * kTaskLanes + h, i + 1 < d ? load<Vd>(at(i + 1, i)) : Vd{});
    }
  }
}

// std::sort(order, less), written out below 17 entries as libstdc++ sorts them there (its insertion sort: the
// same comparisons in the same order, so the same result, ties and NaN included) without its call to memmove
// for every shift, which cost as much as the sort.
template <class Less>
void sort_order(std::vector<int>& order, Less less) {
  const int d = static_cast<int>(order.size());
  if (d > 16) return std::sort(order.begin(), order.end(), less);
  for (int i = 1; i < d; ++i) {
    const int v = order[i];
    int j = i;
    if (less(v, order[0])) {
      for (; j > 0; --j) order[j] = order[j - 1];
    } else {
      for (; less(v, order[j - 1]); --j) order[j] = order[j - 1];
    }
    order[j] = v;
  }
}

}  // namespace

void TaskSpectra::add(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq) {
  Eigen::MatrixXd XXt;
  Eigen::VectorXd Xy;
  double yy = 0;
  context_sums(X, y, &XXt, &Xy, &yy);
  add_sums(XXt, Xy, yy, static_cast<int>(y.size()), xq);
}

void TaskSpectra::add_sums(const Eigen::MatrixXd& G, const Eigen::VectorXd& Xy, double yy, int n, const Eigen::VectorXd& xq) {
  put(static_cast<int>(G.rows()), G.data(), 1, G.rows(), Xy.data(), xq.data(), 1, yy, n);   // column-major
}

// A whole block that starts a block of its own is laid out as G_ and P_ are: put's arithmetic a register at a time
// (the largest |entry| and the divisions by it are exact per lane: the same bits); otherwise put per task.
void TaskSpectra::add_block(const ContextBlock& block) {
  const int d = block.d;
  if (block.count < kTaskLanes || sums_.size() % kTaskLanes || (d_ >= 0 && d != d_)) {
    for (int j = 0; j < block.count; ++j)
      put(d, &block.XXt[j], d * kTaskLanes, kTaskLanes, &block.Xy[j], &block.xq[j], kTaskLanes, block.yy[j], block.n);
    return;
  }
  if (d_ < 0) dimension(d);
  alignas(64) double scale[kTaskLanes];
  for (int h = 0; h < kTaskLanes; h += kWidth) {
    Vd m{};
    Mask nan{};
    for (int i = 0; i < d * d; ++i) {
      const Vd g = vabs(load<Vd>(&block.XXt[i * kTaskLanes + h]));
      nan |= g != g;
      m = m < g ? g : m;
    }
    m = nan ? std::numeric_limits<double>::quiet_NaN() : m;
    store(scale + h, m);
    for (int i = 0; i < d * d; ++i)
      store(&G_[i * kTaskLanes + h], m > 0 ? load<Vd>(&block.XXt[i * kTaskLanes + h]) / m : Vd{});
    for (int r = 0; r < d; ++r) {
      store(&P_[2 * r * kTaskLanes + h], load<Vd>(&block.Xy[r * kTaskLanes + h]));
      store(&P_[(2 * r + 1) * kTaskLanes + h], load<Vd>(&block.xq[r * kTaskLanes + h]));
    }
  }
  for (int j = 0; j < kTaskLanes; ++j) sums_.push_back({scale[j], block.yy[j], block.n});
  reduce_block();
}

void TaskSpectra::dimension(int d) {
  d_ = d;
  G_.assign(static_cast<size_t>(d) * d * kTaskLanes, 0.0);
  P_.assign(static_cast<size_t>(d) * 2 * kTaskLanes, 0.0);
  vw_.resize(2 * static_cast<size_t>(d));
  reserve(sums_.capacity());
}

// The scale: X X^T's largest |entry|, NaN where an entry is (reduce_block keeps such a task as it is).
void TaskSpectra::put(int d, const double* G, size_t rs, size_t cs, const double* Xy, const double* xq, size_t vs, double yy,
                      int n) {
  if (d_ < 0) dimension(d);
  if (d != d_) throw std::logic_error("TaskSpectra: tasks of different dimensions");
  double scale = 0.0;
  bool nan = false;
  for (int r = 0; r < d; ++r)
    for (int c = 0; c < d; ++c) {
      const double g = std::fabs(G[r * rs + c * cs]);
      nan = nan || g != g;
      scale = std::max(scale, g);
    }
  if (nan) scale = std::numeric_limits<double>::quiet_NaN();
  const size_t j = sums_.size() % kTaskLanes;
  sums_.push_back({scale, yy, n});
  for (int r = 0; r < d; ++r) {
    for (int c = 0; c < d; ++c) G_[(r * d + c) * kTaskLanes + j] = scale > 0 ? G[r * rs + c * cs] / scale : 0.0;
    P_[(2 * r) * kTaskLanes + j] = Xy[r * vs];
    P_[(2 * r + 1) * kTaskLanes + j] = xq[r * vs];
  }
  if (j + 1 == kTaskLanes) reduce_block();
}

void TaskSpectra::reserve(size_t tasks) {
  sums_.reserve(tasks);
  if (d_ < 0) return;   // sized by the first task (dimension), which calls this again
  const size_t size = (tasks + kTaskLanes - 1) / kTaskLanes * kTaskLanes * d_;
  for (std::vector<double>* v : {&a_, &e_, &p_, &q_}) v->reserve(size);
}

// The block in G_, P_ (its unused lanes zero) to tridiagonal form, appended to a_, e_, p_, q_.  A task whose
// X X^T is 0 (every direction null; X y = 0), or whose scale is not finite (NaN), is already diagonal: its
// scale on the diagonal, X y and x_q as they are.
void TaskSpectra::reduce_block() {
  const size_t at = a_.size(), first = (sums_.size() - 1) / kTaskLanes * kTaskLanes, d = d_;
  for (std::vector<double>* v : {&a_, &e_, &p_, &q_}) v->resize(at + d * kTaskLanes);
  tridiagonalise(d_, G_.data(), P_.data(), &a_[at], &e_[at], vw_.data(), vw_.data() + d);
  for (size_t i = 0; i < d; ++i)
    for (size_t j = 0; j < kTaskLanes; ++j) {
      p_[at + i * kTaskLanes + j] = P_[(2 * i) * kTaskLanes + j];
      q_[at + i * kTaskLanes + j] = P_[(2 * i + 1) * kTaskLanes + j];
      const double scale = first + j < sums_.size() ? sums_[first + j].scale : 0.0;
      if (!(scale > 0)) {
        a_[at + i * kTaskLanes + j] = scale;
        e_[at + i * kTaskLanes + j] = 0.0;
      }
    }
  std::fill(G_.begin(), G_.end(), 0.0);
  std::fill(P_.begin(), P_.end(), 0.0);
}

// Segments of whole aligned blocks: each task's s, b, z start where Eigen's own vectors' would (SpectrumRef).
Spectra::Spectra(int d, size_t tasks) : d_(d), yy_(tasks, 0.0), n_(tasks, 0) {
  constexpr size_t align = std::max<size_t>(1, EIGEN_MAX_ALIGN_BYTES / sizeof(double));
  stride_ = (static_cast<size_t>(d) + align - 1) / align * align;
  data_.assign(tasks * 3 * stride_, 0.0);
}

Spectra TaskSpectra::take() {
  if (sums_.size() % kTaskLanes) reduce_block();
  const int d = std::max(d_, 0);
  Spectra out(d, sums_.size());
  const size_t stride = out.stride();
  std::vector<int> order(d);
  Lanes lanes(d);
  const size_t blocks = (sums_.size() + kTaskLanes - 1) / kTaskLanes;
  for (size_t b0 = 0; b0 < blocks; b0 += kQrLanes / kTaskLanes) {   // block b0 + i as lanes i kTaskLanes.. (zero: none)
    const size_t t0 = b0 * kTaskLanes, count = std::min<size_t>(kQrLanes, sums_.size() - t0);
    for (std::vector<double>* v : {&lanes.a, &lanes.e, &lanes.p, &lanes.q}) std::fill(v->begin(), v->end(), 0.0);
    for (size_t b = b0; b < std::min(b0 + kQrLanes / kTaskLanes, blocks); ++b)
      for (int i = 0; i < d; ++i) {
        const size_t from = (b * d + i) * kTaskLanes, to = i * kQrLanes + (b - b0) * kTaskLanes;
        std::copy_n(&a_[from], kTaskLanes, &lanes.a[to]);
        std::copy_n(&e_[from], kTaskLanes, &lanes.e[to]);
        std::copy_n(&p_[from], kTaskLanes, &lanes.p[to]);
        std::copy_n(&q_[from], kTaskLanes, &lanes.q[to]);
      }
    diagonalise(lanes);
    for (size_t j = 0; j < count; ++j) {
      const Sums& r = sums_[t0 + j];
      for (int i = 0; i < d; ++i) order[i] = i;   // ascending, as Eigen's solver
      sort_order(order, [&](int u, int v) { return lanes.at(lanes.a, u, j) < lanes.at(lanes.a, v, j); });
      double* s = out.entries(t0 + j);   // s, then b, then z
      for (int i = 0; i < d; ++i) {
        s[i] = std::max(lanes.at(lanes.a, order[i], j) * r.scale, 0.0);
        s[stride + i] = lanes.at(lanes.p, order[i], j);
        s[2 * stride + i] = lanes.at(lanes.q, order[i], j);
      }
      out.set_context(t0 + j, r.yy, r.n);
    }
  }
  *this = TaskSpectra();
  return out;
}

TaskSpectrum task_spectrum(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq) {
  TaskSpectra one;
  one.add(X, y, xq);
  const Spectra all = one.take();   // a view of it must not outlive it
  const SpectrumRef t = all[0];
  return {t.s, t.b, t.z, t.yy, t.n};
}

}  // namespace icl
