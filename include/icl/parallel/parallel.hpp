#pragma once
// The only module that calls MPI (its header does not include mpi.h).  A run started without mpirun is
// a singleton MPI job of one rank.
#include <cstdint>
#include <memory>
#include <vector>

namespace icl::par {

void init(int* argc, char*** argv);
void finalize();
int rank();
int size();
void barrier();
int max_int(int v);        // the largest v over all ranks (agreeing on an outcome)
int64_t sum_int64(int64_t v);
void broadcast(std::vector<uint8_t>& bytes);   // rank 0's bytes to every rank (sizes may differ before)

// A shared counter on rank 0: next() returns 0, 1, 2, ... across all ranks, each value exactly once,
// without rank 0 having to serve requests (one-sided MPI_Fetch_and_op): every rank, rank 0 included,
// trains while the others take work.
class Counter {
 public:
  Counter();
  ~Counter();
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;
  int64_t next();
  void exhaust();   // every later next(), on every rank, returns a value past any grid: the sweep stops

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace icl::par
