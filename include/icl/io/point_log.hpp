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
#include <string>
#include <vector>

#include "icl/core/result.hpp"

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
  void sync();   // fdatasync: survives a node crash; throws IoError
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

// Reads every *.log in `dir` (a missing directory is an empty scan).
LogScan scan_point_logs(const std::string& dir, uint64_t spec_hash);

// The identity of this binary, as stored in every record.
std::string build_identity();

// One record's bytes and their inverse (exposed for tests).
std::string encode_point(int64_t index, uint64_t spec_hash, double finished_unix, const Result& r,
                         const std::string& build = build_identity());
bool decode_point(const std::string& record, uint64_t spec_hash, LoggedPoint* out, std::string* why);
std::string encode_rung(int64_t index, int rung, uint64_t spec_hash, double finished_unix, const Checkpoint& c,
                        const std::string& build = build_identity());
bool decode_rung(const std::string& record, uint64_t spec_hash, LoggedRung* out, std::string* why);

}  // namespace icl::io
