// Record layout (little-endian, native doubles): u64 payload length, payload, u64 checksum of the
// length and payload (SplitMix64 chain).  Payload: "ICLPT003", u64 spec hash, i64 index, f64 finish
// time (Unix seconds), the build identity, then the Result's fields in for_each_field order (strings
// and vectors length-prefixed, enums as i32, maps as count + (name, value) pairs).
#include "icl/io/point_log.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "icl/base/rng.hpp"
#include "icl/build_info.hpp"
#include "icl/io/io_error.hpp"
#include "icl/io/io_stats.hpp"

namespace icl::io {
namespace {

constexpr char kMagic[9] = "ICLPT003";
constexpr char kRungMagic[9] = "ICLRG001";
constexpr size_t kFrame = 16;   // length + checksum

uint64_t checksum(const char* data, size_t n) {
  uint64_t h = 0x6a09e667f3bcc908ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = mix64(h ^ w);
  }
  for (; i < n; ++i) h = mix64(h ^ static_cast<unsigned char>(data[i]));
  return h;
}

struct Writer {
  std::string out;
  template <class V>
  void pod(V v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void operator()(const char*, int64_t v) { pod(v); }
  void operator()(const char*, double v) { pod(v); }
  void operator()(const char*, Status v) { pod(static_cast<int32_t>(v)); }
  void operator()(const char*, AnalysisStatus v) { pod(static_cast<int32_t>(v)); }
  void operator()(const char*, const std::string& s) { pod<uint64_t>(s.size()); out += s; }
  template <class V>
  void operator()(const char*, const std::vector<V>& v) {
    pod<uint64_t>(v.size());
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(V));
  }
  template <class V>
  void operator()(const char* name, const std::map<std::string, V>& m) {
    pod<uint64_t>(m.size());
    for (const auto& [k, v] : m) { (*this)(name, k); (*this)(name, v); }
  }
};

struct Reader {
  const std::string& in;
  size_t at = 0;
  bool ok = true;
  template <class V>
  V pod() {
    V v{};
    if (at + sizeof v > in.size()) { ok = false; return v; }
    std::memcpy(&v, in.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  void operator()(const char*, int64_t& v) { v = pod<int64_t>(); }
  void operator()(const char*, double& v) { v = pod<double>(); }
  void operator()(const char*, Status& v) {
    const int32_t k = pod<int32_t>();
    if (k < 0 || k > static_cast<int32_t>(Status::pruned)) ok = false;
    v = static_cast<Status>(k);
  }
  void operator()(const char*, AnalysisStatus& v) {
    const int32_t k = pod<int32_t>();
    if (k < 0 || k > static_cast<int32_t>(AnalysisStatus::failed)) ok = false;
    v = static_cast<AnalysisStatus>(k);
  }
  void operator()(const char*, std::string& s) {
    const uint64_t n = pod<uint64_t>();
    if (!ok || n > in.size() - at) { ok = false; return; }
    s = in.substr(at, n);
    at += n;
  }
  template <class V>
  void operator()(const char*, std::vector<V>& v) {
    const uint64_t n = pod<uint64_t>();
    if (!ok || n > (in.size() - at) / sizeof(V)) { ok = false; return; }
    v.resize(n);
    std::memcpy(v.data(), in.data() + at, n * sizeof(V));
    at += n * sizeof(V);
  }
  template <class V>
  void operator()(const char* name, std::map<std::string, V>& m) {
    for (uint64_t n = pod<uint64_t>(), i = 0; ok && i < n; ++i) {
      std::string k;
      (*this)(name, k);
      (*this)(name, m[k]);
    }
  }
};

// The complete, checksummed record starting at `at`, or 0.
size_t record_at(const std::string& all, size_t at) {
  if (all.size() - at < kFrame) return 0;
  uint64_t len, sum;
  std::memcpy(&len, all.data() + at, 8);
  if (len > all.size() - at - kFrame) return 0;
  std::memcpy(&sum, all.data() + at + 8 + len, 8);
  return sum == checksum(all.data() + at, 8 + len) ? len + kFrame : 0;
}

}  // namespace

IoError io_error(const std::string& what, const std::string& path) {
  return IoError(what + " " + path + ": " + std::strerror(errno));
}

std::string build_identity() {   // fixed for the process: made once (every record names it)
  static const std::string id =
      std::string(build::version) + " (git " + build::git_revision + "; " + build::flags + "; " + libm_identity() + ")";
  return id;
}

std::string libm_identity() {
#if defined(__GLIBC__)
  static const std::string id = std::string("glibc ") + gnu_get_libc_version();
  return id;
#else
  return "libm unknown";
#endif
}

// A record's frame: length, `magic` and the spec hash, then what `body` writes, then the checksum.
template <class Body>
std::string framed(const char* magic, uint64_t spec_hash, Body&& body) {
  Writer w;
  w.pod<uint64_t>(0);   // length, filled in below
  w.out.append(magic, 8);
  w.pod<uint64_t>(spec_hash);
  body(w);
  const uint64_t len = w.out.size() - 8;
  std::memcpy(w.out.data(), &len, 8);
  w.pod<uint64_t>(checksum(w.out.data(), w.out.size()));
  return w.out;
}

std::string encode_point(int64_t index, uint64_t spec_hash, double finished_unix, const Result& r, const std::string& build) {
  return framed(kMagic, spec_hash, [&](Writer& w) {
    w.pod<int64_t>(index);
    w.pod<double>(finished_unix);
    w("build", build);
    for_each_field(r, w);
  });
}

// The payload of a framed record of kind `magic` and this spec, or "" with `why`.
std::string payload_of(const std::string& record, const char* magic, uint64_t spec_hash, std::string* why) {
  if (record.size() < kFrame || record_at(record, 0) != record.size()) {
    *why = "torn or damaged record (checksum)";
    return "";
  }
  std::string payload = record.substr(8, record.size() - kFrame);
  if (payload.compare(0, 8, magic) != 0) {
    *why = payload.compare(0, 5, magic, 5) == 0 ? "a record of an older icl-sweep format" : "not an icl-sweep record of this kind";
    return "";
  }
  uint64_t hash = 0;
  if (payload.size() >= 16) std::memcpy(&hash, payload.data() + 8, 8);
  if (payload.size() < 16 || hash != spec_hash) {
    *why = "a record of a different spec";
    return "";
  }
  return payload;
}

bool decode_point(const std::string& record, uint64_t spec_hash, LoggedPoint* out, std::string* why) {
  io_stats().records_decoded += 1;
  const std::string payload = payload_of(record, kMagic, spec_hash, why);
  if (payload.empty()) return false;
  Reader rd{payload};
  rd.at = 16;
  LoggedPoint p;
  p.index = rd.pod<int64_t>();
  p.finished_unix = rd.pod<double>();
  rd("build", p.build);
  for_each_field(p.result, rd);
  if (!rd.ok || rd.at != payload.size()) { *why = "malformed record"; return false; }
  *out = std::move(p);
  return true;
}

std::string encode_rung(int64_t index, int rung, uint64_t spec_hash, double finished_unix, const Checkpoint& c,
                        const std::string& build) {
  return framed(kRungMagic, spec_hash, [&](Writer& w) {
    w.pod<int64_t>(index);
    w.pod<int64_t>(rung);
    w.pod<double>(finished_unix);
    w("build", build);
    for_each_checkpoint_field(c, w);
  });
}

bool decode_rung(const std::string& record, uint64_t spec_hash, LoggedRung* out, std::string* why) {
  io_stats().records_decoded += 1;
  const std::string payload = payload_of(record, kRungMagic, spec_hash, why);
  if (payload.empty()) return false;
  Reader rd{payload};
  rd.at = 16;
  LoggedRung g;
  g.index = rd.pod<int64_t>();
  g.rung = static_cast<int>(rd.pod<int64_t>());
  g.finished_unix = rd.pod<double>();
  rd("build", g.build);
  for_each_checkpoint_field(g.checkpoint, rd);
  if (!rd.ok || rd.at != payload.size()) { *why = "malformed rung record"; return false; }
  *out = std::move(g);
  return true;
}

PointLog::PointLog(const std::string& dir) {
  char host[256] = "host";
  ::gethostname(host, sizeof host - 1);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (int k = 0; fd_ < 0; ++k) {
    path_ = dir + "/" + host + "-" + std::to_string(::getpid()) + "-" + std::to_string(ns) + "-" + std::to_string(k) + ".log";
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || k > 1000)) throw io_error("cannot create the point log", path_);
  }
}

