#include "icl/cli/sweep_output.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <csignal>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "icl/cli/cli.hpp"
#include "icl/cli/live_view.hpp"
#include "icl/cli/spec_file.hpp"
#include "icl/cli/stop_merge.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/layout.hpp"
#include "icl/run/options.hpp"
#include "icl/sweep/halving.hpp"
#include "icl/sweep/spec_keys.hpp"

namespace icl::cli {
namespace {

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) { return path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1); }

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
    ::closedir(d);
  }
  return names;
}

// Test hook (ICL_SWEEP_PAUSE_BEFORE_LOCK=PATH): between the check of the output and taking its lock, create
// PATH.reached, then wait until PATH exists (at most ten minutes), so that a test can finish another run on
// the same output in that window whatever the machine's load.
void test_pause_before_lock() {
  const char* v = std::getenv("ICL_SWEEP_PAUSE_BEFORE_LOCK");
  if (!v || !*v) return;
  std::ofstream(std::string(v) + ".reached") << ::getpid() << "\n";
  for (int k = 0; k < 6000 && !cli::path_exists(v); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

std::string hash_hex(uint64_t hash) {
  char text[32];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

int refuse(const std::string& out, const std::string& why) {
  std::cerr << "icl-sweep: option 'output' = '" << out << "': " << why << "\n";
  return kExitUsage;
}

// The rows of OUT.h5 as the index holds them: the grid's points, the logs' best records.
class IndexedRows : public io::RowSource {
 public:
  IndexedRows(const sweep::Grid& grid, const LogIndex& index) : grid_(grid), index_(index) {
    for (const OptionDef& o : option_table()) places_.push_back(grid.place(o.name));
  }
  int64_t option_key(int64_t i, size_t k) const override { return places_[k].key(i); }
  int64_t size() const override { return grid_.size(); }
  // Memory bounded however many rows are asked for (the first pass asks for all of them): LogIndex::visit_records.
  void rows(int64_t first, int64_t n, const Visit& visit) const override {
    static const Result pending = pending_result();
    index_.visit_records(first, n, [&](int64_t i, const io::LoggedPoint* r) {
      visit(i, grid_.point(i), grid_.replica(i), r ? r->result : pending, r ? r->build : "");
    });
  }

 private:
  const sweep::Grid& grid_;
  const LogIndex& index_;
  std::vector<sweep::Grid::Place> places_;
};

}  // namespace

int record_rank(const Result& r) {
  switch (r.status) {
    case Status::ok: return r.analysis_status == AnalysisStatus::failed ? 1 : 0;
    case Status::diverged:
    case Status::pruned: return 2;
    case Status::failed: return 3;
    default: return 4;
  }
}

bool finished(const Result& r, bool retry_failed) {
  if (r.status == Status::pending || r.status == Status::cancelled) return false;
  return !(retry_failed && (r.status == Status::failed || r.analysis_status == AnalysisStatus::failed));
}

std::string lock_file(const std::string& dir) { return dir + "/lock"; }

bool sweep_running(const std::string& dir) {
  const auto held = [](const std::string& path, int flags) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);   // a FIFO so named: no hang
    if (fd < 0) return false;
    const bool busy = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return busy;
  };
  return held(dir, O_DIRECTORY) || held(lock_file(dir), 0);
}

io::Attributes run_provenance(const std::string& out, bool with_end) {
  io::Attributes keep;
  try {
    const io::File f = io::File::open_read(out);
    std::vector<const char*> text = {"spec_file", "started_utc"};
    if (with_end) text.push_back("ended_utc");
    for (const char* k : text)
      if (io::has_attr(f, "/", k)) keep.text.push_back({k, io::get_attr_string(f, "/", k)});
    if (io::has_attr(f, "/", "rank_count")) keep.integer.push_back({"rank_count", io::get_attr_int64(f, "/", "rank_count")});
  } catch (const io::IoError&) {
    return {};
  }
  return keep;
}

