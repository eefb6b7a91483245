// [VO23]'s transformer (transformer.hpp) from the blocks of blocks.hpp.  The forward keeps every
// activation of the chunk; the backward walks the layers in reverse, each block's backward quoting the
// forward line it differentiates.  dH is dLoss/dH at the current point of the residual stream.
#include "icl/model/transformer.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "icl/base/check.hpp"
#include "icl/base/rng.hpp"
#include "icl/model/blocks.hpp"

namespace icl {

TransformerShape transformer_shape(const Point& p) {
  TransformerShape s;
  s.d = p.d;
  s.n = p.n;
  s.tokens = p.tokens;
  s.T = token_count(p.tokens, p.n);
  s.d_tok = p.tokens == Tokens::classic ? p.d : p.d + 1;
  s.embed = p.embed;
  s.E_emb = p.embed == Embed::none ? s.d_tok : p.embed_size;
  s.pe = p.pe;
  s.pe_size = p.pe == PosEnc::none ? 0 : p.pe_size;
  s.positions = p.pe == PosEnc::learnt ? s.T : 0;
  s.E = s.E_emb + (p.pe == PosEnc::concat ? s.pe_size : 0);
  s.layers = p.layers;
  s.heads = p.heads;
  s.key = p.key_size > 0 ? p.key_size : s.E;
  s.attention = p.attention;
  switch (p.attention_first) {
    case FirstAttention::same: s.attention_first = p.attention; break;
    case FirstAttention::linear: s.attention_first = Attention::linear; break;
    case FirstAttention::softmax: s.attention_first = Attention::softmax; break;
    case FirstAttention::mix: s.attention_first = Attention::mix; break;
  }
  s.mlp = p.mlp;
  s.layer_norm = p.layer_norm;
  s.ln_first = p.layer_norm_first;
  s.bias = p.bias;
  s.embed_bias = p.embed_bias;
  s.causal = p.causal;
  s.readout = p.readout;
  s.prefix_loss = p.prefix_loss;
  s.tie = p.tie;
  s.widening = p.widening;
  s.act_clip = p.act_clip;
  s.gd_eta = p.gd_attention;
  return s;
}

double transformer_flops_per_task(const TransformerShape& s) {
  const double T = s.T, nk = s.keys(), E = s.E, HK = static_cast<double>(s.heads) * s.key, F = s.widening * E;
  double per_layer = T * E * HK + 2 * nk * E * HK + T * HK * E   // projections q, k, v, o
                     + 2 * s.heads * nk * T * s.key;              // scores and weighted values
  if (s.mlp) per_layer += 2 * T * E * F;
  double embed = 0;
  if (s.embed != Embed::none) embed += T * s.d_tok * s.E_emb;
  if (s.embed == Embed::mlp) embed += 2 * T * s.E_emb * s.widening * s.E_emb;
  const double readout = s.readout == Readout::head ? T * E * s.layers : 0;   // every layer's, every token
  return 2.0 * 3.0 * (per_layer * s.layers + embed + readout);   // backward ~ 2x forward
}

double transformer_param_count(const TransformerShape& s) {   // TransformerLayout's views, in double
  const double E = s.E, HK = static_cast<double>(s.heads) * s.key, F = static_cast<double>(s.widening) * E,
               E0 = s.E_emb, F0 = static_cast<double>(s.widening) * s.E_emb, bias = s.bias ? 1 : 0;
  double count = 0;
  if (s.embed != Embed::none) count += s.d_tok * E0 + (s.embed_bias ? bias : 0) * E0;
  if (s.embed == Embed::mlp) count += E0 * F0 + F0 + F0 * E0 + E0;
  if (s.pe == PosEnc::learnt) count += static_cast<double>(s.positions) * E0;
  if (s.readout == Readout::head) count += 3 * E;
  for (int l = 0; l < s.weight_layers(); ++l) {
    if (s.ln1_at(l)) count += 2 * E;
    if (s.attention_at(l) == Attention::mix) count += 1;
    count += 4 * E * HK + bias * (3 * HK + E);
    if (s.mlp) count += (s.layer_norm ? 2 * E : 0) + 2 * E * F + bias * (F + E);
  }
  return count;
}

TransformerLayout::TransformerLayout(const TransformerShape& s) {
  if (s.embed != Embed::none) {
    embed_.W = add("emb.W", 0, s.d_tok, s.E_emb, s.d_tok, ViewInit::weight);
    if (s.bias && s.embed_bias) embed_.b = add("emb.b", 0, 1, s.E_emb, 1, ViewInit::zero);   // the code's use_bias_p
  }
  if (s.embed == Embed::mlp) {   // the code's input MLP: always with biases
    const int F = s.widening * s.E_emb;
    embed_.W1 = add("emb_mlp.W1", 0, s.E_emb, F, s.E_emb, ViewInit::weight);
    embed_.b1 = add("emb_mlp.b1", 0, 1, F, 1, ViewInit::zero);
    embed_.W2 = add("emb_mlp.W2", 0, F, s.E_emb, F, ViewInit::weight);
    embed_.b2 = add("emb_mlp.b2", 0, 1, s.E_emb, 1, ViewInit::zero);
  }
  if (s.pe == PosEnc::learnt) embed_.pe = add("pe.W", 0, s.positions, s.E_emb, s.E_emb, ViewInit::weight);   // GPT-2's wpe
  const int E = s.E, HK = s.heads * s.key, F = s.widening * E;
  for (int l = 0; l < s.weight_layers(); ++l) {
    LayerOffsets o;
    auto bias = [&](const char* name, int size) { return s.bias ? add(name, l, 1, size, 1, ViewInit::zero) : -1; };
    if (s.ln1_at(l)) {
      o.ln1_g = add("ln1.g", l, 1, E, 1, ViewInit::one);
      o.ln1_b = add("ln1.b", l, 1, E, 1, ViewInit::zero);
    }
    if (s.attention_at(l) == Attention::mix) o.mix = add("attn.mix", l, 1, 1, 1, ViewInit::weight);
    o.Wq = add("attn.Wq", l, E, HK, E, ViewInit::weight);
    o.bq = bias("attn.bq", HK);
    o.Wk = add("attn.Wk", l, E, HK, E, ViewInit::weight);
    o.bk = bias("attn.bk", HK);
    o.Wv = add("attn.Wv", l, E, HK, E, ViewInit::weight);
    o.bv = bias("attn.bv", HK);
    o.Wo = add("attn.Wo", l, HK, E, HK, ViewInit::weight);
    o.bo = bias("attn.bo", E);
    if (s.mlp) {
      if (s.layer_norm) {
        o.ln2_g = add("ln2.g", l, 1, E, 1, ViewInit::one);
        o.ln2_b = add("ln2.b", l, 1, E, 1, ViewInit::zero);
      }
      o.W1 = add("mlp.W1", l, E, F, E, ViewInit::weight);
      o.b1 = bias("mlp.b1", F);
      o.W2 = add("mlp.W2", l, F, E, F, ViewInit::weight);
      o.b2 = bias("mlp.b2", E);
    }
    layers_.push_back(o);
  }
  if (s.readout == Readout::head) {   // GPT-2's ln_f and the read-out map (Dense(1), no bias)
    readout_.ln_g = add("lnf.g", 0, 1, E, 1, ViewInit::one);
    readout_.ln_b = add("lnf.b", 0, 1, E, 1, ViewInit::zero);
    readout_.W = add("head.W", 0, E, 1, E, ViewInit::weight);
  }
  if (s.gd_eta > 0)
    for (TransformerView& v : views_)
      if (v.name.rfind("attn.", 0) == 0) v.trained = false;
}

int TransformerLayout::add(const std::string& name, int layer, int rows, int cols, int fan_in, ViewInit init) {
  views_.push_back({name, layer, size_, rows, cols, fan_in, init});
  size_ += rows * cols;
  return views_.back().offset;
}

// [VO23]'s "MLP + 1 step of GD" (data.py create_weights, lines 280-290 at 96a60e5): plain normals, variance
// 0.002/2 for the embedding [2, 40] and the MLP's first layer [40, 160] (its fan 2: the token's width), 0.002/40
// for the second [160, 40]; with init_scale = 0.002 and d = 1 these are init_scale/(d+1) and init_scale/embed_size.
// The attention is the GD construction (below), so only the embedding's views are drawn this way.
static double gd_embed_sd(const Point& p, const TransformerView& v) {
  const TransformerShape s = transformer_shape(p);
  const double fan = v.name == "emb_mlp.W2" ? s.E_emb : s.d_tok;
  return std::sqrt(p.init_scale / fan);
}

// nanoGPT's init as Raventos et al.'s gpt2.py has it: every weight (embedding, positional table, projections,
// read-out) N(0, 0.02^2) with 0.02 = init_scale, the residual projections (attn.Wo, mlp.W2: its c_proj) scaled
// by 1/sqrt(2 layers).
static double gpt2_sd(const Point& p, const TransformerView& v) {
  const bool residual = v.name == "attn.Wo" || v.name == "mlp.W2";
  return residual ? p.init_scale / std::sqrt(2.0 * p.layers) : p.init_scale;
}

std::vector<double> transformer_init(const Point& p, const TransformerLayout& layout) {
  std::vector<double> theta(layout.size(), 0.0);
  const uint64_t key = rng_key(p.seed, Stream::init);
  uint64_t i = 0;
  for (const TransformerView& v : layout.views()) {
    const int count = v.rows * v.cols;
    if (v.init != ViewInit::weight) {
      for (int x = 0; x < count; ++x) theta[v.offset + x] = v.init == ViewInit::one ? 1.0 : 0.0;
      continue;
    }
    if (p.init != Init::vs_truncated) {
      const double sd = p.init == Init::normal ? p.init_scale : p.init == Init::gpt2 ? gpt2_sd(p, v) : gd_embed_sd(p, v);
      for (int x = 0; x < count; ++x) theta[v.offset + x] = sd * rng_normal(key, i++);
      continue;
    }
    // haiku VarianceScaling(scale, "fan_in", "truncated_normal"), as param_init (params.cpp).
    const double sd = std::sqrt(p.init_scale / p.layers / v.fan_in) / 0.87962566103423978;
    for (int x = 0; x < count; ++x) {
      double z;
      do z = rng_normal(key, i++); while (std::fabs(z) > 2.0);
      theta[v.offset + x] = sd * z;
    }
  }
  if (p.gd_attention > 0) {   // the GD construction (header), over the layout's frozen views
    const TransformerShape s = transformer_shape(p);
    const LayerOffsets& o = layout.layer(0);
    const int E = s.E;
    for (int off : {o.Wq, o.Wk, o.Wv, o.Wo})
      for (int x = 0; x < E * E; ++x) theta[off + x] = 0.0;
    for (int c = 0; c + 1 < E; ++c) theta[o.Wq + c * E + c] = theta[o.Wk + c * E + c] = 1.0;
    theta[o.Wv + E * E - 1] = -1.0;
    theta[o.Wo + E * E - 1] = p.gd_attention / p.n;
  }
  return theta;
}

double positional_encoding(int t, int k, int size) {
  const double w = std::exp(static_cast<double>(k - k % 2) * (-std::log(10000.0) / size));
  return k % 2 == 0 ? std::sin(t * w) : std::cos(t * w);
}

namespace {

AttnKind attn_kind(Attention a) {
  switch (a) {
    case Attention::linear: return AttnKind::linear;
    case Attention::softmax: return AttnKind::softmax;
    case Attention::mix: return AttnKind::mix;
  }
  return AttnKind::linear;
}

}  // namespace

std::vector<TransformerBuffer> transformer_buffers(const TransformerShape& s) {
  const size_t T = s.T, nk = s.keys(), Ls = s.layers, ET = static_cast<size_t>(s.E) * T,
               HT = static_cast<size_t>(s.heads) * s.key * T, ST = static_cast<size_t>(s.heads) * nk * T,
               FT = static_cast<size_t>(s.widening) * s.E * T, E0T = static_cast<size_t>(s.E_emb) * T,
               F0T = static_cast<size_t>(s.widening) * s.E_emb * T, XT = static_cast<size_t>(s.d_tok) * T;
  std::vector<TransformerBuffer> b = {
      {"X0", XT}, {"emb", E0T}, {"demb", E0T}, {"dX0", XT},                  // raw tokens, the embedding
      {"H", (Ls + 1) * ET}, {"X1", Ls * ET}, {"xhat1", Ls * ET}, {"rstd1", Ls * T},   // per layer: tokens, LN_1
      {"q", Ls * HT}, {"k", Ls * HT}, {"v", Ls * HT}, {"att", Ls * HT},      // projections, head outputs
      {"S", Ls * ST}, {"Pm", Ls * ST}, {"A", Ls * ST},                       // scores
      {"dH", ET}, {"dX", ET}, {"dq", HT}, {"dk", HT}, {"dv", HT}, {"dO", HT}, {"dA", nk * T},   // backward scratch
      {"dy", T}};                                                            // dLoss/dyhat at every token
  if (s.embed == Embed::mlp)
    for (const char* n : {"embU", "embG", "dembU"}) b.push_back({n, F0T});
  if (s.mlp) {   // Hm: the attention block's output (without an MLP it is the layer's, in H)
    for (const char* n : {"Hm", "X2", "xhat2"}) b.push_back({n, Ls * ET});
    b.push_back({"rstd2", Ls * T});
    for (const char* n : {"U", "G"}) b.push_back({n, Ls * FT});
    for (const char* n : {"dU", "dG"}) b.push_back({n, FT});
  }
  if (s.readout == Readout::head) {   // per layer: LN_f and the read-out at every token
    for (const char* n : {"Xf", "xhatf"}) b.push_back({n, Ls * ET});
    for (const char* n : {"rstdf", "yf"}) b.push_back({n, Ls * T});
  }
  return b;
}

template <class T>
struct LaneTransformer<T>::Impl {
  using L = Lane<T>;
  const TransformerShape s;
  const TransformerLayout layout;
  const int T_, nk, E, HK, F, E0, F0;   // tokens, context tokens, widths (F: MLP hidden; E0, F0: embedding)
  std::vector<T> W;                     // theta in T
  LaneVec<T> dW;                        // gradient accumulators, theta's layout
  std::vector<T> pe;                    // T x pe_size
  // activations of the last forward (per layer l: a block of the size in brackets)
  LaneVec<T> X0, emb, embU, embG;       // d_tok x T; E0 x T (linear embedding); F0 x T (input MLP)
  LaneVec<T> H;                         // (layers+1) x [E x T]: the tokens entering each layer, then the output
  LaneVec<T> X1, xhat1, rstd1;          // [E x T], [E x T], [T]: LN_1 (or unused)
  LaneVec<T> q, k, v, att;              // [HK x T]: projections (k, v: the first nk columns), head outputs
  LaneVec<T> S, Pm, A;                  // [H x nk x T]
  LaneVec<T> Hm;                        // [E x T]: after the attention residual (and clip); with an MLP
  LaneVec<T> X2, xhat2, rstd2;          // [E x T], [E x T], [T]: LN_2
  LaneVec<T> U, G;                      // [F x T]: MLP pre-activation, GELU output
  LaneVec<T> Xf, xhatf, rstdf, yf;      // [E x T], [E x T], [T], [T]: LN_f and the head's output (readout = head)
  // backward scratch, and dLoss/dX0
  LaneVec<T> dX0, dH, dX, dq, dk, dv, dA, dO, dU, dG, demb, dembU, dy;

