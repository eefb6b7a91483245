#pragma once
// The linear transformer of docs/science.md section 2, batched over V = kLanes<T> tasks ("a chunk"):
//   Z_{l+1} = Z_l + c * sum_h P_{l,h} Z_l M Z_l^T Q_{l,h} Z_l,   M = diag(1,..,1,0)      (linear)
//   Z_{l+1} = Z_l + sum_h P_{l,h} Z_l^ctx softmax_ctx((Z_l^ctx)^T Q_{l,h} Z_l)          (softmax)
//   Z_{l+1} <- clip(Z_{l+1}, -a, a) entrywise when act_clip a > 0 ([VO23]'s code, deep models)
//   yhat_l  = -Z_l[d, n]   (readout after layer l, l = 1..L; yhat = yhat_L)
// Shapes: D = d+1 rows, N = n+1 columns; a token matrix is D x N lanes, row-major (Z[i*N + j]).
// Weights P, Q: layers x heads x D x D scalars, row-major, already expanded from the trainable
// parameters (params.hpp).  All workspaces are sized in the constructor: forward/backward allocate nothing.
#include <memory>

#include "icl/base/lane.hpp"
#include "icl/base/point.hpp"

namespace icl {

struct ModelShape {
  int d = 0, n = 0, layers = 1, heads = 1;
  Attention attention = Attention::linear;
  double c = 1.0;   // normalisation: 1/n or 1, times 1/L with residual = 1/L
  double act_clip = 0.0;   // clip of the tokens after each layer (0 = off)
};
ModelShape model_shape(const Point& p);
// c of linear attention on contexts of length n: norm's 1/n (or 1), times residual's 1/L (or 1).
double attention_c(const Point& p, int n);

// Multiply-adds x 2 of one forward + backward pass (model_backward) on one task: the FLOP model of the analyses'
// cost estimate (an upper bound: their losses and sensitivities run the lean forwards of Next and query_grad).
double model_flops_per_task(const ModelShape& s);
// ... of a training step, forward + params_backward: flops_per_step and the training's cost estimate.
double model_train_flops_per_task(const ModelShape& s);

// What may follow a forward (model_forward): model_backward, which reads everything, and then output() and
// input_grad(); params_backward, training's, which reads of the last linear layer only what its readout's
// gradient needs; query_grad, the query's input gradient alone (the analyses' sensitivities); or nothing, the
// readouts alone (the losses of the analyses and of training's evaluations).  The last three leave out the last
// linear layer's products that nothing reads: all of Z_L but the readout, and K but its readout row where no
// input's gradient passes that layer (params_backward at one layer, or nothing).  The readouts have the same bits
// whichever (lane_kernels.hpp, readout_row and readout_entry).  LaneTransformer computes everything.
enum class Next { model_backward, params_backward, query_grad, nothing };

template <class T>
class LaneModel {
 public:
  using L = Lane<T>;
  explicit LaneModel(const ModelShape& shape);
  ~LaneModel();
  LaneModel(const LaneModel&) = delete;
  LaneModel& operator=(const LaneModel&) = delete;

  const ModelShape& shape() const { return shape_; }
  // Copies P, Q (layers x heads x D x D each) for the following forward/backward calls.
  void set_weights(const T* P, const T* Q);
  // Z0: D x N lanes.  yhat: `layers` lanes, the readout after each layer.  Keeps the activations `next` reads,
  // and reads Z0 again in a backward: it must stay as it is until then (it is not copied).
  void model_forward(const L* Z0, L* yhat, Next next = Next::model_backward);
  // Backward of the last forward (with Next::model_backward) for dLoss/dyhat_L = dyhat (lanes).  Adds the chunk's
  // dP, dQ into the gradient accumulators and leaves dLoss/dZ0 in input_grad() (D x N lanes).
  void model_backward(const L& dyhat);
  // model_backward for the weights alone, as training needs it: the same dP, dQ bit for bit (for finite values,
  // lane_kernels.hpp), without the input's gradient (a linear layer 0's dZ and dC products), and with the last
  // linear layer's products of dK = G Z^T's zero rows left out (G is zero but at the readout).  Softmax layers
  // run as in model_backward.  input_grad() is not defined after it.  After a forward with Next::model_backward,
  // Next::params_backward or Next::query_grad.
  void params_backward(const L& dyhat);
  const L* input_grad() const;
  // dLoss/dx_query for dLoss/dyhat_L = dyhat, rows 0..d-1 of the query's column of model_backward's input_grad()
  // (d lanes into g), bit for bit, after a forward with Next::query_grad or Next::model_backward.  Linear layers
  // pass the column alone back (z_q' = z_q + K z_q, and no context token reads the query: C sums j < n), without
  // the weights' gradients; softmax layers run model_backward (which also adds into the gradient accumulators).
  // input_grad() is not defined after it.
  void query_grad(const L& dyhat, L* g);
  const L* output() const;   // Z_L of the last forward (D x N lanes), with Next::model_backward
  void zero_grad();
  // dP, dQ (layers x heads x D x D): the accumulated gradients summed over lanes, in a fixed order.
  void grad(double* dP, double* dQ) const;

 private:
  void backward(const L& dyhat, bool input_grad);
  struct Impl;
  ModelShape shape_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace icl
