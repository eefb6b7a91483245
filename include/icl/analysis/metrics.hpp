#pragma once
// The vocabulary of the analyses: every name an Analysis holds (result.hpp; analysis.cpp, landscape.cpp and
// copy.cpp write them), what it means, its legend label and its convention, declared once in the three
// lists below.  A name is an exact metric (Metric::gd_eta) or a family over a method ({Family::loss,
// Method::tf} is loss_tf); producers write only through Named (below), whose subscript takes nothing else,
// so an unregistered name does not compile (ctest `metric_names`).  The HDF5 writer stores doc, label and
// convention as attributes of each dataset (/metrics/<name>, /analysis/<name>); the Python tools read the
// labels from there.  The docs are expressions expanded in metrics.cpp only (kMse and the Newton docs are
// defined there).
#include <map>
#include <string>
#include <vector>

#include "icl/base/result.hpp"

// A predictor the analyses evaluate: the trained model or a reference algorithm (docs/science.md sections
// 4-5).  X(key, legend label, what it predicts); key as in loss_<key>, adjusted_<key>, noise_loss_<key>, ...
#define ICL_METHODS(X)                                                                                             \
  X(tf, "trained", "the trained transformer")                                                                      \
  X(tf_unclipped, "trained, act_clip off",                                                                         \
    "the trained weights evaluated with act_clip off (only when act_clip > 0): minus loss_tf, what the clip "      \
    "does to the same weights")                                                                                    \
  X(zero, "zero predictor", "the zero predictor")                                                                  \
  X(ols, "OLS", "least squares (minimum norm when n < d)")                                                         \
  X(ridge, "ridge, fixed lambda", "ridge with lambda = ridge_lambda")                                              \
  X(const_rr, "ConstRR", "ridge with one lambda tuned for the noise law ([V24] ConstRR)")                          \
  X(ada_rr, "AdaRR", "ridge with lambda = RSS_OLS / (n - d) ([V24] AdaRR)")                                        \
  X(tuned_rr, "TunedRR", "ridge with lambda = min(c sigma_hat^2, t), c and t tuned ([V24] TunedRR)")               \
  X(oracle_ridge, "oracle ridge (lambda = sigma^2)",                                                               \
    "ridge with lambda = the task's sigma^2 (the posterior mean; [V24] oracle)")                                   \
  X(bayes, "Bayes-optimal", "the Bayes-optimal predictor for the noise mixture")                                   \
  X(dmmse, "dMMSE",                                                                                                \
    "the posterior mean under the discrete prior of the training pool and the noise law (task_pool > 0; "         \
    "Raventos et al. 2023)")                                                                                       \
  X(newton, "iterative Newton (K steps)", newton_doc())                                                            \
  X(gd, "GD (K steps, tuned rate)", "K = L steps of GD from w = 0 with one tuned rate ([VO23])")                   \
  X(pgd, "GD preconditioned by Sigma^-1", "K = L steps of GD preconditioned by Sigma^-1, one tuned rate ([A23])")  \
  X(gdpp, "GD++ (K steps, tuned per step)",                                                                        \
    "K = L steps of GD++ with tuned (eta, gamma) per step ([VO23] App. A.10)")                                     \
  X(gdpp_tied, "GD++ (K steps, one tuned pair)",                                                                   \
    "K = L steps of GD++ with one tuned (eta, gamma) for every step (recurrent; [VO23] Fig. 3)")                   \
  X(interp, "interpolated (TF + construction)",                                                                    \
    "[VO23] App. A.3: the trained weights with their scale corrected (Q / beta, P * beta, beta the mean of Q's "   \
    "x-block diagonal), averaged with the construction of the tuned GD step (L = 1) or of tied GD++ (L > 1); "    \
    "recurrent single-head lsa models only")

