#pragma once
// Results in HDF5 (layout in README.md, "HDF5 layout").  A `train -o` file is a sweep file with one
// point, so the same loaders read both.
#include <cstdint>
#include <string>
#include <vector>

#include "icl/core/point.hpp"
#include "icl/core/result.hpp"

namespace icl::io {

// Writes points/results to a new file at `path` (which must not exist), complete or not at all:
// the data go to `path`.tmp.<pid> first and are renamed into place.  Throws H5Error on I/O failure.
// The current time as ISO 8601 UTC, as stored in the files' *_utc attributes.
std::string utc_now();

// `extra` root attributes (sweep state, rank count, times, spec hash) are added as given.
struct Attributes {
  std::vector<std::pair<std::string, std::string>> text;
  std::vector<std::pair<std::string, int64_t>> integer;
};
void write_results_file(const std::string& path, const std::vector<Point>& points,
                        const std::vector<Result>& results, const std::string& spec_text,
                        const Attributes& extra = {}, const std::vector<int>& replica = {});

// Integrity.  Every row of OUT.h5 carries a digest (/points/row_digest) of everything stored for that
// point (every /points, /metrics, /analysis, /layers, /curves row and its /weights/<i> group), and the
// root carries `attributes_digest` over its attributes; numeric datasets also carry HDF5's Fletcher32.
struct Verification {
  int64_t n_points = -1;                // -1: the file could not be opened or has no n_points
  std::vector<bool> row_intact;         // per point: its digest matches what is stored
  std::vector<std::string> problems;    // what is damaged, by name
  bool attributes_intact = false;
  bool unverifiable = false;            // written by a version without digests: taken as it is
};
Verification verify_results_file(const std::string& path);

// The finished rows of a results file (status other than pending) whose digests match, read back into
// Results (bitwise what was written); other rows are pending_result().  Throws IoError if unreadable.
std::vector<Result> read_results_file(const std::string& path, Verification* check);

}  // namespace icl::io