// The grid of `spec_file`, or else of the spec stored in OUT.h5 (parsed as `run` parses a spec file).
bool stored_grid(const std::string& out, const std::string& spec_file, sweep::Spec* spec, sweep::Grid* grid, std::string* why) {
  std::vector<std::string> errors;
  bool ok = false;
  if (spec_file.empty()) {
    std::string text;
    try {
      text = io::get_attr_string(io::File::open_read(out), "/", "spec");
    } catch (const std::exception& e) {
      *why = e.what();
      return false;
    }
    ok = parse_spec(text, out + " (its stored spec)", {}, spec, &errors);
  } else {
    ok = read_spec(spec_file, {}, spec, &errors);
  }
  // The memory limit guards the planning of points to run; a stored sweep's were planned when it ran.  Its stored
  // text does not hold the limit, so re-expanding it under this node's default (another node, other ranks a node)
  // could refuse its own points: a merge after a kill, status or verify then failed on a sweep run with
  // max_point_memory = off or above that default.
  spec->max_point_bytes = 0;
  spec->max_point_source = "not applied to a stored sweep";
  ok = ok && sweep::expand_sweep(*spec, grid, &errors);
  if (!ok) *why = errors.empty() ? "the spec does not parse" : errors[0];
  return ok;
}


// --- LogIndex ------------------------------------------------------------------------------

LogIndex::LogIndex(std::string dir, uint64_t hash, int64_t points, bool retry_failed)
    : dir_(std::move(dir)), hash_(hash), retry_failed_(retry_failed), best_(static_cast<size_t>(points)) {}

void LogIndex::update(bool final) {
  const std::vector<std::string> now = io::log_files(dir_);   // sorted
  size_t vanished = 0;   // every log read before must still be there
  for (const std::string& p : paths_) vanished += !std::binary_search(now.begin(), now.end(), p);
  if (vanished)
    throw io::IoError("point logs in " + dir_ + "/ vanished while the sweep ran (" + std::to_string(vanished) + " of " +
                      std::to_string(paths_.size()) + "): not merging; OUT.h5 keeps the points it holds");
  const auto on_point = [&](io::LoggedPoint&& p, const io::RecordRef& where) {
    ++records_;
    if (p.index < 0 || p.index >= static_cast<int64_t>(best_.size())) return;
    Best& b = best_[static_cast<size_t>(p.index)];
    if (b.rank != kNone) ++duplicates_;
    builds_.insert(p.build);
    first_ = std::min(first_, p.finished_unix);
    last_ = std::max(last_, p.finished_unix);
    const int rank = record_rank(p.result);
    if (rank >= b.rank) return;   // the first of equals stays
    done_ -= b.finished;
    b = {where.file, static_cast<uint8_t>(rank), finished(p.result, retry_failed_), where.offset, where.length};
    done_ += b.finished;
  };
  for (const std::string& path : now) {
    auto [it, fresh] = ids_.emplace(path, static_cast<int32_t>(paths_.size()));   // ids stay: new logs are appended
    if (fresh) {
      paths_.push_back(path);
      scanned_.push_back(0);
    }
    const auto file = static_cast<size_t>(it->second);
    scanned_[file] = io::visit_log(path, it->second, scanned_[file], hash_, !final, on_point, {}, &problems_, &other_specs_);
  }
}

io::LoggedPoint LogIndex::record(int64_t i) const {
  const Best& b = best_[static_cast<size_t>(i)];
  const std::string& path = paths_[static_cast<size_t>(b.file)];
  io::LoggedPoint p;
  std::string why;
  if (!io::decode_point(reader_.read(path, {b.file, b.offset, b.length}), hash_, &p, &why))
    throw io::IoError("the record of point " + std::to_string(i) + " in " + path + " no longer decodes: " + why);
  return p;
}