// A name per method: <prefix>_<method key>.  X(prefix, doc ("%s" stands for the method's doc), convention).
// No prefix followed by "_" is the start of another family's name.
#define ICL_FAMILIES(X)                                                                                            \
  X(loss, "MSE on the evaluation set of %s", kMse)                                                                 \
  X(adjusted, "loss minus loss_oracle_ridge ([V24] adjusted loss) of %s", kMse)                                    \
  X(se_adjusted,                                                                                                   \
    "standard error over the evaluation tasks of adjusted_* (paired with oracle ridge, task by task) of %s", kMse) \
  X(layer_loss, "MSE of K steps, K = 1..L, each tuned for K steps, of %s", kMse)                                   \
  X(noise_loss, "MSE per noise level (columns follow noise_sigma), 1,000 tasks each, of %s", kMse)                 \
  X(ood_alpha_loss, "MSE per input scale (columns follow ood_alpha) of %s", kMse)                                  \
  X(ood_context_loss, "MSE per context length (columns follow ood_context) of %s", kMse)                           \
  X(ood_teacher_loss, "MSE per teacher scale (columns follow ood_teacher) of %s", kMse)                            \
  X(ood_other_loss, "MSE per input range of [VO23]'s other input laws (columns follow ood_other) of %s", kMse)      \
  X(ood_other_teacher_loss,                                                                                        \
    "MSE per teacher scale on [VO23]'s other input laws at input range 1 (columns follow ood_other_teacher) of %s", \
    kMse)                                                                                                          \
  X(context_loss, "MSE per context length (columns follow context_length; 2,000 fresh tasks each) of %s", kMse)    \
  X(pool_loss, "MSE on pool tasks (fresh inputs and noise, w from the training pool; task_pool > 0) of %s", kMse)