  explicit Impl(const TransformerShape& shape)
      : s(shape), layout(shape), T_(shape.T), nk(shape.keys()), E(shape.E), HK(shape.heads * shape.key),
        F(shape.widening * shape.E), E0(shape.E_emb), F0(shape.widening * shape.E_emb) {
    ICL_CHECK(s.pe != PosEnc::add || s.pe_size == E0);
    ICL_CHECK(s.pe != PosEnc::learnt || (s.pe_size == E0 && s.T <= s.positions));
    W.assign(layout.size(), T(0));
    dW.assign(layout.size(), L{});
    pe.resize(static_cast<size_t>(T_) * s.pe_size);
    for (int t = 0; t < T_; ++t)
      for (int c = 0; c < s.pe_size; ++c) pe[t * s.pe_size + c] = static_cast<T>(positional_encoding(t, c, s.pe_size));
    for (const TransformerBuffer& b : transformer_buffers(s)) buffer(b.name)->assign(b.lanes, L{});
  }

  // The buffer transformer_buffers names.
  LaneVec<T>* buffer(const std::string& name) {
    static const std::pair<const char*, LaneVec<T> Impl::*> members[] = {
        {"X0", &Impl::X0}, {"emb", &Impl::emb}, {"embU", &Impl::embU}, {"embG", &Impl::embG}, {"H", &Impl::H},
        {"X1", &Impl::X1}, {"xhat1", &Impl::xhat1}, {"rstd1", &Impl::rstd1}, {"q", &Impl::q}, {"k", &Impl::k},
        {"v", &Impl::v}, {"att", &Impl::att}, {"S", &Impl::S}, {"Pm", &Impl::Pm}, {"A", &Impl::A}, {"Hm", &Impl::Hm},
        {"X2", &Impl::X2}, {"xhat2", &Impl::xhat2}, {"rstd2", &Impl::rstd2}, {"U", &Impl::U}, {"G", &Impl::G},
        {"dX0", &Impl::dX0}, {"dH", &Impl::dH}, {"dX", &Impl::dX}, {"dq", &Impl::dq}, {"dk", &Impl::dk},
        {"dv", &Impl::dv}, {"dA", &Impl::dA}, {"dO", &Impl::dO}, {"dU", &Impl::dU}, {"dG", &Impl::dG},
        {"demb", &Impl::demb}, {"dembU", &Impl::dembU}, {"Xf", &Impl::Xf}, {"xhatf", &Impl::xhatf},
        {"rstdf", &Impl::rstdf}, {"yf", &Impl::yf}, {"dy", &Impl::dy}};
    for (const auto& [n, m] : members)
      if (name == n) return &(this->*m);
    ICL_CHECK(!"a buffer of transformer_buffers without its member");
    return nullptr;
  }

