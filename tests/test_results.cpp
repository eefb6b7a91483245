// The HDF5 result file of a trained point, read back: every option column, metrics, curves, weights and
// the provenance attributes; a failed write leaves nothing behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "icl/core/options.hpp"
#include "icl/core/train.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/results.hpp"

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
  const Result r = train_point(p);
  ASSERT_EQ(r.status, Status::ok);
  const std::string path = ::testing::TempDir() + "/icl_results_" + std::to_string(::getpid()) + ".h5";
  std::remove(path.c_str());
  io::write_results_file(path, {p}, {r}, point_to_text(p));

  const io::File f = io::File::open_read(path);
  EXPECT_EQ(io::get_attr_string(f, "/", "format"), "icl-sweep results");
  EXPECT_EQ(io::get_attr_string(f, "/", "spec"), point_to_text(p));
  EXPECT_NE(io::get_attr_string(f, "/", "loss_convention").find("not halved"), std::string::npos);
  EXPECT_FALSE(io::get_attr_string(f, "/", "git_revision").empty());
  for (const OptionDef& o : option_table()) EXPECT_TRUE(io::exists(f, "/points/" + o.name)) << o.name;
  EXPECT_EQ(io::read_strings(f, "/points/noise")[0], "set:1,3");
  EXPECT_EQ(io::read_int64(f, "/points/layers")[0], 2);
  EXPECT_EQ(io::read_strings(f, "/points/status")[0], "ok");
  EXPECT_EQ(io::read_double(f, "/metrics/test_loss")[0], r.test_loss);
  std::vector<uint64_t> dims;
  EXPECT_EQ(io::read_double(f, "/layers/test_loss", &dims), r.layer_test_loss);
  EXPECT_EQ(dims, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(io::read_int64(f, "/curves/step"), (std::vector<int64_t>{0, 10, 20, 30}));
  EXPECT_EQ(io::read_double(f, "/curves/test_loss"), r.curve_test_loss);
  EXPECT_EQ(io::read_double(f, "/weights/0/theta"), r.theta);
  EXPECT_EQ(io::read_double(f, "/weights/0/P", &dims), r.P);
  EXPECT_EQ(dims, (std::vector<uint64_t>{2, 1, 6, 6}));
  std::remove(path.c_str());
}

TEST(Results, UnwritableDestinationThrowsAndLeavesNothing) {
  Point p;
  Result r;
  r.layer_test_loss = {NAN};
  EXPECT_THROW(io::write_results_file("/nonexistent-dir/x.h5", {p}, {r}, ""), io::H5Error);
}

}  // namespace
}  // namespace icl
