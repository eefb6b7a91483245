#pragma once
// Finished grid points on disk: every rank process appends to a log of its own in OUT.h5.points/.
// A record is one write() of [length | "ICLPT002", spec hash, index, finish time, the Result | checksum],
// so a kill -9 leaves every earlier record intact and at most a torn last record, which the reader
// detects (length or checksum) and ignores: that point is simply recomputed on --resume.  No file is
// created per point (cheap on local disks and on cluster metadata servers alike).
#include <cstdint>
#include <string>
#include <vector>

#include "icl/core/train.hpp"

namespace icl::io {

class PointLog {
 public:
  explicit PointLog(const std::string& path);   // opened for appending; throws std::runtime_error
  ~PointLog();
  PointLog(const PointLog&) = delete;
  PointLog& operator=(const PointLog&) = delete;
  void append(int64_t index, uint64_t spec_hash, const Result& r);   // complete when it returns
  void sync();                                                       // fdatasync: survives a node crash

 private:
  std::string path_;
  int fd_ = -1;
};

struct LoggedPoint {
  int64_t index;
  double finished_unix;
  Result result;
};

struct LogScan {
  std::vector<LoggedPoint> points;     // every intact record of this spec, in file order
  std::vector<std::string> problems;   // torn or damaged records, records of other specs
};

// Reads every *.log in `dir` (a missing directory is an empty scan).
LogScan scan_point_logs(const std::string& dir, uint64_t spec_hash);

// One record's bytes and their inverse (exposed for tests).
std::string encode_point(int64_t index, uint64_t spec_hash, double finished_unix, const Result& r);
bool decode_point(const std::string& record, uint64_t spec_hash, LoggedPoint* out, std::string* why);

}  // namespace icl::io
