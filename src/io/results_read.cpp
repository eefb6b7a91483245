// Reading a results file back: its integrity (row and attribute digests) and its finished rows, so
// that OUT.h5's rows are results too (a resume after the point logs were deleted starts from them).
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "icl/io/h5.hpp"
#include "icl/io/results.hpp"
#include "integrity.hpp"

namespace icl::io {
namespace {

// Row i of a (P, width) dataset, or empty if absent.
template <class V>
std::vector<V> row(const std::vector<V>& all, size_t P, size_t i) {
  if (P == 0 || all.size() % P != 0) return {};
  const size_t w = all.size() / P;
  return std::vector<V>(all.begin() + static_cast<std::ptrdiff_t>(i * w), all.begin() + static_cast<std::ptrdiff_t>((i + 1) * w));
}

Status parse_status(const std::string& s) {
  for (Status k : {Status::ok, Status::diverged, Status::failed, Status::pending, Status::cancelled, Status::pruned})
    if (s == status_name(k)) return k;
  throw H5Error("unknown point status '" + s + "'");
}

AnalysisStatus parse_analysis_status(const std::string& s) {
  for (AnalysisStatus k : {AnalysisStatus::skipped, AnalysisStatus::ok, AnalysisStatus::failed})
    if (s == analysis_status_name(k)) return k;
  throw H5Error("unknown analysis status '" + s + "'");
}

}  // namespace

Verification verify_results_file(const std::string& path) {
  Verification v;
  try {
    const File f = File::open_read(path);
    v.n_points = get_attr_int64(f, "/", "n_points");
    const size_t P = static_cast<size_t>(std::max<int64_t>(v.n_points, 0));
    if (!has_attr(f, "/", "attributes_digest") && !exists(f, "/points/row_digest")) {
      // Written before icl-sweep stored digests: nothing to check against, read as it is.
      v.row_intact.assign(P, true);
      v.attributes_intact = true;
      v.unverifiable = true;
      return v;
    }
    v.row_intact.assign(P, false);
    try {
      v.attributes_intact = has_attr(f, "/", "attributes_digest") &&
                            static_cast<uint64_t>(get_attr_int64(f, "/", "attributes_digest")) == attributes_digest(f);
    } catch (const H5Error& e) {
      v.problems.push_back(std::string("root attributes unreadable: ") + e.what());
    }
    if (!v.attributes_intact) v.problems.push_back("root attributes (spec, spec_hash, ...) do not match their digest");
    std::vector<bool> known;
    const std::vector<uint64_t> d = row_digests(f, P, &known, &v.problems);
    std::vector<int64_t> stored;
    try {
      stored = read_int64(f, "/points/row_digest");
    } catch (const H5Error& e) {
      v.problems.push_back(std::string("/points/row_digest: ") + e.what());
    }
    if (stored.size() == P) {
      std::string bad;
      int n_bad = 0;
      for (size_t i = 0; i < P; ++i) {
        v.row_intact[i] = known[i] && static_cast<uint64_t>(stored[i]) == d[i];
        if (!v.row_intact[i] && n_bad++ < 20) bad += " " + std::to_string(i);
      }
      if (n_bad) v.problems.push_back(std::to_string(n_bad) + " point row(s) damaged:" + bad + (n_bad > 20 ? " ..." : ""));
    } else if (!stored.empty()) {
      v.problems.push_back("/points/row_digest has " + std::to_string(stored.size()) + " rows, not " + std::to_string(P));
    }
  } catch (const H5Error& e) {
    v.problems.push_back(e.what());
    v.n_points = -1;
  }
  return v;
}

std::vector<Result> read_results_file(const std::string& path, Verification* check) {
  *check = verify_results_file(path);
  if (check->n_points < 0) throw IoError("cannot read '" + path + "': " + (check->problems.empty() ? "" : check->problems[0]));
  const size_t P = static_cast<size_t>(check->n_points);
  std::vector<Result> out(P, pending_result());
  const File f = File::open_read(path);
  // Every read below is of a dataset whose rows we use only where the row digest matched.
  auto strings = [&](const std::string& p) { try { return read_strings(f, p); } catch (const H5Error&) { return std::vector<std::string>{}; } };
  auto doubles = [&](const std::string& p) { try { return read_double(f, p); } catch (const H5Error&) { return std::vector<double>{}; } };
  const std::vector<std::string> status = strings("/points/status"), message = strings("/points/message");
  const std::vector<std::string> a_status = strings("/points/analysis_status"), a_message = strings("/points/analysis_message");
  const std::vector<double> layers = doubles("/points/layers");
  std::map<std::string, std::vector<double>> metrics, series;
  for (const std::string& n : list(f, "/metrics")) metrics[n] = doubles("/metrics/" + n);
  if (exists(f, "/analysis"))
    for (const std::string& n : list(f, "/analysis")) series[n] = doubles("/analysis/" + n);
  std::vector<int64_t> steps;
  try { steps = read_int64(f, "/curves/step"); } catch (const H5Error&) {}
  const std::vector<double> layer_loss = doubles("/layers/test_loss"), ctrain = doubles("/curves/train_loss"),
                            ctest = doubles("/curves/test_loss");
  static const std::set<std::string> kFixed = {"test_loss", "train_loss", "steps_done", "wall_seconds", "train_seconds",
                                                "eval_seconds", "steps_per_second", "flops_per_step"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 0; i < P; ++i) {
    if (!check->row_intact[i] || status.size() != P || status[i] == status_name(Status::pending)) {
      check->row_intact[i] = check->row_intact[i] && status.size() == P;
      continue;
    }
    Result& r = out[i];
    r.status = parse_status(status[i]);
    r.message = message.at(i);
    r.analysis_status = parse_analysis_status(a_status.at(i));
    r.analysis_message = a_message.at(i);
    const auto m = [&](const char* k) { return metrics.count(k) && metrics[k].size() == P ? metrics[k][i] : nan; };
    r.test_loss = m("test_loss");
    r.train_loss = m("train_loss");
    r.steps_done = std::isnan(m("steps_done")) ? -1 : static_cast<int64_t>(m("steps_done"));
    r.seconds_total = m("wall_seconds");
    r.seconds_train = m("train_seconds");
    r.seconds_eval = m("eval_seconds");
    r.flops_per_step = m("flops_per_step");
    for (const auto& [k, v] : metrics)
      if (!kFixed.count(k) && v.size() == P) r.metrics[k] = v[i];
    for (const auto& [k, v] : series) r.series[k] = row(v, P, i);
    r.layer_test_loss = row(layer_loss, P, i);
    if (layers.size() == P && r.layer_test_loss.size() > layers[i]) r.layer_test_loss.resize(static_cast<size_t>(layers[i]));
    r.curve_step = row(steps, P, i);
    while (!r.curve_step.empty() && r.curve_step.back() == -1) r.curve_step.pop_back();
    r.curve_train_loss = row(ctrain, P, i);
    r.curve_test_loss = row(ctest, P, i);
    r.curve_train_loss.resize(r.curve_step.size());
    r.curve_test_loss.resize(r.curve_step.size());
    const std::string g = "/weights/" + std::to_string(i);
    if (exists(f, g + "/theta")) r.theta = read_double(f, g + "/theta");
    if (exists(f, g + "/P")) {
      r.P = read_double(f, g + "/P");
      r.Q = read_double(f, g + "/Q");
    }
  }
  return out;
}

}  // namespace icl::io