// Every other name.  X(name, doc, convention).
#define ICL_METRICS(X)                                                                                             \
  X(se_loss_tf, "standard error of loss_tf over the evaluation tasks", kMse)                                       \
  X(spectrum_min, "smallest eigenvalue of X X^T (the context's inputs, a plain sum) over the evaluation tasks "    \
    "([VO23] App. A.10)", "eigenvalue")                                                                            \
  X(spectrum_max, "largest eigenvalue of X X^T over the evaluation tasks ([VO23] App. A.10)", "eigenvalue")        \
  X(context_length, "context lengths 1..context_curve of the context_loss_* curves", "tokens")                     \
  X(se_context_loss_tf, "standard error of context_loss_tf per context length over its tasks", kMse)               \
  X(newton_similarity, newton_similarity_doc(), "cosine")                                                          \
  X(newton_best_step, "per layer: the Newton step k whose errors are most similar to the layer's", "steps")        \
  X(probe_newton_similarity, probe_newton_similarity_doc(), "cosine")                                              \
  X(probe_newton_best_step, "per layer: the Newton step k of the largest probe_newton_similarity", "steps")         \
  X(probe_gd_similarity,                                                                                           \
    "per layer l and gradient-descent step count 2^c, c = 0..12: probe_newton_similarity's cosine with GD from "   \
    "w = 0 at rate 0.01 on 1/2 sum_i (<w, x_i> - y_i)^2 over the prefix (Fu et al.'s grid), L x 13 row-major",     \
    "cosine")                                                                                                      \
  X(probe_gd_best_step, "per layer: the GD step count 2^c of the largest probe_gd_similarity", "steps")             \
  X(probe_ols_similarity,                                                                                          \
    "per layer: probe_newton_similarity's cosine with the minimum-norm least-squares fit of the prefix",           \
    "cosine")                                                                                                      \
  X(probe_loss, "per layer: MSE over the x tokens of its linear probe (probes.hpp) on its evaluation tasks", kMse)   \
  X(se_pool_loss_tf, "standard error of pool_loss_tf over the pool evaluation tasks", kMse)                        \
  X(se_pool_tf_minus_dmmse, "standard error of pool_loss_tf - pool_loss_dmmse (paired, task by task)", kMse)       \
  X(se_clip_effect, "standard error of loss_tf_unclipped - loss_tf (paired, task by task)", kMse)                  \
  X(rollout_loss_tf,                                                                                               \
    "[VO23] roll-out: MSE after each of `rollout` applications of the trained recurrent layer (damped, label "     \
    "channel only) on the evaluation set", kMse)                                                                   \
  X(rollout_loss_gd,                                                                                               \
    "[VO23] roll-out: MSE after each of `rollout` GD steps at rollout_damping x the tuned 1-step rate on the "     \
    "evaluation set", kMse)                                                                                        \
  X(copy_step,                                                                                                     \
    "training steps of the copy analysis (arch = transformer, tokens = classic): 0, every eval_every steps, the "  \
    "last", "steps")                                                                                               \
  X(copy_own,                                                                                                      \
    "[VO23] Fig. 5 copy analysis: |mean over tasks of d t_k / d x_k| averaged over k, t_k the sum of the first "   \
    "layer's output at token k (copy.hpp)", "gradient norm")                                                       \
  X(copy_next, "[VO23] Fig. 5 copy analysis: |mean d t_k / d x_{k+1}| averaged over k (copying the next token)",   \
    "gradient norm")                                                                                               \
  X(copy_other,                                                                                                    \
    "[VO23] Fig. 5 copy analysis: sum over j != k of |mean d t_k / d x_j|, / (2n - 1), averaged over k (its "      \
    "code's convention)", "gradient norm")                                                                         \
  X(align_gd_abs, "mean |yhat_TF - yhat_GD| (L-step GD, [VO23])", "output units")                                  \
  X(align_gd_cos, "mean cosine of the sensitivities d yhat / d x_query, TF vs L-step GD", "cosine")                \
  X(align_gd_l2, "mean L2 distance of the sensitivities, TF vs L-step GD", "output units per input unit")          \
  X(align_gdpp_abs, "mean |yhat_TF - yhat_GD++| (L-step GD++)", "output units")                                    \
  X(align_gdpp_cos, "mean cosine of the sensitivities, TF vs L-step GD++", "cosine")                               \
  X(align_gdpp_l2, "mean L2 distance of the sensitivities, TF vs L-step GD++", "output units per input unit")      \
  X(align_gdpp_tied_abs,                                                                                           \
    "mean |yhat_TF - yhat_GD++| (L-step tied GD++: one (eta, gamma), the recurrent reference of [VO23]'s "         \
    "notebook)", "output units")                                                                                   \
  X(align_gdpp_tied_cos, "mean cosine of the sensitivities, TF vs L-step tied GD++", "cosine")                     \
  X(align_gdpp_tied_l2, "mean L2 distance of the sensitivities, TF vs L-step tied GD++",                           \
    "output units per input unit")                                                                                 \
  X(const_rr_lambda, "ConstRR's tuned lambda", "ridge penalty")                                                    \
  X(tuned_rr_c, "TunedRR's tuned c (lambda = min(c sigma_hat^2, t))", "ratio")                                     \
  X(tuned_rr_t, "TunedRR's tuned threshold t", "ridge penalty")                                                    \
  X(analysis_seconds, "seconds spent in the analyses", "seconds")                                                  \
  X(landscape_seconds, "seconds spent in the landscape measurements", "seconds")                                   \
  X(gd_eta, "tuned GD rate per K = 1..L (yhat = eta <sum y_i x_i, x_q> for K = 1)", "rate")                        \
  X(pgd_eta, "tuned preconditioned-GD rate per K = 1..L", "rate")                                                  \
  X(gdpp_eta, "GD++ rate per step of the L-step method", "rate")                                                   \
  X(gdpp_gamma, "GD++ input-transform gamma per step (x <- (I - gamma X X^T) x); the last step's does not act: 0", \
    "rate")                                                                                                        \
  X(gdpp_tied_eta, "tied GD++: the one rate eta of the K-step method, K = 1..L", "rate")                           \
  X(gdpp_tied_gamma, "tied GD++: the one gamma of the K-step method, K = 1..L", "rate")                            \
  X(gdpp_tune_grad,                                                                                                \
    "per-step GD++ tuning: |grad| (in units of the GD rate) / loss at the result, K = 1..L; stationary when <= "   \
    "1e-6", "relative gradient")                                                                                   \
  X(gdpp_tied_tune_grad, "tied GD++ tuning: |grad| / loss at the result, K = 1..L", "relative gradient")           \
  X(noise_sigma, "noise levels of the per-level evaluation (multiples of the training maximum)", "sigma")          \
  X(ood_alpha, "input scales alpha of the out-of-distribution evaluation (x -> alpha x)", "factor")                \
  X(ood_context, "context lengths M of the out-of-distribution evaluation (c = 1/M under norm = 1/n)", "tokens")   \
  X(ood_teacher, "teacher scales alpha of the out-of-distribution evaluation (w -> alpha w)", "factor")            \
  X(ood_other, "input ranges alpha of [VO23]'s other input laws (per task exponential, normal or Laplace draws S, " \
    "x = alpha S / |S_context|_F: the context's inputs have Frobenius norm alpha)", "Frobenius norm")              \
  X(ood_other_teacher, "teacher scales alpha on [VO23]'s other input laws at input range 1 (w -> alpha w)",         \
    "factor")                                                                                                      \
  X(sigma, "input covariance Sigma, d x d row-major", "covariance")                                                \
  X(precond_product, "per layer, P corner times Q block summed over heads (gauge-free), L x d x d row-major",      \
    "our sign: the Q block is minus the preconditioner")                                                           \
  X(precond_whitened, "per layer, Sigma^1/2 (P corner Q block) Sigma^1/2, L x d x d row-major",                    \
    "our sign: the Q block is minus the preconditioner")                                                           \
  X(precond_dist, "per layer, Dist(A_l, I) = |A - (tr A/d) I|_F / |A|_F ([A23])", "ratio in [0, 1]")              \
  X(precond_dist_whitened, "per layer, Dist(Sigma^1/2 A_l Sigma^1/2, I) ([A23])", "ratio in [0, 1]")              \
  X(precond_a, "per layer, a_l = -tr(Sigma^1/2 A_l Sigma^1/2)/d ([A23])", "paper sign")                            \
  X(precond_b_dist, "per layer, Dist(B_l, I) (sparse_ab)", "ratio in [0, 1]")                                      \
  X(precond_b, "per layer, tr(B_l)/d (sparse_ab)", "paper sign")                                                   \
  X(v24_w_xx, "per layer, [V24] scalar w_xx (projected for full)", "paper sign")                                   \
  X(v24_w_xy, "per layer, [V24] scalar w_xy (projected for full)", "paper sign")                                   \
  X(v24_w_yx, "per layer, [V24] scalar w_yx (projected for full)", "paper sign")                                   \
  X(v24_w_yy, "per layer, [V24] scalar w_yy (projected for full)", "paper sign")                                   \
  X(landscape_step, "steps of the landscape measurements", "steps")                                                \
  X(landscape_grad_norm,                                                                                           \
    "|g| on the fixed landscape set (hessian_tasks tasks, the same for every point) per measured step",            \
    "gradient norm of the MSE")                                                                                    \
  X(landscape_grad_noise, "|g_B - g_full| for 32 mini-batches per measured step (steps x 32, row-major)",          \
    "gradient norm of the MSE")                                                                                    \
  X(landscape_hessian_cond,                                                                                        \
    "robust condition number max|H_ii| / median|H_ii| (lower median of an even count, as torch.median) on the "   \
    "fixed landscape set, per measured step", "ratio")                                                             \
  X(landscape_hessian_diag,                                                                                        \
    "Hessian diagonal over every parameter on the fixed landscape set, per measured step (steps x #params, "      \
    "row-major)", "curvature of the MSE")                                                                          \
  X(landscape_smoothness,                                                                                          \
    "u^T H u / |u|^2 along the optimiser's update on the fixed landscape set, per measured step",                  \
    "curvature of the MSE")

