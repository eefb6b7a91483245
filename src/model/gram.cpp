// The linear model from its context's token Gram (gram.hpp).
#include "icl/model/gram.hpp"

namespace icl {

bool gram_form(const ModelShape& s) { return s.attention == Attention::linear && s.act_clip == 0.0; }

bool gram_form(const Point& p) { return p.arch == Arch::lsa && gram_form(model_shape(p)); }

Eigen::VectorXd gram_forward(const ModelShape& s, const double* P, const double* Q, Eigen::MatrixXd G, Eigen::VectorXd zq) {
  using Block = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  const int D = s.d + 1;
  Eigen::VectorXd yhat(s.layers);
  for (int l = 0; l < s.layers; ++l) {
    Eigen::MatrixXd B = Eigen::MatrixXd::Identity(D, D);
    for (int h = 0; h < s.heads; ++h) {
      const size_t at = (static_cast<size_t>(l) * s.heads + h) * D * D;
      B += s.c * Block(P + at, D, D) * G * Block(Q + at, D, D);
    }
    G = B * G * B.transpose();
    zq = B * zq;
    yhat(l) = -zq(s.d);
  }
  return yhat;
}

}  // namespace icl
