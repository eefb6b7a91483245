// Reading a results file back: its integrity (row and attribute digests) and its finished rows, so that
// OUT.h5's rows are results too (a resume after the point logs were deleted starts from them).  Both
// read every dataset in blocks of rows: time linear in the points, memory a block (and 8 bytes a row).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "icl/io/h5.hpp"
#include "icl/io/layout.hpp"
#include "icl/io/results.hpp"
#include "integrity.hpp"

namespace icl::io {
namespace {

constexpr uint64_t kBlockBytes = 32u << 20;
const char* const kRowGroups[] = {"/points", "/metrics", "/analysis", "/layers", "/curves", "/weights"};

Status parse_status(const std::string& s) {
  for (Status k : {Status::ok, Status::diverged, Status::failed, Status::pending, Status::cancelled, Status::pruned})
    if (s == status_name(k)) return k;
  throw H5Error("unknown point status '" + s + "'");
}

AnalysisStatus parse_analysis_status(const std::string& s) {
  for (AnalysisStatus k : {AnalysisStatus::skipped, AnalysisStatus::ok, AnalysisStatus::failed})
    if (s == analysis_status_name(k)) return k;
  throw H5Error("unknown analysis status '" + s + "'");
}

// The flat datasets of the layout and the index dataset of each.
std::map<std::string, std::string> flat_entries() {
  std::map<std::string, std::string> out;
  for (const Entry& e : layout()) {
    if (e.shape == Shape::flat)
      for (const std::string& p : paths_of(e)) out[p] = e.index;
  }
  return out;
}

// A flat dataset read along the rows: point i's slice [start, start + count), through a window.
class FlatReader {
 public:
  FlatReader(Rows rows) : rows_(std::move(rows)) {}
  // False if the slice lies outside the dataset or cannot be read.
  bool slice(int64_t start, int64_t count, std::vector<double>* out) {
    out->clear();
    if (start < 0 || count < 0 || static_cast<uint64_t>(start + count) > rows_.rows()) return false;
    if (count == 0) return true;
    const auto lo = static_cast<uint64_t>(start), hi = lo + static_cast<uint64_t>(count);
    if (lo < at_ || hi > at_ + window_.size()) {
      const uint64_t n = std::min<uint64_t>(rows_.rows() - lo, std::max<uint64_t>(hi - lo, kBlockBytes / 8));
      window_.resize(n);
      at_ = lo;
      try {
        rows_.read(lo, n, window_.data());
      } catch (const H5Error&) {
        window_.clear();
        return false;
      }
    }
    out->assign(window_.begin() + static_cast<std::ptrdiff_t>(lo - at_), window_.begin() + static_cast<std::ptrdiff_t>(hi - at_));
    return true;
  }

 private:
  Rows rows_;
  std::vector<double> window_;
  uint64_t at_ = 0;
};

// Every row dataset of a results file, read block by block; unreadable blocks are flagged per row.
struct Stored {
  File f;
  uint64_t P = 0;
  std::vector<Rows> sets;                       // the row datasets (not the digest)
  std::map<std::string, std::string> flat;      // flat path -> index path
  std::vector<std::string> problems;

  explicit Stored(const std::string& path) : f(File::open_read(path)) {
    P = static_cast<uint64_t>(std::max<int64_t>(get_attr_int64(f, "/", "n_points"), 0));
    const auto declared = flat_entries();
    for (const char* group : kRowGroups) {
      if (!exists(f, group)) continue;
      std::vector<std::string> names;
      try {
        names = list(f, group);
      } catch (const H5Error& e) {
        problems.push_back(std::string(group) + ": " + e.what());
        continue;
      }
      for (const std::string& n : names) {
        const std::string dataset = std::string(group) + "/" + n;
        if (dataset == "/points/row_digest") continue;
        if (declared.count(dataset)) {
          flat[dataset] = declared.at(dataset);
          continue;
        }
        try {
          Rows r = Rows::open(f, dataset);
          if (r.rows() != P) throw H5Error(std::to_string(r.rows()) + " rows, not " + std::to_string(P));
          sets.push_back(std::move(r));
        } catch (const H5Error& e) {
          problems.push_back(dataset + ": " + e.what());
        }
      }
    }
  }

