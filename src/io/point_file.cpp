// Shard layout: "ICLPT001", u64 spec hash, i64 index, the Result's fields in declaration order
// (strings and vectors length-prefixed, maps as count + (name, value) pairs), then u64 payload length and
// u64 checksum (SplitMix64 chain over the payload bytes).
#include "icl/io/point_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "icl/core/rng.hpp"

namespace icl::io {
namespace {

constexpr char kMagic[9] = "ICLPT001";

uint64_t checksum(const std::string& bytes) {
  uint64_t h = 0x6a09e667f3bcc908ULL;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = mix64(h ^ w);
  }
  for (; i < bytes.size(); ++i) h = mix64(h ^ static_cast<unsigned char>(bytes[i]));
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
    if (!ok || at + n > in.size()) { ok = false; return ""; }
    std::string s = in.substr(at, n);
    at += n;
    return s;
  }
  template <class V>
  std::vector<V> vec() {
    const uint64_t n = pod<uint64_t>();
    if (!ok || at + n * sizeof(V) > in.size()) { ok = false; return {}; }
    std::vector<V> v(n);
    std::memcpy(v.data(), in.data() + at, n * sizeof(V));
    at += n * sizeof(V);
    return v;
  }
};

}  // namespace

void write_point_shard(const std::string& path, int64_t index, uint64_t spec_hash, const Result& r) {
  Writer w;
  w.out.append(kMagic, 8);
  w.pod<uint64_t>(spec_hash);
  w.pod<int64_t>(index);
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
  const uint64_t len = w.out.size(), sum = checksum(w.out);
  w.pod<uint64_t>(len);
  w.pod<uint64_t>(sum);

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < w.out.size()) {
    const ssize_t k = ::write(fd, w.out.data() + done, w.out.size() - done);
    if (k <= 0) {
      const int e = errno;
      ::close(fd);
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(k);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot store " + path + ": " + std::strerror(e));
  }
}

bool read_point_shard(const std::string& path, uint64_t spec_hash, int64_t* index, Result* r, std::string* why) {
  std::ifstream f(path, std::ios::binary);
  if (!f) { *why = path + ": cannot open"; return false; }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string all = ss.str();
  if (all.size() < 8 + 16 || all.compare(0, 8, kMagic) != 0) { *why = path + ": not an icl-sweep point shard"; return false; }
  const std::string payload = all.substr(0, all.size() - 16);
  uint64_t len, sum;
  std::memcpy(&len, all.data() + all.size() - 16, 8);
  std::memcpy(&sum, all.data() + all.size() - 8, 8);
  if (len != payload.size() || sum != checksum(payload)) { *why = path + ": truncated or corrupt (checksum mismatch)"; return false; }
  Reader rd{payload};
  rd.at = 8;
  if (rd.pod<uint64_t>() != spec_hash) { *why = path + ": written by a different spec"; return false; }
  *index = rd.pod<int64_t>();
  Result x;
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
  if (!rd.ok || rd.at != payload.size()) { *why = path + ": malformed shard"; return false; }
  *r = std::move(x);
  return true;
}

}  // namespace icl::io
