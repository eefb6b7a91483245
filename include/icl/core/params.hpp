#pragma once
// The trainable parameters: one flat vector theta with named views (the optimiser, clipping, the HDF5
// dump and the gradient check are then one loop).  `expand` maps theta to the full per-layer, per-head
// P and Q of model.hpp (docs/science.md section 2); `collapse` is its chain rule.
//   full:      P, Q            (D x D each)
//   sparse_a:  A  (d x d)      P = [[0,0],[0,1]],  Q = [[A,0],[0,0]]           [A23] eq. 8
//   sparse_ab: A, B (d x d)    P = [[B,0],[0,1]],  Q = [[A,0],[0,0]]           [A23] eq. 11
//   diag:      p = (p_x, p_y), q = (q_x, q_y)   P = diag(p_x I, p_y), Q = diag(q_x I, q_y)   [V24]
//   gdpp:      p = (p_x, p_y), q = (q_x)        as diag with q_y = 0                         [V24] eq. 11
// With tie = true one block of views serves every layer.
#include <string>
#include <vector>

#include "icl/core/point.hpp"

namespace icl {

struct ParamView {
  std::string name;   // "P", "Q", "A", "B", "p", "q"
  int layer, head;    // layer = 0 for every view when tied
  int offset, rows, cols;
  int fan_in;         // for variance-scaling initialisation
};

class ParamLayout {
 public:
  explicit ParamLayout(const Point& p);
  int size() const { return size_; }
  const std::vector<ParamView>& views() const { return views_; }
  int D() const { return D_; }
  int PQ_size() const { return layers_ * heads_ * D_ * D_; }   // length of P (and of Q)

  template <class T>
  void expand(const double* theta, T* P, T* Q) const;
  // dtheta = d(loss)/d(theta) given dP, dQ (each PQ_size()); tied layers are summed.
  void collapse(const double* dP, const double* dQ, double* dtheta) const;

 private:
  Param param_;
  int d_, D_, layers_, heads_, blocks_, size_ = 0;
  bool tie_;
  std::vector<ParamView> views_;
};

// theta ~ init law of the point, from rng_key(seed, Stream::init).
std::vector<double> param_init(const Point& p, const ParamLayout& layout);

}  // namespace icl
