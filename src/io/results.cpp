// Writing a results file (layout.hpp): two passes over the rows, the first for the shape of every
// dataset (which metrics and series exist, their widths, the text widths, the flat totals), the second
// writing blocks of rows into chunked datasets while summing every row's digest from the very bytes
// written.  Time and memory: linear in the points, and a block of rows at a time.
#include "icl/io/results.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <memory>

#include "icl/analysis/baselines.hpp"
#include "icl/analysis/metrics.hpp"
#include "icl/build_info.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/io_stats.hpp"
#include "icl/io/layout.hpp"
#include "icl/io/point_log.hpp"
#include "icl/model/transformer.hpp"
#include "icl/run/options.hpp"
#include "integrity.hpp"

namespace icl::io {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr uint64_t kBlockBytes = 32u << 20;   // a block of rows holds about this much

// The training scalars every point has, in /metrics (the analysis scalars follow by name).
struct Fixed {
  const char* name;
  const char* doc;
  double (*get)(const Result&);
};
const Fixed kFixed[] = {
    {"test_loss", "final MSE on the fixed evaluation set", [](const Result& r) { return r.test_loss; }},
    {"train_loss", "mean training MSE over the steps since the previous record (the last eval_every steps unless eval_log adds records)",
     [](const Result& r) { return r.train_loss; }},
    {"steps_done", "training steps completed", [](const Result& r) { return r.steps_done < 0 ? kNaN : double(r.steps_done); }},
    {"wall_seconds", "wall-clock seconds of the whole point", [](const Result& r) { return r.seconds_total; }},
    {"train_seconds", "seconds in training steps", [](const Result& r) { return r.seconds_train; }},
    {"eval_seconds", "seconds in evaluations", [](const Result& r) { return r.seconds_eval; }},
    {"steps_per_second", "training steps per second",
     [](const Result& r) { return r.seconds_train > 0 ? r.steps_done / r.seconds_train : kNaN; }},
    {"flops_per_step", "model FLOPs of one training step", [](const Result& r) { return r.flops_per_step; }},
};

// theta's views of an arch = transformer point, one "name layer offset rows cols" line each (row-major blocks).
std::string transformer_views(const Point& p) {
  if (p.arch != Arch::transformer) return "";
  std::string s;
  const TransformerLayout layout(transformer_shape(p));
  for (const TransformerView& v : layout.views())
    s += v.name + " " + std::to_string(v.layer) + " " + std::to_string(v.offset) + " " + std::to_string(v.rows) + " " +
         std::to_string(v.cols) + "\n";
  return s;
}

// The value of every option at a row, formatted (and parsed) once per distinct value where the source
// says which rows share one.
class OptionCells {
 public:
  struct Cell {
    std::string text;
    int64_t integer = 0;
    double real = 0;
  };
  explicit OptionCells(const RowSource& rows) : rows_(rows), cache_(option_table().size()) {}
  const Cell& at(size_t k, int64_t i, const Point& p) {
    const int64_t key = rows_.option_key(i, k);
    if (key < 0) return scratch_ = make(k, p);
    auto it = cache_[k].find(key);
    if (it == cache_[k].end()) it = cache_[k].emplace(key, make(k, p)).first;
    return it->second;
  }

 private:
  static Cell make(size_t k, const Point& p) {
    io_stats().rows_formatted += 1;
    const OptionDef& o = option_table()[k];
    Cell c{o.get(p)};
    if (o.column == Column::integer) c.integer = std::stoll(c.text);
    if (o.column == Column::real) c.real = std::stod(c.text);
    return c;
  }
  const RowSource& rows_;
  std::vector<std::map<int64_t, Cell>> cache_;
  Cell scratch_;
};

// One row of a point, as the columns read it.
struct RowView {
  int64_t i;
  const Point& p;
  int replica;
  const Result& r;
  int64_t build;   // index into the builds, -1 for none
  OptionCells& options;
};

// A row dataset: its path, stored type and width, its attributes, and how a row's bytes are made.
struct Dataset {
  std::string path;
  Type type;
  uint64_t width = 0;        // elements per row; 0: one element, a (P,) dataset
  uint64_t text_bytes = 0;   // Type::text: bytes per element
  std::vector<std::pair<std::string, std::string>> attrs;
  std::function<void(const RowView&, char*)> fill;   // writes one row's bytes
  uint64_t row_bytes() const { return std::max<uint64_t>(width, 1) * (type == Type::text ? text_bytes : 8); }
};

void put_text(char* out, uint64_t bytes, const std::string& s) {
  std::memset(out, 0, bytes);
  std::memcpy(out, s.data(), std::min<uint64_t>(bytes, s.size()));
}

template <class V>
void put_padded(char* out, uint64_t width, const std::vector<V>& v, V pad, size_t keep = SIZE_MAX) {
  auto* o = reinterpret_cast<V*>(out);
  const size_t n = std::min<size_t>({v.size(), width, keep});
  std::copy(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), o);
  std::fill(o + n, o + width, pad);
}

