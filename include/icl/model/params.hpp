#pragma once
// The trainable parameters: one flat vector theta with named views (the optimiser, clipping, the HDF5
// dump and the gradient check are then one loop).  `expand` maps theta to the full per-layer, per-head
// P and Q of model.hpp (docs/science.md section 2); `collapse` is its adjoint, the chain rule.
//   full:      P, Q            (D x D each)
//   sparse_a:  A  (d x d)      P = [[0,0],[0,1]],  Q = [[A,0],[0,0]]           [A23] eq. 8
//   sparse_ab: A, B (d x d)    P = [[B,0],[0,1]],  Q = [[A,0],[0,0]]           [A23] eq. 11
//   diag:      p = (p_x, p_y), q = (q_x, q_y)   P = diag(p_x I, p_y), Q = diag(q_x I, q_y)   [V24]
//   gdpp:      p = (p_x, p_y), q = (q_x)        as diag with q_y = 0                         [V24] eq. 11
// With tie = true one block of views serves every layer.
// Each view says where its entries land (its matrix and placement), and that one description drives
// both directions: expand writes P, Q = fixed + sum_v (view v placed), collapse adds back, per view,
// the entries of dP, dQ that the view placed (summed over the layers it serves).
#include <string>
#include <vector>

#include "icl/base/point.hpp"
#include "icl/model/model.hpp"

namespace icl {

enum class Weight { P, Q };
enum class Placement {
  top_left,   // rows x cols entries at the top-left of the D x D matrix: entry (i, k) -> M(i, k)
  diagonal,   // entry 0 -> M(i, i) for every i < d (the x block); entry 1, when cols = 2 -> M(d, d)
};

struct ParamView {
  std::string name;   // "P", "Q", "A", "B", "p", "q"
  int layer, head;    // layer = 0 for every view when tied
  int offset, rows, cols;
  int fan_in;         // for variance-scaling initialisation
  Weight matrix;      // the full matrix the view is placed in ...
  Placement placement;   // ... and where
};

class ParamLayout {
 public:
  ParamLayout(const ModelShape& shape, Param param, bool tie);   // uses shape.d, layers, heads
  explicit ParamLayout(const Point& p);
  int size() const { return size_; }
  const std::vector<ParamView>& views() const { return views_; }
  int D() const { return D_; }
  int PQ_size() const { return layers_ * heads_ * D_ * D_; }   // length of P (and of Q)

  // P, Q (each PQ_size(): layers x heads x D x D, row-major) from theta.
  template <class T>
  void expand(const double* theta, T* P, T* Q) const;
  // dtheta = d(loss)/d(theta) given dP, dQ (each PQ_size()); tied layers are summed.
  void collapse(const double* dP, const double* dQ, double* dtheta) const;

 private:
  template <class M>
  M* matrix_of(const ParamView& v, int layer, M* P, M* Q) const;   // v's D x D matrix in `layer`
  int first_layer(const ParamView& v) const { return tie_ ? 0 : v.layer; }   // the layers v serves
  int end_layer(const ParamView& v) const { return tie_ ? layers_ : v.layer + 1; }

  int d_, D_, layers_, heads_, size_ = 0;
  bool tie_;
  bool P_label_one_ = false;   // P(d, d) = 1 fixed (sparse_a, sparse_ab); every other unplaced entry is 0
  std::vector<ParamView> views_;
};

// theta ~ init law of the point, from rng_key(seed, Stream::init).
std::vector<double> param_init(const Point& p, const ParamLayout& layout);

}  // namespace icl