  uint64_t block_rows() const {
    uint64_t bytes = 1;
    for (const Rows& r : sets) bytes += r.row_bytes();
    return std::max<uint64_t>(1, std::min<uint64_t>(65536, kBlockBytes / bytes));
  }

  // Calls visit(first, n, buffers, readable) for every block; buffers[k] holds sets[k]'s rows,
  // readable[k] false where that block of that dataset failed to read (named in problems).
  template <class Visit>
  void blocks(Visit&& visit) {
    const uint64_t block = block_rows();
    std::vector<std::vector<char>> buf(sets.size());
    std::vector<bool> readable(sets.size());
    for (uint64_t first = 0; first < P; first += block) {
      const uint64_t n = std::min(block, P - first);
      for (size_t k = 0; k < sets.size(); ++k) {
        buf[k].resize(n * sets[k].row_bytes());
        try {
          sets[k].read(first, n, buf[k].data());
          readable[k] = true;
        } catch (const H5Error& e) {
          readable[k] = false;
          problems.push_back(sets[k].where() + ", rows " + std::to_string(first) + ".." + std::to_string(first + n - 1) + ": " + e.what());
        }
      }
      visit(first, n, buf, readable);
    }
  }

  int find(const std::string& path) const {
    for (size_t k = 0; k < sets.size(); ++k)
      if (sets[k].path() == path) return static_cast<int>(k);
    return -1;
  }
};

std::string text_at(const char* p, uint64_t bytes) { return std::string(p, strnlen(p, bytes)); }

template <class V>
V value_at(const std::vector<char>& buf, uint64_t j, uint64_t k = 0, uint64_t width = 1) {
  V v;
  std::memcpy(&v, buf.data() + (j * width + k) * sizeof(V), sizeof(V));
  return v;
}

}  // namespace

Verification verify_results_file(const std::string& path) {
  Verification v;
  try {
    Stored s(path);
    v.n_points = static_cast<int64_t>(s.P);
    v.format_version = has_attr(s.f, "/", "format_version") ? get_attr_int64(s.f, "/", "format_version") : 0;
    v.row_intact.assign(s.P, false);
    try {
      v.attributes_intact = has_attr(s.f, "/", "attributes_digest") &&
                            static_cast<uint64_t>(get_attr_int64(s.f, "/", "attributes_digest")) == attributes_digest(s.f);
    } catch (const H5Error& e) {
      v.problems.push_back(std::string("root attributes unreadable: ") + e.what());
    }
    if (v.format_version != kFormatVersion) {
      v.problems.push_back("format version " + std::to_string(v.format_version) + ", not " + std::to_string(kFormatVersion) +
                           (v.attributes_intact ? ": written by another version of icl-sweep, not readable by this one"
                                                : ", and the attributes do not match their digest: damaged"));
      return v;
    }
    if (!v.attributes_intact) v.problems.push_back("root attributes (spec, spec_hash, ...) do not match their digest");
    std::vector<uint64_t> digest(s.P, 0);
    std::vector<bool> known(s.P, s.problems.empty());
    std::vector<uint64_t> keys;
    for (const Rows& r : s.sets) keys.push_back(digest_key(r.path()));
    s.blocks([&](uint64_t first, uint64_t n, const std::vector<std::vector<char>>& buf, const std::vector<bool>& readable) {
      for (size_t k = 0; k < s.sets.size(); ++k) {
        const uint64_t w = s.sets[k].row_bytes();
        for (uint64_t j = 0; j < n; ++j) {
          if (!readable[k]) known[first + j] = false;
          else digest[first + j] += digest_part(keys[k], buf[k].data() + j * w, w);
        }
      }
    });
    // The flat datasets, slice by slice through their index.
    for (const auto& [flat_path, index_path] : s.flat) {
      const int k = s.find(index_path);
      if (k < 0) {
        v.problems.push_back(flat_path + ": its index " + index_path + " is missing");
        known.assign(s.P, false);
        continue;
      }
      std::vector<int64_t> index(2 * s.P);
      try {
        s.sets[k].read(0, s.P, index.data());
        FlatReader flat(Rows::open(s.f, flat_path));
        const uint64_t key = digest_key(flat_path);
        std::vector<double> slice;
        for (uint64_t i = 0; i < s.P; ++i) {
          if (!flat.slice(index[2 * i], index[2 * i + 1], &slice)) known[i] = false;
          else digest[i] += digest_part(key, slice.data(), slice.size() * 8);
        }
      } catch (const H5Error& e) {
        v.problems.push_back(flat_path + ": " + e.what());
        known.assign(s.P, false);
      }
    }
    std::vector<int64_t> stored(s.P);
    try {
      Rows::open(s.f, "/points/row_digest").read(0, s.P, stored.data());
    } catch (const H5Error& e) {
      v.problems.push_back(std::string("/points/row_digest: ") + e.what());
      known.assign(s.P, false);
    }
    v.problems.insert(v.problems.end(), s.problems.begin(), s.problems.end());
    std::string bad;
    int64_t n_bad = 0;
    for (uint64_t i = 0; i < s.P; ++i) {
      v.row_intact[i] = known[i] && static_cast<uint64_t>(stored[i]) == digest[i] + row_index_part(i);
      if (!v.row_intact[i] && n_bad++ < 20) bad += " " + std::to_string(i);
    }
    if (n_bad) v.problems.push_back(std::to_string(n_bad) + " point row(s) damaged:" + bad + (n_bad > 20 ? " ..." : ""));
  } catch (const H5Error& e) {
    v.problems.push_back(e.what());
    v.n_points = -1;
  }
  return v;
}

void read_results_file(const std::string& path, const Verification& check,
                       const std::function<void(int64_t i, Result&& r, const std::string& build)>& visit) {
  if (check.n_points < 0) throw IoError("cannot read '" + path + "': " + (check.problems.empty() ? "" : check.problems[0]));
  Stored s(path);
  if (static_cast<int64_t>(s.P) != check.n_points) throw IoError("'" + path + "' changed while it was read");
  std::vector<std::string> builds;
  {
    std::istringstream lines(has_attr(s.f, "/", "builds") ? get_attr_string(s.f, "/", "builds") : "");
    for (std::string b; std::getline(lines, b);) builds.push_back(b);
  }
  const int status = s.find("/points/status"), message = s.find("/points/message"), a_status = s.find("/points/analysis_status"),
            a_message = s.find("/points/analysis_message"), build = s.find("/points/build"), layers = s.find("/points/layers"),
            layer_loss = s.find("/layers/test_loss"), step = s.find("/curves/step"), train = s.find("/curves/train_loss"),
            test = s.find("/curves/test_loss"), theta_index = s.find("/weights/theta_index"), pq_index = s.find("/weights/pq_index");
  if (status < 0 || message < 0 || a_status < 0 || a_message < 0 || build < 0 || layers < 0 || layer_loss < 0 || step < 0 ||
      train < 0 || test < 0 || theta_index < 0 || pq_index < 0)
    throw IoError("cannot read '" + path + "': a dataset of the layout is missing");
  std::map<std::string, FlatReader> flat;
  for (const auto& kv : s.flat) flat.emplace(kv.first, FlatReader(Rows::open(s.f, kv.first)));
  std::vector<std::pair<int, std::string>> metric_sets, series_sets;   // dataset, name
  for (size_t k = 0; k < s.sets.size(); ++k) {
    const std::string& p = s.sets[k].path();
    if (p.compare(0, 9, "/metrics/") == 0) metric_sets.push_back({static_cast<int>(k), p.substr(9)});
    if (p.compare(0, 10, "/analysis/") == 0) series_sets.push_back({static_cast<int>(k), p.substr(10)});
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.blocks([&](uint64_t first, uint64_t n, const std::vector<std::vector<char>>& buf, const std::vector<bool>&) {
    for (uint64_t j = 0; j < n; ++j) {
      const uint64_t i = first + j;
      if (!check.row_intact[i]) continue;   // every dataset of an intact row was read
      const auto text = [&](int k) { return text_at(buf[k].data() + j * s.sets[k].row_bytes(), s.sets[k].row_bytes()); };
      const auto row = [&](int k, auto zero) {
        using V = decltype(zero);
        const uint64_t w = std::max<uint64_t>(s.sets[k].width(), 1);
        std::vector<V> out(w);
        std::memcpy(out.data(), buf[k].data() + j * w * sizeof(V), w * sizeof(V));
        return out;
      };
      Result r = pending_result();
      r.status = parse_status(text(status));
      if (r.status == Status::pending) continue;
      r.message = text(message);
      r.analysis_status = parse_analysis_status(text(a_status));
      r.analysis_message = text(a_message);
      for (const auto& [k, name] : metric_sets) {
        const double x = value_at<double>(buf[k], j);
        if (name == "test_loss") r.test_loss = x;
        else if (name == "train_loss") r.train_loss = x;
        else if (name == "steps_done") r.steps_done = std::isnan(x) ? -1 : static_cast<int64_t>(x);
        else if (name == "wall_seconds") r.seconds_total = x;
        else if (name == "train_seconds") r.seconds_train = x;
        else if (name == "eval_seconds") r.seconds_eval = x;
        else if (name == "flops_per_step") r.flops_per_step = x;
        else if (name != "steps_per_second") r.metrics[name] = x;
      }
      for (const auto& [k, name] : series_sets) r.series[name] = row(k, 0.0);
      r.layer_test_loss = row(layer_loss, 0.0);
      r.layer_test_loss.resize(std::min<size_t>(r.layer_test_loss.size(), static_cast<size_t>(value_at<int64_t>(buf[layers], j))));
      r.curve_step = row(step, int64_t{0});
      while (!r.curve_step.empty() && r.curve_step.back() == -1) r.curve_step.pop_back();
      r.curve_train_loss = row(train, 0.0);
      r.curve_test_loss = row(test, 0.0);
      r.curve_train_loss.resize(r.curve_step.size(), nan);
      r.curve_test_loss.resize(r.curve_step.size(), nan);
      const int64_t* t = reinterpret_cast<const int64_t*>(buf[theta_index].data() + j * 16);
      const int64_t* q = reinterpret_cast<const int64_t*>(buf[pq_index].data() + j * 16);
      if (!flat.at("/weights/theta").slice(t[0], t[1], &r.theta) || !flat.at("/weights/P").slice(q[0], q[1], &r.P) ||
          !flat.at("/weights/Q").slice(q[0], q[1], &r.Q))
        continue;   // verified a moment ago: the file changed
      const int64_t b = value_at<int64_t>(buf[build], j);
      visit(static_cast<int64_t>(i), std::move(r), b >= 0 && b < static_cast<int64_t>(builds.size()) ? builds[b] : std::string());
    }
  });
}

std::vector<std::string> read_text_column(const std::string& path, const std::string& column) {
  const File f = File::open_read(path);
  const Rows r = Rows::open(f, column);
  if (r.type() != Type::text) throw H5Error(r.where() + ": not a text dataset");
  std::vector<char> buf(r.rows() * r.row_bytes());
  r.read(0, r.rows(), buf.data());
  std::vector<std::string> out;
  out.reserve(r.rows());
  for (uint64_t i = 0; i < r.rows(); ++i) out.push_back(text_at(buf.data() + i * r.row_bytes(), r.row_bytes()));
  return out;
}

}  // namespace icl::io