// The flat datasets: every point's values back to back, located by an index column of [start, count].
struct Flat {
  std::string path;
  const std::vector<double>& (*values)(const Result&);
};
const Flat kFlat[] = {{"/weights/theta", [](const Result& r) -> const std::vector<double>& { return r.theta; }},
                      {"/weights/P", [](const Result& r) -> const std::vector<double>& { return r.P; }},
                      {"/weights/Q", [](const Result& r) -> const std::vector<double>& { return r.Q; }}};

// What the first pass learns: the names and widths every dataset needs.
struct Shapes {
  std::map<std::string, bool> metrics;             // analysis scalars (names)
  std::map<std::string, uint64_t> series;          // analysis series -> width
  uint64_t layers = 1, curve = 1;
  std::map<std::string, uint64_t> text;            // text column -> widest value
  std::map<std::string, int64_t> builds;           // build identity -> its line in @builds
  uint64_t flat[3] = {0, 0, 0};
  void widen(const std::string& column, size_t bytes) {
    uint64_t& w = text[column];
    w = std::max<uint64_t>({w, bytes, 1});
  }
};

Shapes measure(const RowSource& rows, OptionCells& options) {
  Shapes s;
  rows.rows(0, rows.size(), [&](int64_t i, const Point& p, int, const Result& r, const std::string& build) {
    for (const auto& kv : r.metrics) s.metrics[kv.first] = true;
    for (const auto& [name, v] : r.series) s.series[name] = std::max<uint64_t>({s.series[name], v.size(), 1});
    s.layers = std::max<uint64_t>(s.layers, r.layer_test_loss.size());
    s.curve = std::max<uint64_t>(s.curve, r.curve_step.size());
    for (size_t k = 0; k < option_table().size(); ++k)
      if (option_table()[k].column == Column::text) s.widen("/points/" + option_table()[k].name, options.at(k, i, p).text.size());
    s.widen("/points/status", std::strlen(status_name(r.status)));
    s.widen("/points/message", r.message.size());
    s.widen("/points/analysis_status", std::strlen(analysis_status_name(r.analysis_status)));
    s.widen("/points/analysis_message", r.analysis_message.size());
    s.widen("/weights/views", r.theta.empty() ? 0 : transformer_views(p).size());
    if (!build.empty()) s.builds.emplace(build, 0);
    for (int k = 0; k < 3; ++k) s.flat[k] += kFlat[k].values(r).size();
  });
  int64_t line = 0;
  for (auto& kv : s.builds) kv.second = line++;
  return s;
}

std::vector<std::pair<std::string, std::string>> registry_attrs(const std::string& name) {
  MetricInfo info;
  if (!metric_info(name, &info)) return {};   // the registry test keeps this from happening
  std::vector<std::pair<std::string, std::string>> a = {{"doc", info.doc}};
  if (!info.label.empty()) a.push_back({"label", info.label});
  if (!info.convention.empty()) a.push_back({"convention", info.convention});
  return a;
}