  // Views of the per-layer blocks.
  Mat<T> mat(LaneVec<T>& x, int l, int rows, int cols) {
    return {x.data() + static_cast<size_t>(l) * rows * cols, rows, cols, cols};
  }
  Mat<T> tok(LaneVec<T>& x, int l) { return mat(x, l, E, T_); }
  // Layer l's attention block output H + Wo^T o + bo (clipped): Hm's with an MLP after it, else the layer's output.
  Mat<T> attention_out(int l) { return s.mlp ? tok(Hm, l) : tok(H, l + 1); }
  Mat<T> heads_of(LaneVec<T>& x, int l) { return mat(x, l, HK, T_); }
  Mat<T> head(Mat<T> m, int h, int cols) const { return {m.p + static_cast<size_t>(h) * s.key * m.ld, s.key, cols, m.ld}; }
  Mat<T> score(LaneVec<T>& x, int l, int h) {
    return {x.data() + (static_cast<size_t>(l) * s.heads + h) * nk * T_, nk, T_, T_};
  }
  // Layer l's attention weights of head h.  Linear attention without a mask weighs by the scores themselves
  // (A = S, dS = dA): they are read where they are, not copied.
  bool scores_are_weights(int l) const { return attn_kind(s.attention_at(l)) == AttnKind::linear && !s.causal; }
  Mat<T> weights(int l, int h) { return score(scores_are_weights(l) ? S : A, l, h); }
  Mat<T> hidden(LaneVec<T>& x, int l) { return mat(x, l, F, T_); }
  const T* w(int off) const { return off < 0 ? nullptr : W.data() + off; }
  L* dw(int off) { return off < 0 ? nullptr : dW.data() + off; }
  T mix_s(const LayerOffsets& o) const {
    return o.mix < 0 ? T(0) : T(1) / (T(1) + std::exp(-T(10) * W[o.mix]));
  }
  const LayerOffsets& offsets(int l) const { return layout.layer(s.tie ? 0 : l); }

