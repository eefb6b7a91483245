#pragma once
// Counts of the store's work (and of the halving scheduler's), for tests that check an operation is linear in the points (doubling the
// points doubles these, never quadruples them): set ICL_SWEEP_STATS=1 and every command prints them at
// exit.  Counting, not timing: the same on every machine.
#include <atomic>
#include <cstdint>

namespace icl::io {

struct IoStats {
  std::atomic<int64_t> records_decoded{0};   // log records decoded (points and rungs)
  std::atomic<int64_t> hdf5_calls{0};        // dataset creations, opens, block reads and writes, group listings
  std::atomic<int64_t> rows_read{0}, rows_written{0};
  std::atomic<int64_t> rows_formatted{0};    // option values formatted by the writer
  std::atomic<int64_t> halving_visits{0};    // successive halving's scheduler: members visited (Halving::work)
};
IoStats& io_stats();
// Prints the counts to stderr if ICL_SWEEP_STATS is set.
void print_io_stats(const char* command);

}  // namespace icl::io
