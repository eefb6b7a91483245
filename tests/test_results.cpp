// The HDF5 result file of a trained point, read back: every option column, metrics, curves, weights and
// the provenance attributes; a failed write leaves nothing behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

#include "icl/analysis/metrics.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/layout.hpp"
#include "icl/io/point_log.hpp"
#include "icl/io/results.hpp"
#include "icl/run/options.hpp"
#include "icl/run/run_point.hpp"

namespace icl {
namespace {

TEST(Results, TrainedPointRoundTripsThroughHdf5) {
  Point p;
  ASSERT_EQ(point_set(p, "layers", "2"), "");
  ASSERT_EQ(point_set(p, "steps", "30"), "");
  ASSERT_EQ(point_set(p, "eval_every", "10"), "");
  ASSERT_EQ(point_set(p, "batch", "64"), "");
  ASSERT_EQ(point_set(p, "eval_tasks", "100"), "");
  ASSERT_EQ(point_set(p, "noise", "set:1,3"), "");
  const Result r = run_point(p);
  ASSERT_EQ(r.status, Status::ok);
  const std::string path = ::testing::TempDir() + "/icl_results_" + std::to_string(::getpid()) + ".h5";
  std::remove(path.c_str());
  io::write_results_file(path, io::MemoryRows({p}, {r}), point_to_text(p));

  const io::File f = io::File::open_read(path);
  EXPECT_EQ(io::get_attr_string(f, "/", "format"), "icl-sweep results");
  EXPECT_EQ(io::get_attr_string(f, "/", "spec"), point_to_text(p));
  EXPECT_NE(io::get_attr_string(f, "/", "loss_convention").find("not halved"), std::string::npos);
  EXPECT_FALSE(io::get_attr_string(f, "/", "git_revision").empty());
  // @methods: the registry's methods in its order, `key<TAB>label<TAB>doc`; every loss_<key> names one.
  std::string listed;
  for (const MethodInfo& m : methods()) listed += std::string(m.key) + "\t" + m.label + "\t" + m.doc + "\n";
  EXPECT_EQ(io::get_attr_string(f, "/", "methods"), listed);
  for (const std::string& n : io::list(f, "/metrics"))
    if (n.rfind("loss_", 0) == 0) { EXPECT_NE(find_method(n.substr(5)), nullptr) << n; }
  for (const OptionDef& o : option_table()) EXPECT_TRUE(io::exists(f, "/points/" + o.name)) << o.name;
  EXPECT_EQ(io::read_text_column(path, "/points/noise")[0], "set:1,3");
  EXPECT_EQ(io::read_int64(f, "/points/layers")[0], 2);
  EXPECT_EQ(io::read_text_column(path, "/points/status")[0], "ok");
  EXPECT_EQ(io::get_attr_int64(f, "/", "format_version"), io::kFormatVersion);
  EXPECT_EQ(io::get_attr_string(f, "/", "builds"), io::build_identity() + "\n");
  EXPECT_EQ(io::read_int64(f, "/points/build")[0], 0);
  EXPECT_EQ(io::read_double(f, "/metrics/test_loss")[0], r.test_loss);
  std::vector<uint64_t> dims;
  EXPECT_EQ(io::read_double(f, "/layers/test_loss", &dims), r.layer_test_loss);
  EXPECT_EQ(dims, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(io::read_int64(f, "/curves/step"), (std::vector<int64_t>{0, 10, 20, 30}));
  EXPECT_EQ(io::read_double(f, "/curves/test_loss"), r.curve_test_loss);
  EXPECT_EQ(io::read_double(f, "/weights/theta"), r.theta);
  EXPECT_EQ(io::read_double(f, "/weights/P"), r.P);
  EXPECT_EQ(r.P.size(), 2u * 1 * 6 * 6);
  EXPECT_EQ(io::read_int64(f, "/weights/theta_index"), (std::vector<int64_t>{0, static_cast<int64_t>(r.theta.size())}));
  EXPECT_EQ(io::read_int64(f, "/weights/pq_index"), (std::vector<int64_t>{0, static_cast<int64_t>(r.P.size())}));
  // The file holds exactly the declared layout: every declared dataset, and nothing undeclared.
  std::set<std::string> declared, families;
  for (const io::Entry& e : io::layout())
    for (const std::string& d : io::paths_of(e)) {
      if (e.shape == io::Shape::attribute) continue;
      if (d.find('<') != std::string::npos || d.back() == '*') families.insert(d.substr(0, d.rfind('/')));
      else declared.insert(d);
    }
  for (const std::string& d : declared) EXPECT_TRUE(io::exists(f, d)) << d;
  for (const char* g : {"/points", "/metrics", "/analysis", "/layers", "/curves", "/weights"})
    for (const std::string& n : io::list(f, g)) EXPECT_TRUE(declared.count(std::string(g) + "/" + n) || families.count(g)) << g << "/" << n;
  std::remove(path.c_str());
}

std::vector<Result> read_back(const std::string& path, io::Verification* v) {
  *v = io::verify_results_file(path);
  std::vector<Result> out(static_cast<size_t>(std::max<int64_t>(v->n_points, 0)), pending_result());
  io::read_results_file(path, *v, [&](int64_t i, Result&& r, const std::string& build) {
    EXPECT_EQ(build, io::build_identity());
    out[static_cast<size_t>(i)] = std::move(r);
  });
  return out;
}

// Rewrites one row of a dataset in place, through HDF5 (its checksums stay valid): only the digest can tell.
void overwrite_row(const std::string& path, const std::string& dataset, uint64_t row, const void* bytes) {
  io::File f = io::File::open_write(path);
  io::Rows r = io::Rows::open(f, dataset);
  std::vector<char> buf(r.row_bytes());
  std::memcpy(buf.data(), bytes, buf.size());
  r.write(row, 1, buf.data());
  f.close();
}

// Three points: trained, failed (NaN everywhere but its reason), pending.  Read back, the finished rows
// are bitwise the results written; rewritten, the file's datasets are bitwise the same; a flipped byte
// is named by verify; a failed point stores NaN, never zeros.
TEST(Results, FinishedRowsReadBackBitwiseAndDamageIsNamed) {
  Point p;
  ASSERT_EQ(point_set(p, "steps", "20"), "");
  ASSERT_EQ(point_set(p, "eval_every", "10"), "");
  ASSERT_EQ(point_set(p, "batch", "32"), "");
  ASSERT_EQ(point_set(p, "eval_tasks", "50"), "");
  Result ok = run_point(p);
  ASSERT_EQ(ok.status, Status::ok);
  ok.message = "row-zero-marker";
  const std::vector<Result> rs = {ok, failed_result("row-one-marker"), pending_result()};
  const std::string path = ::testing::TempDir() + "/icl_results_rt_" + std::to_string(::getpid()) + ".h5";
  std::remove(path.c_str());
  io::write_results_file(path, io::MemoryRows({p, p, p}, rs), "spec");
  {
    const io::File f = io::File::open_read(path);
    for (const char* m : {"test_loss", "train_loss", "steps_done", "wall_seconds"})
      EXPECT_TRUE(std::isnan(io::read_double(f, std::string("/metrics/") + m)[1])) << m;
    EXPECT_EQ(io::read_text_column(path, "/points/message")[1], "row-one-marker");
    EXPECT_EQ(io::read_text_column(path, "/points/analysis_status")[0], "ok");
  }
  io::Verification v;
  const std::vector<Result> back = read_back(path, &v);
  EXPECT_TRUE(v.problems.empty()) << v.problems[0];
  EXPECT_TRUE(v.attributes_intact);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].theta, ok.theta);
  EXPECT_EQ(back[0].P, ok.P);
  EXPECT_EQ(back[0].curve_step, ok.curve_step);
  EXPECT_EQ(back[0].curve_test_loss, ok.curve_test_loss);
  EXPECT_EQ(back[0].layer_test_loss, ok.layer_test_loss);
  for (const auto& [k, x] : ok.metrics) EXPECT_EQ(std::memcmp(&back[0].metrics.at(k), &x, 8), 0) << k;
  EXPECT_EQ(back[1].status, Status::failed);
  EXPECT_EQ(back[2].status, Status::pending);
  const std::string again = path + ".again.h5";
  io::write_results_file(again, io::MemoryRows({p, p, p}, back), "spec");
  for (const char* d : {"/metrics/test_loss", "/metrics/loss_gd", "/analysis/noise_loss_tf", "/curves/test_loss", "/layers/test_loss",
                        "/weights/theta", "/points/row_digest"})
  {
    const std::vector<double> x = io::read_double(io::File::open_read(again), d), y = io::read_double(io::File::open_read(path), d);
    EXPECT_TRUE(x.size() == y.size() && std::memcmp(x.data(), y.data(), 8 * x.size()) == 0) << d;   // bitwise, NaNs too
  }