namespace icl {

#define ICL_NAME_ONLY(name, ...) name,
enum class Method { ICL_METHODS(ICL_NAME_ONLY) };
enum class Family { ICL_FAMILIES(ICL_NAME_ONLY) };
enum class Metric { ICL_METRICS(ICL_NAME_ONLY) };
#undef ICL_NAME_ONLY
#define ICL_ONE(...) +1
constexpr int kMethods = 0 ICL_METHODS(ICL_ONE), kFamilies = 0 ICL_FAMILIES(ICL_ONE), kMetrics = 0 ICL_METRICS(ICL_ONE);
#undef ICL_ONE

struct MethodInfo {
  const char* key;
  std::string label;   // legend label
  std::string doc;     // what it predicts
};
// Every method, in the order of ICL_METHODS (the file's @methods attribute).
const std::vector<MethodInfo>& methods();
const MethodInfo& method_info(Method m);
const MethodInfo* find_method(const std::string& key);

// A registered name: an exact metric, or a family over a method.  Nothing else converts to it.
class MetricName {
 public:
  MetricName(Metric m);              // NOLINT: implicit, so that S[Metric::gd_eta] reads as the name
  MetricName(Family f, Method m);
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

// How producers write an Analysis: Named S(out.series); S[Metric::gd_eta] = ...; S[{Family::noise_loss, m}].
template <class V>
class Named {
 public:
  explicit Named(std::map<std::string, V>& to) : to_(to) {}
  V& operator[](const MetricName& name) { return to_[name.str()]; }

 private:
  std::map<std::string, V>& to_;
};

// What a stored name means.
struct MetricInfo {
  std::string doc;          // one line
  std::string label;        // legend label (the method's for a family name; empty otherwise)
  std::string convention;   // units and sign: e.g. "MSE" (plain, never halved), "seconds", "paper sign"
};
// False when `name` is not in the registry.
bool metric_info(const std::string& name, MetricInfo* info);

}  // namespace icl