  void tokens_forward(const L* Z0) {
    const int D = s.d + 1, N = s.n + 1;
    if (s.tokens == Tokens::constructed) {
      std::memcpy(static_cast<void*>(X0.data()), Z0, sizeof(L) * D * N);
      return;
    }
    // classic: token 2j = x_j, token 2j+1 = (0, .., 0, y_j), token 2n = x_query;
    // padded:  token 2j = (0, x_j), token 2j+1 = (y_j, 0, .., 0)
    const int d = s.d, x_row = s.tokens == Tokens::padded ? 1 : 0, y_row = s.tokens == Tokens::padded ? 0 : d - 1;
    for (auto& x : X0) x = L{};
    for (int j = 0; j < N; ++j)
      for (int i = 0; i < d; ++i) X0[(x_row + i) * T_ + 2 * j] = Z0[i * N + j];
    for (int j = 0; j < s.n; ++j) X0[y_row * T_ + 2 * j + 1] = Z0[d * N + j];
  }

  void embed_forward() {
    Mat<T> H0 = tok(H, 0);
    Mat<T> e{emb.data(), E0, T_, T_};
    const CMat<T> x{X0.data(), s.d_tok, T_, T_};
    const EmbedOffsets& eo = layout.embed();
    if (s.embed == Embed::none) {
      for (int r = 0; r < E0; ++r)
        for (int t = 0; t < T_; ++t) e.at(r, t) = x.at(r, t);
    } else {
      dense_forward<T>(w(eo.W), w(eo.b), x, e);                   // emb = W_e^T X + b_e
    }
    Mat<T> m{demb.data(), E0, T_, T_};   // the input MLP's output (demb: free during the forward)
    for (auto& z : demb) z = L{};
    if (s.embed == Embed::mlp) {                                   // H_0 = emb + W2^T gelu(W1^T emb + b1) + b2
      Mat<T> u{embU.data(), F0, T_, T_}, g{embG.data(), F0, T_, T_};
      dense_forward<T>(w(eo.W1), w(eo.b1), e, u);
      gelu_forward<T>(u.p, g.p, F0 * T_);
      dense_forward<T>(w(eo.W2), w(eo.b2), g, m);
    }
    const T* table = s.pe == PosEnc::add ? pe.data() : s.pe == PosEnc::learnt ? w(eo.pe) : nullptr;   // T x E0
    for (int r = 0; r < E0; ++r)
      for (int t = 0; t < T_; ++t) H0.at(r, t) = e.at(r, t) + m.at(r, t) + (table ? table[t * E0 + r] : T(0));
    if (s.pe == PosEnc::concat)
      for (int r = 0; r < s.pe_size; ++r)
        for (int t = 0; t < T_; ++t) H0.at(E0 + r, t) = Lane<T>{} + pe[t * s.pe_size + r];
  }