// Every row dataset, in the order they are written.
std::vector<Dataset> columns(const Shapes& s, int64_t* flat_start) {
  std::vector<Dataset> c;
  for (size_t k = 0; k < option_table().size(); ++k) {
    const OptionDef& o = option_table()[k];
    const std::string path = "/points/" + o.name;
    Dataset col{path, o.column == Column::text ? Type::text : o.column == Column::integer ? Type::i64 : Type::f64, 0, 0, {}, {}};
    col.attrs = {{"help", o.help}};
    if (o.column == Column::text) {
      col.text_bytes = s.text.at(path);
      col.fill = [k, bytes = col.text_bytes](const RowView& v, char* out) { put_text(out, bytes, v.options.at(k, v.i, v.p).text); };
    } else if (o.column == Column::integer) {
      col.fill = [k](const RowView& v, char* out) { std::memcpy(out, &v.options.at(k, v.i, v.p).integer, 8); };
    } else {
      col.fill = [k](const RowView& v, char* out) { std::memcpy(out, &v.options.at(k, v.i, v.p).real, 8); };
    }
    c.push_back(std::move(col));
  }
  c.push_back({"/points/replica", Type::i64, 0, 0, {{"help", "replica of the grid combination (repeats)"}},
               [](const RowView& v, char* out) { const int64_t x = v.replica; std::memcpy(out, &x, 8); }});
  auto text = [&](const std::string& path, std::function<std::string(const RowView&)> get, const std::string& help) {
    const uint64_t bytes = s.text.at(path);
    c.push_back({path, Type::text, 0, bytes, {{"help", help}}, [get, bytes](const RowView& v, char* out) { put_text(out, bytes, get(v)); }});
  };
  text("/points/status", [](const RowView& v) { return std::string(status_name(v.r.status)); }, "ok, diverged, failed, pruned or pending");
  text("/points/message", [](const RowView& v) { return v.r.message; }, "why a point diverged, failed or was pruned");
  text("/points/analysis_status", [](const RowView& v) { return std::string(analysis_status_name(v.r.analysis_status)); },
       "ok, failed (the training and weights are kept) or skipped");
  text("/points/analysis_message", [](const RowView& v) { return v.r.analysis_message; }, "why the analysis failed");
  c.push_back({"/points/build", Type::i64, 0, 0, {{"help", "the build that computed the row: line k (0-based) of the root attribute builds; -1: none"}},
               [](const RowView& v, char* out) { std::memcpy(out, &v.build, 8); }});
  for (const Fixed& m : kFixed)
    c.push_back({std::string("/metrics/") + m.name, Type::f64, 0, 0, {{"doc", m.doc}},
                 [get = m.get](const RowView& v, char* out) { const double x = get(v.r); std::memcpy(out, &x, 8); }});
  for (const auto& kv : s.metrics) {
    const std::string name = kv.first;
    c.push_back({"/metrics/" + name, Type::f64, 0, 0, registry_attrs(name), [name](const RowView& v, char* out) {
                   const auto it = v.r.metrics.find(name);
                   const double x = it == v.r.metrics.end() ? kNaN : it->second;
                   std::memcpy(out, &x, 8);
                 }});
  }
  for (const auto& [name, width] : s.series)
    c.push_back({"/analysis/" + name, Type::f64, width, 0, registry_attrs(name), [name = name, width = width](const RowView& v, char* out) {
                   static const std::vector<double> none;
                   const auto it = v.r.series.find(name);
                   put_padded(out, width, it == v.r.series.end() ? none : it->second, kNaN);
                 }});
  c.push_back({"/layers/test_loss", Type::f64, s.layers, 0, {{"doc", "MSE of the readout after layer l (column l-1), NaN-padded"}},
               [w = s.layers](const RowView& v, char* out) { put_padded(out, w, v.r.layer_test_loss, kNaN); }});
  c.push_back({"/curves/step", Type::i64, s.curve, 0, {{"doc", "steps of the evaluation records, -1-padded"}},
               [w = s.curve](const RowView& v, char* out) { put_padded<int64_t>(out, w, v.r.curve_step, -1); }});
  c.push_back({"/curves/train_loss", Type::f64, s.curve, 0, {{"doc", "mean training MSE since the previous record (NaN at step 0)"}},
               [w = s.curve](const RowView& v, char* out) { put_padded(out, w, v.r.curve_train_loss, kNaN, v.r.curve_step.size()); }});
  c.push_back({"/curves/test_loss", Type::f64, s.curve, 0, {{"doc", "evaluation MSE at every record"}},
               [w = s.curve](const RowView& v, char* out) { put_padded(out, w, v.r.curve_test_loss, kNaN, v.r.curve_step.size()); }});
  // The flat datasets' indices: [start, count] from running offsets (rows are written in order).
  c.push_back({"/weights/theta_index", Type::i64, 2, 0, {{"doc", "[start, count] of the point's theta in /weights/theta"}},
               [flat_start](const RowView& v, char* out) {
                 const int64_t x[2] = {flat_start[0], static_cast<int64_t>(v.r.theta.size())};
                 std::memcpy(out, x, 16);
                 flat_start[0] += x[1];
               }});
  c.push_back({"/weights/pq_index", Type::i64, 2, 0, {{"doc", "[start, count] of the point's P in /weights/P and of its Q in /weights/Q"}},
               [flat_start](const RowView& v, char* out) {
                 const int64_t x[2] = {flat_start[1], static_cast<int64_t>(v.r.P.size())};
                 std::memcpy(out, x, 16);
                 flat_start[1] += x[1];
               }});
  text("/weights/views", [](const RowView& v) { return v.r.theta.empty() ? std::string() : transformer_views(v.p); },
       "arch = transformer: theta's blocks, one 'name layer offset rows cols' line each (row-major, haiku's in x out)");
  return c;
}

