#include "icl/parallel/parallel.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace icl::par {

namespace {
// Whether this process runs under MPI.  A process no launcher started runs alone without MPI_Init:
// a singleton MPI job costs a fork of Open MPI's daemon (0.3 s here, seconds on some nodes) and fails
// outright on login nodes where that daemon cannot start.
bool g_mpi = false;

bool launched_by_mpi() {
  if (const char* v = std::getenv("ICL_SWEEP_MPI")) return std::string(v) != "0";   // 1: a singleton MPI job
  // Open MPI's mpirun, PMIx launchers (prterun, srun --mpi=pmix), Hydra (MPICH, Intel MPI), srun, PBS's
  // pbsdsh / PALS, Cray ALPS, MVAPICH's mpirun_rsh.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "PMI_FD", "MPI_LOCALNRANKS",
                           "SLURM_STEP_NUM_TASKS", "PBS_TASKNUM", "PALS_RANKID", "ALPS_APP_PE", "MPIRUN_RANK",
                           "MV2_COMM_WORLD_SIZE"})
    if (std::getenv(name)) return true;
  return false;
}
}  // namespace

void init(int* argc, char*** argv) {
  int ready = 0;
  MPI_Initialized(&ready);
  g_mpi = ready || launched_by_mpi();
  int provided = 0;
  if (g_mpi && !ready) MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
}

void finalize() {
  if (!g_mpi) return;
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

int rank() {
  int r = 0;
  if (g_mpi) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int size() {
  int s = 1;
  if (g_mpi) MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void barrier() {
  if (g_mpi) MPI_Barrier(MPI_COMM_WORLD);
}

void idle_barrier() {
  if (!g_mpi) return;
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int max_int(int v) {
  if (!g_mpi) return v;
  int out = v;
  MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

int64_t sum_int64(int64_t v) {
  if (!g_mpi) return v;
  int64_t out = v;
  MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

void broadcast(std::vector<uint8_t>& bytes) {
  if (!g_mpi) return;
  uint64_t n = bytes.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  bytes.resize(n);
  MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD);
}

namespace {
constexpr int kTag = 7;
}

void send(int to, const std::string& bytes) {
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, kTag, MPI_COMM_WORLD);
}

bool try_receive(int* from, std::string* bytes) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &flag, &st);
  if (!flag) return false;
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  bytes->resize(static_cast<size_t>(n));
  MPI_Recv(bytes->data(), n, MPI_BYTE, st.MPI_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  *from = st.MPI_SOURCE;
  return true;
}

std::string receive(int from) {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(from, kTag, MPI_COMM_WORLD, &flag, &st);
    if (flag) {
      int n = 0;
      MPI_Get_count(&st, MPI_BYTE, &n);
      std::string bytes(static_cast<size_t>(n), '\0');
      MPI_Recv(bytes.data(), n, MPI_BYTE, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      return bytes;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

struct Counter::Impl {
  MPI_Win win = MPI_WIN_NULL;
  int64_t* base = nullptr;
  int64_t alone = 0;   // the counter of a process without MPI
};

Counter::Counter() : impl_(std::make_unique<Impl>()) {
  if (!g_mpi) return;
  const MPI_Aint bytes = rank() == 0 ? sizeof(int64_t) : 0;
  MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &impl_->base, &impl_->win);
  if (rank() == 0) *impl_->base = 0;
  MPI_Win_fence(0, impl_->win);   // the zero is visible before anyone asks
  MPI_Win_lock_all(MPI_MODE_NOCHECK, impl_->win);
}

Counter::~Counter() {
  if (!g_mpi) return;
  MPI_Win_unlock_all(impl_->win);
  MPI_Win_free(&impl_->win);
}

int64_t Counter::next() {
  if (!g_mpi) return impl_->alone++;
  const int64_t one = 1;
  int64_t got = 0;
  MPI_Fetch_and_op(&one, &got, MPI_INT64_T, 0, 0, MPI_SUM, impl_->win);
  MPI_Win_flush(0, impl_->win);
  return got;
}

void Counter::exhaust() {
  const int64_t far = int64_t{1} << 60;
  if (!g_mpi) {
    impl_->alone += far;
    return;
  }
  int64_t got = 0;
  MPI_Fetch_and_op(&far, &got, MPI_INT64_T, 0, 0, MPI_SUM, impl_->win);
  MPI_Win_flush(0, impl_->win);
}

}  // namespace icl::par