  void layer_forward(int l) {
    const LayerOffsets& o = offsets(l);
    Mat<T> Hin = tok(H, l), Hout = tok(H, l + 1), hm = attention_out(l);
    Mat<T> x1 = s.ln1_at(l) ? tok(X1, l) : Hin;
    if (s.ln1_at(l)) layernorm_forward<T>(w(o.ln1_g), w(o.ln1_b), Hin, x1, tok(xhat1, l), rstd1.data() + l * T_);
    Mat<T> Q = heads_of(q, l), K = heads_of(k, l), V = heads_of(v, l), O = heads_of(att, l);
    const Mat<T> x1_ctx{x1.p, E, nk, T_};
    dense_forward<T>(w(o.Wq), w(o.bq), x1, Q);                          // q = Wq^T X1 + bq
    dense_forward<T>(w(o.Wk), w(o.bk), x1_ctx, {K.p, HK, nk, T_});      // k = Wk^T X1_ctx + bk
    dense_forward<T>(w(o.Wv), w(o.bv), x1_ctx, {V.p, HK, nk, T_});      // v = Wv^T X1_ctx + bv
    const AttnKind kind = attn_kind(s.attention_at(l));
    const T r = T(1) / std::sqrt(static_cast<T>(s.key)), sm = mix_s(o);
    for (int h = 0; h < s.heads; ++h) {
      matmul_tn_forward<T>(head(K, h, nk), head(Q, h, T_), score(S, l, h));          // S = k_h^T q_h
      if (!scores_are_weights(l))
        attention_weights_forward<T>(kind, s.causal, r, sm, score(S, l, h), score(Pm, l, h), score(A, l, h));
      matmul_nn_forward<T>(head(V, h, nk), weights(l, h), head(O, h, T_));           // o_h = v_h A_h
    }
    dense_forward<T>(w(o.Wo), w(o.bo), O, hm);                                      // Hm = H + Wo^T o + bo
    for (int r2 = 0; r2 < E; ++r2)
      for (int t = 0; t < T_; ++t) hm.at(r2, t) += Hin.at(r2, t);
    if (s.act_clip > 0) clip_forward<T>(hm.p, E * T_, static_cast<T>(s.act_clip));
    if (!s.mlp) return;   // hm is Hout
    Mat<T> x2 = s.layer_norm ? tok(X2, l) : hm;
    if (s.layer_norm) layernorm_forward<T>(w(o.ln2_g), w(o.ln2_b), hm, x2, tok(xhat2, l), rstd2.data() + l * T_);
    Mat<T> u = hidden(U, l), g = hidden(G, l);
    dense_forward<T>(w(o.W1), w(o.b1), x2, u);                                      // u = W1^T X2 + b1
    gelu_forward<T>(u.p, g.p, F * T_);
    dense_forward<T>(w(o.W2), w(o.b2), g, Hout);                                    // H' = Hm + W2^T gelu(u) + b2
    for (int r2 = 0; r2 < E; ++r2)
      for (int t = 0; t < T_; ++t) Hout.at(r2, t) += hm.at(r2, t);
    if (s.act_clip > 0) clip_forward<T>(Hout.p, E * T_, static_cast<T>(s.act_clip));
  }

