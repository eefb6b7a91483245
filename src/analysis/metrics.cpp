// The registry of metrics.hpp.  Losses are plain MSE (result.hpp); [VO23] and [V24] report half of it.
#include "icl/analysis/metrics.hpp"

#include <stdexcept>
#include <utility>

#include "icl/analysis/baselines.hpp"

namespace icl {
namespace {

constexpr const char* kMse = "MSE (plain mean squared error; [VO23], [V24] tables show half)";

struct Family {
  const char* prefix;
  const char* doc;   // "%s" stands for the method's doc
  const char* convention;
};

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {"loss_", "MSE on the evaluation set of %s", kMse},
      {"adjusted_", "loss minus loss_oracle_ridge ([V24] adjusted loss) of %s", kMse},
      {"se_adjusted_", "standard error over the evaluation tasks of adjusted_* (paired with oracle ridge, task by "
                       "task) of %s", kMse},
      {"layer_loss_", "MSE of K steps, K = 1..L, each tuned for K steps, of %s", kMse},
      {"noise_loss_", "MSE per noise level (columns follow noise_sigma), 1,000 tasks each, of %s", kMse},
      {"ood_alpha_loss_", "MSE per input scale (columns follow ood_alpha) of %s", kMse},
      {"ood_context_loss_", "MSE per context length (columns follow ood_context) of %s", kMse},
      {"context_loss_", "MSE per context length (columns follow context_length; 2,000 fresh tasks each) of %s", kMse},
      {"pool_loss_", "MSE on pool tasks (fresh inputs and noise, w from the training pool; task_pool > 0) of %s", kMse},
  };
  return f;
}

struct Exact {
  const char* name;
  const char* doc;
  const char* convention;
};

// The Newton start (baselines.hpp kNewtonAlpha) in the doc of every Newton dataset.
const std::string& newton_similarity_doc() {
  static const std::string doc = std::string("per layer l and Newton step k = 0..K_max (K_max = min(64, max(12, 4L))): "
                                             "cosine similarity over the evaluation tasks of the errors yhat_l - y and "
                                             "yhat_Newton,k - y (Fu et al. 2023), L x (K_max + 1) row-major; ") +
                                 kNewtonAlpha;
  return doc;
}

const std::string& newton_doc() {
  static const std::string doc =
      std::string("K = L steps of iterative Newton for the pseudo-inverse of S = X X^T, nothing tuned (Fu et al. 2023): ") +
      kNewtonAlpha;
  return doc;
}

