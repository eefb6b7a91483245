#pragma once
// [VO23]'s transformer as its code builds it (src/transformer.py, src/attn.py; docs/science.md
// section 2b), batched over kLanes<T> tasks like the LSA model (model.hpp).  Per task, with tokens
// as the columns of H (E x T):
//   tokens   constructed: X = Z (d+1 x n+1, the query's label 0);  classic: X = [x_1, (0, y_1), x_2, ...,
//            (0, y_n), x_query] (d x 2n+1)
//   embed    H = W_e^T X + b_e (linear; b_e with bias), then H += MLP_in(H) (mlp, biases always, as the code); none: H = X
//   pe       the sinusoidal table of create_pos_encoding (T x pe_size) added to H or stacked under it
//   layer l  X1 = LN_1(H) (layer_norm, every layer but the first unless tied) or H
//            per head h:  q = Wq_h^T X1 + bq_h,  k, v likewise on the context tokens (all but the query),
//            A_h = weights(k^T q) (linear | softmax(./sqrt(key)) | mix; layer 1: attention_first)
//            H += Wo^T [v_1 A_1; ..; v_H A_H] + bo;  clip
//            mlp: H += W2^T gelu(W1^T LN_2(H) + b1) + b2;  clip
//   readout  yhat_l = -H_l(E-1, T-1) after layer l (channel), or w_r^T LN_f(H_l)(:, T-1) (head: GPT-2's ln_f and
//            read-out map, as Garg et al.'s and Raventos et al.'s models)
// The GPT-2 family of the papers after [VO23] (Raventos et al.'s icl/gpt2.py, models.py): padded tokens
// (x_j as (0, x_j), y_j as (y_j, 0, .., 0)), a learnt positional table, causal attention (token t attends to
// tokens 0..t, itself included: the keys are all T tokens), the head readout, and the loss at every x token
// (prefix_loss: the prediction at x_j is of y_j from the j pairs before it).
// Parameters: one flat vector with named views (TransformerLayout), the same order in the HDF5 dump.
#include <memory>
#include <string>
#include <vector>

#include "icl/base/lane.hpp"
#include "icl/base/point.hpp"
#include "icl/model/model.hpp"

namespace icl {

// Tokens of a context of n pairs and the query: n+1 (constructed) or 2n+1 (classic, padded).
inline int token_count(Tokens tokens, int n) { return tokens == Tokens::constructed ? n + 1 : 2 * n + 1; }

struct TransformerShape {
  int d = 0, n = 0;
  Tokens tokens = Tokens::constructed;
  int T = 0;          // tokens: n+1 (constructed) or 2n+1 (classic, padded)
  int d_tok = 0;      // width of a raw token: d+1 (constructed, padded) or d (classic)
  Embed embed = Embed::none;
  int E_emb = 0;      // width after the embedding (d_tok when none)
  PosEnc pe = PosEnc::none;
  int pe_size = 0;
  int positions = 0;  // pe = learnt: the table's rows, T at the training length (shorter contexts use its first)
  int E = 0;          // model width: E_emb, + pe_size when concatenated
  int layers = 1, heads = 1, key = 0;
  Attention attention = Attention::linear, attention_first = Attention::linear;
  bool mlp = false, layer_norm = false, bias = true, tie = false;
  bool embed_bias = true;    // the linear embedding's bias (with bias)
  bool causal = false;
  Readout readout = Readout::channel;
  bool prefix_loss = false;
  bool ln_first = false;   // LayerNorm before layer 1's attention too (the code skips it there)
  int widening = 4;
  double act_clip = 0.0;
  double gd_eta = 0.0;   // > 0: the attention is [VO23]'s 1-step GD construction at rate gd_eta, frozen
  int weight_layers() const { return tie ? 1 : layers; }
  int keys() const { return causal ? T : T - 1; }   // the tokens attended to: all (causal, masked) or the context
  int x_token(int j) const { return tokens == Tokens::constructed ? j : 2 * j; }   // token of x_j (j = n: the query)
  Attention attention_at(int l) const { return l == 0 && !tie ? attention_first : attention; }
  bool ln1_at(int l) const { return layer_norm && (tie || l > 0 || ln_first); }   // the code skips it before layer 1
};
TransformerShape transformer_shape(const Point& p);

// Multiply-adds x 2 of one forward + backward pass on one task.
double transformer_flops_per_task(const TransformerShape& s);

// The number of parameters, TransformerLayout(s).size(), counted in double: the layout counts in int, so
// this is what validation checks against the limit of 2^31 - 1 (options.cpp) before any layout is built.
double transformer_param_count(const TransformerShape& s);

// What a parameter view initialises to: variance-scaled weights, zeros, ones.
enum class ViewInit { weight, zero, one };

// One named block of theta: rows x cols entries at offset, row-major.
struct TransformerView {
  std::string name;   // "emb.W", "attn.Wq", "mlp.b1", "ln1.g", ...
  int layer;          // 0 for the embedding and for tied layers
  int offset, rows, cols;
  int fan_in;
  ViewInit init;
  bool trained = true;   // false: frozen at its initial value (the GD construction of gd_eta)
};

// Offsets into theta of one layer's parameters (-1: absent).
struct LayerOffsets {
  int ln1_g = -1, ln1_b = -1, mix = -1, Wq = -1, bq = -1, Wk = -1, bk = -1, Wv = -1, bv = -1, Wo = -1, bo = -1;
  int ln2_g = -1, ln2_b = -1, W1 = -1, b1 = -1, W2 = -1, b2 = -1;
};
struct EmbedOffsets {
  int W = -1, b = -1, W1 = -1, b1 = -1, W2 = -1, b2 = -1, pe = -1;   // pe: the learnt table, T x E_emb
};
struct ReadoutOffsets {   // readout = head: LN_f's scale and offset, the map w_r (E x 1)
  int ln_g = -1, ln_b = -1, W = -1;
};

class TransformerLayout {
 public:
  explicit TransformerLayout(const TransformerShape& s);
  int size() const { return size_; }
  const std::vector<TransformerView>& views() const { return views_; }
  const EmbedOffsets& embed() const { return embed_; }
  const ReadoutOffsets& readout() const { return readout_; }
  const LayerOffsets& layer(int l) const { return layers_[l]; }   // l < weight_layers()

