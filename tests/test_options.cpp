// Option parsing and validation: every error names the option, the value and the rule.
#include <gtest/gtest.h>

#include <cmath>

#include "icl/model/transformer.hpp"
#include "icl/run/options.hpp"
#include "icl/train/objective.hpp"
#include "icl/train/optim.hpp"

namespace icl {
namespace {

TEST(Options, EveryOptionRoundTripsThroughItsText) {
  Point p;
  ASSERT_EQ(point_set(p, "cov", "rotated:1,0.5,2,1,1"), "");
  ASSERT_EQ(point_set(p, "noise", "set:1,3,5"), "");
  ASSERT_EQ(point_set(p, "x_dist", "gamma:0.2"), "");
  for (const OptionDef& o : option_table()) {
    Point q;
    EXPECT_EQ(point_set(q, o.name, o.get(p)), "") << o.name;
    EXPECT_EQ(o.get(q), o.get(p)) << o.name;
  }
  EXPECT_EQ(point_to_text(p).find("cov = rotated:1,0.5,2,1,1\n") != std::string::npos, true);
}

TEST(Options, IssueListIsCovered) {
  for (const char* name : {"d", "n", "layers", "heads", "param", "norm", "x_dist", "cov", "w_prior", "noise", "optimizer",
                           "lr", "beta1", "beta2", "momentum", "weight_decay", "clip", "clip_mode", "schedule",
                           "warmup", "steps", "batch", "refresh", "init", "init_scale", "eval_tasks", "eval_every",
                           "seed", "precision"})
    EXPECT_NE(find_option(name), nullptr) << name;
}

TEST(Options, BadValuesNameOptionValueAndRule) {
  struct Case { const char* name; const char* value; const char* rule; };
  for (const Case c : {Case{"n", "-3", "integer in [1,"}, Case{"n", "2.5", "integer"}, Case{"param", "dense", "one of"},
                       Case{"noise", "set:1,,3", "comma-separated"}, Case{"noise", "uniform:1,2", "exactly one"},
                       Case{"noise", "set:-1", ">= 0"}, Case{"cov", "diag:1,0,2", "> 0"},
                       Case{"cov", "diag:1,-2", "> 0"}, Case{"steps", "0", "integer in [1,"},
                       Case{"lr", "-1e-3", "> 0"}, Case{"beta2", "1", "< 1"}, Case{"x_dist", "cauchy", "gaussian"},
                       Case{"lr", "1e-3x", "number"}, Case{"seed", "-1", ">= 0"},
                       Case{"eval_seed", "-1", "point or an integer >= 0"}, Case{"eval_seed", "99x", "point or"}}) {
    Point p;
    const std::string why = point_set(p, c.name, c.value);
    EXPECT_NE(why.find(std::string("option '") + c.name + "' = '" + c.value + "'"), std::string::npos) << why;
    EXPECT_NE(why.find(c.rule), std::string::npos) << why;
  }
  Point p;
  EXPECT_NE(point_set(p, "colour", "red").find("unknown option 'colour'"), std::string::npos);
}

TEST(Options, IntegerConversionsAreRangeChecked) {
  // Values beyond the range of the field are errors, never truncated or wrapped.
  for (const OptionDef& o : option_table()) {
    if (o.column != Column::integer) continue;
    for (const char* v : {"18446744073709551617", "-9223372036854775809", "4294967297", "1e3", "0x10"}) {
      Point p;
      const std::string before = o.get(p), why = point_set(p, o.name, v);
      if (std::string(v) == "4294967297" && why.empty()) {
        EXPECT_EQ(o.get(p), v) << o.name;   // only a 64-bit field may take it, exactly
        continue;
      }
      EXPECT_NE(why.find("option '" + o.name + "' = '" + v + "': must be an integer"), std::string::npos) << why;
      EXPECT_EQ(o.get(p), before) << o.name;
    }
  }
  for (const char* v : {"1e19", "1099511627777", "-1", "nan", "inf", "1.5", "0,1e300"}) {
    Point p;
    const std::string why = point_set(p, "landscape", v);
    EXPECT_NE(why.find("option 'landscape' = '" + std::string(v) + "'"), std::string::npos) << why;
    EXPECT_TRUE(p.landscape.empty()) << v;
  }
  Point p;
  ASSERT_EQ(point_set(p, "landscape", "0,1e3,1099511627776"), "");
  EXPECT_EQ(p.landscape, (std::vector<int64_t>{0, 1000, int64_t(1) << 40}));
}

TEST(Options, CrossOptionRules) {
  Point p;
  ASSERT_EQ(point_set(p, "cov", "diag:1,2"), "");   // d = 5
  ASSERT_EQ(point_set(p, "steps", "10"), "");
  ASSERT_EQ(point_set(p, "warmup", "10"), "");
  ASSERT_EQ(point_set(p, "schedule", "step"), "");
  const auto errs = point_validate(p);
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_NE(errs[0].find("option 'cov'"), std::string::npos);
  EXPECT_NE(errs[0].find("exactly d = 5"), std::string::npos);
  EXPECT_NE(errs[1].find("option 'warmup' = '10'"), std::string::npos);
  EXPECT_NE(errs[2].find("option 'decay_every'"), std::string::npos);
  EXPECT_TRUE(point_validate(Point{}).empty());
  Point q;   // a shared evaluation set needs a law without the point's seed in it
  ASSERT_EQ(point_set(q, "eval_seed", "99"), "");
  EXPECT_TRUE(point_validate(q).empty());
  ASSERT_EQ(point_set(q, "cov", "rotated:1,1,1,1,2"), "");
  const auto rotated = point_validate(q);
  ASSERT_EQ(rotated.size(), 1u);
  EXPECT_NE(rotated[0].find("option 'eval_seed' = '99': a shared evaluation set needs"), std::string::npos) << rotated[0];
}

// The transformer's options: each broken rule is reported against the option, its value and the rule.
TEST(Options, TransformerRules) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> settings;
    const char* option;
    const char* rule;
  };
  const std::vector<std::pair<std::string, std::string>> tf = {{"arch", "transformer"}, {"norm", "1"}};
  auto with = [&](std::vector<std::pair<std::string, std::string>> extra) {
    extra.insert(extra.begin(), tf.begin(), tf.end());
    return extra;
  };
  const std::vector<Case> cases = {
      {{{"mlp", "true"}}, "mlp", "applies only to arch = transformer"},
      {{{"tokens", "classic"}}, "tokens", "applies only to arch = transformer"},
      {{{"attention", "mix"}}, "attention", "mix applies only"},
      {{{"arch", "transformer"}}, "norm", "set norm = 1"},
      {with({{"param", "diag"}}), "param", "applies only to arch = lsa"},
      {with({{"landscape", "0"}}), "landscape", "applies only to arch = lsa"},
      {with({{"pe", "concat"}, {"pe_size", "3"}}), "pe_size", "must be even"},
      {with({{"pe", "add"}, {"pe_size", "4"}}), "pe_size", "needs the token width, 6"},
      {with({{"embed", "linear"}}), "embed_size", ">= 1 with an embedding"},
      {with({{"tie", "true"}, {"layers", "2"}, {"attention_first", "softmax"}}), "attention_first", "use same"},
      {with({{"layer_norm_first", "true"}}), "layer_norm_first", "needs layer_norm = true"},
      {{{"residual", "1/L"}, {"attention", "softmax"}}, "residual", "applies only to arch = lsa with attention = linear"},
      {{{"d", "2"}, {"cov", "rotated_per_task:1,2"}, {"w_prior", "inverse_cov"}}, "cov", "needs w_prior = identity"},
      {with({{"layer_norm", "true"}, {"layer_norm_first", "true"}, {"tie", "true"}}), "layer_norm_first", "untied"},
      {with({{"gd_attention", "0.1"}, {"heads", "2"}, {"bias", "false"}}), "gd_attention", "one linear attention layer"},
      {{{"rollout", "5"}}, "rollout", "needs tie = true"},
      {{{"init", "gd_embed"}}, "init", "gd_embed applies only to arch = transformer"},
      {with({{"init", "gd_embed"}, {"embed", "mlp"}, {"embed_size", "8"}}), "init", "needs gd_attention > 0 and embed = mlp"},
      {{{"task", "sine"}}, "task", "sine needs d = 1"},
      {with({{"prefix_loss", "true"}, {"tokens", "classic"}}), "prefix_loss", "needs causal = true"},
      {with({{"prefix_loss", "true"}, {"causal", "true"}}), "prefix_loss", "tokens = classic or padded"},
      {with({{"tokens", "padded"}}), "readout", "padded tokens need readout = head"},
      {with({{"gd_attention", "0.1"}, {"bias", "false"}, {"causal", "true"}}), "gd_attention", "needs causal = false"},
      {with({{"tokens", "padded"}, {"readout", "head"}, {"pe", "learnt"}, {"pe_size", "3"}}), "pe_size",
       "pe = learnt needs the token width, 6"},
      {{{"init", "gpt2"}}, "init", "gpt2 applies only to arch = transformer"},
  };
  for (const Case& c : cases) {
    Point p;
    for (const auto& [k, v] : c.settings) ASSERT_EQ(point_set(p, k, v), "") << k;
    const auto errs = point_validate(p);
    bool found = false;
    for (const std::string& e : errs)
      found |= e.find(std::string("option '") + c.option + "' = '") != std::string::npos && e.find(c.rule) != std::string::npos;
    EXPECT_TRUE(found) << c.option << ": " << (errs.empty() ? std::string("no error") : errs[0]);
  }
  Point ok;
  for (const auto& [k, v] : with({{"tokens", "classic"}, {"pe", "concat"}, {"pe_size", "10"}, {"mlp", "true"},
                                  {"layer_norm", "true"}, {"embed", "mlp"}, {"embed_size", "8"}, {"heads", "2"}}))
    ASSERT_EQ(point_set(ok, k, v), "") << k;
  EXPECT_TRUE(point_validate(ok).empty()) << point_validate(ok)[0];
}