const std::vector<Exact>& exact() {
  static const std::vector<Exact> e = {
      {"se_loss_tf", "standard error of loss_tf over the evaluation tasks", kMse},
      {"context_length", "context lengths 1..context_curve of the context_loss_* curves", "tokens"},
      {"se_context_loss_tf", "standard error of context_loss_tf per context length over its tasks", kMse},
      {"newton_similarity", newton_similarity_doc().c_str(), "cosine"},
      {"newton_best_step", "per layer: the Newton step k whose errors are most similar to the layer's", "steps"},
      {"se_pool_loss_tf", "standard error of pool_loss_tf over the pool evaluation tasks", kMse},
      {"se_pool_tf_minus_dmmse", "standard error of pool_loss_tf - pool_loss_dmmse (paired, task by task)", kMse},
      {"se_clip_effect", "standard error of loss_tf_unclipped - loss_tf (paired, task by task)", kMse},
      {"rollout_loss_tf", "[VO23] roll-out: MSE after each of `rollout` applications of the trained recurrent layer "
                          "(damped, label channel only) on the evaluation set", kMse},
      {"rollout_loss_gd", "[VO23] roll-out: MSE after each of `rollout` GD steps at rollout_damping x the tuned 1-step "
                          "rate on the evaluation set", kMse},
      {"copy_step", "training steps of the copy analysis (arch = transformer, tokens = classic): 0, every "
                    "eval_every steps, the last", "steps"},
      {"copy_own", "[VO23] Fig. 5 copy analysis: |mean over tasks of d t_k / d x_k| averaged over k, t_k the sum of "
                   "the first layer's output at token k (copy.hpp)", "gradient norm"},
      {"copy_next", "[VO23] Fig. 5 copy analysis: |mean d t_k / d x_{k+1}| averaged over k (copying the next token)",
       "gradient norm"},
      {"copy_other", "[VO23] Fig. 5 copy analysis: sum over j != k of |mean d t_k / d x_j|, / (2n - 1), averaged over k "
                     "(its code's convention)", "gradient norm"},
      {"align_gd_abs", "mean |yhat_TF - yhat_GD| (L-step GD, [VO23])", "output units"},
      {"align_gd_cos", "mean cosine of the sensitivities d yhat / d x_query, TF vs L-step GD", "cosine"},
      {"align_gd_l2", "mean L2 distance of the sensitivities, TF vs L-step GD", "output units per input unit"},
      {"align_gdpp_abs", "mean |yhat_TF - yhat_GD++| (L-step GD++)", "output units"},
      {"align_gdpp_cos", "mean cosine of the sensitivities, TF vs L-step GD++", "cosine"},
      {"align_gdpp_l2", "mean L2 distance of the sensitivities, TF vs L-step GD++", "output units per input unit"},
      {"align_gdpp_tied_abs", "mean |yhat_TF - yhat_GD++| (L-step tied GD++: one (eta, gamma), the recurrent reference "
                              "of [VO23]'s notebook)", "output units"},
      {"align_gdpp_tied_cos", "mean cosine of the sensitivities, TF vs L-step tied GD++", "cosine"},
      {"align_gdpp_tied_l2", "mean L2 distance of the sensitivities, TF vs L-step tied GD++", "output units per input unit"},
      {"const_rr_lambda", "ConstRR's tuned lambda", "ridge penalty"},
      {"tuned_rr_c", "TunedRR's tuned c (lambda = min(c sigma_hat^2, t))", "ratio"},
      {"tuned_rr_t", "TunedRR's tuned threshold t", "ridge penalty"},
      {"analysis_seconds", "seconds spent in the analyses", "seconds"},
      {"landscape_seconds", "seconds spent in the landscape measurements", "seconds"},
      {"gd_eta", "tuned GD rate per K = 1..L (yhat = eta <sum y_i x_i, x_q> for K = 1)", "rate"},
      {"pgd_eta", "tuned preconditioned-GD rate per K = 1..L", "rate"},
      {"gdpp_eta", "GD++ rate per step of the L-step method", "rate"},
      {"gdpp_gamma", "GD++ input-transform gamma per step (x <- (I - gamma X X^T) x); the last step's does not act: 0",
       "rate"},
      {"gdpp_tied_eta", "tied GD++: the one rate eta of the K-step method, K = 1..L", "rate"},
      {"gdpp_tied_gamma", "tied GD++: the one gamma of the K-step method, K = 1..L", "rate"},
      {"gdpp_tune_grad", "per-step GD++ tuning: |grad| (in units of the GD rate) / loss at the result, K = 1..L; "
                         "stationary when <= 1e-6", "relative gradient"},
      {"gdpp_tied_tune_grad", "tied GD++ tuning: |grad| / loss at the result, K = 1..L", "relative gradient"},
      {"noise_sigma", "noise levels of the per-level evaluation (multiples of the training maximum)", "sigma"},
      {"ood_alpha", "input scales alpha of the out-of-distribution evaluation (x -> alpha x)", "factor"},
      {"ood_context", "context lengths M of the out-of-distribution evaluation (c = 1/M under norm = 1/n)", "tokens"},
      {"sigma", "input covariance Sigma, d x d row-major", "covariance"},
      {"precond_product", "per layer, P corner times Q block summed over heads (gauge-free), L x d x d row-major",
       "our sign: the Q block is minus the preconditioner"},
      {"precond_whitened", "per layer, Sigma^1/2 (P corner Q block) Sigma^1/2, L x d x d row-major",
       "our sign: the Q block is minus the preconditioner"},
      {"precond_dist", "per layer, Dist(A_l, I) = |A - (tr A/d) I|_F / |A|_F ([A23])", "ratio in [0, 1]"},
      {"precond_dist_whitened", "per layer, Dist(Sigma^1/2 A_l Sigma^1/2, I) ([A23])", "ratio in [0, 1]"},
      {"precond_a", "per layer, a_l = -tr(Sigma^1/2 A_l Sigma^1/2)/d ([A23])", "paper sign"},
      {"precond_b_dist", "per layer, Dist(B_l, I) (sparse_ab)", "ratio in [0, 1]"},
      {"precond_b", "per layer, tr(B_l)/d (sparse_ab)", "paper sign"},
      {"v24_w_xx", "per layer, [V24] scalar w_xx (projected for full)", "paper sign"},
      {"v24_w_xy", "per layer, [V24] scalar w_xy (projected for full)", "paper sign"},
      {"v24_w_yx", "per layer, [V24] scalar w_yx (projected for full)", "paper sign"},
      {"v24_w_yy", "per layer, [V24] scalar w_yy (projected for full)", "paper sign"},
      {"landscape_step", "steps of the landscape measurements", "steps"},
      {"landscape_grad_norm", "|g| on the fixed landscape set (hessian_tasks tasks, the same for every point) per "
                              "measured step", "gradient norm of the MSE"},
      {"landscape_grad_noise", "|g_B - g_full| for 32 mini-batches per measured step (steps x 32, row-major)",
       "gradient norm of the MSE"},
      {"landscape_hessian_cond", "robust condition number max|H_ii| / median|H_ii| (lower median of an even count, "
                                 "as torch.median) on the fixed landscape set, per measured step", "ratio"},
      {"landscape_hessian_diag", "Hessian diagonal over every parameter on the fixed landscape set, per measured "
                                 "step (steps x #params, row-major)", "curvature of the MSE"},
      {"landscape_smoothness", "u^T H u / |u|^2 along the optimiser's update on the fixed landscape set, per "
                               "measured step", "curvature of the MSE"},
  };
  return e;
}

}  // namespace

