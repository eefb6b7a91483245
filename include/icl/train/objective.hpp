#pragma once
// The training objective of one point as a function of the flat parameters theta:
//   loss(theta) = mean over the batch's tasks of (yhat_L - y_query)^2   (plain MSE, docs/science.md section 3)
// or, for a transformer with prefix_loss, the mean over the tasks and their n+1 x tokens of (yhat_j - y_j)^2.
// with its exact gradient.  Owns the model and every buffer, sized once: calls allocate nothing.
// Used by the training loop, the gradient checks and the landscape analyses alike.
#include <memory>
#include <utility>
#include <vector>

#include "icl/data/data.hpp"
#include "icl/model/model.hpp"
#include "icl/model/params.hpp"
#include "icl/model/transformer.hpp"

namespace icl {

// What training needs of a model family (arch): theta's size, its blocks (for per-matrix clipping),
// its initialisation, and the loss with its gradient.
template <class T>
class Trainable {
 public:
  virtual ~Trainable() = default;
  virtual int size() const = 0;
  virtual std::vector<std::pair<int, int>> blocks() const = 0;   // (offset, count) of every named view
  virtual std::vector<double> init(const Point& p) const = 0;
  // Loss on `batch`; with g != nullptr also d(loss)/d(theta) (g resized to size()).
  virtual double loss_grad(const TaskBatch<T>& batch, const std::vector<double>& theta, std::vector<double>* g) = 0;
  // MSE of every layer's readout on `batch` (layer_loss resized to the number of layers).
  virtual void layer_losses(const TaskBatch<T>& batch, const std::vector<double>& theta,
                            std::vector<double>& layer_loss) = 0;
};

// The objective of p's arch: Objective (lsa) or TransformerObjective.
template <class T>
std::unique_ptr<Trainable<T>> make_trainable(const Point& p);

// Multiply-adds x 2 of one forward + backward pass on one task of p's model (the analyses' cost model), and of
// one training step's (params_backward's: flops_per_step and the training's cost model).
double flops_per_task(const Point& p);
double train_flops_per_task(const Point& p);

template <class T>
class Objective : public Trainable<T> {
 public:
  Objective(const ModelShape& shape, Param param, bool tie);
  explicit Objective(const Point& p);   // Objective(model_shape(p), p.param, p.tie)
  const ParamLayout& layout() const { return layout_; }
  LaneModel<T>& model() { return model_; }

  int size() const override { return layout_.size(); }
  std::vector<std::pair<int, int>> blocks() const override;
  std::vector<double> init(const Point& p) const override { return param_init(p, layout_); }
  double loss_grad(const TaskBatch<T>& batch, const std::vector<double>& theta, std::vector<double>* g) override;
  void layer_losses(const TaskBatch<T>& batch, const std::vector<double>& theta,
                    std::vector<double>& layer_loss) override;

 private:
  void load(const std::vector<double>& theta);
  ParamLayout layout_;
  LaneModel<T> model_;
  std::vector<T> P_, Q_;
  std::vector<double> dP_, dQ_, sum_;
  LaneVec<T> yhat_;
};

// [VO23]'s transformer (transformer.hpp): the same loss, the readout of its last layer.
template <class T>
class TransformerObjective : public Trainable<T> {
 public:
  explicit TransformerObjective(const TransformerShape& shape);
  const TransformerLayout& layout() const { return model_.layout(); }
  LaneTransformer<T>& model() { return model_; }
  int size() const override { return layout().size(); }
  std::vector<std::pair<int, int>> blocks() const override;
  std::vector<double> init(const Point& p) const override { return transformer_init(p, layout()); }
  double loss_grad(const TaskBatch<T>& batch, const std::vector<double>& theta, std::vector<double>* g) override;
  void layer_losses(const TaskBatch<T>& batch, const std::vector<double>& theta,
                    std::vector<double>& layer_loss) override;

 private:
  LaneTransformer<T> model_;
  std::vector<double> sum_;
  LaneVec<T> yhat_, prefix_;   // every layer's query prediction; the last layer's at every x token (prefix_loss)
};

}  // namespace icl
