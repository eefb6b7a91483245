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
#include "icl/core/metrics.hpp"
#include "icl/core/options.hpp"
#include "icl/core/transformer.hpp"
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

// Doc, legend label and convention of an analysis dataset, from the registry the analyses own (metrics.hpp).
void describe(File& f, const std::string& path, const std::string& name) {
  MetricInfo info;
  if (!metric_info(name, &info)) return;  // the registry test keeps this from happening
  set_attr(f, path, "doc", info.doc);
  if (!info.label.empty()) set_attr(f, path, "label", info.label);
  if (!info.convention.empty()) set_attr(f, path, "convention", info.convention);
}

// Root attributes: format, provenance (build, spec), conventions, and the caller's `extra`.
void write_attributes(File& f, size_t n_points, const std::string& spec_text, const Attributes& extra) {
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
  set_attr(f, "/", "n_points", static_cast<int64_t>(n_points));
  set_attr(f, "/", "analysis_convention",
           std::string("every loss in /metrics and /analysis is plain MSE on the point's own tasks (evaluation set, "
                       "or the per-level / out-of-distribution sets named in the dataset's doc); adjusted_* = loss - "
                       "oracle ridge ([V24]); reference methods tuned on a separate seeded tuning set; GD and GD++ "
                       "are the transformer with constructed weights and c = 1"));
  for (const auto& [k, v] : extra.text) set_attr(f, "/", k, v);
  for (const auto& [k, v] : extra.integer) set_attr(f, "/", k, v);
}

// /points: one column per option (in table order), the replica, and every point's status and messages.
void write_points(File& f, const std::vector<Point>& points, const std::vector<Result>& results,
                  const std::vector<int>& replica) {
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
}

// /metrics: the training scalars of every point, then the analysis scalars by name.
void write_metrics(File& f, const std::vector<Result>& results) {
  auto metric = [&](const char* name, auto get, const char* doc) {
    std::vector<double> v;
    for (const Result& r : results) v.push_back(get(r));
    write(f, std::string("/metrics/") + name, v);
    set_attr(f, std::string("/metrics/") + name, "doc", std::string(doc));
  };
  metric("test_loss", [](const Result& r) { return r.test_loss; }, "final MSE on the fixed evaluation set");
  metric("train_loss", [](const Result& r) { return r.train_loss; }, "mean training MSE over the steps since the previous record (the last eval_every steps unless eval_log adds records)");
  metric("steps_done", [](const Result& r) { return r.steps_done < 0 ? kNaN : double(r.steps_done); }, "training steps completed");
  metric("wall_seconds", [](const Result& r) { return r.seconds_total; }, "wall-clock seconds of the whole point");
  metric("train_seconds", [](const Result& r) { return r.seconds_train; }, "seconds in training steps");
  metric("eval_seconds", [](const Result& r) { return r.seconds_eval; }, "seconds in evaluations");
  metric("steps_per_second", [](const Result& r) { return r.seconds_train > 0 ? r.steps_done / r.seconds_train : kNaN; },
         "training steps per second");
  metric("flops_per_step", [](const Result& r) { return r.flops_per_step; }, "model FLOPs of one training step");

  // Analysis scalars by name, over the union of the points' names (NaN where absent).
  std::set<std::string> names;
  for (const Result& r : results)
    for (const auto& kv : r.metrics) names.insert(kv.first);
  for (const std::string& name : names) {
    std::vector<double> v;
    for (const Result& r : results) v.push_back(r.metrics.count(name) ? r.metrics.at(name) : kNaN);
    write(f, "/metrics/" + name, v);
    describe(f, "/metrics/" + name, name);
  }
}

// /analysis: P x width series by name, over the union of the points' names (NaN-padded, NaN where absent).
void write_series(File& f, const std::vector<Result>& results) {
  const size_t P = results.size();
  std::set<std::string> names;
  for (const Result& r : results)
    for (const auto& kv : r.series) names.insert(kv.first);
  for (const std::string& name : names) {
    static const std::vector<double> none;
    size_t width = 0;
    for (const Result& r : results) width = std::max(width, r.series.count(name) ? r.series.at(name).size() : 0);
    write(f, "/analysis/" + name, padded<double>(P, width, kNaN, [&](size_t i) -> const std::vector<double>& {
            return results[i].series.count(name) ? results[i].series.at(name) : none; }), {P, width});
    describe(f, "/analysis/" + name, name);
  }
}

// /layers/test_loss (P x max layers) and /curves (P x max evaluations), padded with NaN (steps with -1).
void write_curves(File& f, const std::vector<Result>& results) {
  const size_t P = results.size();
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
}

// theta's views of an arch = transformer point, one "name layer offset rows cols" line each (row-major blocks).
std::string transformer_views(const Point& p) {
  std::string s;
  const TransformerLayout layout(transformer_shape(p));
  for (const TransformerView& v : layout.views())
    s += v.name + " " + std::to_string(v.layer) + " " + std::to_string(v.offset) + " " + std::to_string(v.rows) + " " +
         std::to_string(v.cols) + "\n";
  return s;
}

// /weights/<i>: theta, and P, Q as L x H x D x D, of every point that learned something; a transformer's
// theta carries its views as the attribute `views`.
void write_weights(File& f, const std::vector<Point>& points, const std::vector<Result>& results) {
  for (size_t i = 0; i < points.size(); ++i) {
    if (results[i].theta.empty()) continue;   // pending: nothing learned yet
    const std::string g = "/weights/" + std::to_string(i);
    const uint64_t L = points[i].layers, H = points[i].heads, D = points[i].d + 1;
    write(f, g + "/theta", results[i].theta);
    if (points[i].arch == Arch::transformer) set_attr(f, g + "/theta", "views", transformer_views(points[i]));
    if (!results[i].P.empty()) {
      write(f, g + "/P", results[i].P, {L, H, D, D});
      write(f, g + "/Q", results[i].Q, {L, H, D, D});
    }
  }
}

void write_all(File& f, const std::vector<Point>& points, const std::vector<Result>& results,
               const std::string& spec_text, const Attributes& extra, const std::vector<int>& replica) {
  write_attributes(f, points.size(), spec_text, extra);
  write_points(f, points, results, replica);
  write_metrics(f, results);
  write_series(f, results);
  write_curves(f, results);
  write_weights(f, points, results);
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
