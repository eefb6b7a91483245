#include "icl/cli/stop_merge.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "icl/cli/cli.hpp"
#include "icl/cli/sweep_monitor.hpp"
#include "icl/cli/sweep_output.hpp"
#include "icl/io/h5.hpp"

extern char** environ;

namespace icl::cli {

std::string merging_marker(const std::string& dir) { return dir + "/merging"; }

bool merge_in_progress(const std::string& dir) {
  std::ifstream in(merging_marker(dir));
  long pid = 0;
  return in >> pid && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
}

StopMerge::StopMerge(const std::string& out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], 0);   // the child's stdin: the pipe (dup2 clears CLOEXEC)
  posix_spawnattr_init(&attr);
  // The stop signals start blocked; merge --after-stop ignores them, then unblocks them.  A signal to the
  // whole job must not kill the guard: srun (slurmstepd) delivers what it forwards to every process of its
  // step, this one included, and a guard killed by SIGUSR1 would leave the run's done() writing to a closed
  // pipe (SIGPIPE: the rank dies at the end of a clean stop).
  sigset_t stops;
  sigemptyset(&stops);
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) sigaddset(&stops, s);
  posix_spawnattr_setsigmask(&attr, &stops);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);   // Ctrl-C and the job's kill do not reach it
  std::string exe = "icl-sweep", cmd = "merge", flag = "--after-stop";
  std::string target = out;
  char* argv[] = {exe.data(), cmd.data(), target.data(), flag.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", &actions, &attr, argv, environ) == 0) pipe_ = fds[1];
  else ::close(fds[1]);
  ::close(fds[0]);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
}

void StopMerge::done() {
  if (pipe_ < 0) return;
  const char d = 'd';
  if (::write(pipe_, &d, 1) != 1) {}
  ::close(pipe_);
  pipe_ = -1;
}

StopMerge::~StopMerge() {
  if (pipe_ >= 0) ::close(pipe_);
}

int merge_main(int argc, char** argv) {
  std::string out;
  bool after_stop = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--after-stop") after_stop = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: icl-sweep merge OUT.h5: merges the finished points of OUT.h5.points/ into OUT.h5 (when no run holds it)\n");
      return kExitOk;
    } else if (out.empty() && a[0] != '-') out = a;
    else {
      std::fprintf(stderr, "icl-sweep merge: argument '%s': expected one OUT.h5\n", a.c_str());
      return kExitUsage;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "usage: icl-sweep merge OUT.h5\n");
    return kExitUsage;
  }
  if (after_stop) {
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGTERM, SIG_IGN);
    ::signal(SIGUSR1, SIG_IGN);   // srun forwards the walltime warning to every process of the step
    ::signal(SIGPIPE, SIG_IGN);   // its stderr may be mpirun's forwarding, gone with mpirun: the merge goes on
    sigset_t stops;               // blocked by StopMerge until now
    sigemptyset(&stops);
    for (int s : {SIGINT, SIGTERM, SIGUSR1}) sigaddset(&stops, s);
    ::sigprocmask(SIG_UNBLOCK, &stops, nullptr);
    char c = 0;
    ssize_t k;
    while ((k = ::read(0, &c, 1)) < 0 && errno == EINTR) {}
    if (k == 1 && c == 'd') return kExitOk;   // the run merged itself
  }
  sweep::Spec spec;
  sweep::Grid grid;
  std::string why;
  if (!stored_grid(out, "", &spec, &grid, &why)) {
    std::fprintf(stderr, "icl-sweep merge: cannot read the spec stored in '%s': %s (icl-sweep verify %s --repair --spec SPEC)\n",
                 out.c_str(), why.c_str(), out.c_str());
    return kExitFailure;
  }
  try {
    {
      const io::File f = io::File::open_read(out);
      if (after_stop && (!io::has_attr(f, "/", "sweep_state") || io::get_attr_string(f, "/", "sweep_state") != "running")) return kExitOk;
    }
    io::Attributes keep = run_provenance(out, false);
    const WorkProgress progress("merge");
    SweepOutput output(out, grid, spec.text);
    OutputOptions opt;
    opt.resume = true;
    opt.asked = "merge";
    // A merge computes nothing and keeps each row's build: rows of other builds are already results (a run's
    // ranks on nodes with another glibc, a resume with --allow-mixed-builds), and refusing them left OUT.h5
    // `running` after a stop.
    opt.allow_mixed_builds = true;
    if (const int code = output.prepare(opt, after_stop)) return code;
    std::ofstream(merging_marker(output.dir())) << ::getpid() << "\n";
    keep.text.push_back({"ended_utc", io::utc_now()});
    const int64_t done = output.index(true).done();
    const std::string state = done == grid.size() ? "complete" : "incomplete";
    output.write(state, keep);
    std::remove(merging_marker(output.dir()).c_str());
    std::fprintf(stderr, "icl-sweep: %s%lld/%lld points done; merged into %s (sweep_state %s)%s\n",
                 after_stop ? "the sweep was stopped; " : "", static_cast<long long>(done), static_cast<long long>(grid.size()),
                 out.c_str(), state.c_str(), state == "complete" ? "" : "; continue with --resume");
    return kExitOk;
  } catch (const io::IoError& e) {
    std::fprintf(stderr, "icl-sweep merge: I/O error: %s (every finished point stays in %s.points/)\n", e.what(), out.c_str());
    return kExitFailure;
  }
}

}  // namespace icl::cli
