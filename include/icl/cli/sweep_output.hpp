#pragma once
// OUT.h5 and OUT.h5.points/ of one sweep: everything the driver, `status` and `verify` do with them.
//   lock       an exclusive flock on the OUT.h5.points/ directory itself (deleting a lock file cannot
//              let a second run in); `status` probes it to tell a running sweep from a dead one
//   results    the per-rank point logs, plus OUT.h5's own intact finished rows (a resume after the logs
//              were deleted starts from them: they are copied into a log of their own first)
//   merge      logs -> OUT.h5, written to a temporary file and renamed (stale temporaries are removed
//              under the lock)
// Error tiers: refusals return kExitUsage with a message; I/O failures throw io::IoError, except in the
// driver's steps (begin, merge_live, end), which report them and return kExitFailure or false.
#include <cstdint>
#include <string>
#include <vector>

#include "icl/core/result.hpp"
#include "icl/io/results.hpp"
#include "icl/sweep/grid.hpp"

namespace icl::cli {

struct OutputOptions {
  bool resume = false, force = false;
  bool retry_failed = false;          // recompute failed points (and failed analyses) on resume
  bool allow_mixed_builds = false;    // accept records computed by another build of icl-sweep
};

class SweepOutput {
 public:
  SweepOutput(std::string out, const sweep::Grid& grid, std::string spec_text);
  ~SweepOutput();
  SweepOutput(const SweepOutput&) = delete;
  SweepOutput& operator=(const SweepOutput&) = delete;

  // Rank 0, before any work: refuse (kExitUsage, message printed) or take the lock, clean stale
  // temporaries, check the spec and builds of what is there, import OUT.h5's finished rows into the logs.
  int prepare(const OutputOptions& opt);
  // The best record of every point so far (ok over diverged over failed; first wins a tie); `done`
  // counts points that need no more work under `retry_failed`.
  std::vector<Result> gather(bool retry_failed, int* done, std::vector<std::string>* problems = nullptr) const;
  // Writes OUT.h5 from `results` with sweep_state `state`.
  void write(const std::vector<Result>& results, const std::string& state, const io::Attributes& extra) const;

  // The driver's steps on rank 0 (run_cmd.cpp), each reporting its own failures:
  // begin: prepare, then the first merge (sweep_state "running"); `finished_before[i]` = 1 for the
  //   points earlier runs finished (the vector has one entry per point), `done` counts them.
  //   Returns 0, kExitUsage (refused) or kExitFailure (I/O error).
  int begin(const OutputOptions& opt, const io::Attributes& extra, std::vector<uint8_t>* finished_before, int* done);
  // A merge while the sweep runs; false (a warning printed) on an I/O error: the logs keep every result.
  bool merge_live(const std::vector<Result>& so_far, const io::Attributes& extra) const;
  // The final merge (sweep_state "complete" or "incomplete", with ended_utc) of `results` = gather().
  // Returns 0 or kExitFailure (I/O error: the logs keep every result, --resume writes them).
  int end(bool retry_failed, const io::Attributes& extra, std::vector<Result>* results, int* done) const;

  const std::string& dir() const { return dir_; }
  size_t points() const { return grid_.points.size(); }
  uint64_t hash() const { return hash_; }
  std::string hash_text() const;

 private:
  bool lock();   // the exclusive flock on dir_ (retried briefly: `status` probes it)
  // --resume: OUT.h5's spec and build must be ours; its intact finished rows go to `rows`.
  int read_resumed(const OutputOptions& opt, std::vector<Result>* rows) const;
  // --resume: the logs' builds must be ours; `rows` missing from the logs are appended to a log.
  int import_rows(const OutputOptions& opt, const std::vector<Result>& rows) const;

  std::string out_, dir_, spec_text_;
  const sweep::Grid& grid_;
  uint64_t hash_;
  int lock_fd_ = -1;
};

// True if a sweep process holds the lock on `dir` now.
bool sweep_running(const std::string& dir);
// Whether a record needs no more work (failed points and analyses do, under retry_failed).
bool finished(const Result& r, bool retry_failed);

}  // namespace icl::cli
