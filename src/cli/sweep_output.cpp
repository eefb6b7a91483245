#include "icl/cli/sweep_output.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>

#include "icl/build_info.hpp"
#include "icl/cli/cli.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/point_log.hpp"

namespace icl::cli {
namespace {

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
    ::closedir(d);
  }
  return names;
}

// Lower is better: the record a point keeps when it has several (a retried failure, a duplicate).
int rank_of(const Result& r) {
  switch (r.status) {
    case Status::ok: return r.analysis_status == AnalysisStatus::failed ? 1 : 0;
    case Status::diverged:
    case Status::pruned: return 2;
    case Status::failed: return 3;
    default: return 4;
  }
}

int refuse(const std::string& out, const std::string& why) {
  std::cerr << "icl-sweep run: option 'output' = '" << out << "': " << why << "\n";
  return kExitUsage;
}

}  // namespace

bool finished(const Result& r, bool retry_failed) {
  if (r.status == Status::pending || r.status == Status::cancelled) return false;
  return !(retry_failed && (r.status == Status::failed || r.analysis_status == AnalysisStatus::failed));
}

bool sweep_running(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

SweepOutput::SweepOutput(std::string out, const sweep::Grid& grid, std::string spec_text)
    : out_(std::move(out)), dir_(out_ + ".points"), spec_text_(std::move(spec_text)), grid_(grid),
      hash_(sweep::spec_hash(spec_text_)) {}

SweepOutput::~SweepOutput() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string SweepOutput::hash_text() const {
  char text[32];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
  return text;
}

int SweepOutput::prepare(const OutputOptions& opt) {
  const std::string parent = parent_of(out_);
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return refuse(out_, "directory '" + parent + "' does not exist");
  if (::access(parent.c_str(), W_OK | X_OK) != 0) return refuse(out_, "directory '" + parent + "' is not writable");
  const bool dir_exists = ::stat(dir_.c_str(), &st) == 0;
  if (dir_exists && !S_ISDIR(st.st_mode)) throw io::IoError("'" + dir_ + "' exists and is not a directory: move it away");
  const bool output_exists = cli::path_exists(out_) || dir_exists;
  if (output_exists && !opt.resume && !opt.force) return refuse(out_, "the sweep output exists; pass --resume to continue it or --force to start over");
  if (!lock()) return refuse(out_, "another icl-sweep run is writing it (it holds the lock on " + dir_ + "/)");

  // Temporaries of merges that were killed: no one else can be writing them now.
  const std::string stem = out_.substr(out_.rfind('/') == std::string::npos ? 0 : out_.rfind('/') + 1) + ".tmp.";
  for (const std::string& name : entries(parent))
    if (name.compare(0, stem.size(), stem) == 0) std::remove((parent + "/" + name).c_str());

  if (opt.force) {
    std::remove(out_.c_str());
    for (const std::string& name : entries(dir_)) std::remove((dir_ + "/" + name).c_str());
    return 0;
  }
  if (!opt.resume) return 0;
  std::vector<Result> rows;
  if (const int code = read_resumed(opt, &rows)) return code;
  return import_rows(opt, rows);
}

// The lock: the log directory itself, so that no file anyone could delete guards the sweep.
bool SweepOutput::lock() {
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) throw io::io_error("cannot create", dir_);
  lock_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ < 0) throw io::io_error("cannot open", dir_);
  // `status` probes the lock with a momentary shared lock: retry briefly before calling it another run's.
  bool locked = false;
  for (int k = 0; k < 20 && !(locked = ::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0); ++k) ::usleep(50000);
  return locked;
}

int SweepOutput::read_resumed(const OutputOptions& opt, std::vector<Result>* rows) const {
  if (!cli::path_exists(out_)) return 0;
  io::Verification v;
  try {
    *rows = io::read_results_file(out_, &v);
    const io::File f = io::File::open_read(out_);
    std::string spec_hash = io::get_attr_string(f, "/", "spec_hash");
    if (!v.attributes_intact) {
      std::cerr << "icl-sweep run: warning: '" << out_ << "': its attributes are damaged; trusting its rows only if its spec is this one\n";
      if (sweep::spec_hash(io::get_attr_string(f, "/", "spec")) != hash_) rows->clear();
      spec_hash = hash_text();
    }
    if (spec_hash != hash_text())
      return refuse(out_, "--resume: it was written by a different spec (hash " + spec_hash + ", this spec " + hash_text() +
                              "); use the original spec, or --force to start over");
    const std::string theirs = io::get_attr_string(f, "/", "software_version") + " (git " +
                               io::get_attr_string(f, "/", "git_revision") + "; " + io::get_attr_string(f, "/", "build_flags") + ")";
    if (v.attributes_intact && theirs != io::build_identity() && !opt.allow_mixed_builds)
      return refuse(out_, "--resume: its points were computed by another build (" + theirs + "; this is " + io::build_identity() +
                              "); rebuild that version, or pass --allow-mixed-builds");
    for (const std::string& p : v.problems) std::cerr << "icl-sweep run: warning: '" << out_ << "': " << p << ": recovered from the logs or recomputed\n";
  } catch (const io::IoError& e) {
    std::cerr << "icl-sweep run: warning: '" << out_ << "' is unreadable (" << e.what() << "); recovering the finished points from "
              << dir_ << "/\n";
    rows->clear();
  }
  return 0;
}

