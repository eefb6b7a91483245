#pragma once
// Results in HDF5 (layout in README.md, "HDF5 layout").  A `train -o` file is a sweep file with one
// point, so the same loaders read both.
#include <string>
#include <vector>

#include "icl/core/point.hpp"
#include "icl/core/train.hpp"

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

}  // namespace icl::io