void LogIndex::visit_records(int64_t first, int64_t n, const std::function<void(int64_t, const io::LoggedPoint*)>& f) const {
  constexpr uint64_t kRunBytes = 32u << 20;
  constexpr int64_t kRunPoints = 1 << 20;
  for (int64_t a = first, b = first; a < first + n; a = b) {
    std::vector<int64_t> order;
    for (uint64_t bytes = 0; b < first + n && b - a < kRunPoints && (b == a || bytes < kRunBytes); ++b)
      if (has(b)) {
        order.push_back(b);
        bytes += best_[static_cast<size_t>(b)].length;
      }
    std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      const Best &p = best_[static_cast<size_t>(x)], &q = best_[static_cast<size_t>(y)];
      return p.file != q.file ? p.file < q.file : p.offset < q.offset;
    });
    std::vector<io::LoggedPoint> run(order.size());   // the run's records; where[i - a]: point i's among them
    std::vector<int32_t> where(static_cast<size_t>(b - a), -1);
    for (size_t k = 0; k < order.size(); ++k) {
      run[k] = record(order[k]);
      where[static_cast<size_t>(order[k] - a)] = static_cast<int32_t>(k);
    }
    for (int64_t i = a; i < b; ++i) {
      const int32_t k = where[static_cast<size_t>(i - a)];
      f(i, k < 0 ? nullptr : &run[static_cast<size_t>(k)]);
    }
  }
}

// --- SweepOutput ---------------------------------------------------------------------------

SweepOutput::SweepOutput(std::string out, const sweep::Grid& grid, std::string spec_text)
    : out_(std::move(out)), dir_(out_ + ".points"), spec_text_(std::move(spec_text)), grid_(grid),
      hash_(sweep::spec_hash(spec_text_)) {}

SweepOutput::~SweepOutput() { release(); }

void SweepOutput::release() {
  for (int* fd : {&file_lock_fd_, &lock_fd_})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
}

std::string SweepOutput::hash_text() const { return hash_hex(hash_); }

// A merge's temporary: OUT.h5 + kMergeInfix + the spec's hash (16 hex digits) + "-" + its pid + kMergeSuffix, a name
// a user's file never has.
constexpr char kMergeInfix[] = ".icl-merge-", kMergeSuffix[] = ".tmp";

std::string SweepOutput::temporary() const {
  return out_ + kMergeInfix + hash_text() + "-" + std::to_string(::getpid()) + kMergeSuffix;
}

// Whether `name` (in OUT.h5's directory) is what temporary() names for OUT.h5 = `base`, of any spec and process.
bool is_merge_temporary(const std::string& base, const std::string& name) {
  const std::string stem = base + kMergeInfix;
  const size_t tail = sizeof kMergeSuffix - 1, hex = stem.size(), dash = hex + 16, digits = dash + 1;
  const size_t end = name.size() >= tail ? name.size() - tail : 0;
  if (name.compare(0, stem.size(), stem) != 0 || end <= digits || name.compare(end, tail, kMergeSuffix) != 0 ||
      name[dash] != '-')
    return false;
  const auto all = [&](size_t from, size_t to, const char* set) { return name.find_first_not_of(set, from) >= to; };
  return all(hex, dash, "0123456789abcdef") && all(digits, end, "0123456789");
}