PointLog::~PointLog() {
  if (fd_ >= 0) ::close(fd_);
}

void PointLog::append(int64_t index, uint64_t spec_hash, const Result& r) {
  append_record(encode_point(index, spec_hash, static_cast<double>(::time(nullptr)), r));
}

void PointLog::append_record(const std::string& rec) {
  size_t done = 0;
  while (done < rec.size()) {
    const ssize_t k = ::write(fd_, rec.data() + done, rec.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (k == 0) errno = ENOSPC;
      const IoError e = io_error("cannot append a point record to", path_);
      if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {}   // best effort: no torn tail left behind
      throw e;
    }
    done += static_cast<size_t>(k);
  }
  size_ += rec.size();
}

void PointLog::sync() {
  if (::fdatasync(fd_) != 0) throw io_error("cannot sync", path_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw io_error("cannot stat", path_);
  if (st.st_nlink == 0) throw IoError("the point log " + path_ + " was deleted while the sweep ran (was " + path_.substr(0, path_.rfind('/')) +
                                      "/ removed?): its points are lost from it; every other finished point stays");
}

namespace {

// A log file read through a window (a few MiB), so scanning takes memory of the window, not of the log.
class LogFile {
 public:
  explicit LogFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0) size_ = static_cast<uint64_t>(st.st_size);
  }
  ~LogFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;
  bool readable() const { return fd_ >= 0; }
  uint64_t size() const { return size_; }
  // The bytes [at, at + n) (n clipped to the file), valid until the next call.
  const char* bytes(uint64_t at, uint64_t n) {
    n = std::min(n, size_ - std::min(at, size_));
    if (at < base_ || at + n > base_ + window_.size()) {
      window_.resize(std::max<uint64_t>(n, std::min<uint64_t>(kWindow, size_ - at)));
      base_ = at;
      size_t done = 0;
      while (done < window_.size()) {
        const ssize_t k = ::pread(fd_, window_.data() + done, window_.size() - done, static_cast<off_t>(at + done));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        done += static_cast<size_t>(k);
      }
      window_.resize(done);
    }
    return window_.data() + (at - base_);
  }
  // The length of the complete, checksummed record at `at`, or 0.
  uint64_t record_at(uint64_t at) {
    if (size_ - at < kFrame) return 0;
    uint64_t len, sum;
    std::memcpy(&len, bytes(at, 8), 8);
    if (len > size_ - at - kFrame) return 0;
    const char* rec = bytes(at, len + kFrame);
    std::memcpy(&sum, rec + 8 + len, 8);
    return sum == checksum(rec, 8 + len) ? len + kFrame : 0;
  }
  // The start of the next intact record after a damaged one at `at` (a marker followed by a record whose
  // checksum holds), or the end of the file.
  uint64_t resynchronise(uint64_t at) {
    for (uint64_t m = at + 9; m + 8 <= size_;) {
      const uint64_t n = std::min<uint64_t>(kWindow, size_ - m);
      const std::string_view w(bytes(m, n), n);
      const size_t hit = w.find("ICL");
      if (hit == std::string_view::npos) {
        m += n > 2 ? n - 2 : 1;
        continue;
      }
      const uint64_t c = m + hit;
      if (c + 8 <= size_) {
        const std::string_view marker(bytes(c, 8), 8);
        if ((marker == std::string_view(kMagic, 8) || marker == std::string_view(kRungMagic, 8)) && c >= at + 8 && record_at(c - 8) > 0)
          return c - 8;
      }
      m = c + 1;
    }
    return size_;
  }

 private:
  static constexpr uint64_t kWindow = 8u << 20;
  int fd_;
  uint64_t size_ = 0, base_ = 0;
  std::vector<char> window_;
};

}  // namespace

