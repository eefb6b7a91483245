#include "icl/parallel/parallel.hpp"

#include <mpi.h>

namespace icl::par {

void init(int* argc, char*** argv) {
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) MPI_Init(argc, argv);
}

void finalize() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

int max_int(int v) {
  int out = v;
  MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

int64_t sum_int64(int64_t v) {
  int64_t out = v;
  MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

void broadcast(std::vector<uint8_t>& bytes) {
  uint64_t n = bytes.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  bytes.resize(n);
  MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD);
}

struct Counter::Impl {
  MPI_Win win = MPI_WIN_NULL;
  int64_t* base = nullptr;
};

Counter::Counter() : impl_(std::make_unique<Impl>()) {
  const MPI_Aint bytes = rank() == 0 ? sizeof(int64_t) : 0;
  MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &impl_->base, &impl_->win);
  if (rank() == 0) *impl_->base = 0;
  MPI_Win_fence(0, impl_->win);   // the zero is visible before anyone asks
  MPI_Win_lock_all(MPI_MODE_NOCHECK, impl_->win);
}

Counter::~Counter() {
  MPI_Win_unlock_all(impl_->win);
  MPI_Win_free(&impl_->win);
}

int64_t Counter::next() {
  const int64_t one = 1;
  int64_t got = 0;
  MPI_Fetch_and_op(&one, &got, MPI_INT64_T, 0, 0, MPI_SUM, impl_->win);
  MPI_Win_flush(0, impl_->win);
  return got;
}

void Counter::exhaust() {
  const int64_t far = int64_t{1} << 60;
  int64_t got = 0;
  MPI_Fetch_and_op(&far, &got, MPI_INT64_T, 0, 0, MPI_SUM, impl_->win);
  MPI_Win_flush(0, impl_->win);
}

}  // namespace icl::par
