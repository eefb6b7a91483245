#pragma once
// The final merge of a sweep that could not write it itself.  Open MPI's mpirun forwards Ctrl-C or
// SIGTERM to the ranks and kills them one second later, whatever they are doing (an analysis, a long
// step), and a kill -9 of rank 0 leaves no time at all.  So rank 0 starts, before any work, a small
// process of its own session (`icl-sweep merge OUT.h5 --after-stop`) that waits on a pipe: when rank 0
// ends after its own final merge it says so and the process exits; when rank 0 dies first (the pipe
// closes without that word), the process takes the sweep's lock, merges the logs into OUT.h5
// (sweep_state incomplete or complete) and says so on the terminal.  While it merges, OUT.h5.points/merging
// holds its pid: a run started meanwhile waits for it instead of refusing.
#include <string>

namespace icl::cli {

class StopMerge {
 public:
  explicit StopMerge(const std::string& out);   // best effort: without it, a later `icl-sweep merge` does the same
  ~StopMerge();
  StopMerge(const StopMerge&) = delete;
  StopMerge& operator=(const StopMerge&) = delete;
  void done();   // the run wrote its final merge itself

 private:
  int pipe_ = -1;
};

// icl-sweep merge OUT.h5 [--after-stop]: merges the logs into OUT.h5 (when no run holds the lock).
int merge_main(int argc, char** argv);

// The marker of a merge in progress, in the log directory, and whether it names a live process.
std::string merging_marker(const std::string& dir);
bool merge_in_progress(const std::string& dir);

}  // namespace icl::cli
