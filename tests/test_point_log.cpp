// Point logs: exact round trip (build identity and analysis status included); a torn last record
// (kill -9 mid-write), a damaged record, a damaged length field and a foreign spec are detected and
// skipped, and every intact record is still read; logs are created exclusively, never appended to
// by another run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

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
  r.analysis_status = k == 2 ? AnalysisStatus::failed : AnalysisStatus::ok;
  r.analysis_message = k == 2 ? "analysis broke" : "";
  return r;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A new log in a new `dir` holding points 10, 11, 12 (sample_result(0..2)) of spec 0xabc; returns its path.
std::string three_records(const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  io::PointLog log(dir);
  for (int k = 0; k < 3; ++k) log.append(10 + k, 0xabc, sample_result(k));
  log.sync();
  return log.path();
}

TEST(PointLog, RoundTripTornTailDamageAndForeignSpec) {
  const std::string dir = ::testing::TempDir() + "/icl_log_" + std::to_string(::getpid());
  const std::string path = three_records(dir);
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
  EXPECT_EQ(s.points[1].build, io::build_identity());
  EXPECT_EQ(s.points[2].result.analysis_status, AnalysisStatus::failed);
  EXPECT_EQ(s.points[2].result.analysis_message, "analysis broke");

  EXPECT_EQ(io::scan_point_logs(dir, 0x123).points.size(), 0u);   // another spec's records are not taken
  EXPECT_EQ(io::scan_point_logs(dir, 0x123).problems, std::vector<std::string>{path + ": records of a different spec"});
  // ... and are counted by their spec, with their logs, not as damage (a resume or repair refuses a directory that
  // holds another sweep's)
  const io::LogStats other = io::visit_point_logs(dir, 0x123, [](io::LoggedPoint&&, const io::RecordRef&) {});
  ASSERT_EQ(other.other_specs.size(), 1u);
  EXPECT_EQ(other.other_specs.begin()->first, 0xabcu);
  EXPECT_EQ(other.other_specs.begin()->second.records, 3);
  EXPECT_EQ(other.other_specs.begin()->second.logs, std::vector<std::string>{path});
  EXPECT_TRUE(other.problems.empty());
  EXPECT_TRUE(io::visit_point_logs(dir, 0xabc, [](io::LoggedPoint&&, const io::RecordRef&) {}).other_specs.empty());

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

  // A damaged length field: the reader resynchronises on the next record marker.
  const size_t second = static_cast<size_t>(*reinterpret_cast<const uint64_t*>(bytes.data())) + 16;
  damaged = bytes;
  damaged[second + 2] ^= 0x40;   // the second record's length now points far beyond the file
  std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
  s = io::scan_point_logs(dir, 0xabc);
  ASSERT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.points[1].index, 12);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_NE(s.problems[0].find("damaged record"), std::string::npos) << s.problems[0];
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
  EXPECT_TRUE(io::scan_point_logs(dir, 0xabc).points.empty());   // a missing directory is an empty scan
}

