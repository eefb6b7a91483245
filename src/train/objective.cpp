// loss = (1/B) sum_t (yhat_t - y_t)^2,  d loss / d yhat_t = (2/B) (yhat_t - y_t); padded lanes have
// mask 0 and contribute nothing.  The per-chunk gradients accumulate in the model's lane accumulators
// and are reduced once, in a fixed order, then mapped to theta by ParamLayout::collapse.
#include "icl/train/objective.hpp"

namespace icl {
namespace {

// The loss of the last readout over the batch, with `model`'s backward per chunk when `grad` (either
// model: LaneModel or LaneTransformer, whose accumulators the caller zeroes and reads).
template <class T, class M>
double batch_loss(M& model, int layers, const TaskBatch<T>& batch, LaneVec<T>& yhat, bool grad) {
  const T scale = T(2) / static_cast<T>(batch.B);
  double loss = 0.0;
  for (int c = 0; c < batch.chunks; ++c) {
    model.model_forward(batch.chunk_Z(c), yhat.data(), grad ? Next::params_backward : Next::nothing);
    const Lane<T> err = (yhat[layers - 1] - batch.y[c]) * batch.mask[c];
    loss += static_cast<double>(lane_sum<T>(err * err));
    if (grad) model.params_backward(scale * err);
  }
  return loss / batch.B;
}

// prefix_loss: the mean over the batch and the n+1 x tokens of (yhat_j - y_j)^2, yhat_j the last layer's
// prediction at x_j from the pairs before it (LaneTransformer::prefix_predictions), y_j the context labels and
// the query's; the gradient through prefix_backward.
template <class T>
double batch_prefix_loss(LaneTransformer<T>& model, const TaskBatch<T>& batch, LaneVec<T>& yhat, LaneVec<T>& yp,
                         bool grad) {
  const int d = batch.d, n = batch.n, N = n + 1;
  const T scale = T(2) / (static_cast<T>(batch.B) * static_cast<T>(N));
  double loss = 0.0;
  for (int c = 0; c < batch.chunks; ++c) {
    const Lane<T>* Z = batch.chunk_Z(c);
    model.model_forward(Z, yhat.data());
    model.prefix_predictions(yp.data());
    for (int j = 0; j < N; ++j) {
      const Lane<T> err = (yp[j] - (j < n ? Z[d * N + j] : batch.y[c])) * batch.mask[c];
      loss += static_cast<double>(lane_sum<T>(err * err));
      yp[j] = scale * err;
    }
    if (grad) model.prefix_backward(yp.data());
  }
  return loss / (static_cast<double>(batch.B) * N);
}

// The MSE of every layer's readout over the batch.
template <class T, class M>
void batch_layer_losses(M& model, int layers, const TaskBatch<T>& batch, LaneVec<T>& yhat, std::vector<double>& sum,
                        std::vector<double>& layer_loss) {
  for (double& x : sum) x = 0.0;
  for (int c = 0; c < batch.chunks; ++c) {
    model.model_forward(batch.chunk_Z(c), yhat.data(), Next::nothing);
    for (int l = 0; l < layers; ++l) {
      const Lane<T> e = (yhat[l] - batch.y[c]) * batch.mask[c];
      sum[l] += static_cast<double>(lane_sum<T>(e * e));
    }
  }
  layer_loss.resize(layers);
  for (int l = 0; l < layers; ++l) layer_loss[l] = sum[l] / batch.B;
}

}  // namespace

template <class T>
Objective<T>::Objective(const ModelShape& shape, Param param, bool tie)
    : layout_(shape, param, tie), model_(shape), P_(layout_.PQ_size()), Q_(layout_.PQ_size()),
      dP_(layout_.PQ_size()), dQ_(layout_.PQ_size()), sum_(shape.layers), yhat_(shape.layers) {}

template <class T>
Objective<T>::Objective(const Point& p) : Objective(model_shape(p), p.param, p.tie) {}

template <class T>
void Objective<T>::load(const std::vector<double>& theta) {
  layout_.expand(theta.data(), P_.data(), Q_.data());
  model_.set_weights(P_.data(), Q_.data());
}

template <class T>
double Objective<T>::loss_grad(const TaskBatch<T>& batch, const std::vector<double>& theta, std::vector<double>* g) {
  load(theta);
  if (g) model_.zero_grad();
  const double loss = batch_loss<T>(model_, model_.shape().layers, batch, yhat_, g != nullptr);
  if (g) {
    model_.grad(dP_.data(), dQ_.data());
    g->resize(layout_.size());
    layout_.collapse(dP_.data(), dQ_.data(), g->data());
  }
  return loss;
}

template <class T>
void Objective<T>::layer_losses(const TaskBatch<T>& batch, const std::vector<double>& theta,
                                std::vector<double>& layer_loss) {
  load(theta);
  batch_layer_losses<T>(model_, model_.shape().layers, batch, yhat_, sum_, layer_loss);
}

template <class T>
std::vector<std::pair<int, int>> Objective<T>::blocks() const {
  std::vector<std::pair<int, int>> b;
  for (const ParamView& v : layout_.views()) b.emplace_back(v.offset, v.rows * v.cols);
  return b;
}

template <class T>
TransformerObjective<T>::TransformerObjective(const TransformerShape& shape)
    : model_(shape), sum_(shape.layers), yhat_(shape.layers), prefix_(shape.n + 1) {}

template <class T>
std::vector<std::pair<int, int>> TransformerObjective<T>::blocks() const {
  std::vector<std::pair<int, int>> b;
  for (const TransformerView& v : layout().views()) b.emplace_back(v.offset, v.rows * v.cols);
  return b;
}

template <class T>
double TransformerObjective<T>::loss_grad(const TaskBatch<T>& batch, const std::vector<double>& theta,
                                          std::vector<double>* g) {
  model_.set_weights(theta.data());
  if (g) model_.zero_grad();
  const double loss = model_.shape().prefix_loss ? batch_prefix_loss<T>(model_, batch, yhat_, prefix_, g != nullptr)
                                                 : batch_loss<T>(model_, model_.shape().layers, batch, yhat_, g != nullptr);
  if (g) {
    g->resize(size());
    model_.grad(g->data());
    for (const TransformerView& v : layout().views())   // frozen views do not move
      if (!v.trained)
        for (int x = 0; x < v.rows * v.cols; ++x) (*g)[v.offset + x] = 0.0;
  }
  return loss;
}

template <class T>
void TransformerObjective<T>::layer_losses(const TaskBatch<T>& batch, const std::vector<double>& theta,
                                           std::vector<double>& layer_loss) {
  model_.set_weights(theta.data());
  batch_layer_losses<T>(model_, model_.shape().layers, batch, yhat_, sum_, layer_loss);
}

template <class T>
std::unique_ptr<Trainable<T>> make_trainable(const Point& p) {
  if (p.arch == Arch::transformer) return std::make_unique<TransformerObjective<T>>(transformer_shape(p));
  return std::make_unique<Objective<T>>(p);
}

double flops_per_task(const Point& p) {
  return p.arch == Arch::transformer ? transformer_flops_per_task(transformer_shape(p))
                                     : model_flops_per_task(model_shape(p));
}

double train_flops_per_task(const Point& p) {
  return p.arch == Arch::transformer ? transformer_flops_per_task(transformer_shape(p))
                                     : model_train_flops_per_task(model_shape(p));
}

template class Objective<float>;
template class Objective<double>;
template class TransformerObjective<float>;
template class TransformerObjective<double>;
template std::unique_ptr<Trainable<float>> make_trainable<float>(const Point&);
template std::unique_ptr<Trainable<double>> make_trainable<double>(const Point&);

}  // namespace icl
