#pragma once
// OUT.h5 and OUT.h5.points/ of one sweep: everything the driver, `status`, `verify` and `merge` do with them.
//   lock       an exclusive flock on the OUT.h5.points/ directory itself (deleting a lock file cannot
//              let a second run in); `status` probes it to tell a running sweep from a dead one
//   index      the best record of every point in the per-rank logs, kept up to date incrementally (each
//              update reads only what the logs gained): 24 bytes a point
//   results    the logs, plus OUT.h5's own intact finished rows (a resume after the logs were deleted
//              starts from them: they are copied into a log of their own first, each with its build)
//   merge      index -> OUT.h5 in one linear pass, written to a temporary file of a name only a merge
//              makes and renamed; the rows are read from the logs as they are written
// Error tiers: refusals return kExitUsage with a message; I/O failures throw io::IoError, except in the
// driver's steps (begin, merge_live, end), which report them and return kExitFailure or false.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "icl/base/result.hpp"
#include "icl/io/point_log.hpp"
#include "icl/io/results.hpp"
#include "icl/sweep/grid.hpp"

namespace icl::cli {

struct OutputOptions {
  bool resume = false, force = false;
  bool retry_failed = false;          // recompute failed points (and failed analyses) on resume
  bool allow_mixed_builds = false;    // accept records computed by another build of icl-sweep
  bool repair = false;                // verify --repair: rebuild OUT.h5 even if its attributes are damaged
  const char* asked = "--resume";     // what asked to continue the output: its refusals begin with it
};

// Lower is better: the record a point keeps when it has several (a retried failure, a duplicate).
int record_rank(const Result& r);
// Whether a record needs no more work (failed points and analyses do, under retry_failed).
bool finished(const Result& r, bool retry_failed);

// The best record of every point in a sweep's logs.
class LogIndex {
 public:
  LogIndex(std::string dir, uint64_t hash, int64_t points, bool retry_failed);
  // Reads what the logs gained since the last call.  Live (`final` false): a record still being written
  // at a log's end is waited for, not counted as damage.  Throws IoError if a log seen before vanished.
  void update(bool final);
  int64_t done() const { return done_; }                       // points that need no more work
  bool has(int64_t i) const { return best_[i].rank < kNone; }
  int rank(int64_t i) const { return best_[i].rank; }           // record_rank of its best record (255: none)
  bool is_finished(int64_t i) const { return best_[i].finished; }
  // The best record of point i (has(i) must hold), with the build that computed it.
  io::LoggedPoint record(int64_t i) const;
  // f(i, the best record of point i, or null where it has none) for i = first .. first + n - 1 in order, the records
  // read in runs of about 32 MB, each run log by log in file order: each log opened once a run, however many logs
  // there are and however few may be open at once, and memory bounded however many points are asked for.
  void visit_records(int64_t first, int64_t n, const std::function<void(int64_t i, const io::LoggedPoint* r)>& f) const;
  const std::set<std::string>& builds() const { return builds_; }
  const std::vector<std::string>& problems() const { return problems_; }
  const io::OtherSpecs& other_specs() const { return other_specs_; }   // another sweep's records
  int64_t records() const { return records_; }
  int64_t duplicates() const { return duplicates_; }
  double first_finish() const { return first_; }
  double last_finish() const { return last_; }

 private:
  static constexpr uint8_t kNone = 255;
  struct Best {
    int32_t file = -1;
    uint8_t rank = kNone;
    bool finished = false;
    uint64_t offset = 0, length = 0;
  };
  std::string dir_;
  uint64_t hash_;
  bool retry_failed_;
  std::vector<Best> best_;
  std::vector<std::string> paths_;              // by file id
  std::map<std::string, int32_t> ids_;
  std::vector<uint64_t> scanned_;   // bytes of each log read so far
  std::set<std::string> builds_;
  std::vector<std::string> problems_;
  io::OtherSpecs other_specs_;
  int64_t done_ = 0, records_ = 0, duplicates_ = 0;
  double first_ = 1e300, last_ = 0;
  mutable io::RecordReader reader_;
};

class SweepOutput {
 public:
  SweepOutput(std::string out, const sweep::Grid& grid, std::string spec_text);
  ~SweepOutput();
  SweepOutput(const SweepOutput&) = delete;
  SweepOutput& operator=(const SweepOutput&) = delete;

