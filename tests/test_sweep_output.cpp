// The sweep output's bookkeeping without MPI: a resume refuses records of another build (unless
// allowed), and a point with several records keeps the best (a retried failure replaces the failure).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "icl/cli/cli.hpp"
#include "icl/cli/live_view.hpp"
#include "icl/cli/stop_merge.hpp"
#include "icl/cli/sweep_monitor.hpp"
#include "icl/cli/sweep_output.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/io_stats.hpp"
#include "icl/io/point_log.hpp"
#include "icl/sweep/spec_keys.hpp"

namespace icl {
namespace {

sweep::Grid tiny_grid(sweep::Spec* spec) {
  spec->entries = {{"steps", {"5"}, "test"}, {"layers", {"1", "2"}, "test"}};
  spec->text = sweep::canonical_text(*spec);
  sweep::Grid g;
  std::vector<std::string> errors;
  EXPECT_TRUE(sweep::expand(*spec, &g, &errors)) << (errors.empty() ? "" : errors[0]);
  return g;
}

// A sweep of tiny_grid's two points, OUT.h5 = dir/s.h5 in a directory of its own, removed at the end (after a
// failed assertion too).
struct TinySweep {
  std::string dir, out;
  sweep::Spec spec;
  sweep::Grid g;
  explicit TinySweep(const std::string& tag)
      : dir(::testing::TempDir() + "/icl_" + tag + "_" + std::to_string(::getpid())), out(dir + "/s.h5") {
    ::mkdir(dir.c_str(), 0755);
    g = tiny_grid(&spec);
  }
  ~TinySweep() { std::system(("rm -rf " + dir).c_str()); }
};

// A resume over a log holding point 0 failed by `build`: refused, then taken with --allow-mixed-builds; returns
// the output so taken (prepared, holding the lock).
std::unique_ptr<cli::SweepOutput> resume_over_a_build(const TinySweep& t, const std::string& build) {
  ::mkdir((t.out + ".points").c_str(), 0755);
  std::ofstream(t.out + ".points/other.log", std::ios::binary)
      << io::encode_point(0, sweep::spec_hash(t.spec.text), 1.8e9, failed_result("x"), build);
  cli::OutputOptions opt;
  opt.resume = true;
  EXPECT_EQ(cli::SweepOutput(t.out, t.g, t.spec.text).prepare(opt), cli::kExitUsage) << build;
  opt.allow_mixed_builds = true;
  auto o = std::make_unique<cli::SweepOutput>(t.out, t.g, t.spec.text);
  EXPECT_EQ(o->prepare(opt), 0) << build;
  return o;
}

TEST(SweepOutput, ResumeRefusesAnotherBuildUnlessAllowed) {
  TinySweep t("out");
  const std::string& out = t.out;
  std::unique_ptr<cli::SweepOutput> taken = resume_over_a_build(t, "0.0.1 (git other; flags)");
  cli::SweepOutput& o = *taken;
  // The best record wins: a retried failure's success replaces it, whatever the order.
  Result good = pending_result();
  good.status = Status::ok;
  {
    io::PointLog log(out + ".points");
    log.append(0, o.hash(), good);
  }
  const cli::LogIndex& index = o.index(true);
  ASSERT_TRUE(index.has(0));
  EXPECT_EQ(index.record(0).result.status, Status::ok);
  EXPECT_EQ(index.done(), 1);
  EXPECT_FALSE(index.has(1));
  EXPECT_EQ(index.duplicates(), 1);
  // Every row keeps the build that computed it, whatever build merges it (--allow-mixed-builds never relabels).
  {
    io::PointLog log(out + ".points");
    log.append_record(io::encode_point(1, o.hash(), 1.8e9, good, "0.0.1 (git other; flags)"));
  }
  o.index(true);
  o.write("complete", {});
  const io::File f = io::File::open_read(out);
  EXPECT_EQ(io::get_attr_string(f, "/", "builds"), "0.0.1 (git other; flags)\n" + io::build_identity() + "\n");
  EXPECT_EQ(io::read_int64(f, "/points/build"), (std::vector<int64_t>{1, 0}));
}

// The same binary on another C math library (a node with another glibc: glibc 2.28, for one, replaced exp, log
// and pow) may give other last bits, so its records count as another build's.
TEST(SweepOutput, ResumeRefusesTheSameBinaryOnAnotherMathLibrary) {
  const std::string id = io::build_identity(), libm = io::libm_identity();
  ASSERT_FALSE(libm.empty());
  ASSERT_GT(id.size(), libm.size() + 1);
  ASSERT_EQ(id.substr(id.size() - libm.size() - 1), libm + ")");   // the identity names it last
  const std::string other = id.substr(0, id.size() - libm.size() - 1) + "glibc 0.0-test)";   // no host's
  TinySweep t("libm");
  std::unique_ptr<cli::SweepOutput> o = resume_over_a_build(t, other);
  o->index(true);
  o->write("incomplete", {});
  const io::File f = io::File::open_read(t.out);
  EXPECT_EQ(io::get_attr_string(f, "/", "libm"), libm);   // the file names the library that wrote it
  EXPECT_EQ(io::get_attr_string(f, "/", "builds"), other + "\n");
}

// `icl-sweep merge` (and the merge after a stopped run) takes every build's rows as they are: it computes
// nothing, and refusing left OUT.h5 `running` once a run's ranks had written rows of two builds.
TEST(SweepOutput, MergeTakesTheRowsOfEveryBuild) {
  TinySweep t("merge");
  const std::string& out = t.out;
  const sweep::Spec& spec = t.spec;
  const sweep::Grid& g = t.g;
  const std::string other = "0.0.1 (git other; flags; glibc 0.0-test)";
  {
    cli::SweepOutput o(out, g, spec.text);
    cli::OutputOptions opt;
    ASSERT_EQ(o.prepare(opt), 0);
    Result good = pending_result();
    good.status = Status::ok;
    io::PointLog(out + ".points").append(0, o.hash(), good);
    io::PointLog(out + ".points").append_record(io::encode_point(1, o.hash(), 1.8e9, good, other));
    o.index(true);
    o.write("running", {});
  }
  std::string a0 = "merge", a1 = out;
  char* argv[] = {a0.data(), a1.data()};
  ASSERT_EQ(cli::merge_main(2, argv), 0);
  const io::File f = io::File::open_read(out);
  EXPECT_EQ(io::get_attr_string(f, "/", "sweep_state"), "complete");
  const std::string builds = io::get_attr_string(f, "/", "builds");
  EXPECT_NE(builds.find(io::build_identity() + "\n"), std::string::npos) << builds;
  EXPECT_NE(builds.find(other + "\n"), std::string::npos) << builds;
}

// A process waiting for the lock whose directory is removed and made again meanwhile (a refused run removes the
// one it made; a user may delete it) won the removed directory's lock, which guards nothing: a third process
// locked the new directory beside it, and removed a live merge's temporary as a dead one.  It must hold the
// directory there now.
TEST(SweepOutput, ALockWonOnARemovedDirectoryIsTakenOnTheOneThereNow) {
  TinySweep t("relock");
  const std::string& out = t.out;
  const sweep::Spec& spec = t.spec;
  const sweep::Grid& g = t.g;
  const std::string points = out + ".points";
  ASSERT_EQ(::mkdir(points.c_str(), 0755), 0);
  const int holder = ::open(points.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_EQ(::flock(holder, LOCK_EX), 0);
  std::atomic<int> code{-1};
  std::atomic<bool> release{false};
  std::thread waiter([&] {
    cli::SweepOutput o(out, g, spec.text);
    cli::OutputOptions opt;
    opt.force = true;
    code = o.prepare(opt, true);   // blocks on the holder's lock
    while (!release) ::usleep(1000);
  });
  ::usleep(500000);   // the waiter is in flock by now (were it not, the test would pass without the race)
  ASSERT_EQ(::rmdir(points.c_str()), 0);
  ASSERT_EQ(::mkdir(points.c_str(), 0755), 0);
  ::close(holder);   // the waiter wins the removed directory's lock
  while (code < 0) ::usleep(1000);
  EXPECT_EQ(code, 0);
  const int probe = ::open(points.c_str(), O_RDONLY | O_DIRECTORY);
  EXPECT_NE(::flock(probe, LOCK_EX | LOCK_NB), 0) << "the directory there now is not locked";
  ::close(probe);
  release = true;
  waiter.join();
}

// A merge killed before its rename leaves OUT.h5.icl-merge-<hash>-<pid>.tmp.  Under the lock every such file of
// OUT.h5 is dead, whichever spec wrote it: one of a sweep started over with --force and another spec was kept
// forever.  A user's files that merely look alike stay.
TEST(SweepOutput, KilledMergesTemporariesOfAnySpecAreRemovedUnderTheLock) {
  EXPECT_TRUE(cli::is_merge_temporary("s.h5", "s.h5.icl-merge-00ff00ff00ff00ff-123.tmp"));
  for (const char* user : {"s.h5.icl-merge-00ff00ff00ff00ff-.tmp", "s.h5.icl-merge-00ff00ff00ff00f-123.tmp",
                           "s.h5.icl-merge-00FF00FF00FF00FF-123.tmp", "s.h5.icl-merge-00ff00ff00ff00ff-12a.tmp",
                           "s.h5.icl-merge-00ff00ff00ff00ff-123.tmp.bak", "t.h5.icl-merge-00ff00ff00ff00ff-123.tmp",
                           "s.h5.icl-merge-notes.tmp", "s.h5.icl-merge-", "s.h5"})
    EXPECT_FALSE(cli::is_merge_temporary("s.h5", user)) << user;
  TinySweep t("tmp");
  const std::string& out = t.out;
  const std::string other_spec = out + ".icl-merge-00ff00ff00ff00ff-4194304.tmp", user = out + ".icl-merge-notes.tmp";
  for (const std::string& f : {other_spec, user}) std::ofstream(f) << "x";
  cli::OutputOptions opt;
  opt.force = true;
  cli::SweepOutput o(out, t.g, t.spec.text);
  ASSERT_EQ(o.prepare(opt), 0);
  struct stat st {};
  EXPECT_NE(::stat(other_spec.c_str(), &st), 0) << "another spec's killed merge left its temporary";
  EXPECT_EQ(::stat(user.c_str(), &st), 0) << "a user's file was removed";
}

// A slow sweep's rate keeps its digits in units a person reads (18 points in 71 s printed "0 points/s").
TEST(Progress, RatesAndDurationsKeepTheirDigits) {
  EXPECT_EQ(cli::rate_text(18.0 / 71, "points"), "0.254 points/s");
  EXPECT_EQ(cli::rate_text(1.0 / 3600, "points"), "1 points/h");
  EXPECT_EQ(cli::rate_text(2.0 / 60, "legs"), "2 legs/min");
  EXPECT_EQ(cli::rate_text(11976, "points"), "11976 points/s");
  EXPECT_EQ(cli::rate_text(0, "points"), "0 points/s");
  EXPECT_EQ(cli::duration_text(70), "70 s");
  EXPECT_EQ(cli::duration_text(7260), "2 h 01 min");
  EXPECT_EQ(cli::duration_text(3 * 86400), "3.0 days");
  // Degenerate rates and ETAs (adversary): no NaN, no "inf days", no 300-digit number.
  EXPECT_EQ(cli::rate_text(0, "points"), "0 points/s");
  EXPECT_EQ(cli::rate_text(std::nan(""), "points"), "? points/s");
  EXPECT_EQ(cli::rate_text(HUGE_VAL, "steps"), "? steps/s");
  EXPECT_EQ(cli::duration_text(std::nan("")), "unknown");
  EXPECT_EQ(cli::duration_text(HUGE_VAL), "unknown");
  EXPECT_EQ(cli::duration_text(-5), "unknown");
  EXPECT_EQ(cli::duration_text(1e300), "1.16e+295 days");
  EXPECT_EQ(cli::duration_text(0), "0 s");
}

// The live line: what a rank trains is read back while it trains, the stage follows the point, and
// the file is gone when the process's LiveFile ends; a stale file (its writer killed) is ignored.
TEST(LiveFile, WritesThePointInFlightAndRemovesItself) {
  const std::string dir = ::testing::TempDir() + "/icl_live_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0755);
  {
    cli::LiveFile live(dir + "/r.log", 0.05);
    LiveTraining* t = live.begin(42, 1000);
    t->steps_done.store(250);
    t->test_loss.store(0.125);
    ::usleep(200000);
    std::vector<cli::InFlight> f = cli::points_in_flight(dir);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].point, 42);
    EXPECT_EQ(f[0].steps_done, 250);
    EXPECT_EQ(f[0].steps, 1000);
    EXPECT_EQ(f[0].test_loss, 0.125);
    EXPECT_EQ(f[0].stage, "train");
    t->analysing.store(true);
    ::usleep(200000);
    EXPECT_EQ(cli::points_in_flight(dir).at(0).stage, "analyse");
    live.end();
    ::usleep(200000);
    EXPECT_TRUE(cli::points_in_flight(dir).empty());   // idle: nothing in flight
  }
  EXPECT_FALSE(cli::path_exists(dir + "/r.log.live"));
  const std::string line = "7 10 100 0.5 train %lld 10";   // a writer every 10 s, last seen 35 s or 1 s ago
  for (const long long ago : {35, 1}) {
    char b[121];
    std::snprintf(b, sizeof b, "%-119s\n", (std::string(line).replace(line.find("%lld"), 4, std::to_string(::time(nullptr) - ago))).c_str());
    std::ofstream(dir + "/dead.log.live") << b;
    EXPECT_EQ(cli::points_in_flight(dir).size(), ago == 35 ? 0u : 1u) << b;
  }
  std::remove((dir + "/dead.log.live").c_str());
  ::rmdir(dir.c_str());
}

// A long command is not silent: a line of the store's counts each period, none after it ends.
TEST(Progress, LongCommandsPrintTheirWork) {
  io::io_stats().records_decoded += 1234;
  ::testing::internal::CaptureStderr();
  {
    const cli::WorkProgress progress("merge", 0.05);
    ::usleep(180000);
  }
  ::usleep(100000);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("icl-sweep merge: working for 0 s: "), std::string::npos) << err;
  EXPECT_NE(err.find(std::to_string(io::io_stats().records_decoded.load()) + " log records decoded"), std::string::npos) << err;
  const auto lines = std::count(err.begin(), err.end(), '\n');
  EXPECT_GE(lines, 2);
  EXPECT_LE(lines, 4);
}
}  // namespace
}  // namespace icl
