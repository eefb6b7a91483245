// Naive reference: per task, F_h = P_h (Z M Z^T) (Q_h Z) (linear, times c) or
// F_h = P_h Z^ctx softmax(Z^ctx^T Q_h Z) (softmax); Z' = Z + sum_h F_h.
// Backward by the matrix chain rule on exactly those expressions:
//   linear:  with A = Z M Z^T, B = Q Z:  dP = c G (A B)^T,  dA = c P^T G B^T,  dB = c A^T P^T G,
//            dQ = dB Z^T,  dZ += Q^T dB + (dA + dA^T) Z M
//   softmax: with S = Zc^T Q Z, W = softmax_cols(S), V = Zc W:  dP = G V^T, dV = P^T G,
//            dZc += dV W^T, dW = Zc^T dV, dS = W .* (dW - 1 1^T (W .* dW)),
//            dZc += Q Z dS^T, dQ = Zc dS Z^T, dZ += Q^T Zc dS
#include "icl/model/model_ref.hpp"

namespace icl {
namespace {

Eigen::MatrixXd context_mask(int N) {
  Eigen::MatrixXd M = Eigen::MatrixXd::Identity(N, N);
  M(N - 1, N - 1) = 0.0;
  return M;
}

Eigen::MatrixXd softmax_cols(const Eigen::MatrixXd& S) {
  Eigen::MatrixXd W(S.rows(), S.cols());
  for (int j = 0; j < S.cols(); ++j) {
    const Eigen::VectorXd e = (S.col(j).array() - S.col(j).maxCoeff()).exp();
    W.col(j) = e / e.sum();
  }
  return W;
}

}  // namespace

Eigen::VectorXd ref_forward(const ModelShape& s, const std::vector<Eigen::MatrixXd>& P,
                            const std::vector<Eigen::MatrixXd>& Q, const Eigen::MatrixXd& Z0,
                            std::vector<Eigen::MatrixXd>* Zs) {
  const int N = s.n + 1;
  const Eigen::MatrixXd M = context_mask(N);
  Eigen::VectorXd yhat(s.layers);
  Eigen::MatrixXd Z = Z0;
  if (Zs) Zs->assign(1, Z0);
  for (int l = 0; l < s.layers; ++l) {
    Eigen::MatrixXd F = Eigen::MatrixXd::Zero(Z.rows(), Z.cols());
    for (int h = 0; h < s.heads; ++h) {
      const Eigen::MatrixXd& Ph = P[l * s.heads + h];
      const Eigen::MatrixXd& Qh = Q[l * s.heads + h];
      if (s.attention == Attention::linear) {
        F += s.c * Ph * (Z * M * Z.transpose()) * (Qh * Z);
      } else {
        const Eigen::MatrixXd Zc = Z.leftCols(s.n);
        F += Ph * Zc * softmax_cols(Zc.transpose() * Qh * Z);
      }
    }
    Z += F;
    if (s.act_clip > 0) Z = Z.cwiseMax(-s.act_clip).cwiseMin(s.act_clip);
    if (Zs) Zs->push_back(Z);
    yhat(l) = -Z(s.d, s.n);
  }
  return yhat;
}

void ref_backward(const ModelShape& s, const std::vector<Eigen::MatrixXd>& P, const std::vector<Eigen::MatrixXd>& Q,
                  const Eigen::MatrixXd& Z0, double g, std::vector<Eigen::MatrixXd>* dP,
                  std::vector<Eigen::MatrixXd>* dQ, Eigen::MatrixXd* dZ0) {
  const int N = s.n + 1;
  const Eigen::MatrixXd M = context_mask(N);
  std::vector<Eigen::MatrixXd> Zs;
  ref_forward(s, P, Q, Z0, &Zs);
  dP->assign(P.size(), Eigen::MatrixXd());
  dQ->assign(Q.size(), Eigen::MatrixXd());
  Eigen::MatrixXd G = Eigen::MatrixXd::Zero(Z0.rows(), Z0.cols());
  G(s.d, s.n) = -g;
  for (int l = s.layers - 1; l >= 0; --l) {
    const Eigen::MatrixXd& Z = Zs[l];
    if (s.act_clip > 0) G = (Zs[l + 1].array().abs() < s.act_clip).select(G, 0.0);
    Eigen::MatrixXd dZ = G;
    for (int h = 0; h < s.heads; ++h) {
      const int k = l * s.heads + h;
      const Eigen::MatrixXd& Ph = P[k];
      const Eigen::MatrixXd& Qh = Q[k];
      if (s.attention == Attention::linear) {
        const Eigen::MatrixXd A = Z * M * Z.transpose(), B = Qh * Z;
        (*dP)[k] = s.c * G * (A * B).transpose();
        const Eigen::MatrixXd dA = s.c * Ph.transpose() * G * B.transpose();
        const Eigen::MatrixXd dB = s.c * A.transpose() * Ph.transpose() * G;
        (*dQ)[k] = dB * Z.transpose();
        dZ += Qh.transpose() * dB + (dA + dA.transpose()) * Z * M;
      } else {
        const Eigen::MatrixXd Zc = Z.leftCols(s.n);
        const Eigen::MatrixXd W = softmax_cols(Zc.transpose() * Qh * Z), V = Zc * W;
        (*dP)[k] = G * V.transpose();
        const Eigen::MatrixXd dV = Ph.transpose() * G, dW = Zc.transpose() * dV;
        const Eigen::RowVectorXd colsum = (W.array() * dW.array()).colwise().sum();
        const Eigen::MatrixXd dS = (W.array() * (dW.rowwise() - colsum).array()).matrix();
        Eigen::MatrixXd dZc = dV * W.transpose() + Qh * Z * dS.transpose();
        (*dQ)[k] = Zc * dS * Z.transpose();
        dZ += Qh.transpose() * Zc * dS;
        dZ.leftCols(s.n) += dZc;
      }
    }
    G = dZ;
  }
  *dZ0 = G;
}

}  // namespace icl