  // dH: dLoss/d(output of layer l) on entry, dLoss/d(input of layer l) on exit.
  void layer_backward(int l) {
    const LayerOffsets& o = offsets(l);
    Mat<T> Hin = tok(H, l), Hout = tok(H, l + 1), hm = attention_out(l);
    Mat<T> dh{dH.data(), E, T_, T_}, dx{dX.data(), E, T_, T_};
    const T clip = static_cast<T>(s.act_clip);
    if (s.mlp) {
      if (clip > 0) clip_backward<T>(Hout.p, dh.p, E * T_, clip);
      Mat<T> u = hidden(U, l), g = hidden(G, l), du{dU.data(), F, T_, T_}, dg{dG.data(), F, T_, T_};
      // H' = Hm + W2^T g + b2:  dHm = dH (kept in dh), dg = W2 dH
      dense_backward<T, false>(w(o.W2), g, dh, dg, dw(o.W2), dw(o.b2));
      gelu_backward<T>(u.p, dg.p, du.p, F * T_);
      Mat<T> x2 = s.layer_norm ? tok(X2, l) : hm;
      if (s.layer_norm) {   // u = W1^T LN_2(Hm) + b1
        dense_backward<T, false>(w(o.W1), x2, du, dx, dw(o.W1), dw(o.b1));
        layernorm_backward<T>(w(o.ln2_g), tok(xhat2, l), rstd2.data() + l * T_, dx, dh, dw(o.ln2_g), dw(o.ln2_b));
      } else {              // u = W1^T Hm + b1
        dense_backward<T, true>(w(o.W1), x2, du, dh, dw(o.W1), dw(o.b1));
      }
    }
    if (clip > 0) clip_backward<T>(hm.p, dh.p, E * T_, clip);
    // Hm = H + Wo^T o + bo:  dH = dHm (kept), do = Wo dHm
    Mat<T> O = heads_of(att, l), dO_{dO.data(), HK, T_, T_};
    dense_backward<T, false>(w(o.Wo), O, dh, dO_, dw(o.Wo), dw(o.bo));
    Mat<T> Q = heads_of(q, l), K = heads_of(k, l), V = heads_of(v, l);
    Mat<T> dQ{dq.data(), HK, T_, T_}, dK{dk.data(), HK, T_, T_}, dV{dv.data(), HK, T_, T_};
    const AttnKind kind = attn_kind(s.attention_at(l));
    const T r = T(1) / std::sqrt(static_cast<T>(s.key)), sm = mix_s(o);
    L dmix{};
    Mat<T> da{dA.data(), nk, T_, T_};
    for (int h = 0; h < s.heads; ++h) {
      matmul_nn_backward<T>(head(V, h, nk), weights(l, h), head(dO_, h, T_), head(dV, h, nk), da);   // o_h = v_h A_h
      if (!scores_are_weights(l))
        attention_weights_backward<T>(kind, s.causal, r, sm, score(S, l, h), score(Pm, l, h), da, da, &dmix);
      matmul_tn_backward<T>(head(K, h, nk), head(Q, h, T_), da, head(dK, h, nk), head(dQ, h, T_));  // S = k_h^T q_h
    }
    if (o.mix >= 0) dW[o.mix] += dmix;
    Mat<T> x1 = s.ln1_at(l) ? tok(X1, l) : Hin;
    const Mat<T> x1_ctx{x1.p, E, nk, T_};
    Mat<T> dx1 = s.ln1_at(l) ? dx : dh;   // LN_1: the projections' input gradient goes through it
    if (s.ln1_at(l))
      dense_backward<T, false>(w(o.Wq), x1, dQ, dx1, dw(o.Wq), dw(o.bq));
    else
      dense_backward<T, true>(w(o.Wq), x1, dQ, dx1, dw(o.Wq), dw(o.bq));
    const Mat<T> dx1_ctx{dx1.p, E, nk, T_};
    dense_backward<T, true>(w(o.Wk), x1_ctx, {dK.p, HK, nk, T_}, dx1_ctx, dw(o.Wk), dw(o.bk));
    dense_backward<T, true>(w(o.Wv), x1_ctx, {dV.p, HK, nk, T_}, dx1_ctx, dw(o.Wv), dw(o.bv));
    if (s.ln1_at(l))
      layernorm_backward<T>(w(o.ln1_g), tok(xhat1, l), rstd1.data() + l * T_, dx1, dh, dw(o.ln1_g), dw(o.ln1_b));
  }

