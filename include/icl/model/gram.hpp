#pragma once
// Linear attention without a clip (model.hpp) sees its context only through the token Gram
// G = sum_{i < n} z_i z_i^T: layer l updates every token j by c sum_h P_h (Z M Z^T) Q_h z_j = c sum_h P_h G Q_h z_j,
// so every token is mapped by one matrix, B_l = I + c sum_h P_{l,h} G_l Q_{l,h}; the Gram becomes
// G_{l+1} = B_l G_l B_l^T and the query z_q <- B_l z_q.  O(L H D^3) for a context of any length, so the loss
// against context length (analysis.cpp, context_curve) grows one Gram a token at a time instead of running
// the model on every prefix.  Held to the frozen reference (model_ref.hpp) by tests/test_model.cpp.
#include "icl/base/eigen.hpp"
#include "icl/model/model.hpp"

namespace icl {

// Whether a model of this shape is such a model (linear attention, no clip); of point p: its trained model.
bool gram_form(const ModelShape& s);
bool gram_form(const Point& p);

// The readouts yhat_l = -(z_q)_d after layers l = 1..L, from the context's token Gram G (D x D) and the query
// token z_q = (x_q, 0); P, Q as model.hpp's weights (layers x heads row-major D x D blocks), s.c the
// normalisation for the context's length.
Eigen::VectorXd gram_forward(const ModelShape& s, const double* P, const double* Q, Eigen::MatrixXd G, Eigen::VectorXd zq);

}  // namespace icl