TEST(Schedules, WarmupStepHalvingAndCosine) {
  Point p;
  p.lr = 1.0;
  p.steps = 100;
  p.warmup = 10;
  EXPECT_DOUBLE_EQ(lr_at(p, 0), 0.1);
  EXPECT_DOUBLE_EQ(lr_at(p, 9), 1.0);
  EXPECT_DOUBLE_EQ(lr_at(p, 50), 1.0);
  p.schedule = Schedule::step;
  p.decay_every = 20;
  EXPECT_DOUBLE_EQ(lr_at(p, 29), 1.0);
  EXPECT_DOUBLE_EQ(lr_at(p, 30), 0.5);
  EXPECT_DOUBLE_EQ(lr_at(p, 75), 0.125);   // (75 - warmup) / 20 = 3 halvings
  p.schedule = Schedule::cosine;
  EXPECT_DOUBLE_EQ(lr_at(p, 10), 1.0);
  EXPECT_NEAR(lr_at(p, 55), 0.5, 1e-12);
  EXPECT_NEAR(lr_at(p, 99), 0.5 * (1 + std::cos(3.14159265358979323846 * 89 / 90)), 1e-12);
  p.schedule = Schedule::linear;   // from lr at the end of the warm-up to 0 at `steps`
  EXPECT_DOUBLE_EQ(lr_at(p, 10), 1.0);
  EXPECT_DOUBLE_EQ(lr_at(p, 55), 0.5);
  EXPECT_DOUBLE_EQ(lr_at(p, 99), 1.0 / 90);
}

