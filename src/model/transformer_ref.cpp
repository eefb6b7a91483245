// Naive reference of [VO23]'s transformer, transcribed from its code (google-research/
// self-organising-systems, transformers_learn_icl_by_gd/src/transformer.py, src/attn.py), per task,
// tokens as rows (h: T x E):
//   Transformer.__call__  embeddings = Linear(E_emb, with_bias=use_bias_p, name="emb")(x)   (input_mapping)
//                         embeddings += MLP(widening, use_bias_p=True, outputdim=E_emb)(embeddings)   (input_mlp)
//                         h = pos_encoding + embeddings | concat([embeddings, pos_encoding], -1) | embeddings
//   trans_block(h, nl)    h_norm = layer_norm(h) (use_layer_norm; not at nl == 0 unless deq) or h
//                         h = h + MHA(h_norm, h_norm[:-1], h_norm[:-1]);  clip
//                         h = h + MLP(layer_norm(h) or h);  clip                  (not only_attention)
//                         readout -h[-1, -1]
//   MultiHeadAttention    q = Linear(H K)(query), k, v likewise, reshaped (T, H, K): feature h K + j
//                         logits[h, t, a] = q[t, h] . k[a, h];  weights = logits | softmax_a(logits / sqrt K)
//                         | softmax(.) sigmoid(10 y) + (1 - sigmoid(10 y)) logits, y = Linear(1, no bias)([1.0])
//                         attn[t, h] = sum_a weights[h, t, a] v[a, h];  out = Linear(E)(attn)
//   MLP                   Linear(widening x width) -> gelu (tanh form) -> Linear(width)
//   LayerNorm             haiku's (axis -1, eps 1e-5, scale and offset)
// and the GPT-2 model of Raventos et al. (mansheej/icl-task-diversity, icl/gpt2.py and models.py), as options:
//   to_seq                x_j -> (0, x_j), y_j -> (y_j, 0, .., 0), interleaved (tokens = padded)
//   GPT2Model             h = Dense(E, no bias)(seq) + wpe[t] (pe = learnt); blocks x + attn(ln_1(x)),
//                         x + mlp(ln_2(x)); then ln_f
//   GPT2SelfAttention     att = q k^T / sqrt(hs), masked where key > query (jnp.tril: causal), softmax
//   Transformer           preds = Dense(1, no bias)(ln_f(h))[::2] (readout = head, every x token)
// Deliberately the obvious expressions, recomputed from theta on every call.
#include "icl/model/transformer_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "icl/base/check.hpp"