const std::vector<Method>& methods() {
  static const std::vector<Method> m = {
      {"tf", "trained", "the trained transformer"},
      {"tf_unclipped", "trained, act_clip off",
       "the trained weights evaluated with act_clip off (only when act_clip > 0): minus loss_tf, what the clip "
       "does to the same weights"},
      {"zero", "zero predictor", "the zero predictor"},
      {"ols", "OLS", "least squares (minimum norm when n < d)"},
      {"ridge", "ridge, fixed lambda", "ridge with lambda = ridge_lambda"},
      {"const_rr", "ConstRR", "ridge with one lambda tuned for the noise law ([V24] ConstRR)"},
      {"ada_rr", "AdaRR", "ridge with lambda = RSS_OLS / (n - d) ([V24] AdaRR)"},
      {"tuned_rr", "TunedRR", "ridge with lambda = min(c sigma_hat^2, t), c and t tuned ([V24] TunedRR)"},
      {"oracle_ridge", "oracle ridge (lambda = sigma^2)",
       "ridge with lambda = the task's sigma^2 (the posterior mean; [V24] oracle)"},
      {"bayes", "Bayes-optimal", "the Bayes-optimal predictor for the noise mixture"},
      {"dmmse", "dMMSE", "the posterior mean under the discrete prior of the training pool and the noise law "
                         "(task_pool > 0; Raventos et al. 2023)"},
      {"newton", "iterative Newton (K steps)", newton_doc().c_str()},
      {"gd", "GD (K steps, tuned rate)", "K = L steps of GD from w = 0 with one tuned rate ([VO23])"},
      {"pgd", "GD preconditioned by Sigma^-1", "K = L steps of GD preconditioned by Sigma^-1, one tuned rate ([A23])"},
      {"gdpp", "GD++ (K steps, tuned per step)", "K = L steps of GD++ with tuned (eta, gamma) per step ([VO23] App. A.10)"},
      {"gdpp_tied", "GD++ (K steps, one tuned pair)",
       "K = L steps of GD++ with one tuned (eta, gamma) for every step (recurrent; [VO23] Fig. 3)"},
  };
  return m;
}

const Method* find_method(const std::string& key) {
  for (const Method& m : methods())
    if (key == m.key) return &m;
  return nullptr;
}

bool metric_info(const std::string& name, MetricInfo* info) {
  for (const Exact& e : exact())
    if (name == e.name) {
      *info = {e.doc, "", e.convention};
      return true;
    }
  for (const Family& f : families()) {   // no prefix is the start of another
    const std::string prefix = f.prefix;
    const Method* m = name.compare(0, prefix.size(), prefix) == 0 ? find_method(name.substr(prefix.size())) : nullptr;
    if (!m) continue;
    std::string doc = f.doc;
    doc.replace(doc.find("%s"), 2, m->doc);
    *info = {doc, m->label, f.convention};
    return true;
  }
  return false;
}

void require_registered(const Analysis& a) {
  MetricInfo info;
  for (const auto& kv : a.metrics)
    if (!metric_info(kv.first, &info))
      throw std::logic_error("metric '" + kv.first + "' is not in the registry (src/analysis/metrics.cpp)");
  for (const auto& kv : a.series)
    if (!metric_info(kv.first, &info))
      throw std::logic_error("series '" + kv.first + "' is not in the registry (src/analysis/metrics.cpp)");
}

}  // namespace icl
