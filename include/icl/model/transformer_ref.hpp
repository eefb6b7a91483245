#pragma once
// Frozen naive reference of [VO23]'s transformer (transformer.hpp): one task at a time, double, plain
// Eigen, written in its code's orientation (src/transformer.py, src/attn.py): tokens are the ROWS of
// h (T x E) and a dense layer is y = x W + b with W (in x out) read row-major from theta at the
// layout's offsets.  Never optimise it: tests hold LaneTransformer and the blocks to it.
#include "icl/base/eigen.hpp"
#include <vector>

#include "icl/model/transformer.hpp"

namespace icl {

// theta: layout.size() entries (layout built from s).  Z0: (d+1) x (n+1), the columns (x_j, y_j), the
// query's label 0.  Returns the readout at the query, yhat_l = -h_l(T-1, E-1) (or the head's), for l = 1..layers;
// tokens (optional) receives h_0 .. h_L, each T x E (h_0: after the embedding and the positional
// encodings); prefix (optional) the last layer's readout at the x tokens of x_0 .. x_n (n+1 entries).
Eigen::VectorXd transformer_ref_forward(const TransformerShape& s, const TransformerLayout& layout,
                                        const std::vector<double>& theta, const Eigen::MatrixXd& Z0,
                                        std::vector<Eigen::MatrixXd>* tokens = nullptr,
                                        Eigen::VectorXd* prefix = nullptr);

// create_pos_encoding(T, size) of attn.py: T x size, (t, 2i) = sin(t w_i), (t, 2i+1) = cos(t w_i),
// w_i = exp(2i (-log 10000 / size)).
Eigen::MatrixXd transformer_ref_pos_encoding(int T, int size);

}  // namespace icl