int SweepOutput::import_rows(const OutputOptions& opt, const std::vector<Result>& rows) const {
  const io::LogScan scan = io::scan_point_logs(dir_, hash_);
  if (!opt.allow_mixed_builds)
    for (const io::LoggedPoint& p : scan.points)
      if (p.build != io::build_identity())
        return refuse(out_, "--resume: point " + std::to_string(p.index) + " in " + dir_ + "/ was computed by another build (" + p.build +
                                "; this is " + io::build_identity() + "); rebuild that version, or pass --allow-mixed-builds");
  std::vector<bool> logged(grid_.points.size(), false);
  for (const io::LoggedPoint& p : scan.points)
    if (p.index >= 0 && p.index < static_cast<int64_t>(logged.size())) logged[p.index] = true;
  int imported = 0;
  if (rows.size() == grid_.points.size()) {
    std::unique_ptr<io::PointLog> log;
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].status != Status::pending && !logged[i]) {
        if (!log) log = std::make_unique<io::PointLog>(dir_);
        log->append(static_cast<int64_t>(i), hash_, rows[i]);
        ++imported;
      }
    if (log) log->sync();
  }
  if (imported) std::cerr << "icl-sweep run: " << imported << " finished point(s) of '" << out_ << "' were not in " << dir_ << "/: copied into its logs\n";
  return 0;
}

std::vector<Result> SweepOutput::gather(bool retry_failed, int* done, std::vector<std::string>* problems) const {
  std::vector<Result> results(grid_.points.size(), pending_result());
  io::LogScan scan = io::scan_point_logs(dir_, hash_);
  for (io::LoggedPoint& p : scan.points)
    if (p.index >= 0 && p.index < static_cast<int64_t>(results.size()) && rank_of(p.result) < rank_of(results[p.index]))
      results[p.index] = std::move(p.result);
  *done = 0;
  for (const Result& r : results) *done += finished(r, retry_failed);
  if (problems) *problems = std::move(scan.problems);
  return results;
}

void SweepOutput::write(const std::vector<Result>& results, const std::string& state, const io::Attributes& extra) const {
  io::Attributes a = extra;
  a.text.push_back({"sweep_state", state});
  a.text.push_back({"spec_hash", hash_text()});
  io::write_results_file(out_, grid_.points, results, spec_text_, a, grid_.replica);
}

int SweepOutput::begin(const OutputOptions& opt, const io::Attributes& extra, std::vector<uint8_t>* finished_before,
                       int* done) {
  try {
    if (const int code = prepare(opt)) return code;
    std::vector<std::string> problems;
    const std::vector<Result> earlier = gather(opt.retry_failed, done, &problems);
    for (const std::string& w : problems) std::fprintf(stderr, "icl-sweep: warning: %s: recomputed\n", w.c_str());
    for (size_t i = 0; i < earlier.size(); ++i) (*finished_before)[i] = finished(earlier[i], opt.retry_failed);
    write(earlier, "running", extra);
    return 0;
  } catch (const io::IoError& e) {
    std::cerr << "icl-sweep run: I/O error: " << e.what() << "\n";
    return kExitFailure;
  }
}

bool SweepOutput::merge_live(const std::vector<Result>& so_far, const io::Attributes& extra) const {
  try {
    write(so_far, "running", extra);
    return true;
  } catch (const io::IoError& e) {
    std::fprintf(stderr, "icl-sweep: warning: live merge into %s failed: %s\n", out_.c_str(), e.what());
    return false;
  }
}

int SweepOutput::end(bool retry_failed, const io::Attributes& extra, std::vector<Result>* results, int* done) const {
  *results = gather(retry_failed, done);
  const bool complete = *done == static_cast<int>(grid_.points.size());
  io::Attributes a = extra;
  a.text.push_back({"ended_utc", io::utc_now()});
  try {
    write(*results, complete ? "complete" : "incomplete", a);
    return 0;
  } catch (const io::IoError& e) {
    std::cerr << "icl-sweep run: I/O error: cannot write '" << out_ << "': " << e.what()
              << " (every finished point is kept in " << dir_ << "/: --resume writes it once there is space)\n";
    return kExitFailure;
  }
}

}  // namespace icl::cli