  // The prediction at token t after layer l: -H_{l+1}(E-1, t) (channel) or yf_l(t) (head, computed here for
  // every token: yf_l = w_r^T LN_f(H_{l+1})).
  void readout_forward(int l) {
    if (s.readout == Readout::channel) return;
    const ReadoutOffsets& ro = layout.readout();
    Mat<T> xf = tok(Xf, l);
    layernorm_forward<T>(w(ro.ln_g), w(ro.ln_b), tok(H, l + 1), xf, tok(xhatf, l), rstdf.data() + l * T_);
    dense_forward<T>(w(ro.W), nullptr, xf, mat(yf, l, 1, T_));
  }
  L prediction(int l, int t) { return s.readout == Readout::head ? yf[l * T_ + t] : -tok(H, l + 1).at(E - 1, t); }

  // dH = dLoss/dH_L from dy = dLoss/dyhat at every token of the last layer's readout.
  void readout_backward() {
    for (auto& x : dH) x = L{};
    const int l = s.layers - 1;
    if (s.readout == Readout::channel) {   // yhat_t = -H_L(E-1, t)
      for (int t = 0; t < T_; ++t) dH[(E - 1) * T_ + t] = -dy[t];
      return;
    }
    const ReadoutOffsets& ro = layout.readout();   // yhat = w_r^T LN_f(H_L): dX = w_r dy, then LN_f's backward
    Mat<T> dxf{dX.data(), E, T_, T_}, dh{dH.data(), E, T_, T_};
    dense_backward<T, false>(w(ro.W), tok(Xf, l), CMat<T>{dy.data(), 1, T_, T_}, dxf, dw(ro.W), nullptr);
    layernorm_backward<T>(w(ro.ln_g), tok(xhatf, l), rstdf.data() + l * T_, dxf, dh, dw(ro.ln_g), dw(ro.ln_b));
  }