// The regular files named *.log: a FIFO or a device so named is no log (opening a FIFO blocks: status hung).
std::vector<std::string> log_files(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      struct stat st {};
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0 && ::stat((dir + "/" + name).c_str(), &st) == 0 &&
          S_ISREG(st.st_mode))
        files.push_back(dir + "/" + name);
    }
    ::closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

uint64_t visit_log(const std::string& path, int32_t file, uint64_t from, uint64_t spec_hash, bool live, const PointVisit& on_point,
                   const RungVisit& on_rung, std::vector<std::string>* problems, OtherSpecs* other_specs) {
  LogFile log(path);
  if (!log.readable()) throw io_error("cannot open the point log", path);
  uint64_t at = from;
  while (at < log.size()) {
    const uint64_t len = log.record_at(at);
    // Live, whatever does not read yet is read from here next time: a record still being written, or one whose
    // bytes have not reached this node while a later record's have (a hole, on NFS).  Skipped as damage, it was
    // lost to every later merge of the run, the final one included (they read on from where this one stopped).
    if (len == 0 && live) return at;
    if (len == 0) {   // damaged or torn: resynchronise on the next record marker that starts an intact record
      const uint64_t next = log.resynchronise(at);
      problems->push_back(path + ": " + (next == log.size() ? "torn record" : "damaged record") + " at byte " + std::to_string(at) +
                          " (" + std::to_string(next - at) + " bytes skipped)");
      at = next;
      continue;
    }
    const std::string record(log.bytes(at, len), len);
    const RecordRef ref{file, at, len};
    uint64_t hash = spec_hash;   // the frame: length, magic, the spec hash
    if (other_specs && len >= 24 + 8 && (record.compare(8, 8, kMagic) == 0 || record.compare(8, 8, kRungMagic) == 0))
      std::memcpy(&hash, record.data() + 16, 8);
    if (hash != spec_hash) {   // another sweep's, not damage
      OtherSpec& o = (*other_specs)[hash];
      if (o.logs.empty() || o.logs.back() != path) o.logs.push_back(path);
      ++o.records;
      at += len;
      continue;
    }
    std::string why;
    if (record.compare(8, 8, kRungMagic) == 0) {
      LoggedRung g;
      if (decode_rung(record, spec_hash, &g, &why) && on_rung) on_rung(std::move(g), ref);
    } else {
      LoggedPoint p;
      if (decode_point(record, spec_hash, &p, &why) && on_point) on_point(std::move(p), ref);
    }
    if (!why.empty()) problems->push_back(path + ": " + why + " at byte " + std::to_string(at));
    at += len;
  }
  return at;
}