// A live read (the merges while a sweep runs) stops at a record that does not read yet and reads it next time:
// on NFS another node's later record can be visible before an earlier one (a hole of zeros).  Skipped as damage,
// the earlier record was lost to every later merge of the run, which read on from past it.  A final read still
// skips real damage and reads on.
TEST(PointLog, LiveReadWaitsAtAHoleForTheRecordInIt) {
  const std::string dir = ::testing::TempDir() + "/icl_hole_" + std::to_string(::getpid());
  const std::string path = three_records(dir);
  std::vector<io::RecordRef> refs;
  const auto keep = [&](io::LoggedPoint&&, const io::RecordRef& r) { refs.push_back(r); };
  std::vector<std::string> problems;
  ASSERT_EQ(io::visit_log(path, 0, 0, 0xabc, false, keep, {}, &problems), read_all(path).size());
  ASSERT_EQ(refs.size(), 3u);
  const std::string bytes = read_all(path);
  std::string hole = bytes;
  std::fill(hole.begin() + static_cast<long>(refs[1].offset), hole.begin() + static_cast<long>(refs[2].offset), '\0');
  std::ofstream(path, std::ios::binary | std::ios::trunc) << hole;

  std::vector<int64_t> seen;
  const auto note = [&](io::LoggedPoint&& p, const io::RecordRef&) { seen.push_back(p.index); };
  problems.clear();
  const uint64_t stop = io::visit_log(path, 0, 0, 0xabc, true, note, {}, &problems);
  EXPECT_EQ(stop, refs[1].offset);
  EXPECT_EQ(seen, std::vector<int64_t>{10});
  EXPECT_TRUE(problems.empty());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;   // the record arrives
  EXPECT_EQ(io::visit_log(path, 0, stop, 0xabc, true, note, {}, &problems), bytes.size());
  EXPECT_EQ(seen, (std::vector<int64_t>{10, 11, 12}));

  std::ofstream(path, std::ios::binary | std::ios::trunc) << hole;   // final: damage told and skipped
  seen.clear();
  EXPECT_EQ(io::visit_log(path, 0, 0, 0xabc, false, note, {}, &problems), bytes.size());
  EXPECT_EQ(seen, (std::vector<int64_t>{10, 12}));
  EXPECT_EQ(problems.size(), 1u);
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

TEST(PointLog, EveryLogIsNewAndNeverAppendedAfterATornTail) {
  const std::string dir = ::testing::TempDir() + "/icl_log2_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0755);
  std::string first;
  {
    io::PointLog a(dir);
    first = a.path();
    a.append(1, 7, sample_result(0));
  }
  const std::string bytes = read_all(first);
  std::ofstream(first, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 5);   // killed mid-write
  {
    io::PointLog b(dir);   // the same process (same host and pid, as a container restart would give)
    EXPECT_NE(b.path(), first);
    b.append(2, 7, sample_result(1));
  }
  const io::LogScan s = io::scan_point_logs(dir, 7);
  ASSERT_EQ(s.points.size(), 1u);
  EXPECT_EQ(s.points[0].index, 2);
  EXPECT_EQ(s.files, 2);
  std::system(("rm -rf " + dir).c_str());
}

// Rung records (successive halving's checkpoints) share the logs with point records: exact round trip of
// the checkpoint, both kinds read back, and a damaged point record between two rung records loses only
// itself (the reader resynchronises on either record marker).
TEST(PointLog, RungRecordsRoundTripBesidePointRecords) {
  const std::string dir = ::testing::TempDir() + "/icl_log3_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0755);
  Checkpoint c;
  c.run = sample_result(0);
  c.opt_m = {1e-3, -2.5};
  c.opt_v = {4e-8, std::nan("")};
  c.opt_t = 1234;
  c.initial_eval_loss = 9.75;
  std::string path;
  {
    io::PointLog log(dir);
    path = log.path();
    log.append_record(io::encode_rung(5, 1, 0xabc, 1.8e9, c));
    log.append(6, 0xabc, sample_result(1));
    log.append_record(io::encode_rung(7, 0, 0xabc, 1.8e9, c));
  }
  io::LogScan s = io::scan_point_logs(dir, 0xabc);
  ASSERT_EQ(s.rungs.size(), 2u);
  ASSERT_EQ(s.points.size(), 1u);
  EXPECT_TRUE(s.problems.empty());
  const io::LoggedRung& g = s.rungs[0];
  EXPECT_EQ(g.index, 5);
  EXPECT_EQ(g.rung, 1);
  EXPECT_EQ(g.checkpoint.run.theta, c.run.theta);
  EXPECT_EQ(g.checkpoint.run.curve_step, c.run.curve_step);
  EXPECT_EQ(g.checkpoint.opt_m, c.opt_m);
  EXPECT_EQ(g.checkpoint.opt_v[0], c.opt_v[0]);
  EXPECT_TRUE(std::isnan(g.checkpoint.opt_v[1]));
  EXPECT_EQ(g.checkpoint.opt_t, 1234);
  EXPECT_EQ(g.checkpoint.initial_eval_loss, 9.75);
  EXPECT_EQ(s.rungs[1].index, 7);

  const std::string bytes = read_all(path);
  std::string damaged = bytes;
  const size_t first = static_cast<size_t>(*reinterpret_cast<const uint64_t*>(bytes.data())) + 16;
  damaged[first + 2] ^= 0x40;   // the point record's length field
  std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
  s = io::scan_point_logs(dir, 0xabc);
  EXPECT_EQ(s.rungs.size(), 2u);
  EXPECT_EQ(s.points.size(), 0u);
  EXPECT_EQ(s.problems.size(), 1u);
  io::LoggedRung other;
  std::string why;
  EXPECT_FALSE(io::decode_rung(io::encode_rung(5, 1, 0xabc, 1.8e9, c), 0x123, &other, &why));
  EXPECT_NE(why.find("different spec"), std::string::npos) << why;
  std::system(("rm -rf " + dir).c_str());
}

TEST(PointLog, AnotherBuildIsRecorded) {
  const std::string rec = io::encode_point(3, 9, 1.8e9, sample_result(0), "0.0.1 (git deadbeef; other flags)");
  io::LoggedPoint p;
  std::string why;
  ASSERT_TRUE(io::decode_point(rec, 9, &p, &why)) << why;
  EXPECT_EQ(p.build, "0.0.1 (git deadbeef; other flags)");
  EXPECT_NE(p.build, io::build_identity());
}

}  // namespace
}  // namespace icl
