#include "icl/cli/live_view.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace icl::cli {
namespace {
constexpr size_t kLine = 120;   // bytes of a line, padded with spaces: rewrites never leave a longer tail
}

LiveFile::LiveFile(const std::string& log_path, double every) : path_(log_path + ".live"), every_(every) {
  if (every_ <= 0) return;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0644);
  if (fd_ < 0) return;   // advisory: a sweep never fails for its live view
  write_line();
  ticker_ = std::make_unique<Ticker>(every_, [this] { write_line(); });
}

LiveFile::~LiveFile() {
  ticker_.reset();
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

LiveTraining* LiveFile::begin(int64_t point, int64_t steps) {
  live_.steps_done.store(0, std::memory_order_relaxed);
  live_.test_loss.store(std::nan(""), std::memory_order_relaxed);
  live_.analysing.store(false, std::memory_order_relaxed);
  steps_.store(steps, std::memory_order_relaxed);
  point_.store(point, std::memory_order_relaxed);
  return &live_;
}

void LiveFile::end() { point_.store(-1, std::memory_order_relaxed); }

void LiveFile::write_line() {
  const int64_t point = point_.load(std::memory_order_relaxed);
  const char* stage = point < 0 ? "idle" : live_.analysing.load(std::memory_order_relaxed) ? "analyse" : "train";
  char line[kLine + 1];
  int n = std::snprintf(line, sizeof line, "%lld %lld %lld %.6g %s %lld %g", static_cast<long long>(point),
                        static_cast<long long>(live_.steps_done.load(std::memory_order_relaxed)),
                        static_cast<long long>(steps_.load(std::memory_order_relaxed)),
                        live_.test_loss.load(std::memory_order_relaxed), stage, static_cast<long long>(::time(nullptr)), every_);
  n = std::clamp(n, 0, static_cast<int>(kLine) - 1);
  std::fill(line + n, line + kLine - 1, ' ');
  line[kLine - 1] = '\n';
  if (::pwrite(fd_, line, kLine, 0) != static_cast<ssize_t>(kLine)) return;   // advisory: tried again next period
}

namespace {
bool is_live_name(const std::string& name) { return name.size() > 5 && name.compare(name.size() - 5, 5, ".live") == 0; }
}  // namespace

void remove_live_files(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    struct stat st;
    const std::string path = dir + "/" + e->d_name;
    if (is_live_name(e->d_name) && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) stale.push_back(path);
  }
  ::closedir(d);
  for (const std::string& path : stale) ::unlink(path.c_str());
}

std::vector<InFlight> points_in_flight(const std::string& dir) {
  std::vector<InFlight> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  const double now = static_cast<double>(::time(nullptr));
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!is_live_name(name)) continue;
    // O_NONBLOCK: a FIFO named *.live must not block status (open and read of a FIFO wait for a writer).
    const int fd = ::open((dir + "/" + name).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      continue;
    }
    char line[kLine + 1] = {};
    const ssize_t got = ::pread(fd, line, kLine, 0);
    ::close(fd);
    if (got != static_cast<ssize_t>(kLine)) continue;
    InFlight f;
    long long point, done, steps, unix_time;
    char stage[16];
    double every = 0;
    if (std::sscanf(line, "%lld %lld %lld %lf %15s %lld %lf", &point, &done, &steps, &f.test_loss, stage, &unix_time, &every) != 7)
      continue;
    f.age_seconds = now - static_cast<double>(unix_time);
    // Fresh: rewritten within three periods (a garbage period, NaN or infinite, is never fresh); a time a
    // little ahead (another node's clock) counts as now, one far ahead is garbage.
    if (point < 0 || !(every > 0 && every <= 86400) || !(f.age_seconds <= 3 * every + 2) || f.age_seconds < -(3 * every + 2)) continue;
    f.age_seconds = std::max(f.age_seconds, 0.0);
    f.point = point, f.steps_done = done, f.steps = steps, f.stage = stage;
    out.push_back(f);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const InFlight& a, const InFlight& b) { return a.point < b.point; });
  return out;
}

}  // namespace icl::cli
