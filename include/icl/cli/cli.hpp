#pragma once
// Subcommands of the icl-sweep executable.  Each returns the process exit code:
// 0 success, 1 run-time failure (I/O), 2 bad input (nothing was written).
#include <string>

namespace icl::cli {

int train_main(int argc, char** argv);   // icl-sweep train [options]
int run_main(int argc, char** argv);     // icl-sweep run [SPEC] -o OUT.h5 (under mpirun)
int status_main(int argc, char** argv);  // icl-sweep status OUT.h5
int verify_main(int argc, char** argv);  // icl-sweep verify OUT.h5 [--repair]

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;
constexpr int kContinue = -1;   // a step of a command that did not end it: go on (any other value is the exit code)
// Another icl-sweep process holds the output's lock (a run, or the merge after one): try again later
// (sysexits' EX_TEMPFAIL).  Job scripts wait and retry on it; on 1 they stop, on 2 they never retry.
constexpr int kExitBusy = 75;
// Stopped by SIGINT (Ctrl-C), the shell's convention 128 + 2, after a clean stop.
constexpr int kExitInterrupted = 130;

bool path_exists(const std::string& path);

}  // namespace icl::cli
