// Point logs: exact round trip; a torn last record (kill -9 mid-write), a damaged record and a foreign
// spec are detected and skipped, and every intact record is still read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "icl/io/point_log.hpp"

namespace icl {
namespace {

Result sample_result(int k) {
  Result r;
  r.status = k % 2 ? Status::diverged : Status::ok;
  r.message = "point " + std::to_string(k);
  r.steps_done = 7 + k;
  r.test_loss = k == 1 ? std::nan("") : 0.5 * k;
  r.layer_test_loss = {1.5, std::nan("")};
  r.curve_step = {0, 5};
  r.curve_train_loss = {std::nan(""), 3.25};
  r.theta = {0.1 * k, -0.2, 1e-300};
  r.P = {1, 2, 3, 4};
  r.metrics = {{"loss_gd", 0.25 * k}, {"align_gd_cos", 0.99}};
  r.series = {{"noise_sigma", {0, 0.5, 1}}, {"empty", {}}};
  return r;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(PointLog, RoundTripTornTailDamageAndForeignSpec) {
  const std::string dir = ::testing::TempDir() + "/icl_log_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/a.log";
  {
    io::PointLog log(path);
    for (int k = 0; k < 3; ++k) log.append(10 + k, 0xabc, sample_result(k));
    log.sync();
  }
  io::LogScan s = io::scan_point_logs(dir, 0xabc);
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_TRUE(s.problems.empty());
  const Result want = sample_result(1);
  const Result& got = s.points[1].result;
  EXPECT_EQ(s.points[1].index, 11);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.message, want.message);
  EXPECT_TRUE(std::isnan(got.test_loss));
  EXPECT_EQ(got.theta, want.theta);
  EXPECT_EQ(got.metrics, want.metrics);
  EXPECT_EQ(got.series, want.series);
  EXPECT_GT(s.points[1].finished_unix, 1.7e9);

  EXPECT_EQ(io::scan_point_logs(dir, 0x123).points.size(), 0u);   // another spec's records are not taken
  EXPECT_EQ(io::scan_point_logs(dir, 0x123).problems.size(), 3u);

  const std::string bytes = read_all(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 13);   // torn tail
  s = io::scan_point_logs(dir, 0xabc);
  EXPECT_EQ(s.points.size(), 2u);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_NE(s.problems[0].find("torn record"), std::string::npos) << s.problems[0];

  std::string damaged = bytes;
  damaged[bytes.size() / 2] ^= 0x5a;   // inside the second record: its checksum fails, the third still reads
  std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
  s = io::scan_point_logs(dir, 0xabc);
  ASSERT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.points[0].index, 10);
  EXPECT_EQ(s.points[1].index, 12);
  EXPECT_EQ(s.problems.size(), 1u);
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
  EXPECT_TRUE(io::scan_point_logs(dir, 0xabc).points.empty());   // a missing directory is an empty scan
}

}  // namespace
}  // namespace icl
