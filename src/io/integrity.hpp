#pragma once
// Row and attribute digests of a results file (io-internal; the contract is in results.hpp).
// Both are computed by reading the file back, so the writer and the verifier share one definition.
#include <cstdint>
#include <string>
#include <vector>

#include "icl/io/h5.hpp"

namespace icl::io {

// Per point, the sum over every per-point dataset of a checksum of (dataset name, the row's bytes).
// A dataset that cannot be read is named in `unreadable` and leaves its rows' digests unknown
// (`row_known` false).
std::vector<uint64_t> row_digests(const File& f, size_t P, std::vector<bool>* row_known, std::vector<std::string>* unreadable);
// A checksum of every root attribute but `attributes_digest` itself.
uint64_t attributes_digest(const File& f);
// Writes /points/row_digest and the root attribute attributes_digest (the last things written).
void seal(File& f, size_t P);

}  // namespace icl::io
