// The sweep output's bookkeeping without MPI: a resume refuses records of another build (unless
// allowed), and a point with several records keeps the best (a retried failure replaces the failure).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "icl/cli/cli.hpp"
#include "icl/cli/sweep_output.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/point_log.hpp"

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

TEST(SweepOutput, ResumeRefusesAnotherBuildUnlessAllowed) {
  const std::string dir = ::testing::TempDir() + "/icl_out_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0755);
  const std::string out = dir + "/s.h5";
  sweep::Spec spec;
  const sweep::Grid g = tiny_grid(&spec);
  ::mkdir((out + ".points").c_str(), 0755);
  Result r = failed_result("x");
  std::ofstream(out + ".points/other.log", std::ios::binary)
      << io::encode_point(0, sweep::spec_hash(spec.text), 1.8e9, r, "0.0.1 (git other; flags)");
  cli::OutputOptions opt;
  opt.resume = true;
  {
    cli::SweepOutput o(out, g, spec.text);
    EXPECT_EQ(o.prepare(opt), cli::kExitUsage);
  }
  opt.allow_mixed_builds = true;
  cli::SweepOutput o(out, g, spec.text);
  EXPECT_EQ(o.prepare(opt), 0);
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
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace icl