TEST(Optimisers, AdamSgdAndClippingFollowTheirDefinitions) {
  Point p;
  p.d = 1;
  const ParamLayout layout(p);   // full: P and Q are 2 x 2 views
  std::vector<double> theta(layout.size(), 1.0), g(layout.size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = 0.1 * (i + 1);
  // First Adam step moves every coordinate by lr * sign(g) (bias-corrected m / sqrt(v) = g / |g|).
  OptState s = opt_init(layout.size());
  opt_step(p, 0.01, theta, g, s);
  for (double x : theta) EXPECT_NEAR(x, 0.99, 1e-8);
  // SGD with momentum: the second step uses mu * g1 + g2.
  p.optimizer = Optimizer::sgd;
  p.momentum = 0.9;
  std::vector<double> th(layout.size(), 0.0);
  OptState t = opt_init(layout.size());
  opt_step(p, 1.0, th, g, t);
  opt_step(p, 1.0, th, g, t);
  EXPECT_NEAR(th[0], -(0.1 + 1.9 * 0.1), 1e-12);
  // Clipping: global scales the whole vector to norm clip; matrix clips each view to clip.
  p.clip = 0.5;
  std::vector<double> gg = g;
  const double norm = clip_grad(p, Objective<double>(p).blocks(), gg);
  double after = 0;
  for (double x : gg) after += x * x;
  EXPECT_GT(norm, 0.5);
  EXPECT_NEAR(std::sqrt(after), 0.5, 1e-5);
  p.clip_mode = ClipMode::matrix;
  gg = g;
  clip_grad(p, Objective<double>(p).blocks(), gg);
  for (const ParamView& v : layout.views()) {
    double n2 = 0;
    for (int i = 0; i < v.rows * v.cols; ++i) n2 += gg[v.offset + i] * gg[v.offset + i];
    EXPECT_NEAR(std::sqrt(n2), 0.5, 1e-5) << v.name;
  }
}


// Every size the model forms in int (parameters, activation blocks) is checked in double before any work
// (issue 28, item 8): a point past the limit is refused naming an option, its value and the limit.
std::vector<std::string> errors_of(const std::vector<std::pair<std::string, std::string>>& settings) {
  Point p;
  for (const auto& [k, v] : settings) EXPECT_EQ(point_set(p, k, v), "") << k << "=" << v;
  return point_validate(p);
}

bool has_error(const std::vector<std::string>& errors, const std::string& what) {
  for (const std::string& e : errors)
    if (e.find(what) != std::string::npos) return true;
  return false;
}

std::string joined(const std::vector<std::string>& errors) {
  std::string s;
  for (const std::string& e : errors) s += e + "\n";
  return s;
}

TEST(Options, SizesThatOverflowIntAreRefused) {
  const std::vector<std::pair<std::string, std::string>> tf = {{"arch", "transformer"}, {"norm", "1"},
                                                                {"embed", "linear"}, {"embed_size", "4096"}};
  // The issue's point: 2 x 4096 x (64 x 4096) MLP weights alone are 2^31 parameters.
  auto settings = tf;
  settings.insert(settings.end(), {{"widening", "64"}, {"mlp", "true"}});
  std::vector<std::string> e = errors_of(settings);
  EXPECT_TRUE(has_error(e, "option 'widening' = '64': ")) << joined(e);
  EXPECT_TRUE(has_error(e, "2^31 - 1")) << joined(e);
  // The same through the embedding's MLP, and through many layers of a valid width.
  settings = tf;
  settings.insert(settings.end(), {{"embed", "mlp"}, {"widening", "64"}});
  EXPECT_TRUE(has_error(errors_of(settings), "option 'widening' = '64': ")) << joined(errors_of(settings));
  settings = tf;
  settings.insert(settings.end(), {{"heads", "8"}, {"layers", "40"}});
  EXPECT_TRUE(has_error(errors_of(settings), "option 'layers' = '40': ")) << joined(errors_of(settings));
  // lsa: P and Q of 1000 layers x 64 heads at d = 255.
  e = errors_of({{"d", "255"}, {"layers", "1000"}, {"heads", "64"}});
  EXPECT_TRUE(has_error(e, "option 'layers' = '1000': ")) << joined(e);
  EXPECT_TRUE(errors_of({{"d", "255"}, {"layers", "10"}, {"heads", "64"}}).empty());
  // Activations: classic tokens at n = 23000 give score blocks of 23000 x 46001 entries (fits) for training
  // and 46000 x 92001 at the analysis's out-of-distribution length 2n (does not); context_curve likewise.
  const std::vector<std::pair<std::string, std::string>> classic = {{"arch", "transformer"}, {"norm", "1"},
                                                                     {"tokens", "classic"}, {"n", "23000"}};
  settings = classic;
  settings.push_back({"analysis", "false"});
  EXPECT_TRUE(errors_of(settings).empty()) << joined(errors_of(settings));
  e = errors_of(classic);
  EXPECT_TRUE(has_error(e, "option 'n' = '23000': ")) << joined(e);
  EXPECT_TRUE(has_error(e, "2n = 46000")) << joined(e);
  settings = {{"arch", "transformer"}, {"norm", "1"}, {"context_curve", "1048576"}};
  e = errors_of(settings);
  EXPECT_TRUE(has_error(e, "option 'context_curve' = '1048576': ")) << joined(e);
  settings = {{"attention", "softmax"}, {"n", "50000"}, {"analysis", "false"}};
  EXPECT_TRUE(has_error(errors_of(settings), "option 'n' = '50000': ")) << joined(errors_of(settings));
}

// Laws whose inputs, labels or noise underflow or overflow are refused before any work (issue 28, item 10):
// gamma:1e-300 draws inputs that are 0 in float and trains to loss 0 without a word.
TEST(Options, DegenerateLawsAreRefused) {
  struct Case { const char* option; const char* value; };
  for (const Case c : {Case{"x_dist", "gamma:1e-300"}, Case{"x_dist", "gamma:0.001"}, Case{"x_dist", "gamma:1e300"},
                       Case{"x_dist", "uniform:1e-200"}, Case{"x_dist", "uniform:1e200"},
                       Case{"noise", "fixed:1e-300"}, Case{"noise", "uniform:1e300"}, Case{"noise", "set:0,1e-20"}}) {
    const std::vector<std::string> e = errors_of({{c.option, c.value}});
    EXPECT_TRUE(has_error(e, "option '" + std::string(c.option) + "' = '")) << c.value << ": " << joined(e);
    EXPECT_TRUE(has_error(e, "representable")) << c.value << ": " << joined(e);
  }
  for (const char* cov : {"diag:1,1,1,1e-30,1", "rotated:1,1e30,1,1,1"}) {
    const std::vector<std::string> e = errors_of({{"cov", cov}});
    EXPECT_TRUE(has_error(e, "option 'cov' = '")) << cov << ": " << joined(e);
    EXPECT_TRUE(has_error(e, "representable")) << cov << ": " << joined(e);
  }
  // The laws in use stay valid: the presets' values, the paper's gamma:0.1, noise 0.
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
           {"x_dist", "gamma:0.1"}, {"x_dist", "gamma:2.5"}, {"x_dist", "uniform:0.5"}, {"x_dist", "uniform:5"},
           {"x_dist", "sphere"}, {"noise", "set:0,1,3"}, {"noise", "fixed:0"}, {"noise", "uniform:7"},
           {"cov", "rotated:1,1,0.25,0.0625,1"}})
    EXPECT_TRUE(errors_of({{option, value}}).empty()) << option << " = " << value << ": " << joined(errors_of({{option, value}}));
}


