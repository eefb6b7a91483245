#pragma once
// The only module that calls MPI (its header does not include mpi.h).  A run no MPI launcher started
// (no mpirun, mpiexec or srun environment) is one rank without MPI at all; ICL_SWEEP_MPI=1 makes it a
// singleton MPI job instead, ICL_SWEEP_MPI=0 forces the former.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace icl::par {

void init(int* argc, char*** argv);
void finalize();
int rank();
int size();
void barrier();
// A barrier that sleeps while it waits (MPI's spins a core): the ranks waiting for rank 0's final merge.
void idle_barrier();
int max_int(int v);        // the largest v over all ranks (agreeing on an outcome)
int64_t sum_int64(int64_t v);
void broadcast(std::vector<uint8_t>& bytes);   // rank 0's bytes to every rank (sizes may differ before)

// Point-to-point messages (successive halving's scheduler on rank 0 and the ranks it serves).  MPI is
// initialised with MPI_THREAD_SERIALIZED: on rank 0 one thread at a time calls MPI (the scheduler's
// service thread while the sweep runs).  Waiting polls with short sleeps, so a waiting rank leaves its
// core to the others.
void send(int to, const std::string& bytes);
bool try_receive(int* from, std::string* bytes);   // a message from any rank, if one has arrived
std::string receive(int from);                     // waits for a message from `from`

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