// Root attributes: format, provenance (build, spec, the builds of the rows), conventions, the layout,
// and the caller's `extra`.
void write_attributes(File& f, int64_t n_points, const std::string& spec_text, const Shapes& s, const Attributes& extra) {
  set_attr(f, "/", "format", std::string("icl-sweep results"));
  set_attr(f, "/", "format_version", kFormatVersion);
  set_attr(f, "/", "software_version", std::string(build::version));
  set_attr(f, "/", "git_revision", std::string(build::git_revision));
  set_attr(f, "/", "build_flags", std::string(build::flags));
  set_attr(f, "/", "libm", libm_identity());
  std::string builds;
  for (const auto& kv : s.builds) builds += kv.first + "\n";
  set_attr(f, "/", "builds", builds);
  set_attr(f, "/", "spec", spec_text);
  set_attr(f, "/", "written_utc", utc_now());
  set_attr(f, "/", "loss_convention",
           std::string("plain MSE: mean over tasks of (yhat - y_query)^2, not halved "
                       "([VO23] and [V24] report half of it); yhat = -Z_L[d+1, n+1]"));
  set_attr(f, "/", "normalisation_convention",
           std::string("attention scaled by c = 1/n (norm = 1/n, [A23]/[A24]) or c = 1 (norm = 1, [VO23]/[V24]); "
                       "see /points/norm"));
  set_attr(f, "/", "n_points", n_points);
  set_attr(f, "/", "analysis_convention",
           std::string("every loss in /metrics and /analysis is plain MSE on the point's own tasks (evaluation set, "
                       "or the per-level / out-of-distribution sets named in the dataset's doc); adjusted_* = loss - "
                       "oracle ridge ([V24]); reference methods tuned on a separate seeded tuning set; GD and GD++ "
                       "are the transformer with constructed weights and c = 1; iterative Newton: ") +
               kNewtonAlpha);
  std::string listed;   // the registry's methods: the Python tools take names and legend labels from here
  for (const MethodInfo& m : methods()) listed += std::string(m.key) + "\t" + m.label + "\t" + m.doc + "\n";
  set_attr(f, "/", "methods", listed);
  set_attr(f, "/", "layout", layout_attribute());
  for (const auto& [k, v] : extra.text) set_attr(f, "/", k, v);
  for (const auto& [k, v] : extra.integer) set_attr(f, "/", k, v);
}