// The count validation checks is the layout's own, wherever the layout's int count holds.
TEST(Options, TransformerParamCountIsTheLayoutSize) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> cases = {
      {},
      {{"mlp", "true"}, {"layer_norm", "true"}, {"layers", "3"}, {"heads", "2"}, {"key_size", "7"}},
      {{"embed", "mlp"}, {"embed_size", "12"}, {"widening", "3"}, {"bias", "false"}, {"layers", "2"}, {"tie", "true"}},
      {{"attention", "mix"}, {"attention_first", "softmax"}, {"pe", "concat"}, {"pe_size", "4"}, {"layer_norm", "true"},
       {"layer_norm_first", "true"}, {"layers", "2"}, {"mlp", "true"}},
      {{"tokens", "classic"}, {"embed", "linear"}, {"embed_size", "8"}, {"pe", "add"}, {"pe_size", "8"}}};
  for (auto settings : cases) {
    settings.insert(settings.begin(), {{"arch", "transformer"}, {"norm", "1"}});
    Point p;
    for (const auto& [k, v] : settings) ASSERT_EQ(point_set(p, k, v), "") << k << "=" << v;
    ASSERT_TRUE(point_validate(p).empty()) << point_validate(p)[0];
    const TransformerShape s = transformer_shape(p);
    EXPECT_EQ(transformer_param_count(s), static_cast<double>(TransformerLayout(s).size())) << point_to_text(p);
  }
}

}  // namespace
}  // namespace icl