int SweepOutput::prepare(const OutputOptions& opt, bool wait_lock) {
  retry_failed_ = opt.retry_failed;
  const std::string parent = parent_of(out_);
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return refuse(out_, "directory '" + parent + "' does not exist");
  if (::access(parent.c_str(), W_OK | X_OK) != 0) return refuse(out_, "directory '" + parent + "' is not writable");
  if (::stat(out_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return refuse(out_, "it is a directory: the sweep's file must be a file (OUT.h5)");
  if (::stat(dir_.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) throw io::IoError("'" + dir_ + "' exists and is not a directory: move it away");
  // A new sweep (neither --resume nor --force) needs an output that holds nothing: no OUT.h5 and no logs (an
  // OUT.h5.points/ without logs, as a refused command leaves it, holds nothing).  Checked before the lock, so that a
  // refusal writes nothing, and again once the lock is ours: a run that started beside this one may have
  // finished, or stopped, while this one waited for the lock.
  const auto refuse_existing = [&] {
    return refuse(out_, "the sweep output exists; pass --resume to continue it or --force to start over");
  };
  const auto holds_something = [&] { return cli::path_exists(out_) || !io::log_files(dir_).empty(); };
  const bool fresh = !opt.resume && !opt.force;
  if (fresh && holds_something()) return refuse_existing();
  test_pause_before_lock();
  if (!lock(wait_lock)) {
    refuse(out_, other_node_ ? "another icl-sweep run, on another node, is writing it (it holds the lock on " + lock_file(dir_) +
                                   "); try again later (if that node crashed, NFSv3 keeps its lock until the node is back: "
                                   "once no run is left, remove " + lock_file(dir_) + ")"
                             : "another icl-sweep run is writing it (a run, or the merge after one: it holds the lock on " + dir_ + "/); try again later");
    return kExitBusy;
  }
  if (fresh && holds_something()) return refuse_existing();
  const int code = prepare_locked(opt);
  // A refusal writes nothing: the log directory this run made goes again while it is empty.  (A run waiting for
  // its lock then wins a removed directory's, and locks the directory there now instead: lock().)
  if (code != 0 && made_dir_ && entries(dir_) == std::vector<std::string>{"lock"}) {
    std::remove(lock_file(dir_).c_str());
    release();
    ::rmdir(dir_.c_str());
  }
  return code;
}

int SweepOutput::prepare_locked(const OutputOptions& opt) {
  std::remove(merging_marker(dir_).c_str());   // a merge that was killed: the lock is ours now
  // Temporaries of merges into OUT.h5 that were killed, this spec's or another's (a sweep started over with
  // --force): every merge holds the lock, so no one is writing them now, and the logs hold what they held.
  const std::string parent = parent_of(out_), base = base_of(out_);
  for (const std::string& name : entries(parent))
    if (is_merge_temporary(base, name)) std::remove((parent + "/" + name).c_str());

  remove_live_files(dir_);   // a killed run's: its points are not in flight
  if (opt.force) {   // the sweep's own files only: whatever else a user keeps in OUT.h5.points/ stays
    std::remove(out_.c_str());
    for (const std::string& log : io::log_files(dir_)) std::remove(log.c_str());
    return 0;
  }
  if (!opt.resume) return 0;
  io::Verification v;
  if (const int code = check_identity(opt, &v)) return code;
  if (const int code = check_logs_spec(opt)) return code;
  const LogIndex& idx = index(true);
  if (!opt.allow_mixed_builds)
    for (const std::string& b : idx.builds())
      if (b != io::build_identity())
        return refuse(out_, std::string(opt.asked) + ": points in " + dir_ + "/ were computed by another build (" + b + "; this is " + io::build_identity() +
                                "); rebuild that version, or pass --allow-mixed-builds");
  if (v.n_points >= 0) import_rows(v);
  return 0;
}

namespace {

// Whether every intact row of OUT.h5 holds the plan's point: each option column (the seed included)
// equals the grid's value at that row, bit for bit for numbers (damaged rows are recomputed anyway).
// Linear: each distinct value is formatted once.
bool rows_are_the_plans(const io::File& f, const sweep::Grid& grid, const std::vector<bool>& intact, std::string* why) {
  const auto P = static_cast<uint64_t>(grid.size());
  for (const OptionDef& o : option_table()) {
    const std::string path = "/points/" + o.name;
    const sweep::Grid::Place place = grid.place(o.name);
    std::map<int64_t, std::string> expected;   // by the place's key
    try {
      const io::Rows column = io::Rows::open(f, path);
      if (column.rows() != P) throw io::IoError(std::to_string(column.rows()) + " rows, not " + std::to_string(P));
      std::vector<char> stored(P * column.row_bytes());
      column.read(0, P, stored.data());
      for (uint64_t i = 0; i < P; ++i) {
        if (!intact[i]) continue;
        const int64_t key = place.key(static_cast<int64_t>(i));
        auto it = expected.find(key);
        if (it == expected.end() || key < 0) it = expected.insert_or_assign(key, o.get(grid.point(static_cast<int64_t>(i)))).first;
        const char* at = stored.data() + i * column.row_bytes();
        bool same;
        if (o.column == Column::text) {
          same = std::string(at, strnlen(at, column.row_bytes())) == it->second;
        } else if (o.column == Column::integer) {
          int64_t x;
          std::memcpy(&x, at, 8);
          same = x == std::stoll(it->second);
        } else {
          const double want = std::stod(it->second);
          same = std::memcmp(at, &want, 8) == 0;
        }
        if (!same) {
          *why = "row " + std::to_string(i) + " is not this spec's point " + std::to_string(i) + " (its " + o.name + " differs)";
          return false;
        }
      }
    } catch (const io::IoError& e) {
      *why = path + ": " + e.what();
      return false;
    }
  }
  return true;
}

}  // namespace

// One sweep's logs: another spec's records in them (a run of another spec resumed here, or a repair with one,
// before this) refuse, naming the logs that hold them.
int SweepOutput::check_logs_spec(const OutputOptions& opt) const {
  const io::OtherSpecs& other = index(true).other_specs();
  if (other.empty()) return 0;
  const auto& [hash, o] = *other.begin();
  std::string logs = o.logs[0];
  for (size_t k = 1; k < std::min<size_t>(o.logs.size(), 3); ++k) logs += ", " + o.logs[k];
  if (o.logs.size() > 3) logs += " and " + std::to_string(o.logs.size() - 3) + " more";
  const bool merge = opt.asked == std::string("merge"), theirs = index(true).records() == 0;   // none of this spec's
  const std::string what = std::string(merge || !theirs ? "" : opt.repair ? "repair with the spec that wrote them (--spec), or " : "run the spec that wrote them, or ") +
                           "move those logs out of " + dir_ + "/" + (merge ? " and merge again" : opt.repair ? "" : ", or --force to start over");
  return refuse(out_, std::string(opt.asked) + ": " + std::to_string(o.records) + " record(s) in " + logs + " are of another spec (hash " +
                          hash_hex(hash) + (other.size() > 1 ? ", and others" : "") + "; this spec's is " + hash_text() + "): " + what);
}

// A repair of damaged attributes: this spec must be the one its logs name (check_logs_spec) or, with no record of it
// in the logs, the one its spec_hash or its spec attribute names, whichever is intact.  Before, a spec that differed
// outside the points (the halving's rungs) was taken and rewrote the file's spec.
int SweepOutput::check_repair_spec(const OutputOptions& opt) const {
  if (const int code = check_logs_spec(opt)) return code;
  if (index(true).records() > 0) return 0;
  std::string stored_hash = "unreadable", stored_spec = "unreadable";
  try {
    const io::File f = io::File::open_read(out_);
    stored_hash = io::get_attr_string(f, "/", "spec_hash");
    stored_spec = hash_hex(sweep::spec_hash(io::get_attr_string(f, "/", "spec")));
  } catch (const std::exception&) {
  }
  if (stored_hash == hash_text() || stored_spec == hash_text()) return 0;
  return refuse(out_, "--repair: its attributes are damaged and nothing names this spec (hash " + hash_text() + "): not its spec_hash (" + stored_hash +
                          "), not its spec (hashing to " + stored_spec + "), and no log: repair with the spec the sweep ran with");
}

void print_other_specs(const io::OtherSpecs& other) {
  for (const auto& [hash, o] : other) {
    std::printf("other spec  %lld record(s) of another spec (hash %s) in", static_cast<long long>(o.records), hash_hex(hash).c_str());
    for (const std::string& log : o.logs) std::printf(" %s", log.c_str());
    std::printf(": another sweep's logs; --resume, merge and --repair refuse until they are moved out\n");
  }
}

// Checked before the file is believed or set aside: where OUT.h5 is missing, unreadable or its attributes are
// damaged, the logs are what names the sweep's spec.
int SweepOutput::check_identity(const OutputOptions& opt, io::Verification* v) const {
  if (!cli::path_exists(out_)) return check_logs_spec(opt);
  *v = io::verify_results_file(out_);
  const std::string fix = "icl-sweep verify " + out_ + " --repair --spec SPEC rebuilds it from its intact rows and logs; or --force to start over";
  // verify --repair never destroys what it cannot read: the file is kept beside the rebuilt one.
  const auto keep_aside = [&](const std::string& why) {
    const std::string aside = out_ + ".unreadable-" + io::utc_now();
    if (std::rename(out_.c_str(), aside.c_str()) != 0) throw io::io_error("cannot move aside the unreadable", out_);
    std::cerr << "icl-sweep: warning: '" << out_ << "' " << why << ": kept as '" << aside << "'; rebuilding it from " << dir_ << "/\n";
    v->n_points = -1;
    return 0;
  };
  if (v->n_points < 0) {
    if (!opt.repair) return refuse(out_, std::string(opt.asked) + ": it is unreadable (" + (v->problems.empty() ? "" : v->problems[0]) + "): " + fix);
    if (const int code = check_logs_spec(opt)) return code;   // its attributes unreadable too: only the logs can tell
    return keep_aside("is unreadable");
  }
  if (v->format_version != io::kFormatVersion) {
    if (opt.repair && !v->attributes_intact) {
      if (const int code = check_repair_spec(opt)) return code;
      return keep_aside("has damaged attributes (its format among them)");
    }
    return refuse(out_, std::string(opt.asked) + ": it was written in format " + std::to_string(v->format_version) + " by another version of icl-sweep (this one writes " +
                            std::to_string(io::kFormatVersion) + "): continue it with that version, or --force to start over");
  }
  const io::File f = io::File::open_read(out_);
  std::string why;
  if (!v->attributes_intact) {
    if (!opt.repair) return refuse(out_, std::string(opt.asked) + ": its identity attributes (spec, spec_hash, ...) are damaged: " + fix);
    // Repair with the spec the user names, if it is the sweep's: every intact row is kept if the rows are this grid's points.
    if (const int code = check_repair_spec(opt)) return code;
    if (v->n_points != grid_.size() || !rows_are_the_plans(f, grid_, v->row_intact, &why))
      return refuse(out_, "--repair: its attributes are damaged and its rows are not this spec's points (" +
                              (v->n_points != grid_.size() ? std::to_string(v->n_points) + " rows, not " + std::to_string(grid_.size()) : why) +
                              "): pass the original spec with --spec");
    std::cerr << "icl-sweep: warning: '" << out_ << "': its attributes are damaged; its rows are this spec's points: keeping every intact row\n";
    return 0;
  }
  const std::string stored = io::get_attr_string(f, "/", "spec_hash");
  if (stored != hash_text())
    return refuse(out_, std::string(opt.asked) + ": it was written by a different spec (hash " + stored + ", this spec " + hash_text() +
                            "); use the original spec, or --force to start over");
  if (v->n_points != grid_.size() || !rows_are_the_plans(f, grid_, v->row_intact, &why))
    return refuse(out_, std::string(opt.asked) + ": its rows are not this spec's points (" +
                            (v->n_points != grid_.size() ? std::to_string(v->n_points) + " rows, not " + std::to_string(grid_.size()) : why) +
                            "): " + fix);
  if (!opt.allow_mixed_builds) {
    std::istringstream builds(io::get_attr_string(f, "/", "builds"));
    for (std::string b; std::getline(builds, b);)
      if (b != io::build_identity())
        return refuse(out_, std::string(opt.asked) + ": its points were computed by another build (" + b + "; this is " + io::build_identity() +
                                "); rebuild that version, or pass --allow-mixed-builds");
  }
  for (const std::string& p : v->problems)
    std::cerr << "icl-sweep: warning: '" << out_ << "': " << p << ": recovered from the logs or recomputed\n";
  return 0;
}

void SweepOutput::import_rows(const io::Verification& v) const {
  const LogIndex& idx = index(true);
  std::unique_ptr<io::PointLog> log;
  int64_t imported = 0;
  io::read_results_file(out_, v, [&](int64_t i, Result&& r, const std::string& build) {
    // Where the logs lack the point, or hold only a worse record: a retry's ok result merged into OUT.h5 (synced)
    // whose log record did not reach the disk before a crash (a log is synced at most once a second) left the
    // earlier failure as the logs' best, and the next merge wrote it over the finished result.
    if (i >= grid_.size() || record_rank(r) >= idx.rank(i)) return;
    if (!log) log = std::make_unique<io::PointLog>(dir_);
    log->append_record(io::encode_point(i, hash_, static_cast<double>(::time(nullptr)), r, build.empty() ? "unknown build" : build));
    ++imported;
  });
  if (log) log->sync();
  if (imported) {
    std::cerr << "icl-sweep: " << imported << " finished point(s) of '" << out_ << "' were not in " << dir_ << "/: copied into its logs\n";
    index(true);
  }
}

// The lock: flock on the log directory itself, so that no file anyone could delete guards the sweep on this node,
// and then on the file OUT.h5.points/lock: on NFS a directory's flock is local to each node, while a file's is a
// lock the server holds (a POSIX lock over NLM or NFSv4) that a run or `status` on another node sees; before it, a
// `run --force` on a login node beside a job on the compute nodes deleted the job's logs.  A lock won on a
// directory or file removed while this process waited (a refused run removes the ones it made; a user may delete
// them) guards nothing: the one there now is locked instead, or the process that holds it is waited for again.
bool SweepOutput::lock(bool wait) {
  for (int tries = 0; tries < 100; ++tries) {
    release();
    made_dir_ = ::mkdir(dir_.c_str(), 0755) == 0;
    if (!made_dir_ && errno != EEXIST) throw io::io_error("cannot create", dir_);
    lock_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd_ < 0 && errno == ENOENT) continue;   // removed since the mkdir: make it again
    if (lock_fd_ < 0) throw io::io_error("cannot open", dir_);
    if (!acquire(lock_fd_, wait)) return false;
    if (!still_there(lock_fd_, dir_)) continue;
    const std::string file = lock_file(dir_);
    file_lock_fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);   // LOCK_EX over NFS needs write access
    if (file_lock_fd_ < 0 && errno == ENOENT) continue;   // the directory removed since (a refused run's): again
    if (file_lock_fd_ < 0) throw io::io_error("cannot create", file);
    if (::flock(file_lock_fd_, LOCK_EX | LOCK_NB) != 0 && !cluster_lock_unsupported(errno)) {
      other_node_ = true;   // only the file's lock is held: by a run on another node, or a crashed node's
      if (!acquire(file_lock_fd_, wait)) return false;
      other_node_ = false;
    }
    if (still_there(file_lock_fd_, file)) return true;
  }
  return false;
}

// Whether the descriptor is still `path`'s (the held one's inode cannot be reused while the descriptor holds it);
// link counts are not compared: some filesystems do not keep a directory's.
bool SweepOutput::still_there(int fd, const std::string& path) {
  struct stat held {}, there {};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &there) == 0 && held.st_dev == there.st_dev &&
         held.st_ino == there.st_ino;
}

