#pragma once
// Frozen naive reference of the model (model.hpp): one task at a time, double, plain Eigen matrix
// expressions in the paper's form, no caching tricks.  Never optimise it: tests compare the batched
// kernels against it.
#include "icl/base/eigen.hpp"
#include <vector>

#include "icl/model/model.hpp"

namespace icl {

// P, Q: layers*heads matrices (D x D), index l*heads + h.  Z0: D x N.  Returns the per-layer readouts
// yhat_l = -Z_l(d, n); Zs (optional) receives Z_0..Z_L.
Eigen::VectorXd ref_forward(const ModelShape& s, const std::vector<Eigen::MatrixXd>& P,
                            const std::vector<Eigen::MatrixXd>& Q, const Eigen::MatrixXd& Z0,
                            std::vector<Eigen::MatrixXd>* Zs = nullptr);

// Gradients of g * yhat_L with respect to every P, Q and Z0 (dP, dQ resized like P, Q).
void ref_backward(const ModelShape& s, const std::vector<Eigen::MatrixXd>& P, const std::vector<Eigen::MatrixXd>& Q,
                  const Eigen::MatrixXd& Z0, double g, std::vector<Eigen::MatrixXd>* dP,
                  std::vector<Eigen::MatrixXd>* dQ, Eigen::MatrixXd* dZ0);

}  // namespace icl