  // One changed string, rewritten through HDF5 (checksums valid): the digest names the row.
  std::string changed(io::Rows::open(io::File::open_read(path), "/points/message").row_bytes(), '\0');
  std::memcpy(changed.data(), "row-one-markeR", 14);
  overwrite_row(path, "/points/message", 1, changed.data());
  v = io::verify_results_file(path);
  EXPECT_TRUE(v.row_intact[0]);
  EXPECT_FALSE(v.row_intact[1]);
  EXPECT_TRUE(v.row_intact[2]);
  ASSERT_FALSE(v.problems.empty());
  EXPECT_NE(v.problems.back().find("damaged: 1"), std::string::npos) << v.problems.back();
  // One changed weight: the flat slice is in the digest too.
  const double w = ok.theta[3] + 1;
  overwrite_row(again, "/weights/theta", 3, &w);
  v = io::verify_results_file(again);
  EXPECT_FALSE(v.row_intact[0]);
  EXPECT_TRUE(v.row_intact[1]);
  std::remove(path.c_str());
  std::remove(again.c_str());
}

struct FailAt : StageHook {
  std::string stage;
  explicit FailAt(std::string s) : stage(std::move(s)) {}
  void enter(const char* s) override {
    if (stage == s) throw std::runtime_error("boom in " + stage);
  }
};

// A failing analysis keeps the training (weights, losses, curves); a failing training is NaN + reason.
TEST(Results, FailuresKeepWhatFinishedAndAreNeverZeros) {
  Point p;
  ASSERT_EQ(point_set(p, "steps", "20"), "");
  ASSERT_EQ(point_set(p, "batch", "32"), "");
  ASSERT_EQ(point_set(p, "eval_tasks", "50"), "");
  const Result good = run_point(p);
  FailAt in_analysis("analysis"), in_train("train");
  const Result a = run_point(p, nullptr, &in_analysis);
  EXPECT_EQ(a.status, Status::ok);
  EXPECT_EQ(a.analysis_status, AnalysisStatus::failed);
  EXPECT_EQ(a.analysis_message, "boom in analysis");
  EXPECT_EQ(a.theta, good.theta);
  EXPECT_EQ(a.test_loss, good.test_loss);
  EXPECT_EQ(a.curve_test_loss, good.curve_test_loss);
  EXPECT_TRUE(a.metrics.empty());
  EXPECT_EQ(good.analysis_status, AnalysisStatus::ok);
  const Result t = run_point(p, nullptr, &in_train);
  EXPECT_EQ(t.status, Status::failed);
  EXPECT_EQ(t.message, "boom in train");
  EXPECT_TRUE(std::isnan(t.test_loss) && std::isnan(t.train_loss) && std::isnan(t.seconds_total));
  EXPECT_LT(t.steps_done, 0);   // unknown: stored as NaN
}

TEST(Results, UnwritableDestinationThrowsAndLeavesNothing) {
  Point p;
  Result r;
  r.layer_test_loss = {NAN};
  EXPECT_THROW(io::write_results_file("/nonexistent-dir/x.h5", io::MemoryRows({p}, {r}), ""), io::IoError);
}

}  // namespace
}  // namespace icl
