// icl-sweep: linear transformers trained on in-context linear regression, one point or a sweep.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "icl/build_info.hpp"
#include "icl/cli/cli.hpp"
#include "icl/cli/stop_merge.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/io_stats.hpp"
#include "icl/io/layout.hpp"

static void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: icl-sweep <command> [options]\n\n"
               "commands:\n"
               "  train      train and evaluate one grid point (icl-sweep train --help)\n"
               "  run        run a sweep over MPI ranks: mpirun -n N icl-sweep run SPEC -o OUT.h5 (--help)\n"
               "  status     progress of a sweep, also while it runs: icl-sweep status OUT.h5\n"
               "  verify     check a sweep's file and logs against their checksums: icl-sweep verify OUT.h5 [--repair]\n"
               "  merge      merge a stopped sweep's logs into its file: icl-sweep merge OUT.h5\n"
               "  layout     print the HDF5 layout of the result files (markdown)\n"
               "  version    print version, git revision and build flags\n");
}

static int run(int argc, char** argv);

int main(int argc, char** argv) {
  const int code = run(argc, argv);
  icl::io::print_io_stats(argc > 1 ? argv[1] : "");
  if (icl::io::hdf5_unclean()) {   // every file is closed; skip HDF5's clean-up, which would crash
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

static int run(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return icl::cli::kExitUsage;
  }
  const std::string cmd = argv[1];
  if (cmd == "train") return icl::cli::train_main(argc - 1, argv + 1);
  if (cmd == "run") return icl::cli::run_main(argc - 1, argv + 1);
  if (cmd == "status") return icl::cli::status_main(argc - 1, argv + 1);
  if (cmd == "verify") return icl::cli::verify_main(argc - 1, argv + 1);
  if (cmd == "merge") return icl::cli::merge_main(argc - 1, argv + 1);
  if (cmd == "layout") {
    std::fputs(icl::io::layout_markdown().c_str(), stdout);
    return icl::cli::kExitOk;
  }
  if (cmd == "version" || cmd == "--version") {
    std::printf("icl-sweep %s (git %s)\nbuild: %s\n", icl::build::version, icl::build::git_revision, icl::build::flags);
    return icl::cli::kExitOk;
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(stdout);
    return icl::cli::kExitOk;
  }
  std::fprintf(stderr, "icl-sweep: unknown command '%s'\n", cmd.c_str());
  usage(stderr);
  return icl::cli::kExitUsage;
}
