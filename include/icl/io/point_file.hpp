#pragma once
// One finished grid point on disk: a small binary shard written atomically (temporary file, fsync,
// rename), so a kill -9 at any moment leaves either the complete shard or none.  A shard that is
// truncated or damaged fails its length or checksum test and is reported, never half-read.
#include <cstdint>
#include <string>

#include "icl/core/train.hpp"

namespace icl::io {

// Throws H5Error-free std::runtime_error with the path on I/O failure.
void write_point_shard(const std::string& path, int64_t index, uint64_t spec_hash, const Result& r);

// Returns false with `why` set if the file is missing, truncated, corrupt or from another spec.
bool read_point_shard(const std::string& path, uint64_t spec_hash, int64_t* index, Result* r, std::string* why);

}  // namespace icl::io
