#pragma once
// Finished grid points on disk: every rank process appends to a log of its own in OUT.h5.points/.
// A record is one write() of [length | "ICLPT003", spec hash, index, finish time, build, the Result |
// checksum], so a kill -9 leaves every earlier record intact and at most a torn last record, which the
// reader detects (length or checksum) and ignores: that point is simply recomputed on --resume.
// Successive halving (sweep/halving.hpp) also appends rung records, [length | "ICLRG001", spec hash, index,
// rung, finish time, build, the Checkpoint | checksum]: a point stopped at a rung, durable like a
// finished point, from which it continues bit for bit when it is promoted (in this run or a resumed one).
// A log is created exclusively under a name no other process has used (host, pid, nanoseconds), so no
// run ever appends after another run's torn tail; a reader that meets a damaged record resynchronises
// on the next record marker, so one damaged length field loses one record, not the rest of the log.
// No file is created per point (cheap on local disks and on cluster metadata servers alike).
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <string>
#include <vector>

#include "icl/base/result.hpp"

namespace icl::io {

class PointLog {
 public:
  // Creates a new log in `dir` (which must exist); throws IoError.
  explicit PointLog(const std::string& dir);
  ~PointLog();
  PointLog(const PointLog&) = delete;
  PointLog& operator=(const PointLog&) = delete;
  // Complete when it returns; on failure (disk full, ...) the partial record is cut off and IoError thrown.
  void append(int64_t index, uint64_t spec_hash, const Result& r);
  // A rung record made by encode_rung (the bytes a driver also sends to the scheduler).
  void append_record(const std::string& record);
  // fdatasync: survives a node crash.  Throws IoError, also when the log was deleted meanwhile (a
  // vanished OUT.h5.points/ is an I/O error, not a quiet loss).
  void sync();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;   // bytes of complete records
};

struct LoggedPoint {
  int64_t index;
  double finished_unix;
  std::string build;   // software version, git revision and build flags of the binary that computed it
  Result result;
};

struct LoggedRung {
  int64_t index;
  int rung;
  double finished_unix;
  std::string build;
  Checkpoint checkpoint;
};

struct LogScan {
  std::vector<LoggedPoint> points;     // every intact record of this spec, in file order
  std::vector<LoggedRung> rungs;       // every intact rung record of this spec, in file order
  std::vector<std::string> problems;   // torn or damaged records, records of other specs
  int files = 0;
};

// Reads every *.log in `dir` (a missing directory is an empty scan), holding every record in memory:
// for tests and small scans; sweeps use visit_point_logs.
LogScan scan_point_logs(const std::string& dir, uint64_t spec_hash);

// Where a record is: the file (an index into LogStats::paths), its offset and length.
struct RecordRef {
  int32_t file = -1;
  uint64_t offset = 0, length = 0;
};
// Intact records of another spec (another sweep's logs in this directory), by that spec's hash.
struct OtherSpec {
  int64_t records = 0;
  std::vector<std::string> logs;   // the logs that hold them, in the order visited
};
using OtherSpecs = std::map<uint64_t, OtherSpec>;
struct LogStats {
  std::vector<std::string> paths;      // the *.log files, sorted by name
  std::vector<std::string> problems;   // torn or damaged records
  OtherSpecs other_specs;
};
using PointVisit = std::function<void(LoggedPoint&& p, const RecordRef& where)>;
using RungVisit = std::function<void(LoggedRung&& g, const RecordRef& where)>;
// Visits every intact record of this spec in every *.log of `dir`, file by file, each in file order,
// reading through a window: time linear in the records, memory independent of them.
LogStats visit_point_logs(const std::string& dir, uint64_t spec_hash, const PointVisit& on_point, const RungVisit& on_rung = {});
// One log from byte `from` on, as visit_point_logs; returns where it stopped (its end, or in `live` mode
// the start of the first record that does not read yet: being written, or not yet seen here).  The intact records
// of other specs go to `other_specs`, or where it is null to `problems` as the rest.  Throws IoError if the log cannot be opened.
uint64_t visit_log(const std::string& path, int32_t file, uint64_t from, uint64_t spec_hash, bool live, const PointVisit& on_point,
                   const RungVisit& on_rung, std::vector<std::string>* problems, OtherSpecs* other_specs = nullptr);
// The *.log files of `dir`, sorted by name.
std::vector<std::string> log_files(const std::string& dir);
// Reads single records by where they are: exactly the record's bytes, checked.  The logs stay open, the most
// recently read of them at most (a quarter of the open-file limit, 4 to 1,024): a sweep of more logs than the process may open files (a
// 1,024-rank job under `ulimit -n 1024`, or many chained jobs) used to fail every merge with EMFILE.
class RecordReader {
 public:
  RecordReader() = default;
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;
  // Throws IoError if the record is no longer there, intact.
  std::string read(const std::string& path, const RecordRef& where);

 private:
  int open(const std::string& path);
  std::list<std::pair<std::string, int>> open_;   // path and descriptor, the most recently read first
  std::map<std::string, std::list<std::pair<std::string, int>>::iterator> by_path_;
};

// The identity of this binary, as stored in every record: its version, revision and flags, and the math
// library it runs on (libm_identity), since the same binary on another libm may give other last bits.
std::string build_identity();
// The C math library this process calls for exp, log, sin, cos, pow ("glibc 2.36"; "libm unknown" where the
// C library does not say): glibc 2.28, for one, replaced exp, log and pow.
std::string libm_identity();

// One record's bytes and their inverse (exposed for tests).
std::string encode_point(int64_t index, uint64_t spec_hash, double finished_unix, const Result& r,
                         const std::string& build = build_identity());
bool decode_point(const std::string& record, uint64_t spec_hash, LoggedPoint* out, std::string* why);
std::string encode_rung(int64_t index, int rung, uint64_t spec_hash, double finished_unix, const Checkpoint& c,
                        const std::string& build = build_identity());
bool decode_rung(const std::string& record, uint64_t spec_hash, LoggedRung* out, std::string* why);

}  // namespace icl::io