namespace icl {
namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// rows x cols entries of theta at offset, row-major (haiku's Linear weights: in x out).
Eigen::MatrixXd param(const std::vector<double>& theta, int offset, int rows, int cols) {
  ICL_CHECK(offset >= 0 && static_cast<size_t>(offset) + static_cast<size_t>(rows) * cols <= theta.size());
  return Eigen::Map<const RowMajorMatrix>(theta.data() + offset, rows, cols);
}

// haiku Linear on the rows of x (T x in): x W + b, W: in x out, b: out (with_bias only).
Eigen::MatrixXd linear(const Eigen::MatrixXd& x, const std::vector<double>& theta, int W, int b, int out,
                       bool with_bias) {
  Eigen::MatrixXd y = x * param(theta, W, static_cast<int>(x.cols()), out);
  if (with_bias) {
    const Eigen::MatrixXd bias = param(theta, b, 1, out);
    for (int t = 0; t < y.rows(); ++t) y.row(t) += bias;
  }
  return y;
}

// jax.nn.gelu (approximate=True).
Eigen::MatrixXd gelu(const Eigen::MatrixXd& x) {
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  Eigen::MatrixXd y(x.rows(), x.cols());
  for (int i = 0; i < x.rows(); ++i)
    for (int j = 0; j < x.cols(); ++j) {
      const double u = x(i, j);
      y(i, j) = 0.5 * u * (1.0 + std::tanh(k * (u + 0.044715 * u * u * u)));
    }
  return y;
}

// hk.LayerNorm(axis=-1, create_scale=True, create_offset=True) on every row.
Eigen::MatrixXd layer_norm(const Eigen::MatrixXd& x, const std::vector<double>& theta, int g, int b) {
  const int E = static_cast<int>(x.cols());
  const Eigen::MatrixXd scale = param(theta, g, 1, E), offset = param(theta, b, 1, E);
  Eigen::MatrixXd y(x.rows(), E);
  for (int t = 0; t < x.rows(); ++t) {
    double mean = 0.0;
    for (int e = 0; e < E; ++e) mean += x(t, e);
    mean /= E;
    double var = 0.0;
    for (int e = 0; e < E; ++e) var += (x(t, e) - mean) * (x(t, e) - mean);
    var /= E;
    for (int e = 0; e < E; ++e) y(t, e) = scale(0, e) * (x(t, e) - mean) / std::sqrt(var + 1e-5) + offset(0, e);
  }
  return y;
}

// jax.nn.softmax over the last axis (the keys): every row.
Eigen::MatrixXd softmax_rows(const Eigen::MatrixXd& x) {
  Eigen::MatrixXd y(x.rows(), x.cols());
  for (int t = 0; t < x.rows(); ++t) {
    const double m = x.row(t).maxCoeff();
    double sum = 0.0;
    for (int a = 0; a < x.cols(); ++a) sum += std::exp(x(t, a) - m);
    for (int a = 0; a < x.cols(); ++a) y(t, a) = std::exp(x(t, a) - m) / sum;
  }
  return y;
}

// The causal mask: logits[t, a] for keys a > t set to the lowest float (as gpt2.py's jnp.where), which
// the softmax makes exactly 0; the linear weights there are 0.
Eigen::MatrixXd masked(const Eigen::MatrixXd& logits, double fill) {
  Eigen::MatrixXd y = logits;
  for (int t = 0; t < y.rows(); ++t)
    for (int a = t + 1; a < y.cols(); ++a) y(t, a) = fill;
  return y;
}

// MultiHeadAttention(query = x, key = value = x[:-1]), or (causal) every token attending to tokens 0..t.
Eigen::MatrixXd attention(const TransformerShape& s, Attention kind, const LayerOffsets& o,
                          const std::vector<double>& theta, const Eigen::MatrixXd& x) {
  const int T = static_cast<int>(x.rows()), E = s.E, K = s.key, HK = s.heads * s.key;
  const Eigen::MatrixXd context = s.causal ? x : x.topRows(T - 1);
  const Eigen::MatrixXd q = linear(x, theta, o.Wq, o.bq, HK, s.bias);         // T x HK
  const Eigen::MatrixXd k = linear(context, theta, o.Wk, o.bk, HK, s.bias);   // T-1 x HK
  const Eigen::MatrixXd v = linear(context, theta, o.Wv, o.bv, HK, s.bias);   // T-1 x HK
  Eigen::MatrixXd attn(T, HK);
  for (int h = 0; h < s.heads; ++h) {
    const Eigen::MatrixXd logits = q.middleCols(h * K, K) * k.middleCols(h * K, K).transpose();   // T x keys
    const auto soft = [&] {
      const Eigen::MatrixXd z = logits / std::sqrt(static_cast<double>(K));
      return softmax_rows(s.causal ? masked(z, -std::numeric_limits<double>::max()) : z);
    };
    const Eigen::MatrixXd lin = s.causal ? masked(logits, 0.0) : logits;
    Eigen::MatrixXd weights;
    switch (kind) {
      case Attention::linear: weights = lin; break;
      case Attention::softmax: weights = soft(); break;
      case Attention::mix: {
        const double y = param(theta, o.mix, 1, 1)(0, 0);
        const double sig = 1.0 / (1.0 + std::exp(-10.0 * y));
        weights = soft() * sig + (1.0 - sig) * lin;
        break;
      }
    }
    attn.middleCols(h * K, K) = weights * v.middleCols(h * K, K);
  }
  return linear(attn, theta, o.Wo, o.bo, E, s.bias);
}

Eigen::MatrixXd clip(const Eigen::MatrixXd& h, double a) {
  Eigen::MatrixXd y = h;
  for (int i = 0; i < y.rows(); ++i)
    for (int j = 0; j < y.cols(); ++j) y(i, j) = std::min(a, std::max(-a, y(i, j)));
  return y;
}

}  // namespace

Eigen::MatrixXd transformer_ref_pos_encoding(int T, int size) {
  Eigen::MatrixXd pe = Eigen::MatrixXd::Zero(T, size);
  for (int t = 0; t < T; ++t)
    for (int i = 0; 2 * i < size; ++i) {
      const double w = std::exp(2.0 * i * (-std::log(10000.0) / size));
      pe(t, 2 * i) = std::sin(t * w);
      if (2 * i + 1 < size) pe(t, 2 * i + 1) = std::cos(t * w);
    }
  return pe;
}

