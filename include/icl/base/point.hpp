#pragma once
// A grid point: every setting that determines one training run.  Plain data; `run_point` maps it to a
// Result and nothing else influences that result (see train.hpp).  Option names and value syntax live in
// options.hpp; the paper conventions behind each field are in docs/science.md.
#include <cstdint>
#include <string>
#include <vector>

namespace icl {

enum class Param { full, sparse_a, sparse_ab, diag, gdpp };   // docs/science.md section 2
enum class Attention { linear, softmax, mix };                 // mix: [VO23]'s learnable softmax-linear mix
enum class Arch { lsa, transformer };                         // P, Q layers (section 2) | [VO23]'s Transformer (2b)
enum class Tokens { constructed, classic, padded };           // (x, y) per token | x_1, y_1, .., x_query | the same,
                                                              // d+1 wide: x as (0, x), y as (y, 0) (Raventos et al.)
enum class Embed { none, linear, mlp };                       // input embedding (mlp: linear, then + MLP)
enum class PosEnc { none, add, concat, learnt };              // sinusoidal encodings added or stacked; a trained table added
enum class FirstAttention { same, linear, softmax, mix };     // layer 1's attention: as the others, or this
enum class Norm { inv_n, one };                               // c = 1/n ([A23],[A24]) or c = 1 ([VO23],[V24])
enum class Residual { one, inv_layers };                      // each layer's update x 1, or x 1/L (deep models)
enum class XDist { gaussian, uniform, sphere, gamma };
enum class Task { linear, sine };                            // y = <w, x>, or [VO23]'s y = a sin(x + rho) (d = 1)
enum class CovKind { identity, diag, rotated, rotated_per_task };   // rotated: one U per point; per task: one per task
enum class WPrior { identity, inverse_cov };                  // w ~ N(0, I) or N(0, Sigma^-1)
enum class NoiseKind { none, fixed, uniform, set };
enum class Optimizer { adam, adamw, sgd };
enum class ClipMode { global, matrix };
enum class Schedule { constant, step, cosine, linear };   // linear: to 0 at `steps` (with warmup: a triangle)
enum class Init { normal, vs_truncated, gd_embed, gpt2 };   // gd_embed: [VO23]'s GD model (create_weights); gpt2:
                                                          // nanoGPT's (transformer.cpp)
enum class Readout { channel, head };   // -H(E-1, t) ([VO23]) | a final LayerNorm and a linear map E -> 1 (GPT-2)
enum class Precision { f32, f64 };
enum class Sampler { v1, v2 };   // the task sampler's normals (data/normals.hpp): versioned streams

struct Point {
  // task (docs/science.md section 1)
  int d = 5;                          // input dimension
  int n = 20;                         // context length; the query is token n+1
  Task task = Task::linear;
  XDist x_dist = XDist::gaussian;
  double x_param = 0.0;               // uniform: half-width a; gamma: shape k (0 = the law's default)
  CovKind cov = CovKind::identity;    // Sigma of gaussian inputs
  std::vector<double> cov_spectrum;   // eigenvalues lambda_1..lambda_d (diag, rotated)
  WPrior w_prior = WPrior::identity;
  int64_t task_pool = 0;              // > 0: training tasks drawn from a fixed pool of this many w (0 = fresh)
  int64_t train_contexts = 0;         // > 0: training contexts drawn from a fixed set of this many (0 = fresh)
  NoiseKind noise = NoiseKind::none;
  std::vector<double> noise_sigma;    // fixed: {sigma}; uniform: {sigma_max}; set: the support
  // model (section 2)
  int layers = 1;
  int heads = 1;
  Param param = Param::full;
  bool tie = false;                   // one layer's weights applied `layers` times
  Attention attention = Attention::linear;
  Norm norm = Norm::inv_n;
  Residual residual = Residual::one;  // 1/L: every layer's update scaled by 1/L (Bordelon et al. 2025)
  double act_clip = 0.0;              // clip tokens to [-act_clip, act_clip] after each layer ([VO23] code); 0 = off
  // [VO23]'s transformer (arch = transformer; docs/science.md section 2b)
  Arch arch = Arch::lsa;
  Tokens tokens = Tokens::constructed;
  FirstAttention attention_first = FirstAttention::same;   // layer 1's (its code's first_layer_sm, use_non_lin_mix)
  int key_size = 0;                   // per head (0 = the model width)
  bool mlp = false;                   // an MLP block after each attention block
  int widening = 4;                   // MLP hidden width = widening x model width
  bool layer_norm = false;            // pre-norm LayerNorm before the blocks (not before layer 1's attention)
  bool layer_norm_first = false;      // ... and before layer 1's attention too
  Embed embed = Embed::none;
  int embed_size = 0;                 // width after the embedding
  PosEnc pe = PosEnc::none;
  int pe_size = 0;
  bool bias = true;                   // biases in the dense maps (its code's use_bias_p)
  bool embed_bias = true;             // ... and in the linear embedding (with bias)
  bool causal = false;                // token t attends to tokens 0..t (itself included); else every token to the context
  Readout readout = Readout::channel;
  bool prefix_loss = false;           // the loss at every x token (each prefix predicts its label), not the query only
  double gd_attention = 0.0;          // > 0: attention fixed to 1-step GD at this rate, only the embedding trained
  // training (section 3)
  Optimizer optimizer = Optimizer::adam;
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double momentum = 0.9;              // sgd only
  double weight_decay = 0.0;          // adam, sgd: L2 in the gradient; adamw: decoupled
  double clip = 0.0;                  // 0 = no clipping
  ClipMode clip_mode = ClipMode::global;
  Schedule schedule = Schedule::constant;
  int64_t warmup = 0;                 // linear warm-up steps (any schedule)
  int64_t decay_every = 0;            // schedule=step: halve the rate every this many steps
  int64_t steps = 1000;
  int batch = 1000;
  int refresh = 1;                    // fresh tasks every `refresh` steps
  Init init = Init::normal;
  double init_scale = 0.05;           // normal: std s; vs_truncated: variance scale init_scale / layers
  int eval_tasks = 10000;
  int64_t eval_seed = -1;             // >= 0: the evaluation set drawn from this seed, the same for every
                                      // point of a sweep (-1: from the point's own seed)
  int eval_every = 100;
  int eval_log = 0;         // also evaluate at log-spaced steps, this many per decade (train.hpp)
  double diverge_factor = 1e4;       // an evaluation loss above this x the initial one is divergence (0 = off)
  uint64_t seed = 0;
  Precision precision = Precision::f32;
  Sampler sampler = Sampler::v2;      // v1: the stream of every file written before it (data/normals.hpp)
  // analysis (docs/science.md sections 4-5)
  bool analysis = true;               // baselines, alignment, preconditioners, OOD curves on the eval set
  int rollout = 0;                    // [VO23] roll-out: the trained recurrent layer applied this many times (0 = off)
  double rollout_damping = 0.75;      // ... each application damped, label channel only (its code's 0.75)
  double ridge_lambda = 1.0;          // the fixed-lambda ridge baseline
  int context_curve = 0;              // > 0: every method's loss at context lengths 1..context_curve
  std::vector<int64_t> landscape;     // [A24] landscape measurements at these steps (empty = off) ...
  int64_t landscape_every = 0;        // ... or at steps 0, k, 2k, ... below `steps` (0 = use the list)
  int hessian_tasks = 1000;           // size of the fixed landscape set (Hessian diagonal, smoothness)
};

}  // namespace icl
