// Point shards: exact round trip; truncation, damage and a foreign spec are detected.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "icl/io/point_file.hpp"

namespace icl {
namespace {

Result sample_result() {
  Result r;
  r.status = Status::diverged;
  r.message = "evaluation loss 1e9 at step 7";
  r.steps_done = 7;
  r.test_loss = std::nan("");
  r.train_loss = 0.125;
  r.layer_test_loss = {1.5, std::nan("")};
  r.curve_step = {0, 5};
  r.curve_train_loss = {std::nan(""), 3.25};
  r.curve_test_loss = {5.0, 4.0};
  r.theta = {0.1, -0.2, 1e-300};
  r.P = {1, 2, 3, 4};
  r.Q = {5, 6, 7, 8};
  r.seconds_train = 1.5;
  r.flops_per_step = 2e9;
  r.metrics = {{"loss_gd", 0.25}, {"align_gd_cos", 0.99}};
  r.series = {{"noise_sigma", {0, 0.5, 1}}, {"empty", {}}};
  return r;
}

bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(PointShard, RoundTripIsExactAndDamageIsDetected) {
  const std::string path = ::testing::TempDir() + "/icl_shard_" + std::to_string(::getpid()) + ".bin";
  const Result r = sample_result();
  io::write_point_shard(path, 42, 0xabcdef, r);
  int64_t index = 0;
  Result back;
  std::string why;
  ASSERT_TRUE(io::read_point_shard(path, 0xabcdef, &index, &back, &why)) << why;
  EXPECT_EQ(index, 42);
  EXPECT_EQ(back.status, r.status);
  EXPECT_EQ(back.message, r.message);
  EXPECT_TRUE(same(back.test_loss, r.test_loss));
  EXPECT_TRUE(same(back.layer_test_loss[1], r.layer_test_loss[1]));
  EXPECT_EQ(back.curve_step, r.curve_step);
  EXPECT_EQ(back.theta, r.theta);
  EXPECT_EQ(back.metrics, r.metrics);
  EXPECT_EQ(back.series, r.series);

  EXPECT_FALSE(io::read_point_shard(path, 0x123, &index, &back, &why));
  EXPECT_NE(why.find("different spec"), std::string::npos) << why;

  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  for (const bool truncate : {true, false}) {
    std::string damaged = bytes;
    if (truncate) damaged.resize(damaged.size() - 11);
    else damaged[damaged.size() / 2] ^= 0x5a;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    EXPECT_FALSE(io::read_point_shard(path, 0xabcdef, &index, &back, &why));
    EXPECT_NE(why.find(path), std::string::npos) << why;
  }
  std::remove(path.c_str());
  EXPECT_FALSE(io::read_point_shard(path, 0xabcdef, &index, &back, &why));
}

}  // namespace
}  // namespace icl