Eigen::VectorXd transformer_ref_forward(const TransformerShape& s, const TransformerLayout& layout,
                                        const std::vector<double>& theta, const Eigen::MatrixXd& Z0,
                                        std::vector<Eigen::MatrixXd>* tokens, Eigen::VectorXd* prefix) {
  const int d = s.d, n = s.n;
  ICL_CHECK(Z0.rows() == d + 1 && Z0.cols() == n + 1);
  ICL_CHECK(static_cast<int>(theta.size()) == layout.size());

  // Tokens: constructed (x_j; y_j) columns, or classic x_1, (0..0, y_1), .., (0..0, y_n), x_query, or padded
  // (0, x_1), (y_1, 0..0), .., (0, x_query).
  Eigen::MatrixXd x;
  if (s.tokens == Tokens::constructed) {
    x = Z0.transpose();                        // n+1 x d+1
  } else if (s.tokens == Tokens::padded) {
    x = Eigen::MatrixXd::Zero(2 * n + 1, d + 1);
    for (int j = 0; j <= n; ++j) x.row(2 * j).tail(d) = Z0.col(j).head(d).transpose();
    for (int j = 0; j < n; ++j) x(2 * j + 1, 0) = Z0(d, j);
  } else {
    x = Eigen::MatrixXd::Zero(2 * n + 1, d);   // 2n+1 x d
    for (int j = 0; j < n; ++j) {
      x.row(2 * j) = Z0.col(j).head(d).transpose();
      x(2 * j + 1, d - 1) = Z0(d, j);
    }
    x.row(2 * n) = Z0.col(n).head(d).transpose();
  }
  const int T = static_cast<int>(x.rows());
  ICL_CHECK(T == s.T && x.cols() == s.d_tok);

  // Embedding: the emb Linear has a bias iff use_bias_p; the input MLP always has biases.
  Eigen::MatrixXd emb = x;
  const EmbedOffsets& eo = layout.embed();
  if (s.embed != Embed::none) emb = linear(x, theta, eo.W, eo.b, s.E_emb, s.bias && s.embed_bias);
  if (s.embed == Embed::mlp) {
    const int F = s.widening * s.E_emb;
    emb = emb + linear(gelu(linear(emb, theta, eo.W1, eo.b1, F, true)), theta, eo.W2, eo.b2, s.E_emb, true);
  }
  ICL_CHECK(emb.cols() == s.E_emb);

  // Positional encodings.
  Eigen::MatrixXd h;
  if (s.pe == PosEnc::none) {
    h = emb;
  } else if (s.pe == PosEnc::add) {
    h = emb + transformer_ref_pos_encoding(T, s.pe_size);
  } else if (s.pe == PosEnc::learnt) {
    ICL_CHECK(T <= s.positions);
    h = emb + param(theta, eo.pe, T, s.E_emb);   // the table's first T rows
  } else {
    h.resize(T, s.E_emb + s.pe_size);
    h << emb, transformer_ref_pos_encoding(T, s.pe_size);
  }
  ICL_CHECK(h.cols() == s.E);
  if (tokens) tokens->assign(1, h);

  Eigen::VectorXd yhat(s.layers);
  for (int l = 0; l < s.layers; ++l) {
    const LayerOffsets& o = layout.layer(s.tie ? 0 : l);
    // deq (tied): layer norm before every layer, the same attention everywhere; otherwise no
    // layer norm before layer 1 (unless ln_first) and layer 1's attention may differ.
    const bool ln1 = s.layer_norm && (s.tie || l > 0 || s.ln_first);
    const Attention kind = (s.tie || l > 0) ? s.attention : s.attention_first;
    const Eigen::MatrixXd h_norm = ln1 ? layer_norm(h, theta, o.ln1_g, o.ln1_b) : h;
    h = h + attention(s, kind, o, theta, h_norm);
    if (s.act_clip > 0) h = clip(h, s.act_clip);
    if (s.mlp) {
      const Eigen::MatrixXd h_inter = s.layer_norm ? layer_norm(h, theta, o.ln2_g, o.ln2_b) : h;
      const int F = s.widening * s.E;
      h = h + linear(gelu(linear(h_inter, theta, o.W1, o.b1, F, s.bias)), theta, o.W2, o.b2, s.E, s.bias);
      if (s.act_clip > 0) h = clip(h, s.act_clip);
    }
    if (tokens) tokens->push_back(h);
    // The readout at every token: -h(t, E-1), or Dense(1, no bias)(ln_f(h)).
    Eigen::VectorXd out = -h.col(s.E - 1);
    if (s.readout == Readout::head) {
      const ReadoutOffsets& ro = layout.readout();
      out = layer_norm(h, theta, ro.ln_g, ro.ln_b) * param(theta, ro.W, s.E, 1);
    }
    yhat(l) = out(T - 1);
    if (prefix && l == s.layers - 1) {
      prefix->resize(n + 1);
      for (int j = 0; j <= n; ++j) (*prefix)(j) = out(s.x_token(j));
    }
  }
  return yhat;
}

}  // namespace icl
