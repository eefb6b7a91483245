// icl-sweep: linear transformers trained on in-context linear regression, one point or a sweep.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "icl/build_info.hpp"
#include "icl/cli/cli.hpp"
#include "icl/cli/stop_merge.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/io_stats.hpp"
#include "icl/io/layout.hpp"
#include "icl/io/point_log.hpp"

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

// Freed memory stays with the process for the next set or point. By default glibc trims the heap's free top and
// maps blocks above a threshold (raised from 128 KiB towards 32 MiB as they are freed) on their own, so a block
// freed and allocated again comes back a page fault at a time: an analysis draws and frees dozens of task sets
// of 1-12 MB a point, and 15% of a [VO23] Fig. 2 point's analysis was page faults and the allocator's
// (docs/performance.md, "Three changes to the analyses"). The threshold is held at 32 MiB, glibc's own largest
// (every glibc accepts it; above it, blocks are mapped and returned on their own, as before, so no larger hole
// stays in the heap), and the trim is set only then (setting it fixes the threshold). A rank's memory is
// planned at its largest point (max_point_memory), and the heap keeps at most its own peak.
static void keep_freed_memory() {
#if defined(__GLIBC__)
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1) mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int main(int argc, char** argv) {
  keep_freed_memory();
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
    std::printf("icl-sweep %s (git %s)\nbuild: %s\nlibm: %s\n", icl::build::version, icl::build::git_revision, icl::build::flags,
                icl::io::libm_identity().c_str());
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
