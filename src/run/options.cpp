// The option table.  Each entry parses one setting strictly (the whole text must be consumed) and
// states the rule in its error, so a user sees which option, which value and why.
#include "icl/run/options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "icl/data/data.hpp"
#include "icl/model/transformer.hpp"

namespace icl {
namespace {

constexpr int64_t kMaxSteps = int64_t(1) << 40;   // steps, warm-up, decay period, landscape steps

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

bool parse_double(const std::string& text, double* out) {
  const std::string s = trim(text);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_int64(const std::string& text, int64_t* out) {
  const std::string s = trim(text);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

bool parse_list(const std::string& text, std::vector<double>* out) {
  out->clear();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    double v;
    if (!parse_double(item, &v)) return false;
    out->push_back(v);
  }
  return !out->empty() && text.back() != ',';
}

// The shortest text that reads back as exactly v.
std::string fmt(double v) {
  for (int precision = 6;; ++precision) {
    std::ostringstream os;
    os.precision(precision);
    os << v;
    if (precision >= 17 || std::strtod(os.str().c_str(), nullptr) == v) return os.str();
  }
}

std::string fmt_list(const std::vector<double>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + fmt(v[i]);
  return s;
}

// A value of the form kind[:args] (x_dist, cov, noise, landscape), trimmed.
struct KindArgs {
  std::string text;        // the whole value
  std::string kind;        // before the first ':' (the whole value when there is none)
  bool has_args = false;   // there is a ':'
  std::string args;        // after it: one number or a comma-separated list (parse_double, parse_list)
};

KindArgs split_kind(const std::string& value) {
  KindArgs k;
  k.text = trim(value);
  const size_t colon = k.text.find(':');
  k.kind = k.text.substr(0, colon);
  k.has_args = colon != std::string::npos;
  if (k.has_args) k.args = k.text.substr(colon + 1);
  return k;
}

// The comma-separated numbers in `text` into `out`: "" or what is wrong, `not_list` when they are not
// a list of numbers, "RULE (got x)" for the first x that breaks the rule (`bad(x)`).
template <class Bad>
std::string parse_numbers(const std::string& text, std::vector<double>* out, const std::string& not_list, Bad bad,
                          const std::string& rule) {
  if (!parse_list(text, out)) return not_list;
  for (double x : *out)
    if (bad(x)) return rule + " (got " + fmt(x) + ")";
  return "";
}

// An option taking one of a fixed set of words, mapped to an enum.
template <class E>
OptionDef enum_option(std::string name, std::string help, E Point::*field,
                      std::vector<std::pair<std::string, E>> words) {
  std::string all;
  for (const auto& w : words) all += (all.empty() ? "" : ", ") + w.first;
  help += " (" + all + ")";
  return {name, help, Column::text,
          [field, words, all](Point& p, const std::string& v) -> std::string {
            for (const auto& w : words)
              if (trim(v) == w.first) { p.*field = w.second; return ""; }
            return "must be one of: " + all;
          },
          [field, words](const Point& p) -> std::string {
            for (const auto& w : words)
              if (p.*field == w.second) return w.first;
            return "?";
          }};
}

template <class I>
OptionDef int_option(std::string name, std::string help, I Point::*field, int64_t lo,
                     int64_t hi = std::numeric_limits<int32_t>::max()) {
  return {name, help, Column::integer,
          [field, lo, hi](Point& p, const std::string& v) -> std::string {
            int64_t x;
            if (!parse_int64(v, &x) || x < lo || x > hi)
              return "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
            p.*field = static_cast<I>(x);
            return "";
          },
          [field](const Point& p) { return std::to_string(p.*field); }};
}

// A real option with lo <= x (or lo < x when `open`) and x <= hi (or x < hi when `open_hi`).
OptionDef real_option(std::string name, std::string help, double Point::*field, double lo, bool open,
                      double hi = std::numeric_limits<double>::infinity(), bool open_hi = false) {
  std::string rule = std::string("must be a number ") + (open ? "> " : ">= ") + fmt(lo);
  if (std::isfinite(hi)) rule += std::string(" and ") + (open_hi ? "< " : "<= ") + fmt(hi);
  return {name, help, Column::real,
          [=](Point& p, const std::string& v) -> std::string {
            double x;
            if (!parse_double(v, &x) || (open ? x <= lo : x < lo) || (open_hi ? x >= hi : x > hi))
              return rule;
            p.*field = x;
            return "";
          },
          [field](const Point& p) { return fmt(p.*field); }};
}

// `o`, declared to apply only within `scope`.
OptionDef scoped(Scope scope, OptionDef o) {
  o.scope = scope;
  return o;
}

OptionDef x_dist_option() {
  return {"x_dist",
          "input law: gaussian | uniform[:a] (U(-a,a), default a=0.5) | sphere | gamma[:k] "
          "(sqrt(G) u, G ~ Gamma(shape k, scale sqrt(10/k)), E[G] = sqrt(10 k), default k=0.1)",
          Column::text,
          [](Point& p, const std::string& v) -> std::string {
            const KindArgs k = split_kind(v);
            double a = 0.0;
            if (k.has_args && (!parse_double(k.args, &a) || a <= 0.0)) return "the parameter after ':' must be a number > 0";
            if (k.kind == "gaussian" || k.kind == "sphere") {
              if (k.has_args) return "'" + k.kind + "' takes no parameter";
              p.x_dist = k.kind == "gaussian" ? XDist::gaussian : XDist::sphere;
              p.x_param = 0.0;
            } else if (k.kind == "uniform" || k.kind == "gamma") {
              p.x_dist = k.kind == "uniform" ? XDist::uniform : XDist::gamma;
              p.x_param = k.has_args ? a : k.kind == "uniform" ? 0.5 : 0.1;
            } else {
              return "must be gaussian, uniform[:a], sphere or gamma[:k]";
            }
            return "";
          },
          [](const Point& p) -> std::string {
            switch (p.x_dist) {
              case XDist::gaussian: return "gaussian";
              case XDist::sphere: return "sphere";
              case XDist::uniform: return "uniform:" + fmt(p.x_param);
              case XDist::gamma: return "gamma:" + fmt(p.x_param);
            }
            return "?";
          }};
}

OptionDef cov_option() {
  return {"cov",
          "input covariance Sigma: identity | diag:l1,...,ld | rotated:l1,...,ld "
          "(U diag(l) U^T, U a random rotation drawn from the seed) | rotated_per_task:l1,...,ld (a new U for every "
          "task, drawn from the task's key: the model must find each context's covariance in context)",
          Column::text,
          [](Point& p, const std::string& v) -> std::string {
            const KindArgs k = split_kind(v);
            if (k.text == "identity") { p.cov = CovKind::identity; p.cov_spectrum.clear(); return ""; }
            if ((k.kind != "diag" && k.kind != "rotated" && k.kind != "rotated_per_task") || !k.has_args)
              return "must be identity, diag:l1,...,ld, rotated:l1,...,ld or rotated_per_task:l1,...,ld";
            std::vector<double> l;
            const std::string why = parse_numbers(k.args, &l, "the spectrum must be a comma-separated list of numbers",
                                                  [](double x) { return x <= 0.0; }, "every eigenvalue must be > 0");
            if (!why.empty()) return why;
            p.cov = k.kind == "diag" ? CovKind::diag : k.kind == "rotated" ? CovKind::rotated : CovKind::rotated_per_task;
            p.cov_spectrum = l;
            return "";
          },
          [](const Point& p) -> std::string {
            if (p.cov == CovKind::identity) return "identity";
            const char* kind = p.cov == CovKind::diag ? "diag:" : p.cov == CovKind::rotated ? "rotated:" : "rotated_per_task:";
            return kind + fmt_list(p.cov_spectrum);
          }};
}

OptionDef noise_option() {
  return {"noise",
          "label noise std sigma, drawn once per task: none | fixed:s | uniform:s_max | set:s1,s2,...",
          Column::text,
          [](Point& p, const std::string& v) -> std::string {
            const KindArgs k = split_kind(v);
            if (k.text == "none") { p.noise = NoiseKind::none; p.noise_sigma.clear(); return ""; }
            const std::string kinds = "must be none, fixed:s, uniform:s_max or set:s1,s2,...";
            if (!k.has_args) return kinds;
            std::vector<double> l;
            const std::string why = parse_numbers(k.args, &l, "the levels after ':' must be a comma-separated list of numbers",
                                                  [](double x) { return x < 0.0; }, "noise levels must be >= 0");
            if (!why.empty()) return why;
            if (k.kind == "fixed" || k.kind == "uniform") {
              if (l.size() != 1) return "'" + k.kind + "' takes exactly one number";
              p.noise = k.kind == "fixed" ? NoiseKind::fixed : NoiseKind::uniform;
            } else if (k.kind == "set") {
              p.noise = NoiseKind::set;
            } else {
              return kinds;
            }
            p.noise_sigma = l;
            return "";
          },
          [](const Point& p) -> std::string {
            switch (p.noise) {
              case NoiseKind::none: return "none";
              case NoiseKind::fixed: return "fixed:" + fmt_list(p.noise_sigma);
              case NoiseKind::uniform: return "uniform:" + fmt_list(p.noise_sigma);
              case NoiseKind::set: return "set:" + fmt_list(p.noise_sigma);
            }
            return "?";
          }};
}

OptionDef landscape_option() {
  const std::string max = std::to_string(kMaxSteps);
  return {"landscape",
          "[A24] optimisation landscape (gradient noise, Hessian diagonal, directional smoothness) at these "
          "steps: off | every:k (steps 0, k, 2k, ... below steps, as [A24]'s code with k = 250) | "
          "s1,s2,... (0 = initialisation)",
          Column::text,
          [max](Point& p, const std::string& v) -> std::string {
            const KindArgs k = split_kind(v);
            p.landscape.clear();
            p.landscape_every = 0;
            if (k.text == "off") return "";
            if (k.kind == "every" && k.has_args) {
              int64_t every;
              if (!parse_int64(k.args, &every) || every < 1 || every > kMaxSteps)
                return "every:k needs an integer k in [1, " + max + "]";
              p.landscape_every = every;
              return "";
            }
            std::vector<double> l;
            const std::string why = parse_numbers(k.text, &l, "must be off, every:k or a comma-separated list of steps",
                                                  [](double x) { return x < 0 || x != std::floor(x) || x > kMaxSteps; },
                                                  "steps must be integers in [0, " + max + "]");
            if (!why.empty()) return why;
            for (double x : l) p.landscape.push_back(static_cast<int64_t>(x));
            return "";
          },
          [](const Point& p) -> std::string {
            if (p.landscape_every > 0) return "every:" + std::to_string(p.landscape_every);
            if (p.landscape.empty()) return "off";
            std::string s;
            for (size_t i = 0; i < p.landscape.size(); ++i) s += (i ? "," : "") + std::to_string(p.landscape[i]);
            return s;
          }};
}

OptionDef seed_option() {
  return {"seed", "random seed (all streams derive from it)", Column::integer,
          [](Point& p, const std::string& v) -> std::string {
            int64_t x;
            if (!parse_int64(v, &x) || x < 0) return "must be an integer >= 0";
            p.seed = static_cast<uint64_t>(x);
            return "";
          },
          [](const Point& p) { return std::to_string(p.seed); }};
}

OptionDef eval_seed_option() {
  return {"eval_seed",
          "seed of the evaluation set: point (each point's own, from its seed) or an integer >= 0 (one set of "
          "eval_tasks tasks from this seed, the same for every point of a sweep, as [A24]'s plot_loss.ipynb: 1000 "
          "tasks from seed 99, shared by every seed and optimiser)",
          Column::text,
          [](Point& p, const std::string& v) -> std::string {
            int64_t x;
            if (trim(v) == "point") {
              p.eval_seed = -1;
            } else if (parse_int64(v, &x) && x >= 0) {
              p.eval_seed = x;
            } else {
              return "must be point or an integer >= 0";
            }
            return "";
          },
          [](const Point& p) { return p.eval_seed < 0 ? std::string("point") : std::to_string(p.eval_seed); }};
}

// [VO23]'s transformer (arch = transformer, transformer.hpp; its code's names in the help).  Every option
// after `arch` applies to the transformer only.
void transformer_options(std::vector<OptionDef>& t) {
  t.push_back(enum_option<Arch>("arch", "model family: lsa (the P, Q layers of docs/science.md section 2) or "
      "transformer ([VO23]'s code: projections W_Q, W_K, W_V, W_O, MLP, LayerNorm, embedding; section 2b)",
      &Point::arch, {{"lsa", Arch::lsa}, {"transformer", Arch::transformer}}));
  const size_t first = t.size();
  t.push_back(enum_option<Tokens>("tokens", "token layout: constructed ((x_i, y_i) per token), classic "
      "(x_1, (0, y_1), x_2, ..., x_query: 2n+1 tokens of width d) or padded (the same order, width d+1: x as (0, x), "
      "y as (y, 0, .., 0); Raventos et al.'s to_seq)", &Point::tokens,
      {{"constructed", Tokens::constructed}, {"classic", Tokens::classic}, {"padded", Tokens::padded}}));
  t.push_back(enum_option<bool>("causal", "causal attention: token t attends to tokens 0..t, itself included (GPT-2; "
      "false: every token to the context tokens, [VO23]'s code)", &Point::causal, {{"false", false}, {"true", true}}));
  t.push_back(enum_option<Readout>("readout", "the prediction: channel (minus the label channel of the token, "
      "[VO23]) or head (a final LayerNorm and a linear map to one number, GPT-2's ln_f and read-out)", &Point::readout,
      {{"channel", Readout::channel}, {"head", Readout::head}}));
  t.push_back(enum_option<bool>("prefix_loss", "train on the loss at every x token, each predicting its label from "
      "the pairs before it (Garg et al., Raventos et al.; needs causal), not at the query only", &Point::prefix_loss,
      {{"false", false}, {"true", true}}));
  t.push_back(enum_option<FirstAttention>("attention_first", "layer 1's attention: as `attention`, or this one "
      "(the code's first_layer_sm, use_non_lin_mix)", &Point::attention_first,
      {{"same", FirstAttention::same}, {"linear", FirstAttention::linear}, {"softmax", FirstAttention::softmax},
       {"mix", FirstAttention::mix}}));
  t.push_back(int_option("key_size", "key, query and value size per head (0 = the model width)", &Point::key_size, 0, 4096));
  t.push_back(enum_option<bool>("mlp", "an MLP block (GELU) after each attention block (the code's only_attention = "
      "false)", &Point::mlp, {{"false", false}, {"true", true}}));
  t.push_back(int_option("widening", "MLP hidden width = widening x model width (the code's widening_factor)",
                         &Point::widening, 1, 64));
  t.push_back(enum_option<bool>("layer_norm", "pre-norm LayerNorm with scale and offset before each block, not "
      "before layer 1's attention unless tied (the code's use_layer_norm)", &Point::layer_norm,
      {{"false", false}, {"true", true}}));
  t.push_back(enum_option<bool>("layer_norm_first", "with layer_norm: a LayerNorm before layer 1's attention too "
      "(not in the code; measured for [VO23] Fig. 14 in docs/reproductions.md)", &Point::layer_norm_first,
      {{"false", false}, {"true", true}}));
  t.push_back(enum_option<Embed>("embed", "input embedding: none, linear (the code's input_mapping) or mlp "
      "(linear, then + a residual GELU MLP: input_mapping and input_mlp)", &Point::embed,
      {{"none", Embed::none}, {"linear", Embed::linear}, {"mlp", Embed::mlp}}));
  t.push_back(int_option("embed_size", "width after the embedding (the code's embedding_size; 0 with embed = none)",
                         &Point::embed_size, 0, 4096));
  t.push_back(enum_option<PosEnc>("pe", "positional encodings: none, sinusoidal added to the tokens or "
      "concatenated below them (the code's use_pe, concat_pe), or learnt: a trained table added (GPT-2's wpe)", &Point::pe,
      {{"none", PosEnc::none}, {"add", PosEnc::add}, {"concat", PosEnc::concat}, {"learnt", PosEnc::learnt}}));
  t.push_back(int_option("pe_size", "width of the positional encodings (even; 0 with pe = none)", &Point::pe_size, 0, 4096));
  t.push_back(enum_option<bool>("bias", "biases in the attention and MLP maps (the code's use_bias_p)", &Point::bias,
      {{"true", true}, {"false", false}}));
  t.push_back(enum_option<bool>("embed_bias", "with bias: a bias in the linear embedding too (Raventos et al.'s has none)",
      &Point::embed_bias, {{"true", true}, {"false", false}}));
  t.push_back(real_option("gd_attention", "> 0: [VO23]'s 'MLP + 1 step of GD' (its Transformer_gd): the attention fixed to "
      "the 1-step GD construction at this rate and only the embedding trained (0 = off)", &Point::gd_attention, 0.0, false));
  for (size_t i = first; i < t.size(); ++i) t[i].scope.arch = Arch::transformer;
}

// The rules tying the transformer's options together, and to arch.
void validate_transformer(const Point& p, const std::function<void(const char*, const std::string&)>& bad) {
  if (p.arch == Arch::lsa) {
    const std::string only = "applies only to arch = transformer";
    if (p.attention == Attention::mix) bad("attention", "mix " + only);
    if (p.init == Init::gd_embed) bad("init", "gd_embed " + only);
    if (p.init == Init::gpt2) bad("init", "gpt2 " + only);
    return;
  }
  if (p.prefix_loss && (!p.causal || p.tokens == Tokens::constructed))
    bad("prefix_loss", "needs causal = true and tokens = classic or padded (a constructed token holds its own label)");
  if (p.tokens == Tokens::padded && p.readout == Readout::channel)
    bad("readout", "channel reads the label channel E-1 of classic or constructed tokens; padded tokens need readout = head");
  if (p.gd_attention > 0 && (p.causal || p.readout != Readout::channel))
    bad("gd_attention", "the GD construction reads the label channel of a non-causal model: needs causal = false, readout = channel");
  if (p.norm != Norm::one) bad("norm", "arch = transformer has no normalisation c (the code's plain sums): set norm = 1");
  if (p.tie && p.attention_first != FirstAttention::same) bad("attention_first", "a tied (recurrent) model has one attention: use same");
  if (p.layer_norm_first && (!p.layer_norm || p.tie))
    bad("layer_norm_first", "needs layer_norm = true and an untied model (a tied one has it before every layer)");
  if ((p.embed == Embed::none) != (p.embed_size == 0)) bad("embed_size", "must be >= 1 with an embedding and 0 without");
  if ((p.pe == PosEnc::none) != (p.pe_size == 0) || (p.pe_size % 2 != 0 && p.pe != PosEnc::learnt))
    bad("pe_size", "must be even and >= 2 with sinusoidal encodings (pe = learnt: >= 1), 0 without");
  if (p.gd_attention > 0 && (p.layers != 1 || p.heads != 1 || p.mlp || p.layer_norm || p.bias ||
                             p.attention != Attention::linear ||
                             (p.attention_first != FirstAttention::same && p.attention_first != FirstAttention::linear)))
    bad("gd_attention", "the GD construction is one linear attention layer of one head without MLP, LayerNorm or biases");
  if (p.gd_attention > 0 && p.key_size != 0) bad("gd_attention", "the GD construction needs key_size = 0 (the model width)");
  if (p.init == Init::gd_embed && !(p.gd_attention > 0 && p.embed == Embed::mlp))
    bad("init", "gd_embed initialises the embedding of the GD model: needs gd_attention > 0 and embed = mlp");
  const int width = p.embed != Embed::none ? p.embed_size : p.tokens == Tokens::classic ? p.d : p.d + 1;
  if ((p.pe == PosEnc::add || p.pe == PosEnc::learnt) && p.pe_size != width)
    bad("pe_size", std::string("pe = ") + (p.pe == PosEnc::add ? "add" : "learnt") + " needs the token width, " +
                       std::to_string(width) + " (embed_size, or d" +
                       std::string(p.tokens == Tokens::classic ? "" : "+1") + " without an embedding)");
}

// Sizes.  The models index their parameters and each block of activations with int (params.hpp,
// transformer.hpp, blocks.hpp's LaneMat), so every such count is formed here in double and refused above
// kMaxIndexed = 2^31 - 1, at every context length the point runs: n (training and the evaluation set) and,
// with the analysis, 2n (its out-of-distribution lengths) and 1..context_curve.
constexpr double kMaxIndexed = 2147483647.0;

std::string count_text(double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, x < 1e18 ? "%.0f" : "%.3g", x);
  return buf;
}

void validate_sizes(const Point& p, const std::function<void(const char*, const std::string&)>& bad) {
  const std::string limit = ", more than the limit of 2^31 - 1 = 2147483647 (the model indexes them with int)";
  const double D = p.d + 1.0;
  if (p.arch == Arch::lsa) {
    const double PQ = 2.0 * p.layers * p.heads * D * D;
    if (PQ > kMaxIndexed)
      bad(p.layers > 1 ? "layers" : "heads", "P and Q have 2 x layers x heads x (d+1)^2 = 2 x " + std::to_string(p.layers) +
                                                 " x " + std::to_string(p.heads) + " x " + std::to_string(p.d + 1) +
                                                 "^2 = " + count_text(PQ) + " entries" + limit);
  } else {
    const TransformerShape s = transformer_shape(p);
    const double params = transformer_param_count(s);
    if (params > kMaxIndexed) {
      // The option to name: layers when one layer fits, else the widening of the largest MLP, else the width.
      TransformerShape one = s;
      one.layers = 1;
      const double E = s.E, HK = double(s.heads) * s.key, F = double(s.widening) * s.E, E0 = s.E_emb;
      const double attention = 4 * E * HK, mlp = s.mlp ? 2 * E * F : 0, embed_mlp = s.embed == Embed::mlp ? 2 * E0 * s.widening * E0 : 0;
      const char* who = s.weight_layers() > 1 && transformer_param_count(one) <= kMaxIndexed ? "layers"
                        : std::max(mlp, embed_mlp) > attention                             ? "widening"
                        : p.key_size > 0                                                   ? "key_size"
                        : p.heads > 1                                                      ? "heads"
                        : p.embed != Embed::none                                           ? "embed_size"
                                                                                           : "pe_size";
      bad(who, "the transformer has " + count_text(params) + " parameters (model width " + std::to_string(s.E) +
                   ", heads x key size " + count_text(HK) + ", MLP width " + (s.mlp ? count_text(F) : "none") +
                   ", embedding MLP width " + (s.embed == Embed::mlp ? count_text(double(s.widening) * E0) : "none") +
                   ", " + std::to_string(s.weight_layers()) + " weight layers)" + limit);
    }
  }
  // Activation blocks at each context length: (option to name, length, what it is).
  struct Length { const char* option; double n; std::string what; };
  std::vector<Length> lengths = {{"n", double(p.n), "n = " + std::to_string(p.n)}};
  if (p.analysis) {
    lengths.push_back({"n", 2.0 * p.n, "the analysis's out-of-distribution context length 2n = " + count_text(2.0 * p.n)});
    if (p.context_curve > 0)
      lengths.push_back({"context_curve", double(p.context_curve), "context length " + std::to_string(p.context_curve)});
  }
  for (const Length& len : lengths) {
    std::vector<std::pair<std::string, double>> blocks;   // name, entries
    if (p.arch == Arch::lsa) {
      blocks.push_back({"tokens (d+1) x (n+1)", D * (len.n + 1)});
      if (p.attention == Attention::softmax) blocks.push_back({"scores n x (n+1)", len.n * (len.n + 1)});
    } else {
      const TransformerShape s = transformer_shape(p);
      const double T = p.tokens == Tokens::constructed ? len.n + 1 : 2 * len.n + 1, E = s.E, HK = double(s.heads) * s.key;
      blocks.push_back({"tokens (model width x tokens)", E * T});
      blocks.push_back({"projections (heads x key size x tokens)", HK * T});
      blocks.push_back({"scores (keys x tokens)", (p.causal ? T : T - 1) * T});
      if (s.mlp) blocks.push_back({"MLP activations (widening x width x tokens)", double(s.widening) * E * T});
      if (s.embed == Embed::mlp)
        blocks.push_back({"embedding MLP activations (widening x embed_size x tokens)", double(s.widening) * s.E_emb * T});
    }
    const auto worst = std::max_element(blocks.begin(), blocks.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
    if (worst->second > kMaxIndexed) {
      bad(len.option, "at " + len.what + " one block of the model's " + worst->first + " has " + count_text(worst->second) +
                          " entries" + limit);
      break;   // the longer lengths only repeat it
    }
  }
}

// Scales.  Inputs, noise and the products the model forms of them (up to four input entries: Gamma = sum
// x x^T times P, Q) must be representable in float32 (1e-38 .. 3e38) with room to spare: the typical size
// of an input coordinate (x_dist's law times the square root of each cov eigenvalue) and every non-zero noise
// level must lie in [kMinScale, kMaxScale].  Outside, inputs underflow to 0 (the point "learns" loss 0) or
// overflow to inf.
constexpr double kMinScale = 1e-6, kMaxScale = 1e6;

void validate_scales(const Point& p, const std::function<void(const char*, const std::string&)>& bad) {
  const std::string range = "[" + fmt(kMinScale) + ", " + fmt(kMaxScale) + "]";
  auto outside = [](double x) { return !(x >= kMinScale && x <= kMaxScale); };
  const double x = typical_input_scale(p.x_dist, p.x_param, p.d);
  char size[32];
  std::snprintf(size, sizeof size, "%.3g", x);
  if (outside(x))
    bad("x_dist", "the inputs' typical size per coordinate is " + std::string(size) + ": it must be in " + range +
                      " so that inputs and their products are representable (not 0 or inf) in float32");
  for (double l : p.cov_spectrum)
    if (outside(std::sqrt(l))) {
      bad("cov", "the eigenvalue " + fmt(l) + " gives inputs of size sqrt(" + fmt(l) + ") along it: every eigenvalue must be in [" +
                     fmt(kMinScale * kMinScale) + ", " + fmt(kMaxScale * kMaxScale) +
                     "] so that inputs and their products are representable (not 0 or inf) in float32");
      break;
    }
  for (double s : p.noise_sigma)
    if (s != 0.0 && outside(s)) {
      bad("noise", "the level " + fmt(s) + " is not representable next to labels of size 1 (float32): a non-zero level must be in " +
                       range + " (use 0 or none for no noise)");
      break;
    }
}

std::vector<OptionDef> make_table() {
  std::vector<OptionDef> t;
  t.push_back(int_option("d", "input dimension d", &Point::d, 1, 255));
  t.push_back(int_option("n", "context length n (the query is token n+1)", &Point::n, 1, 100000));
  t.push_back(int_option("layers", "number of attention layers L", &Point::layers, 1, 1000));
  t.push_back(int_option("heads", "heads per layer H", &Point::heads, 1, 64));
  t.push_back(scoped({Arch::lsa, {}}, enum_option<Param>("param", "parameterisation of P, Q (the transformer's weights "
      "are its projections)", &Point::param, {{"full", Param::full}, {"sparse_a", Param::sparse_a},
      {"sparse_ab", Param::sparse_ab}, {"diag", Param::diag}, {"gdpp", Param::gdpp}})));
  t.push_back(enum_option<bool>("tie", "one layer's weights applied L times (recurrent)", &Point::tie,
      {{"false", false}, {"true", true}}));
  t.push_back(enum_option<Attention>("attention", "attention variant (mix: [VO23]'s learnable softmax-linear mix, "
      "arch = transformer)", &Point::attention,
      {{"linear", Attention::linear}, {"softmax", Attention::softmax}, {"mix", Attention::mix}}));
  t.push_back(enum_option<Norm>("norm", "attention normalisation c", &Point::norm,
      {{"1/n", Norm::inv_n}, {"1", Norm::one}}));
  t.push_back(scoped({Arch::lsa, Attention::linear}, enum_option<Residual>("residual", "scale of every layer's update "
      "Z_{l+1} = Z_l + s attention(Z_l): 1, or 1/L for deep models (Bordelon et al. 2025's depth scaling, which scales "
      "c)", &Point::residual, {{"1", Residual::one}, {"1/L", Residual::inv_layers}})));
  t.push_back(real_option("act_clip", "clip every token entry to [-act_clip, act_clip] after each layer, as "
      "[VO23]'s code does for deep models (0 = off)", &Point::act_clip, 0.0, false));
  transformer_options(t);
  t.push_back(enum_option<Task>("task", "regression task: linear (y = <w, x>) or sine ([VO23]'s y = a sin(x + rho), "
      "a = 0.1 + 0.4 u, rho = pi u from one u ~ U(0, 1) as its code draws them; needs d = 1)", &Point::task,
      {{"linear", Task::linear}, {"sine", Task::sine}}));
  t.push_back(x_dist_option());
  t.push_back(cov_option());
  t.push_back(enum_option<WPrior>("w_prior", "task prior: w ~ N(0, I) or N(0, Sigma^-1)", &Point::w_prior,
      {{"identity", WPrior::identity}, {"inverse_cov", WPrior::inverse_cov}}));
  t.push_back(int_option("task_pool", "finite task diversity (Raventos et al. 2023; Lu et al.'s k): training draws w "
      "uniformly from a fixed pool of this many tasks w_1..w_M ~ the prior, drawn once per point; the analysis "
      "evaluates on pool tasks as well as fresh ones, with the dMMSE baseline (0 = a fresh w for every task)",
      &Point::task_pool, 0, int64_t(1) << 30));
  t.push_back(int_option("train_contexts", "a finite training set (Lu et al.'s P): training draws whole contexts "
      "(inputs, w, noise) uniformly with replacement from a fixed set of this many (0 = fresh contexts every batch)",
      &Point::train_contexts, 0, int64_t(1) << 40));
  t.push_back(noise_option());
  t.push_back(enum_option<Optimizer>("optimizer", "optimiser", &Point::optimizer,
      {{"adam", Optimizer::adam}, {"adamw", Optimizer::adamw}, {"sgd", Optimizer::sgd}}));
  t.push_back(real_option("lr", "peak learning rate", &Point::lr, 0.0, true));
  t.push_back(real_option("beta1", "Adam beta1", &Point::beta1, 0.0, false, 1.0, true));
  t.push_back(real_option("beta2", "Adam beta2", &Point::beta2, 0.0, false, 1.0, true));
  t.push_back(real_option("eps", "Adam epsilon", &Point::eps, 0.0, true));
  t.push_back(real_option("momentum", "SGD momentum", &Point::momentum, 0.0, false, 1.0, true));
  t.push_back(real_option("weight_decay", "weight decay (adamw: decoupled; adam, sgd: L2)",
                          &Point::weight_decay, 0.0, false));
  t.push_back(real_option("clip", "gradient clipping threshold (0 = off)", &Point::clip, 0.0, false));
  t.push_back(enum_option<ClipMode>("clip_mode", "global norm or per-matrix Frobenius norm",
      &Point::clip_mode, {{"global", ClipMode::global}, {"matrix", ClipMode::matrix}}));
  t.push_back(enum_option<Schedule>("schedule",
      "learning-rate schedule after warm-up: constant, halve every decay_every steps, cosine to 0, or linear to 0 "
      "(with warmup: Raventos et al.'s triangle)",
      &Point::schedule, {{"constant", Schedule::constant}, {"step", Schedule::step}, {"cosine", Schedule::cosine},
                         {"linear", Schedule::linear}}));
  t.push_back(int_option("warmup", "linear warm-up steps", &Point::warmup, 0, kMaxSteps));
  t.push_back(int_option("decay_every", "schedule=step: halve the rate every this many steps",
                         &Point::decay_every, 0, kMaxSteps));
  t.push_back(int_option("steps", "training steps", &Point::steps, 1, kMaxSteps));
  t.push_back(int_option("batch", "tasks per step", &Point::batch, 1, 10000000));
  t.push_back(int_option("refresh", "draw fresh tasks every this many steps", &Point::refresh, 1, 1000000000));
  t.push_back(enum_option<Init>("init", "initialisation: N(0, init_scale^2), [VO23] truncated normal "
      "variance scaling (scale init_scale/layers), or gd_embed: the embedding of [VO23]'s 'MLP + 1 step of GD' "
      "as its create_weights, plain normal of variance init_scale/(d+1) (emb.W, emb_mlp.W1) and "
      "init_scale/embed_size (emb_mlp.W2), or gpt2: N(0, init_scale^2) with the residual projections (W_O, the MLP's "
      "second map) scaled by 1/sqrt(2 layers), nanoGPT's (Raventos et al.: init_scale = 0.02)", &Point::init,
      {{"normal", Init::normal}, {"vs_truncated", Init::vs_truncated}, {"gd_embed", Init::gd_embed}, {"gpt2", Init::gpt2}}));
  t.push_back(real_option("init_scale", "initialisation scale", &Point::init_scale, 0.0, false));
  t.push_back(int_option("eval_tasks", "size of the fixed evaluation set", &Point::eval_tasks, 1, 10000000));
  t.push_back(eval_seed_option());
  t.push_back(int_option("eval_every", "evaluate every this many steps", &Point::eval_every, 1, 1000000000));
  t.push_back(int_option("eval_log", "also evaluate at the log-spaced steps round(10^(j/K)), K per decade "
      "(Raventos et al. 2023's checkpoints; 0 = off)", &Point::eval_log, 0, 100));
  t.push_back(real_option("diverge_factor", "stop as diverged when the evaluation loss exceeds this many times "
      "its value at initialisation (0 = only non-finite values stop a point)", &Point::diverge_factor, 0.0, false));
  t.push_back(seed_option());
  t.push_back(enum_option<Precision>("precision", "floating point type of training", &Point::precision,
      {{"float32", Precision::f32}, {"float64", Precision::f64}}));
  t.push_back(enum_option<Sampler>("sampler", "the task sampler's normal generator, a versioned stream (data/normals.hpp): "
      "v2 (default) or v1, the stream of files written before v2 existed (every published number)", &Point::sampler,
      {{"v2", Sampler::v2}, {"v1", Sampler::v1}}));
  t.push_back(enum_option<bool>("analysis", "analyse the trained model against baselines and theory",
      &Point::analysis, {{"true", true}, {"false", false}}));
  t.push_back(int_option("rollout", "[VO23] roll-out (Fig. 10): apply the trained recurrent layer this many times, "
      "damped and updating only the label channel, beside as many damped GD steps (0 = off)", &Point::rollout, 0, 1000));
  t.push_back(real_option("rollout_damping", "damping of each roll-out application (the code's dampening, 0.75)",
      &Point::rollout_damping, 0.0, true));
  t.push_back(real_option("ridge_lambda", "lambda of the fixed-lambda ridge baseline", &Point::ridge_lambda, 0.0, true));
  t.push_back(int_option("context_curve", "loss against context length: the trained model and every baseline on "
      "the prefixes of length 1..n_test (may exceed n) of 2,000 tasks of length n_test, as Garg et al. 2022 plot "
      "it (0 = off)", &Point::context_curve, 0, 1 << 20));
  t.push_back(scoped({Arch::lsa, {}}, landscape_option()));
  t.push_back(int_option("hessian_tasks", "size of the fixed landscape set, the same for every point (seed and "
      "stream of its own): Hessian diagonal, gradient norm, smoothness ([A24]'s code: 1000)",
      &Point::hessian_tasks, 1, 1000000));
  return t;
}

}  // namespace

const std::vector<OptionDef>& option_table() {
  static const std::vector<OptionDef> table = make_table();
  return table;
}

const OptionDef* find_option(const std::string& name) {
  for (const auto& o : option_table())
    if (o.name == name) return &o;
  return nullptr;
}

std::string point_set(Point& p, const std::string& name, const std::string& value) {
  const OptionDef* o = find_option(name);
  if (!o) return "unknown option '" + name + "'";
  const std::string why = o->set(p, value);
  return why.empty() ? "" : "option '" + name + "' = '" + value + "': " + why;
}

namespace {

// "arch = lsa with attention = linear": a scope in the options' own words.
std::string scope_text(const Scope& s) {
  Point q;
  std::string text;
  if (s.arch) {
    q.arch = *s.arch;
    text = "arch = " + find_option("arch")->get(q);
  }
  if (s.attention) {
    q.attention = *s.attention;
    text += (text.empty() ? "" : " with ") + std::string("attention = ") + find_option("attention")->get(q);
  }
  return text;
}

// Every option outside its declared scope (OptionDef::scope) must be at its default.
template <class Bad>
void validate_scopes(const Point& p, const Bad& bad) {
  static const Point def;
  for (const OptionDef& o : option_table()) {
    const Scope& s = o.scope;
    const bool inside = (!s.arch || *s.arch == p.arch) && (!s.attention || *s.attention == p.attention);
    if (!inside && o.get(p) != o.get(def)) bad(o.name.c_str(), "applies only to " + scope_text(s));
  }
}

}  // namespace

std::vector<std::string> point_validate(const Point& p) {
  std::vector<std::string> errs;
  auto bad = [&](const char* name, const std::string& rule) {
    errs.push_back("option '" + std::string(name) + "' = '" + find_option(name)->get(p) + "': " + rule);
  };
  if (p.cov != CovKind::identity && static_cast<int>(p.cov_spectrum.size()) != p.d)
    bad("cov", "the spectrum needs exactly d = " + std::to_string(p.d) + " eigenvalues, got " +
                   std::to_string(p.cov_spectrum.size()));
  if (p.cov != CovKind::identity && p.x_dist != XDist::gaussian)
    bad("cov", "a covariance applies only to x_dist = gaussian");
  if (p.cov == CovKind::rotated_per_task && p.w_prior != WPrior::identity)
    bad("cov", "rotated_per_task needs w_prior = identity (a prior that turned with every task would leave the "
               "baselines' whitening nothing to follow)");
  if (p.noise == NoiseKind::uniform && p.noise_sigma[0] <= 0.0)
    bad("noise", "uniform:s_max needs s_max > 0");
  for (int64_t s : p.landscape)
    if (s > p.steps) bad("landscape", "steps must be <= steps = " + std::to_string(p.steps));
  if (p.landscape_every >= p.steps) bad("landscape", "every:k needs k < steps = " + std::to_string(p.steps));
  if (p.eval_seed >= 0 && p.cov == CovKind::rotated)
    bad("eval_seed", "a shared evaluation set needs a law that is the same at every point: cov = rotated draws its "
                     "rotation U from the point's seed (use eval_seed = point)");
  if (p.warmup >= p.steps)
    bad("warmup", "must be smaller than steps = " + std::to_string(p.steps));
  if (p.schedule == Schedule::step && p.decay_every == 0)
    bad("decay_every", "schedule = step needs decay_every >= 1");
  validate_scopes(p, bad);
  validate_transformer(p, bad);
  validate_sizes(p, bad);
  validate_scales(p, bad);
  if (p.task == Task::sine && p.d != 1) bad("task", "sine needs d = 1");
  if (p.task == Task::sine && (p.noise != NoiseKind::none || p.w_prior != WPrior::identity))
    bad("task", "sine has no label noise and no weight prior: use noise = none, w_prior = identity");
  if ((p.task_pool > 0 || p.train_contexts > 0) && (!p.landscape.empty() || p.landscape_every > 0))
    bad("landscape", "measures on fresh tasks: not with task_pool or train_contexts");
  if (p.task == Task::sine && p.task_pool > 0) bad("task_pool", "applies to task = linear (w from a pool)");
  if (p.rollout > 0 && (!p.tie || p.layers != 1 || p.mlp))
    bad("rollout", "rolls out one recurrent attention layer: needs tie = true, layers = 1 and no MLP");
  if (p.rollout > 0 && !p.analysis) bad("rollout", "is part of the analysis: needs analysis = true");
  if (p.context_curve > 0 && !p.analysis) bad("context_curve", "is part of the analysis: needs analysis = true");
  return errs;
}

std::string point_to_text(const Point& p) {
  std::string s;
  for (const auto& o : option_table()) s += o.name + " = " + o.get(p) + "\n";
  return s;
}

}  // namespace icl
