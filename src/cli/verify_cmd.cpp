// icl-sweep verify OUT.h5 [--repair]: checks every row and attribute of a results file against its
// digests and every record of its point logs; names what is damaged.  --repair rewrites OUT.h5 from
// its intact rows and the logs (the spec stored in the file, or --spec SPEC if that is damaged), leaving as pending what
// neither holds intact: `icl-sweep run SPEC -o OUT.h5 --resume` then recomputes exactly those.
// Exit 0: intact (or fully repaired); 1: damage remains; 2: usage, or no such file.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "icl/cli/cli.hpp"
#include "icl/cli/spec_file.hpp"
#include "icl/cli/sweep_monitor.hpp"
#include "icl/cli/sweep_output.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/point_log.hpp"
#include "icl/sweep/spec_keys.hpp"

namespace icl::cli {
namespace {

const char* const kUsage = "usage: icl-sweep verify OUT.h5 [--repair [--spec SPEC]] [--allow-mixed-builds]\n";

struct VerifyArgs {
  bool repair = false, mixed = false;
  std::string out, spec_file;
};

// kContinue, or the exit code.
int parse_verify_args(int argc, char** argv, VerifyArgs* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repair") args->repair = true;
    else if (a == "--allow-mixed-builds") args->mixed = true;
    else if (a == "--spec" && i + 1 < argc) args->spec_file = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    } else if (args->out.empty() && a[0] != '-') args->out = a;
    else {
      std::fprintf(stderr, "icl-sweep verify: argument '%s': expected one OUT.h5 and the options --repair, --spec SPEC, --allow-mixed-builds\n", a.c_str());
      return kExitUsage;
    }
  }
  if (args->out.empty()) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  if (!path_exists(args->out) && !path_exists(args->out + ".points")) {
    std::fprintf(stderr, "icl-sweep verify: argument 'OUT.h5' = '%s': no such file (nor %s.points/)\n", args->out.c_str(), args->out.c_str());
    return kExitUsage;
  }
  return kContinue;
}

// The logs' lines: their files, the intact records of this spec, another spec's and the damaged ones; whether the
// directory holds another spec's (which --resume, merge and --repair refuse).
bool print_logs(const std::string& dir, const sweep::Spec& spec) {
  int64_t points = 0, rungs = 0;
  const io::LogStats scan = io::visit_point_logs(
      dir, sweep::spec_hash(spec.text), [&](io::LoggedPoint&&, const io::RecordRef&) { ++points; },
      [&](io::LoggedRung&&, const io::RecordRef&) { ++rungs; });
  std::printf("logs        %zu file(s), %lld intact record(s) of this spec", scan.paths.size(), static_cast<long long>(points));
  if (rungs) std::printf(" and %lld rung checkpoint(s) (successive halving)", static_cast<long long>(rungs));
  std::printf("\n");
  for (const std::string& p : scan.problems) std::printf("damaged     %s\n", p.c_str());
  print_other_specs(scan.other_specs);
  return !scan.other_specs.empty();
}

// Rewrites OUT.h5 from its intact rows and the logs; the run's provenance (not in the logs) is carried
// over when the file's attributes verify.
int repair_file(const VerifyArgs& args, const io::Verification& v, const sweep::Spec& spec, const sweep::Grid& grid) {
  try {
    const io::Attributes keep = v.attributes_intact ? run_provenance(args.out, true) : io::Attributes{};
    SweepOutput output(args.out, grid, spec.text);
    OutputOptions opt;
    opt.resume = true;
    opt.repair = true;
    opt.asked = "verify --repair";
    opt.allow_mixed_builds = args.mixed;
    if (const int code = output.prepare(opt)) return code;
    const int64_t done = output.index(true).done();
    output.write(done == grid.size() ? "complete" : "incomplete", keep);
    std::printf("repaired    %s: %lld of %lld points finished and intact%s\n", args.out.c_str(), static_cast<long long>(done),
                static_cast<long long>(grid.size()), done == grid.size() ? "" : "; the rest are pending: icl-sweep run SPEC -o OUT.h5 --resume");
  } catch (const io::IoError& e) {
    std::fprintf(stderr, "icl-sweep verify: I/O error: %s\n", e.what());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int verify_main(int argc, char** argv) {
  VerifyArgs args;
  if (const int code = parse_verify_args(argc, argv, &args); code != kContinue) return code;
  const std::string& out = args.out;
  const WorkProgress progress(args.repair ? "verify --repair" : "verify");
  const io::Verification v = io::verify_results_file(out);
  size_t intact = 0;
  for (bool b : v.row_intact) intact += b;
  std::printf("file        %s: %s\n", out.c_str(),
              v.n_points < 0 ? "unreadable" : (std::to_string(intact) + " of " + std::to_string(v.n_points) + " rows intact").c_str());
  for (const std::string& p : v.problems) std::printf("damaged     %s\n", p.c_str());
  sweep::Spec spec;
  sweep::Grid grid;
  std::string why;
  const bool have_grid = stored_grid(out, args.spec_file, &spec, &grid, &why);
  const bool mixed = have_grid && print_logs(out + ".points", spec);
  const bool damaged = !v.problems.empty();
  if (!args.repair) {
    std::printf("%s\n", damaged ? "verdict     damaged: icl-sweep verify --repair recovers what the logs hold"
                         : mixed ? "verdict     intact, but its logs hold another sweep's records (other spec, above)"
                                 : "verdict     intact");
    return damaged || mixed ? kExitFailure : kExitOk;
  }
  if (!have_grid) {
    std::fprintf(stderr, "icl-sweep verify: cannot repair '%s': the spec is unusable (%s); pass the original spec file with --spec SPEC\n",
                 out.c_str(), why.c_str());
    return kExitFailure;
  }
  return repair_file(args, v, spec, grid);
}

}  // namespace icl::cli
