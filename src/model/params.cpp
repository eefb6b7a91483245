#include "icl/model/params.hpp"

#include <cmath>

#include "icl/base/check.hpp"
#include "icl/base/rng.hpp"

namespace icl {
namespace {

// The views of one (layer, head) under each parameterisation (the table of params.hpp).
struct ViewSpec {
  const char* name;
  int rows, cols, fan_in;
  Weight matrix;
  Placement placement;
};

std::vector<ViewSpec> head_views(Param param, int d) {
  const int D = d + 1;
  const Placement block = Placement::top_left, diagonal = Placement::diagonal;
  switch (param) {
    case Param::full: return {{"P", D, D, D, Weight::P, block}, {"Q", D, D, D, Weight::Q, block}};
    case Param::sparse_a: return {{"A", d, d, d, Weight::Q, block}};
    case Param::sparse_ab: return {{"A", d, d, d, Weight::Q, block}, {"B", d, d, d, Weight::P, block}};
    case Param::diag: return {{"p", 1, 2, 1, Weight::P, diagonal}, {"q", 1, 2, 1, Weight::Q, diagonal}};
    case Param::gdpp: return {{"p", 1, 2, 1, Weight::P, diagonal}, {"q", 1, 1, 1, Weight::Q, diagonal}};
  }
  ICL_CHECK(false);
  return {};
}

// M (D x D, row-major) <- the entries of view v, theta_v = theta + v.offset, at v's placement.
template <class T>
void view_expand(const ParamView& v, int d, const double* theta_v, T* M) {
  const int D = d + 1;
  switch (v.placement) {
    case Placement::top_left:
      for (int i = 0; i < v.rows; ++i)
        for (int k = 0; k < v.cols; ++k) M[i * D + k] = static_cast<T>(theta_v[i * v.cols + k]);
      break;
    case Placement::diagonal:
      for (int i = 0; i < d; ++i) M[i * D + i] = static_cast<T>(theta_v[0]);
      if (v.cols == 2) M[d * D + d] = static_cast<T>(theta_v[1]);
      break;
  }
}

// Its adjoint: dtheta_v += the entries of dM (D x D) at v's placement.
void view_collapse(const ParamView& v, int d, const double* dM, double* dtheta_v) {
  const int D = d + 1;
  switch (v.placement) {
    case Placement::top_left:
      for (int i = 0; i < v.rows; ++i)
        for (int k = 0; k < v.cols; ++k) dtheta_v[i * v.cols + k] += dM[i * D + k];
      break;
    case Placement::diagonal:
      for (int i = 0; i < d; ++i) dtheta_v[0] += dM[i * D + i];
      if (v.cols == 2) dtheta_v[1] += dM[d * D + d];
      break;
  }
}

}  // namespace

ParamLayout::ParamLayout(const ModelShape& shape, Param param, bool tie)
    : d_(shape.d), D_(shape.d + 1), layers_(shape.layers), heads_(shape.heads), tie_(tie),
      P_label_one_(param == Param::sparse_a || param == Param::sparse_ab) {
  const std::vector<ViewSpec> per_head = head_views(param, d_);
  for (int l = 0; l < (tie ? 1 : layers_); ++l)
    for (int h = 0; h < heads_; ++h)
      for (const ViewSpec& s : per_head) {
        views_.push_back({s.name, l, h, size_, s.rows, s.cols, s.fan_in, s.matrix, s.placement});
        size_ += s.rows * s.cols;
      }
}

ParamLayout::ParamLayout(const Point& p) : ParamLayout(model_shape(p), p.param, p.tie) {}

template <class M>
M* ParamLayout::matrix_of(const ParamView& v, int layer, M* P, M* Q) const {
  return (v.matrix == Weight::P ? P : Q) + (static_cast<size_t>(layer) * heads_ + v.head) * D_ * D_;
}

template <class T>
void ParamLayout::expand(const double* theta, T* P, T* Q) const {
  const int DD = D_ * D_;
  for (int x = 0; x < PQ_size(); ++x) P[x] = Q[x] = T(0);
  if (P_label_one_)
    for (int lh = 0; lh < layers_ * heads_; ++lh) P[static_cast<size_t>(lh) * DD + DD - 1] = T(1);
  for (const ParamView& v : views_)
    for (int l = first_layer(v); l < end_layer(v); ++l)
      view_expand(v, d_, theta + v.offset, matrix_of(v, l, P, Q));
}

void ParamLayout::collapse(const double* dP, const double* dQ, double* dtheta) const {
  for (int x = 0; x < size_; ++x) dtheta[x] = 0.0;
  for (const ParamView& v : views_)
    for (int l = first_layer(v); l < end_layer(v); ++l)
      view_collapse(v, d_, matrix_of(v, l, dP, dQ), dtheta + v.offset);
}

std::vector<double> param_init(const Point& p, const ParamLayout& layout) {
  std::vector<double> theta(layout.size());
  const uint64_t key = rng_key(p.seed, Stream::init);
  if (p.init == Init::normal) {
    rng_normals(key, 0, layout.size(), theta.data());
    for (double& x : theta) x *= p.init_scale;
    return theta;
  }
  // [VO23]: haiku VarianceScaling(scale, "fan_in", "truncated_normal"): std = sqrt(scale / fan_in) / 0.8796...,
  // truncated to two standard deviations (by rejection, on a stream of normals).
  const double scale = p.init_scale / p.layers;
  uint64_t i = 0;
  for (const ParamView& v : layout.views()) {
    const double sd = std::sqrt(scale / v.fan_in) / 0.87962566103423978;
    for (int x = 0; x < v.rows * v.cols; ++x) {
      double z;
      do z = rng_normal(key, i++); while (std::fabs(z) > 2.0);
      theta[v.offset + x] = sd * z;
    }
  }
  return theta;
}

template void ParamLayout::expand<float>(const double*, float*, float*) const;
template void ParamLayout::expand<double>(const double*, double*, double*) const;

}  // namespace icl
