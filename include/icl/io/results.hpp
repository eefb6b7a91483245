#pragma once
// Results in HDF5 (the layout is declared in layout.hpp).  A `train -o` file is a sweep file with one
// point, so the same loaders read both.  Writing, verifying and reading are linear in the points and
// take memory of a block of rows, not of the file.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "icl/base/point.hpp"
#include "icl/base/result.hpp"

namespace icl::io {

// The current time as ISO 8601 UTC, as stored in the files' *_utc attributes.
std::string utc_now();

// `extra` root attributes (sweep state, rank count, times, spec hash) are added as given.
struct Attributes {
  std::vector<std::pair<std::string, std::string>> text;
  std::vector<std::pair<std::string, int64_t>> integer;
};

// The rows a results file is written from, visited in point order, as often as the writer needs (it
// reads them twice: once for the shape of every dataset, once to write them in blocks, so the memory it
// takes does not grow with the number of points).  `build` is the identity of the build that computed the
// row ("" for a pending row).
class RowSource {
 public:
  using Visit = std::function<void(int64_t i, const Point& p, int replica, const Result& r, const std::string& build)>;
  virtual ~RowSource() = default;
  virtual int64_t size() const = 0;
  virtual void rows(int64_t first, int64_t n, const Visit& visit) const = 0;
  // Rows with the same key share the value of option k of the option table (-1: no such promise): the
  // writer then formats each value once, not once a row.
  virtual int64_t option_key(int64_t /*i*/, size_t /*k*/) const { return -1; }
};

// Rows held in memory: a `train` point, tests.  Every row's build is `build` (default: this binary's).
class MemoryRows : public RowSource {
 public:
  MemoryRows(std::vector<Point> points, std::vector<Result> results, std::vector<int> replica = {}, std::string build = "");
  int64_t size() const override { return static_cast<int64_t>(points_.size()); }
  void rows(int64_t first, int64_t n, const Visit& visit) const override;

 private:
  std::vector<Point> points_;
  std::vector<Result> results_;
  std::vector<int> replica_;
  std::string build_;
};

// Writes a new results file at `path`, complete or not at all: the data go to `temporary` (default
// `path`.tmp.<pid>) first, synced, and renamed into place.  Throws IoError on I/O failure.
void write_results_file(const std::string& path, const RowSource& rows, const std::string& spec_text,
                        const Attributes& extra = {}, const std::string& temporary = "");

// Integrity.  Every row carries a digest (/points/row_digest) of everything stored for that point (every
// row dataset's row and its slices of the flat datasets), and the root carries `attributes_digest` over
// its attributes; every dataset also carries HDF5's Fletcher32.
struct Verification {
  int64_t n_points = -1;                // -1: the file could not be opened or has no n_points
  std::vector<bool> row_intact;         // per point: its digest matches what is stored
  std::vector<std::string> problems;    // what is damaged, by name
  bool attributes_intact = false;
  int64_t format_version = 0;
};
Verification verify_results_file(const std::string& path);

// The finished rows of a results file whose digests match (`check` = verify_results_file), read back
// into Results (bitwise what was written) in blocks, with the build that computed each; pending and
// damaged rows are skipped.  Throws IoError if unreadable.
void read_results_file(const std::string& path, const Verification& check,
                       const std::function<void(int64_t i, Result&& r, const std::string& build)>& visit);

// The text column `path` (e.g. /points/status) of a results file, whole.  Throws IoError.
std::vector<std::string> read_text_column(const std::string& path, const std::string& column);

}  // namespace icl::io
