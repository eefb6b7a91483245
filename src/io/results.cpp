#include "icl/io/results.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <limits>
#include <set>

#include "icl/build_info.hpp"
#include "icl/core/options.hpp"
#include "icl/io/h5.hpp"
#include "integrity.hpp"

namespace icl::io {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// rows x width, row-major, each row padded with `pad` (NaN for reals).
template <class V, class F>
std::vector<V> padded(size_t rows, size_t width, V pad, F row) {
  std::vector<V> out(rows * width, pad);
  for (size_t r = 0; r < rows; ++r) {
    const auto& src = row(r);
    std::copy(src.begin(), src.end(), out.begin() + static_cast<std::ptrdiff_t>(r * width));
  }
  return out;
}

// What an analysis dataset holds (science.md sections 4-5); matched on the name or its prefix.
std::string analysis_doc(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> docs = {
      {"loss_tf", "MSE of the trained transformer on the evaluation set"},
      {"loss_zero", "MSE of the zero predictor"},
      {"loss_ols", "MSE of least squares (minimum norm when n < d)"},
      {"loss_ridge", "MSE of ridge with lambda = ridge_lambda"},
      {"loss_oracle_ridge", "MSE of ridge with lambda = the task's sigma^2 (posterior mean; [V24] oracle)"},
      {"loss_const_rr", "MSE of ridge with one lambda tuned for the noise law ([V24] ConstRR)"},
      {"loss_ada_rr", "MSE of ridge with lambda = RSS_OLS / (n - d) ([V24] AdaRR)"},
      {"loss_tuned_rr", "MSE of ridge with lambda = min(c sigma_hat^2, t), c and t tuned ([V24] TunedRR)"},
      {"loss_bayes", "MSE of the Bayes-optimal predictor for the noise mixture"},
      {"loss_gd", "MSE of L steps of GD from w = 0 with one tuned rate ([VO23])"},
      {"loss_pgd", "MSE of L steps of GD preconditioned by Sigma^-1, one tuned rate ([A23])"},
      {"loss_gdpp_tied", "MSE of L steps of GD++ with one tuned (eta, gamma) for every step (recurrent; [VO23] Fig. 3)"},
      {"loss_gdpp", "MSE of L steps of GD++ with tuned (eta, gamma) per step ([VO23] App. A.10)"},
      {"loss_tf_unclipped", "MSE of the trained weights evaluated with act_clip off (only when act_clip > 0): "
                            "loss_tf_unclipped - loss_tf is what the clip does to the same weights"},
      {"adjusted_", "loss minus loss_oracle_ridge ([V24] adjusted loss; halve for its tables)"},
      {"se_adjusted_", "standard error of adjusted_* over the evaluation tasks (paired with oracle ridge, task by task)"},
      {"se_loss_tf", "standard error of loss_tf over the evaluation tasks"},
      {"se_clip_effect", "standard error of loss_tf_unclipped - loss_tf (paired, task by task)"},
      {"align_gd_abs", "mean |yhat_TF - yhat_GD| (L-step GD, [VO23])"},
      {"align_gd_cos", "mean cosine of the sensitivities d yhat / d x_query, TF vs L-step GD"},
      {"align_gd_l2", "mean L2 distance of the sensitivities, TF vs L-step GD"},
      {"align_gdpp_", "as align_gd_*, against L-step GD++"},
      {"const_rr_lambda", "ConstRR's tuned lambda"},
      {"tuned_rr_", "TunedRR's tuned c and threshold t"},
      {"analysis_seconds", "seconds spent in the analyses"},
      {"landscape_seconds", "seconds spent in the landscape measurements"},
      {"gd_eta", "tuned GD rate per K = 1..L (yhat = eta <sum y_i x_i, x_q> for K = 1)"},
      {"pgd_eta", "tuned preconditioned-GD rate per K = 1..L"},
      {"gdpp_eta", "GD++ rate per step of the L-step method"},
      {"gdpp_gamma", "GD++ input-transform gamma per step (x <- (I - gamma X X^T) x); the last step's does not act: 0"},
      {"gdpp_tied_eta", "tied GD++: the one rate eta of the K-step method, K = 1..L"},
      {"gdpp_tied_gamma", "tied GD++: the one gamma of the K-step method, K = 1..L"},
      {"gdpp_tune_grad", "per-step GD++ tuning: |grad| (in units of the GD rate) / loss at the result, K = 1..L; "
                         "stationary when <= 1e-6"},
      {"gdpp_tied_tune_grad", "tied GD++ tuning: |grad| / loss at the result, K = 1..L"},
      {"layer_loss_gd", "MSE of K-step GD, K = 1..L, each with its own tuned rate"},
      {"layer_loss_pgd", "MSE of K-step preconditioned GD, K = 1..L"},
      {"layer_loss_gdpp_tied", "MSE of K-step tied GD++, K = 1..L, each tuned for K steps"},
      {"layer_loss_gdpp", "MSE of K-step GD++, K = 1..L, each tuned for K steps"},
      {"noise_sigma", "noise levels of the per-level evaluation (multiples of the training maximum)"},
      {"noise_loss_", "MSE per noise level (columns follow noise_sigma), 1,000 tasks each"},
      {"ood_alpha", "input scales alpha of the out-of-distribution evaluation (x -> alpha x)"},
      {"ood_alpha_loss_", "MSE per input scale (columns follow ood_alpha)"},
      {"ood_context", "context lengths M of the out-of-distribution evaluation (c = 1/M under norm = 1/n)"},
      {"ood_context_loss_", "MSE per context length (columns follow ood_context)"},
      {"sigma", "input covariance Sigma, d x d row-major"},
      {"precond_product", "per layer, P corner times Q block summed over heads (gauge-free), L x d x d row-major"},
      {"precond_whitened", "per layer, Sigma^1/2 (P corner Q block) Sigma^1/2, L x d x d row-major"},
      {"precond_dist_whitened", "per layer, Dist(Sigma^1/2 A_l Sigma^1/2, I) ([A23])"},
      {"precond_dist", "per layer, Dist(A_l, I) = |A - (tr A/d) I|_F / |A|_F ([A23])"},
      {"precond_a", "per layer, a_l = -tr(Sigma^1/2 A_l Sigma^1/2)/d (paper sign: our Q block is minus the preconditioner)"},
      {"precond_b_dist", "per layer, Dist(B_l, I) (sparse_ab)"},
      {"precond_b", "per layer, tr(B_l)/d (sparse_ab)"},
      {"v24_w_", "per layer, [V24] scalar w_xx, w_xy, w_yx or w_yy (projected for full)"},
      {"landscape_step", "steps of the landscape measurements"},
      {"landscape_grad_norm", "|g| on the fixed landscape set (hessian_tasks tasks, the same for every point) per measured step"},
      {"landscape_grad_noise", "|g_B - g_full| for 32 mini-batches per measured step (steps x 32, row-major)"},
      {"landscape_hessian_cond", "robust condition number max|H_ii| / median|H_ii| (lower median of an even count, "
                                 "as torch.median) on the fixed landscape set, per measured step"},
      {"landscape_hessian_diag", "Hessian diagonal over every parameter on the fixed landscape set, per measured step "
                                 "(steps x #params, row-major)"},
      {"landscape_smoothness", "u^T H u / |u|^2 along the optimiser's update on the fixed landscape set, per measured step"},
  };
  for (const auto& [key, doc] : docs)
    if (name == key || (key.back() == '_' && name.compare(0, key.size(), key) == 0)) return doc;
  return "";
}

void write_points(File& f, const std::vector<Point>& points) {
  for (const OptionDef& o : option_table()) {
    const std::string path = "/points/" + o.name;
    if (o.column == Column::text) {
      std::vector<std::string> v;
      for (const Point& p : points) v.push_back(o.get(p));
      write(f, path, v);
    } else if (o.column == Column::integer) {
      std::vector<int64_t> v;
      for (const Point& p : points) v.push_back(std::stoll(o.get(p)));
      write(f, path, v);
    } else {
      std::vector<double> v;
      for (const Point& p : points) v.push_back(std::stod(o.get(p)));
      write(f, path, v);
    }
    set_attr(f, path, "help", o.help);
  }
}

void write_all(File& f, const std::vector<Point>& points, const std::vector<Result>& results,
               const std::string& spec_text, const Attributes& extra, const std::vector<int>& replica) {
  const size_t P = points.size();
  set_attr(f, "/", "format", std::string("icl-sweep results"));
  set_attr(f, "/", "format_version", int64_t{1});
  set_attr(f, "/", "software_version", std::string(build::version));
  set_attr(f, "/", "git_revision", std::string(build::git_revision));
  set_attr(f, "/", "build_flags", std::string(build::flags));
  set_attr(f, "/", "spec", spec_text);
  set_attr(f, "/", "written_utc", utc_now());
  set_attr(f, "/", "loss_convention",
           std::string("plain MSE: mean over tasks of (yhat - y_query)^2, not halved "
                       "([VO23] and [V24] report half of it); yhat = -Z_L[d+1, n+1]"));
  set_attr(f, "/", "normalisation_convention",
           std::string("attention scaled by c = 1/n (norm = 1/n, [A23]/[A24]) or c = 1 (norm = 1, [VO23]/[V24]); "
                       "see /points/norm"));
  set_attr(f, "/", "n_points", static_cast<int64_t>(P));
  set_attr(f, "/", "analysis_convention",
           std::string("every loss in /metrics and /analysis is plain MSE on the point's own tasks (evaluation set, "
                       "or the per-level / out-of-distribution sets named in the dataset's doc); adjusted_* = loss - "
                       "oracle ridge ([V24]); reference methods tuned on a separate seeded tuning set; GD and GD++ "
                       "are the transformer with constructed weights and c = 1"));

  for (const auto& [k, v] : extra.text) set_attr(f, "/", k, v);
  for (const auto& [k, v] : extra.integer) set_attr(f, "/", k, v);
  write_points(f, points);
  std::vector<int64_t> rep(points.size(), 0);
  for (size_t i = 0; i < replica.size() && i < rep.size(); ++i) rep[i] = replica[i];
  write(f, "/points/replica", rep);
  set_attr(f, "/points/replica", "help", std::string("replica of the grid combination (repeats)"));
  std::vector<std::string> status, message, analysis_status, analysis_message;
  for (const Result& r : results) {
    status.push_back(status_name(r.status));
    message.push_back(r.message);
    analysis_status.push_back(analysis_status_name(r.analysis_status));
    analysis_message.push_back(r.analysis_message);
  }
  write(f, "/points/status", status);
  write(f, "/points/message", message);
  write(f, "/points/analysis_status", analysis_status);
  set_attr(f, "/points/analysis_status", "help", std::string("ok, failed (the training and weights are kept) or skipped"));
  write(f, "/points/analysis_message", analysis_message);

  auto metric = [&](const char* name, auto get, const char* doc) {
    std::vector<double> v;
    for (const Result& r : results) v.push_back(get(r));
    write(f, std::string("/metrics/") + name, v);
    set_attr(f, std::string("/metrics/") + name, "doc", std::string(doc));
  };
  metric("test_loss", [](const Result& r) { return r.test_loss; }, "final MSE on the fixed evaluation set");
  metric("train_loss", [](const Result& r) { return r.train_loss; }, "mean training MSE over the last eval_every steps");
  metric("steps_done", [](const Result& r) { return r.steps_done < 0 ? kNaN : double(r.steps_done); }, "training steps completed");
  metric("wall_seconds", [](const Result& r) { return r.seconds_total; }, "wall-clock seconds of the whole point");
  metric("train_seconds", [](const Result& r) { return r.seconds_train; }, "seconds in training steps");
  metric("eval_seconds", [](const Result& r) { return r.seconds_eval; }, "seconds in evaluations");
  metric("steps_per_second", [](const Result& r) { return r.seconds_train > 0 ? r.steps_done / r.seconds_train : kNaN; },
         "training steps per second");
  metric("flops_per_step", [](const Result& r) { return r.flops_per_step; }, "model FLOPs of one training step");

  // Analysis scalars and series, by name, over the union of the points' names (NaN where absent).
  std::set<std::string> scalar_names, series_names;
  for (const Result& r : results) {
    for (const auto& kv : r.metrics) scalar_names.insert(kv.first);
    for (const auto& kv : r.series) series_names.insert(kv.first);
  }
  for (const std::string& name : scalar_names) {
    std::vector<double> v;
    for (const Result& r : results) v.push_back(r.metrics.count(name) ? r.metrics.at(name) : kNaN);
    write(f, "/metrics/" + name, v);
    if (!analysis_doc(name).empty()) set_attr(f, "/metrics/" + name, "doc", analysis_doc(name));
  }
  for (const std::string& name : series_names) {
    static const std::vector<double> none;
    size_t width = 0;
    for (const Result& r : results) width = std::max(width, r.series.count(name) ? r.series.at(name).size() : 0);
    write(f, "/analysis/" + name, padded<double>(P, width, kNaN, [&](size_t i) -> const std::vector<double>& {
            return results[i].series.count(name) ? results[i].series.at(name) : none; }), {P, width});
    if (!analysis_doc(name).empty()) set_attr(f, "/analysis/" + name, "doc", analysis_doc(name));
  }

  size_t max_layers = 0, max_curve = 0;
  for (const Result& r : results) {
    max_layers = std::max(max_layers, r.layer_test_loss.size());
    max_curve = std::max(max_curve, r.curve_step.size());
  }
  write(f, "/layers/test_loss", padded<double>(P, max_layers, kNaN, [&](size_t i) -> const auto& {
          return results[i].layer_test_loss; }), {P, max_layers});
  set_attr(f, "/layers/test_loss", "doc", std::string("MSE of the readout after layer l (column l-1), NaN-padded"));
  write(f, "/curves/step", padded<int64_t>(P, max_curve, -1, [&](size_t i) -> const auto& {
          return results[i].curve_step; }), {P, max_curve});
  write(f, "/curves/train_loss", padded<double>(P, max_curve, kNaN, [&](size_t i) -> const auto& {
          return results[i].curve_train_loss; }), {P, max_curve});
  write(f, "/curves/test_loss", padded<double>(P, max_curve, kNaN, [&](size_t i) -> const auto& {
          return results[i].curve_test_loss; }), {P, max_curve});

  for (size_t i = 0; i < P; ++i) {
    if (results[i].theta.empty()) continue;   // pending: nothing learned yet
    const std::string g = "/weights/" + std::to_string(i);
    const uint64_t L = points[i].layers, H = points[i].heads, D = points[i].d + 1;
    write(f, g + "/theta", results[i].theta);
    if (!results[i].P.empty()) {
      write(f, g + "/P", results[i].P, {L, H, D, D});
      write(f, g + "/Q", results[i].Q, {L, H, D, D});
    }
  }
}

}  // namespace

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void write_results_file(const std::string& path, const std::vector<Point>& points,
                        const std::vector<Result>& results, const std::string& spec_text,
                        const Attributes& extra, const std::vector<int>& replica) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    File f = File::create_truncate(tmp);
    write_all(f, points, results, spec_text, extra, replica);
    seal(f, points.size());
    f.close();
    // On disk before the rename makes it the result.
    const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      const IoError e = io_error("cannot sync", tmp);
      if (fd >= 0) ::close(fd);
      throw e;
    }
    ::close(fd);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const IoError e = io_error("cannot rename " + tmp + " to", path);
    std::remove(tmp.c_str());
    throw e;
  }
}

}  // namespace icl::io
