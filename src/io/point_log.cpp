// Record layout (little-endian, native doubles): u64 payload length, payload, u64 checksum of the
// length and payload (SplitMix64 chain).  Payload: "ICLPT002", u64 spec hash, i64 index, f64 finish
// time (Unix seconds), then the Result's fields in declaration order (strings and vectors
// length-prefixed, maps as count + (name, value) pairs).
#include "icl/io/point_log.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "icl/core/rng.hpp"

namespace icl::io {
namespace {

constexpr char kMagic[9] = "ICLPT002";

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
  void str(const std::string& s) { pod<uint64_t>(s.size()); out += s; }
  template <class V>
  void vec(const std::vector<V>& v) {
    pod<uint64_t>(v.size());
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(V));
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
  std::string str() {
    const uint64_t n = pod<uint64_t>();
    if (!ok || n > in.size() - at) { ok = false; return ""; }
    std::string s = in.substr(at, n);
    at += n;
    return s;
  }
  template <class V>
  std::vector<V> vec() {
    const uint64_t n = pod<uint64_t>();
    if (!ok || n > (in.size() - at) / sizeof(V)) { ok = false; return {}; }
    std::vector<V> v(n);
    std::memcpy(v.data(), in.data() + at, n * sizeof(V));
    at += n * sizeof(V);
    return v;
  }
};

}  // namespace

std::string encode_point(int64_t index, uint64_t spec_hash, double finished_unix, const Result& r) {
  Writer w;
  w.pod<uint64_t>(0);   // length, filled in below
  w.out.append(kMagic, 8);
  w.pod<uint64_t>(spec_hash);
  w.pod<int64_t>(index);
  w.pod<double>(finished_unix);
  w.pod<int32_t>(static_cast<int32_t>(r.status));
  w.str(r.message);
  w.pod<int64_t>(r.steps_done);
  w.pod<double>(r.test_loss);
  w.pod<double>(r.train_loss);
  w.vec(r.layer_test_loss);
  w.vec(r.curve_step);
  w.vec(r.curve_train_loss);
  w.vec(r.curve_test_loss);
  w.vec(r.theta);
  w.vec(r.P);
  w.vec(r.Q);
  w.pod<double>(r.seconds_train);
  w.pod<double>(r.seconds_eval);
  w.pod<double>(r.seconds_total);
  w.pod<double>(r.flops_per_step);
  w.pod<uint64_t>(r.metrics.size());
  for (const auto& [k, v] : r.metrics) { w.str(k); w.pod<double>(v); }
  w.pod<uint64_t>(r.series.size());
  for (const auto& [k, v] : r.series) { w.str(k); w.vec(v); }
  const uint64_t len = w.out.size() - 8;
  std::memcpy(w.out.data(), &len, 8);
  w.pod<uint64_t>(checksum(w.out.data(), w.out.size()));
  return w.out;
}

bool decode_point(const std::string& record, uint64_t spec_hash, LoggedPoint* out, std::string* why) {
  if (record.size() < 16) { *why = "torn record"; return false; }
  uint64_t len, sum;
  std::memcpy(&len, record.data(), 8);
  std::memcpy(&sum, record.data() + record.size() - 8, 8);
  if (len != record.size() - 16 || sum != checksum(record.data(), record.size() - 8)) {
    *why = "torn or damaged record (checksum)";
    return false;
  }
  const std::string payload = record.substr(8, len);
  if (payload.compare(0, 8, kMagic) != 0) { *why = "not an icl-sweep point record"; return false; }
  Reader rd{payload};
  rd.at = 8;
  if (rd.pod<uint64_t>() != spec_hash) { *why = "a record of a different spec"; return false; }
  LoggedPoint p;
  p.index = rd.pod<int64_t>();
  p.finished_unix = rd.pod<double>();
  Result& x = p.result;
  x.status = static_cast<Status>(rd.pod<int32_t>());
  x.message = rd.str();
  x.steps_done = rd.pod<int64_t>();
  x.test_loss = rd.pod<double>();
  x.train_loss = rd.pod<double>();
  x.layer_test_loss = rd.vec<double>();
  x.curve_step = rd.vec<int64_t>();
  x.curve_train_loss = rd.vec<double>();
  x.curve_test_loss = rd.vec<double>();
  x.theta = rd.vec<double>();
  x.P = rd.vec<double>();
  x.Q = rd.vec<double>();
  x.seconds_train = rd.pod<double>();
  x.seconds_eval = rd.pod<double>();
  x.seconds_total = rd.pod<double>();
  x.flops_per_step = rd.pod<double>();
  for (uint64_t n = rd.pod<uint64_t>(), i = 0; rd.ok && i < n; ++i) {
    const std::string k = rd.str();
    x.metrics[k] = rd.pod<double>();
  }
  for (uint64_t n = rd.pod<uint64_t>(), i = 0; rd.ok && i < n; ++i) {
    const std::string k = rd.str();
    x.series[k] = rd.vec<double>();
  }
  if (!rd.ok || rd.at != payload.size()) { *why = "malformed record"; return false; }
  *out = std::move(p);
  return true;
}

PointLog::PointLog(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
}

PointLog::~PointLog() {
  if (fd_ >= 0) ::close(fd_);
}

void PointLog::append(int64_t index, uint64_t spec_hash, const Result& r) {
  const std::string rec = encode_point(index, spec_hash, static_cast<double>(::time(nullptr)), r);
  size_t done = 0;
  while (done < rec.size()) {
    const ssize_t k = ::write(fd_, rec.data() + done, rec.size() - done);
    if (k <= 0) throw std::runtime_error("cannot append to " + path_ + ": " + std::strerror(errno));
    done += static_cast<size_t>(k);
  }
}

void PointLog::sync() {
  if (::fdatasync(fd_) != 0) throw std::runtime_error("cannot sync " + path_ + ": " + std::strerror(errno));
}

LogScan scan_point_logs(const std::string& dir, uint64_t spec_hash) {
  LogScan scan;
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0) files.push_back(dir + "/" + name);
    }
    ::closedir(d);
  }
  std::sort(files.begin(), files.end());
  for (const std::string& path : files) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string all = ss.str();
    size_t at = 0;
    while (at < all.size()) {
      uint64_t len = 0;
      if (all.size() - at >= 8) std::memcpy(&len, all.data() + at, 8);
      if (all.size() - at < 16 || len > all.size() - at - 16) {
        scan.problems.push_back(path + ": torn record at byte " + std::to_string(at) + " (" +
                                std::to_string(all.size() - at) + " bytes ignored)");
        break;
      }
      LoggedPoint p;
      std::string why;
      if (decode_point(all.substr(at, len + 16), spec_hash, &p, &why)) scan.points.push_back(std::move(p));
      else scan.problems.push_back(path + ": " + why + " at byte " + std::to_string(at));
      at += len + 16;
    }
  }
  return scan;
}

}  // namespace icl::io
