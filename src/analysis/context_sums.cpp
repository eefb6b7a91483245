// context_sums.hpp.  The block's sums run kWidth tasks to a register, each lane one task's chain of
// multiply-adds in token order: the same bits as context_sums on that task alone.
#include "icl/analysis/context_sums.hpp"

#include <algorithm>
#include <stdexcept>

namespace icl {

using lanes::kWidth;
using lanes::load;
using lanes::madd;
using lanes::store;
using lanes::Vd;

void context_sums(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, Eigen::MatrixXd* XXt, Eigen::VectorXd* Xy, double* yy) {
  const int d = static_cast<int>(X.rows()), n = static_cast<int>(X.cols());
  XXt->resize(d, d);
  Xy->resize(d);
  for (int r = 0; r < d; ++r) {
    for (int k = 0; k <= r; ++k) {
      double s = 0.0;
      for (int j = 0; j < n; ++j) s = fused_madd(X(r, j), X(k, j), s);
      (*XXt)(r, k) = (*XXt)(k, r) = s;
    }
    double s = 0.0;
    for (int j = 0; j < n; ++j) s = fused_madd(X(r, j), y(j), s);
    (*Xy)(r) = s;
  }
  double s = 0.0;
  for (int j = 0; j < n; ++j) s = fused_madd(y(j), y(j), s);
  *yy = s;
}

void ContextBlock::task(int j, Eigen::MatrixXd* XXt_j, Eigen::VectorXd* Xy_j, Eigen::VectorXd* xq_j) const {
  XXt_j->resize(d, d);
  Xy_j->resize(d);
  xq_j->resize(d);
  for (int r = 0; r < d; ++r) {
    for (int k = 0; k < d; ++k) (*XXt_j)(r, k) = XXt[(r * d + k) * kTaskLanes + j];
    (*Xy_j)(r) = Xy[r * kTaskLanes + j];
    (*xq_j)(r) = xq[r * kTaskLanes + j];
  }
}

template <class T>
void context_block(const TaskBatch<T>& batch, int first, ContextBlock* out) {
  static_assert(kLanes<T> % kTaskLanes == 0, "a block lies in one chunk");
  if (first % kTaskLanes) throw std::logic_error("context_block: a block starts at a multiple of kTaskLanes");
  const int d = batch.d, n = batch.n, N = n + 1, V = kLanes<T>, D = d + 1;
  const Lane<T>* Z = batch.chunk_Z(first / V);
  const int lane0 = first % V;   // the block's first lane in its chunk (kTaskLanes divides kLanes<T>)
  out->d = d;
  out->n = n;
  out->count = std::clamp(batch.B - first, 0, kTaskLanes);
  // The block's tokens (x_j, y_j) in double, token j's row i at [(j D + i) kTaskLanes + lane].
  out->tokens.resize(static_cast<size_t>(N) * D * kTaskLanes);
  double* z = out->tokens.data();
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < D; ++i)
      for (int v = 0; v < kTaskLanes; ++v) z[(j * D + i) * kTaskLanes + v] = static_cast<double>(Z[i * N + j][lane0 + v]);
  out->XXt.assign(static_cast<size_t>(d) * d * kTaskLanes, 0.0);
  out->Xy.assign(static_cast<size_t>(d) * kTaskLanes, 0.0);
  out->xq.resize(static_cast<size_t>(d) * kTaskLanes);
  std::fill_n(out->yy, kTaskLanes, 0.0);
  double *G = out->XXt.data(), *Xy = out->Xy.data(), *yy = out->yy;
  // Token by token over every sum (r >= k, then mirrored): the chains are independent of one another, so their
  // multiply-adds overlap, each chain still in token order.
  const auto add = [](double* sum, Vd a, Vd b) { store(sum, madd(a, b, load<Vd>(sum))); };
  for (int h = 0; h < kTaskLanes; h += kWidth) {
    for (int j = 0; j < n; ++j) {
      const double* token = z + j * D * kTaskLanes + h;
      const Vd y = load<Vd>(token + d * kTaskLanes);
      for (int r = 0; r < d; ++r) {
        const Vd x = load<Vd>(token + r * kTaskLanes);
        for (int k = 0; k <= r; ++k) add(G + (r * d + k) * kTaskLanes + h, x, load<Vd>(token + k * kTaskLanes));
        add(Xy + r * kTaskLanes + h, x, y);
      }
      add(yy + h, y, y);
    }
    for (int r = 0; r < d; ++r) {
      for (int k = 0; k < r; ++k) store(G + (k * d + r) * kTaskLanes + h, load<Vd>(G + (r * d + k) * kTaskLanes + h));
      store(&out->xq[r * kTaskLanes + h], load<Vd>(z + (n * D + r) * kTaskLanes + h));
    }
  }
  const Lane<T>& y = batch.y[first / V];
  for (int v = 0; v < kTaskLanes; ++v) out->y_query[v] = static_cast<double>(y[lane0 + v]);
}

template void context_block<float>(const TaskBatch<float>&, int, ContextBlock*);
template void context_block<double>(const TaskBatch<double>&, int, ContextBlock*);

}  // namespace icl