 private:
  int add(const std::string& name, int layer, int rows, int cols, int fan_in, ViewInit init);
  std::vector<TransformerView> views_;
  EmbedOffsets embed_;
  ReadoutOffsets readout_;
  std::vector<LayerOffsets> layers_;
  int size_ = 0;
};

// theta ~ the init law of p: weights as param_init's (normal, or variance-scaled truncated normal with
// scale init_scale / layers and the view's fan-in), biases and LayerNorm offsets 0, LayerNorm scales 1.
// With gd_attention = eta the attention is [VO23]'s GD construction (its data.py create_weights), frozen:
// W_Q = W_K = diag(1, .., 1, 0), W_V's last column (0, .., 0, -1), W_O = diag(0, .., 0, eta / n), so the
// layer adds -(eta/n) sum_i <phi_q, phi_i> y_i to the query's last channel (phi: the first E-1 channels).
std::vector<double> transformer_init(const Point& p, const TransformerLayout& layout);

// Row t of create_pos_encoding(T, size): pe(t, 2i) = sin(t w_i), pe(t, 2i+1) = cos(t w_i),
// w_i = exp(-2i log(10000) / size).
double positional_encoding(int t, int k, int size);

// The activation and gradient buffers of LaneTransformer, in lanes: what its constructor allocates (by
// these names) and what the sweep's memory estimate counts (sweep/memory.cpp), from this one declaration.
// Besides them it keeps theta (in T and as lane accumulators, transformer_param_count each) and the
// positional encodings.
struct TransformerBuffer {
  const char* name;
  size_t lanes;
};
std::vector<TransformerBuffer> transformer_buffers(const TransformerShape& s);

template <class T>
class LaneTransformer {
 public:
  using L = Lane<T>;
  explicit LaneTransformer(const TransformerShape& shape);
  ~LaneTransformer();
  LaneTransformer(const LaneTransformer&) = delete;
  LaneTransformer& operator=(const LaneTransformer&) = delete;

  const TransformerShape& shape() const { return shape_; }
  const TransformerLayout& layout() const;
  void set_weights(const double* theta);   // layout().size() entries
  // Z0: the constructed tokens of a chunk (d+1 x n+1 lanes, data.hpp).  yhat: `layers` lanes.
  // `next` as LaneModel's (model.hpp); the transformer computes everything whichever.
  void model_forward(const L* Z0, L* yhat, Next next = Next::model_backward);
  // The last layer's predictions of the last forward at every x token: yhat[j] predicts y_j from the tokens
  // before x_j's (causal), j = 0..n (n: the query, yhat_L of model_forward).  n+1 lanes.
  void prefix_predictions(L* yhat) const;
  // Backward of the last forward for dLoss/dyhat_L = dyhat; adds into the gradient accumulators.
  void model_backward(const L& dyhat);
  // The same, as training calls it (LaneModel::params_backward): here the raw tokens' gradient is computed
  // anyway, one d_tok x E0 product a token beside the layers'.
  void params_backward(const L& dyhat) { model_backward(dyhat); }
  // ... for dLoss/dyhat[j] of prefix_predictions (n+1 lanes).
  void prefix_backward(const L* dyhat);
  // Backward from dLoss/dH = G (E x T lanes) at the output of layer l (0-based) of the last forward,
  // through layers l..0 and the embedding: input_grad() then holds dLoss/dX (the copy analysis).
  void tokens_backward(int l, const L* G);
  void zero_grad();
  void grad(double* dtheta) const;   // the accumulators summed over lanes, in a fixed order
  // dLoss/dX of the raw tokens (d_tok x T lanes, X as in the header) after model_backward: the query's
  // x is column T-1, rows 0..d-1, in both layouts.
  const L* input_grad() const;
  // LaneModel::query_grad's: rows 0..d-1 of input_grad()'s column T-1 after model_backward(dyhat) (d lanes).
  void query_grad(const L& dyhat, L* g);
  // Tokens after layer l (l = 0: the input to layer 1, after embedding and positional encodings), E x T lanes.
  const L* tokens(int l) const;
  // What the last layer's read-out reads, E x T lanes: LN_f(H_L) (readout = head) or H_L (channel).
  const L* readout_features() const;

 private:
  struct Impl;
  TransformerShape shape_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace icl
