#pragma once
// Row and attribute digests of a results file (io-internal; the contract is in results.hpp).  The
// writer sums them from the bytes it writes, the verifier from the bytes it reads, with these functions:
// a row's digest is the sum (mod 2^64) over its datasets of digest_part(digest_key(path), the row's
// stored bytes), plus row_index_part(its index); tools/python/icl_sweep/integrity.py computes the same.
#include <cstdint>
#include <string>
#include <vector>

#include "icl/io/h5.hpp"

namespace icl::io {

// The part of a digest that depends on the dataset's path only.
uint64_t digest_key(const std::string& path);
// One dataset's contribution to a row's digest: its bytes (little-endian 8-byte words, then the rest).
uint64_t digest_part(uint64_t key, const void* bytes, size_t n);
// The part of row i's digest that is its place: a row moved to another index no longer checks.
uint64_t row_index_part(uint64_t i);
// A checksum of every root attribute but `attributes_digest` itself.
uint64_t attributes_digest(const File& f);
// Writes /points/row_digest (each row's parts plus its row_index_part) and the root attribute
// attributes_digest (the last things written).
void seal(File& f, std::vector<uint64_t> row_digest);

}  // namespace icl::io