LogStats visit_point_logs(const std::string& dir, uint64_t spec_hash, const PointVisit& on_point, const RungVisit& on_rung) {
  LogStats stats;
  stats.paths = log_files(dir);
  for (size_t file = 0; file < stats.paths.size(); ++file) {
    try {
      visit_log(stats.paths[file], static_cast<int32_t>(file), 0, spec_hash, false, on_point, on_rung, &stats.problems, &stats.other_specs);
    } catch (const IoError& e) {
      stats.problems.push_back(e.what());
    }
  }
  return stats;
}

namespace {

// How many logs a RecordReader keeps open: a quarter of the process's limit on open files (the rest for HDF5,
// MPI's connections and the logs being scanned), from 4 to 1,024.
size_t open_logs_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 1024;
  return static_cast<size_t>(std::clamp<rlim_t>(r.rlim_cur / 4, 4, 1024));
}

}  // namespace

RecordReader::~RecordReader() {
  for (const auto& kv : open_) ::close(kv.second);
}

// The descriptor of `path`, opened if it is not, the least recently read log closed if the limit is reached.
int RecordReader::open(const std::string& path) {
  if (const auto it = by_path_.find(path); it != by_path_.end()) {
    open_.splice(open_.begin(), open_, it->second);
    return it->second->second;
  }
  static const size_t limit = open_logs_limit();
  if (open_.size() >= limit) {
    ::close(open_.back().second);
    by_path_.erase(open_.back().first);
    open_.pop_back();
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error("cannot open the point log", path);
  open_.emplace_front(path, fd);
  by_path_[path] = open_.begin();
  return fd;
}

std::string RecordReader::read(const std::string& path, const RecordRef& ref) {
  const int fd = open(path);
  std::string record(ref.length, '\0');
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t k = ::pread(fd, record.data() + done, record.size() - done, static_cast<off_t>(ref.offset + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) throw io_error("cannot read a record at byte " + std::to_string(ref.offset) + " of", path);
    done += static_cast<size_t>(k);
  }
  if (record.size() < kFrame || record_at(record, 0) != record.size())
    throw IoError("the record at byte " + std::to_string(ref.offset) + " of " + path + " changed since it was read");
  return record;
}

LogScan scan_point_logs(const std::string& dir, uint64_t spec_hash) {
  LogScan scan;
  LogStats stats = visit_point_logs(
      dir, spec_hash, [&](LoggedPoint&& p, const RecordRef&) { scan.points.push_back(std::move(p)); },
      [&](LoggedRung&& g, const RecordRef&) { scan.rungs.push_back(std::move(g)); });
  scan.problems = std::move(stats.problems);
  for (const auto& [hash, o] : stats.other_specs)
    for (const std::string& log : o.logs) scan.problems.push_back(log + ": records of a different spec");
  scan.files = static_cast<int>(stats.paths.size());
  return scan;
}

}  // namespace icl::io