  // Rank 0, before any work: refuse (kExitUsage, message printed) or take the lock, remove this sweep's
  // stale temporaries, check the identity and builds of what is there, import OUT.h5's finished rows
  // into the logs.  `wait_lock`: wait for the lock (a merge after a stop) instead of refusing.
  int prepare(const OutputOptions& opt, bool wait_lock = false);
  // Brings the index up to date (see LogIndex::update) and returns it.
  const LogIndex& index(bool final) const;
  // Writes OUT.h5 from the index with sweep_state `state`.
  void write(const std::string& state, const io::Attributes& extra) const;

  // The driver's steps on rank 0 (run_cmd.cpp), each reporting its own failures:
  // begin: prepare, then the first merge (sweep_state "running"); `finished_before[i]` = 1 for the
  //   points earlier runs finished (the vector has one entry per point), `done` counts them.
  //   Returns 0, kExitUsage (refused) or kExitFailure (I/O error).
  int begin(const OutputOptions& opt, const io::Attributes& extra, std::vector<uint8_t>* finished_before, int64_t* done);
  // A merge while the sweep runs; false (a warning printed) on an I/O error: the logs keep every result.
  bool merge_live(const io::Attributes& extra) const;
  // The final merge (sweep_state "complete" or "incomplete", with ended_utc).  Returns 0 or
  // kExitFailure (I/O error: the logs keep every result, --resume writes them).
  int end(const io::Attributes& extra, int64_t* done) const;

  const std::string& dir() const { return dir_; }
  const std::string& out() const { return out_; }
  int64_t points() const { return grid_.size(); }
  const sweep::Grid& grid() const { return grid_; }
  uint64_t hash() const { return hash_; }
  std::string hash_text() const;
  bool retry_failed() const { return retry_failed_; }

 private:
  bool lock(bool wait);   // the exclusive flocks on dir_ and dir_/lock as they are now (retried briefly: `status` probes them)
  bool acquire(int fd, bool wait) const;   // flock on fd: blocking, or retried while `status` probes or a merge runs
  static bool still_there(int fd, const std::string& path);
  bool cluster_lock_unsupported(int error);
  void release();   // both locks
  int prepare_locked(const OutputOptions& opt);   // prepare's steps that need the lock
  // --resume: OUT.h5's identity (format, attributes, spec, builds) must be ours; refusals print why.
  int check_identity(const OutputOptions& opt, io::Verification* v) const;
  int check_logs_spec(const OutputOptions& opt) const;     // exit 2 where the logs hold records of another spec
  int check_repair_spec(const OutputOptions& opt) const;   // exit 2 unless the logs or an intact attribute name this spec
  // --resume: OUT.h5's intact finished rows that the logs lack go to a log of their own.
  void import_rows(const io::Verification& v) const;
  std::string temporary() const;   // OUT.h5.icl-merge-<spec hash>-<pid>.tmp, where a merge writes

  std::string out_, dir_, spec_text_;
  const sweep::Grid& grid_;
  uint64_t hash_;
  bool retry_failed_ = false;
  int lock_fd_ = -1;               // dir_, flocked
  int file_lock_fd_ = -1;          // dir_/lock, flocked (or unlockable here: cluster_lock_unsupported)
  bool made_dir_ = false;          // lock() created dir_ (a refusal removes it again while it is empty)
  bool other_node_ = false;        // lock() failed on dir_/lock alone: held where dir_'s lock is not seen
  mutable std::mutex mu_;          // the index is updated by the monitor thread and the main thread
  mutable std::unique_ptr<LogIndex> index_;
};

// The grid of `spec_file`, or else of the spec stored in OUT.h5 (read as `run` reads a spec file).
bool stored_grid(const std::string& out, const std::string& spec_file, sweep::Spec* spec, sweep::Grid* grid, std::string* why);

// The run's provenance in OUT.h5's root (spec_file, started_utc, rank_count, and ended_utc if `with_end`),
// which a rewrite of the file from the logs (merge, verify --repair) carries over: the logs do not hold it.
// Whatever cannot be read is left out.
io::Attributes run_provenance(const std::string& out, bool with_end);

// True if a sweep process holds the lock on `dir` now.
bool sweep_running(const std::string& dir);

// status's and verify's line for each other spec whose records the logs hold: how many, which logs.
void print_other_specs(const io::OtherSpecs& other);

// Whether `name`, in OUT.h5's directory, is a merge's temporary of OUT.h5 (its file name `base`): of any spec and
// any process; a user's file never matches.
bool is_merge_temporary(const std::string& base, const std::string& name);

}  // namespace icl::cli