// flock refused by the filesystem (ENOLCK, ENOSYS, EOPNOTSUPP, EINVAL: NFS without its lock service, Lustre with
// neither flock nor localflock): the directory's lock alone guards the sweep, as on a local disk; said once.  (Where
// flock works on each node alone, NFS mounted nolock or Lustre localflock, nothing tells: README.)
bool SweepOutput::cluster_lock_unsupported(int error) {
  if (error != ENOLCK && error != ENOSYS && error != EOPNOTSUPP && error != EINVAL) return false;
  static bool said = false;
  if (!said)
    std::cerr << "icl-sweep: note: " << lock_file(dir_) << " cannot be locked (" << std::strerror(error)
              << "): a run on another node would not see this one's lock; run one sweep at a time on " << out_ << "\n";
  said = true;
  return true;
}

bool SweepOutput::acquire(int fd, bool wait) const {
  if (wait) return ::flock(fd, LOCK_EX) == 0;
  // `status` probes the lock with a momentary shared lock: retry briefly before calling it another run's;
  // the merge after a stopped run (stop_merge.hpp) is waited for, up to ten minutes.
  bool told = false;
  for (int k = 0; k < 12000; ++k) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (k >= 20 && !merge_in_progress(dir_)) return false;
    if (k >= 20 && !told) {
      std::cerr << "icl-sweep: waiting for the merge after the previous run (" << merging_marker(dir_) << ")\n";
      told = true;
    }
    ::usleep(50000);
  }
  return false;
}