  // dH: dLoss/dH_0 on entry; the embedding's parameters get their gradients, dX0 = dLoss/dX0.
  void embed_backward() {
    const Mat<T> de{dH.data(), E0, T_, T_};   // rows < E0 of dH_0 (concatenated encodings are constants)
    const Mat<T> dx0{dX0.data(), s.d_tok, T_, T_};
    const EmbedOffsets& eo = layout.embed();
    if (s.pe == PosEnc::learnt)   // H_0 += the table
      for (int r = 0; r < E0; ++r)
        for (int t = 0; t < T_; ++t) dW[eo.pe + t * E0 + r] += de.at(r, t);
    if (s.embed == Embed::none) {   // H_0 = X0 (+ encodings)
      for (int r = 0; r < s.d_tok; ++r)
        for (int t = 0; t < T_; ++t) dx0.at(r, t) = de.at(r, t);
      return;
    }
    Mat<T> e{emb.data(), E0, T_, T_};
    if (s.embed == Embed::mlp) {
      // H_0 = emb + W2^T gelu(u) + b2,  u = W1^T emb + b1:  demb = dH_0 + W1 gelu'(u) W2 dH_0
      Mat<T> u{embU.data(), F0, T_, T_}, g{embG.data(), F0, T_, T_}, du{dembU.data(), F0, T_, T_};
      dense_backward<T, false>(w(eo.W2), g, de, du, dw(eo.W2), dw(eo.b2));
      gelu_backward<T>(u.p, du.p, du.p, F0 * T_);
      dense_backward<T, true>(w(eo.W1), e, du, de, dw(eo.W1), dw(eo.b1));
    }
    const CMat<T> x{X0.data(), s.d_tok, T_, T_};
    dense_backward<T, false>(w(eo.W), x, de, dx0, dw(eo.W), dw(eo.b));
  }

};

template <class T>
LaneTransformer<T>::LaneTransformer(const TransformerShape& shape)
    : shape_(shape), impl_(std::make_unique<Impl>(shape)) {}
template <class T>
LaneTransformer<T>::~LaneTransformer() = default;

template <class T>
const TransformerLayout& LaneTransformer<T>::layout() const { return impl_->layout; }

template <class T>
void LaneTransformer<T>::set_weights(const double* theta) {
  for (size_t x = 0; x < impl_->W.size(); ++x) impl_->W[x] = static_cast<T>(theta[x]);
}

template <class T>
void LaneTransformer<T>::model_forward(const L* Z0, L* yhat, Next) {
  Impl& m = *impl_;
  m.tokens_forward(Z0);
  m.embed_forward();
  for (int l = 0; l < shape_.layers; ++l) {
    m.layer_forward(l);
    m.readout_forward(l);
    yhat[l] = m.prediction(l, m.T_ - 1);
  }
}

template <class T>
void LaneTransformer<T>::prefix_predictions(L* yhat) const {
  Impl& m = *impl_;
  for (int j = 0; j <= shape_.n; ++j) yhat[j] = m.prediction(shape_.layers - 1, shape_.x_token(j));
}

template <class T>
void LaneTransformer<T>::model_backward(const L& dyhat) {
  Impl& m = *impl_;
  for (auto& x : m.dy) x = L{};
  m.dy[m.T_ - 1] = dyhat;
  m.readout_backward();
  for (int l = shape_.layers - 1; l >= 0; --l) m.layer_backward(l);
  m.embed_backward();
}

template <class T>
void LaneTransformer<T>::prefix_backward(const L* dyhat) {
  Impl& m = *impl_;
  for (auto& x : m.dy) x = L{};
  for (int j = 0; j <= shape_.n; ++j) m.dy[shape_.x_token(j)] = dyhat[j];
  m.readout_backward();
  for (int l = shape_.layers - 1; l >= 0; --l) m.layer_backward(l);
  m.embed_backward();
}

template <class T>
void LaneTransformer<T>::tokens_backward(int l, const L* G) {
  Impl& m = *impl_;
  std::memcpy(static_cast<void*>(m.dH.data()), G, sizeof(L) * m.dH.size());
  for (int k = l; k >= 0; --k) m.layer_backward(k);
  m.embed_backward();
}

template <class T>
void LaneTransformer<T>::zero_grad() {
  for (auto& x : impl_->dW) x = L{};
}

template <class T>
void LaneTransformer<T>::grad(double* dtheta) const {
  for (size_t x = 0; x < impl_->dW.size(); ++x) dtheta[x] = static_cast<double>(lane_sum<T>(impl_->dW[x]));
}

template <class T>
const Lane<T>* LaneTransformer<T>::input_grad() const { return impl_->dX0.data(); }

template <class T>
void LaneTransformer<T>::query_grad(const L& dyhat, L* g) {
  model_backward(dyhat);
  const int T_ = shape_.T;
  for (int i = 0; i < shape_.d; ++i) g[i] = impl_->dX0[static_cast<size_t>(i) * T_ + T_ - 1];
}

template <class T>
const Lane<T>* LaneTransformer<T>::tokens(int l) const {
  return impl_->H.data() + static_cast<size_t>(l) * impl_->E * impl_->T_;
}

template <class T>
const Lane<T>* LaneTransformer<T>::readout_features() const {
  const Impl& m = *impl_;
  if (shape_.readout == Readout::channel) return tokens(shape_.layers);
  return m.Xf.data() + static_cast<size_t>(shape_.layers - 1) * m.E * m.T_;
}

template class LaneTransformer<float>;
template class LaneTransformer<double>;

}  // namespace icl