// The second pass: blocks of rows into every dataset, each row's digest summed from the bytes written.
void write_rows(File& f, const RowSource& rows, const Shapes& s, OptionCells& options) {
  const auto P = static_cast<uint64_t>(rows.size());
  int64_t flat_start[2] = {0, 0};
  std::vector<Dataset> cols = columns(s, flat_start);
  uint64_t row_bytes = 0;
  std::vector<Rows> sets;
  for (const Dataset& c : cols) {
    sets.push_back(Rows::create(f, c.path, c.type, P, c.width, c.text_bytes));
    for (const auto& [k, v] : c.attrs) set_attr(f, c.path, k, v);
    row_bytes += c.row_bytes();
  }
  std::vector<Rows> flat;
  std::vector<uint64_t> flat_at(3, 0);
  for (int k = 0; k < 3; ++k) flat.push_back(Rows::create(f, kFlat[k].path, Type::f64, s.flat[k], 0));
  // A block's bytes include its rows' weights (theta, P, Q: buffered in flat_buf), counted at their mean a row:
  // counted as the columns alone, a block of 65,536 transformer rows buffered gigabytes.
  uint64_t flat_bytes = 0;
  for (int k = 0; k < 3; ++k) flat_bytes += s.flat[k] * sizeof(double);
  row_bytes += flat_bytes / std::max<uint64_t>(P, 1);
  const uint64_t block = std::max<uint64_t>(1, std::min<uint64_t>(65536, kBlockBytes / std::max<uint64_t>(row_bytes, 1)));
  std::vector<std::vector<char>> buf(cols.size());
  std::vector<std::vector<double>> flat_buf(3);
  std::vector<uint64_t> digest(P, 0);
  std::vector<uint64_t> name_key(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) name_key[c] = digest_key(cols[c].path);
  uint64_t flat_key[3];
  for (int k = 0; k < 3; ++k) flat_key[k] = digest_key(kFlat[k].path);
  for (uint64_t first = 0; first < P; first += block) {
    const uint64_t n = std::min(block, P - first);
    for (size_t c = 0; c < cols.size(); ++c) buf[c].resize(n * cols[c].row_bytes());
    for (auto& v : flat_buf) v.clear();
    rows.rows(static_cast<int64_t>(first), static_cast<int64_t>(n),
              [&](int64_t i, const Point& p, int replica, const Result& r, const std::string& build) {
                const uint64_t j = static_cast<uint64_t>(i) - first;
                const RowView v{i, p, replica, r, build.empty() ? -1 : s.builds.at(build), options};
                uint64_t& d = digest[static_cast<size_t>(i)];
                for (size_t c = 0; c < cols.size(); ++c) {
                  char* out = buf[c].data() + j * cols[c].row_bytes();
                  cols[c].fill(v, out);
                  d += digest_part(name_key[c], out, cols[c].row_bytes());
                }
                for (int k = 0; k < 3; ++k) {
                  const std::vector<double>& x = kFlat[k].values(r);
                  flat_buf[k].insert(flat_buf[k].end(), x.begin(), x.end());
                  d += digest_part(flat_key[k], x.data(), x.size() * 8);
                }
              });
    for (size_t c = 0; c < cols.size(); ++c) sets[c].write(first, n, buf[c].data());
    for (int k = 0; k < 3; ++k) {
      flat[k].write(flat_at[k], flat_buf[k].size(), flat_buf[k].data());
      flat_at[k] += flat_buf[k].size();
    }
  }
  seal(f, std::move(digest));
}

void sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const IoError e = io_error("cannot sync", path);
    if (fd >= 0) ::close(fd);
    throw e;
  }
  ::close(fd);
}

}  // namespace

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

MemoryRows::MemoryRows(std::vector<Point> points, std::vector<Result> results, std::vector<int> replica, std::string build)
    : points_(std::move(points)), results_(std::move(results)), replica_(std::move(replica)),
      build_(build.empty() ? build_identity() : std::move(build)) {
  if (results_.size() != points_.size()) throw std::invalid_argument("MemoryRows: one result per point");
}

void MemoryRows::rows(int64_t first, int64_t n, const Visit& visit) const {
  for (int64_t i = first; i < first + n; ++i) {
    const auto k = static_cast<size_t>(i);
    const bool computed = results_[k].status != Status::pending;
    visit(i, points_[k], k < replica_.size() ? replica_[k] : 0, results_[k], computed ? build_ : std::string());
  }
}

void write_results_file(const std::string& path, const RowSource& rows, const std::string& spec_text, const Attributes& extra,
                        const std::string& temporary) {
  const std::string tmp = temporary.empty() ? path + ".tmp." + std::to_string(::getpid()) : temporary;
  try {
    OptionCells options(rows);
    const Shapes shapes = measure(rows, options);
    File f = File::create_truncate(tmp);
    write_attributes(f, rows.size(), spec_text, shapes, extra);
    write_rows(f, rows, shapes, options);
    f.close();
    sync_file(tmp);   // on disk before the rename makes it the result
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const IoError e = io_error("cannot rename " + tmp + " to", path);
    std::remove(tmp.c_str());
    throw e;
  }
}

}  // namespace icl::io