const LogIndex& SweepOutput::index(bool final) const {
  std::lock_guard<std::mutex> guard(mu_);
  if (!index_) index_ = std::make_unique<LogIndex>(dir_, hash_, grid_.size(), retry_failed_);
  index_->update(final);
  return *index_;
}

void SweepOutput::write(const std::string& state, const io::Attributes& extra) const {
  io::Attributes a = extra;
  a.text.push_back({"sweep_state", state});
  a.text.push_back({"spec_hash", hash_text()});
  std::lock_guard<std::mutex> guard(mu_);
  io::write_results_file(out_, IndexedRows(grid_, *index_), spec_text_, a, temporary());
}

int SweepOutput::begin(const OutputOptions& opt, const io::Attributes& extra, std::vector<uint8_t>* finished_before, int64_t* done) {
  try {
    if (const int code = prepare(opt)) return code;
    const LogIndex& idx = index(true);   // no rank writes yet
    for (const std::string& w : idx.problems()) std::fprintf(stderr, "icl-sweep: warning: %s: recomputed\n", w.c_str());
    for (int64_t i = 0; i < grid_.size(); ++i) (*finished_before)[static_cast<size_t>(i)] = idx.has(i) && idx.is_finished(i);
    *done = idx.done();
    write("running", extra);
    return 0;
  } catch (const io::IoError& e) {
    std::cerr << "icl-sweep run: I/O error: " << e.what() << "\n";
    return kExitFailure;
  }
}

bool SweepOutput::merge_live(const io::Attributes& extra) const {
  try {
    index(false);
    write("running", extra);
    return true;
  } catch (const io::IoError& e) {
    std::fprintf(stderr, "icl-sweep: warning: live merge into %s failed: %s\n", out_.c_str(), e.what());
    return false;
  }
}

int SweepOutput::end(const io::Attributes& extra, int64_t* done) const {
  io::Attributes a = extra;
  a.text.push_back({"ended_utc", io::utc_now()});
  try {
    *done = index(true).done();
    write(*done == grid_.size() ? "complete" : "incomplete", a);
    return 0;
  } catch (const io::IoError& e) {
    std::cerr << "icl-sweep run: I/O error: cannot write '" << out_ << "': " << e.what()
              << " (every finished point stays in " << dir_ << "/ and in '" << out_ << "': --resume writes them once the cause is fixed)\n";
    return kExitFailure;
  }
}

}  // namespace icl::cli
