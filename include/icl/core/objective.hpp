#pragma once
// The training objective of one point as a function of the flat parameters theta:
//   loss(theta) = mean over the batch's tasks of (yhat_L - y_query)^2   (plain MSE, docs/science.md section 3)
// with its exact gradient.  Owns the model and every buffer, sized once: calls allocate nothing.
// Used by the training loop, the gradient checks and the landscape analyses alike.
#include <vector>

#include "icl/core/data.hpp"
#include "icl/core/model.hpp"
#include "icl/core/params.hpp"

namespace icl {

template <class T>
class Objective {
 public:
  Objective(const ModelShape& shape, Param param, bool tie);
  explicit Objective(const Point& p);   // Objective(model_shape(p), p.param, p.tie)
  const ParamLayout& layout() const { return layout_; }
  LaneModel<T>& model() { return model_; }

  // Loss on `batch`; with g != nullptr also d(loss)/d(theta) (g resized to layout().size()).
  double loss_grad(const TaskBatch<T>& batch, const std::vector<double>& theta, std::vector<double>* g);
  // MSE of every layer's readout on `batch` (layer_loss resized to the number of layers).
  void layer_losses(const TaskBatch<T>& batch, const std::vector<double>& theta, std::vector<double>& layer_loss);

 private:
  void load(const std::vector<double>& theta);
  ParamLayout layout_;
  LaneModel<T> model_;
  std::vector<T> P_, Q_;
  std::vector<double> dP_, dQ_, sum_;
  LaneVec<T> yhat_;
};

}  // namespace icl
