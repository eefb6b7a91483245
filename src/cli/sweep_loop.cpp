// The loops of `icl-sweep run` (sweep_loop.hpp).
// Successive halving over MPI: rank 0 holds the scheduler (sweep::Halving) and the latest checkpoint of
// every point that is waiting for a decision.  A service thread on rank 0 answers the other ranks: each
// sends one message per leg it finished (the rung record or the finished point's record, which it has
// already appended to its own log) and gets its next leg (with the checkpoint to start from) or `stop`;
// a rank that asks while nothing is runnable is parked and answered as soon as something is.  Rank 0's
// main thread trains legs too, taking them from the same scheduler in memory.  Points a decision prunes
// get their record (pruned_result) in rank 0's log.  Nothing is decided from timing: the scheduler's
// decisions depend on the metrics only, so any rank count, order, or kill and --resume gives the same
// records (legs in flight at a kill are trained again from their checkpoint, with the same bits).
#include "icl/cli/sweep_loop.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "icl/cli/live_view.hpp"
#include "icl/io/io_error.hpp"
#include "icl/io/io_stats.hpp"
#include "icl/io/point_log.hpp"
#include "icl/parallel/parallel.hpp"
#include "icl/sweep/halving.hpp"

namespace icl::cli {

InjectedFaults::InjectedFaults(const char* spec) {
  std::istringstream in(spec ? spec : "");
  for (std::string item; in >> item;) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) continue;
    std::vector<int64_t>& into = item.compare(0, colon, "train") == 0 ? train : analysis;
    std::istringstream list(item.substr(colon + 1));
    for (std::string k; std::getline(list, k, ',');) into.push_back(std::stoll(k));
  }
}

void InjectedFaults::enter(const char* stage) {
  const std::vector<int64_t>& at = std::string(stage) == "train" ? train : analysis;
  if (std::find(at.begin(), at.end(), point) != at.end())
    throw std::runtime_error(std::string("injected fault in ") + stage + " (ICL_SWEEP_FAULTS)");
}

namespace {

using Clock = std::chrono::steady_clock;

void report_io_error(const io::IoError& e) {
  std::fprintf(stderr, "icl-sweep run: rank %d: I/O error: %s; stopping the sweep (what is stored stays: --resume continues)\n",
               par::rank(), e.what());
}

// Test hook (ICL_SWEEP_KILL_AFTER=k): the process kills itself with SIGKILL (no handler, nothing flushed
// beyond what write() handed the kernel) right after it stored its k-th record, rung records and pruned
// points included, so a test can cut a sweep at every record boundary.
void stored_a_record() {
  static const long long after = [] {
    const char* v = std::getenv("ICL_SWEEP_KILL_AFTER");
    return v ? std::atoll(v) : 0LL;
  }();
  static std::atomic<long long> stored{0};
  if (after > 0 && ++stored >= after) ::raise(SIGKILL);
}

// A log synced at most once a second (a node crash loses at most about a second of results).
struct SyncedLog {
  io::PointLog log;
  LiveFile live;   // the point in flight, for status --watch (live_view.hpp)
  Clock::time_point last = Clock::now();
  SyncedLog(const std::string& dir, double live_every) : log(dir), live(log.path(), live_every) {}
  void append(const std::string& record) {
    log.append_record(record);
    stored_a_record();
    if (Clock::now() - last > std::chrono::seconds(1)) {
      log.sync();
      last = Clock::now();
    }
  }
};

}  // namespace

LoopOutcome train_points(const sweep::Grid& grid, const SweepOutput& output, const std::vector<uint8_t>& finished_before,
                         const std::atomic<bool>& stop, double live_every) {
  LoopOutcome mine;
  InjectedFaults faults(std::getenv("ICL_SWEEP_FAULTS"));
  par::Counter counter;
  try {
    SyncedLog log(output.dir(), live_every);
    while (!stop.load()) {
      const int64_t k = counter.next();
      if (k >= static_cast<int64_t>(grid.order.size())) break;
      const int64_t i = grid.order[k];
      if (finished_before[i]) continue;
      faults.point = i;
      const Point p = grid.point(i);
      const Result r = run_point(p, &stop, faults.any() ? &faults : nullptr, {}, nullptr, log.live.begin(i, p.steps));
      log.live.end();
      if (r.status == Status::cancelled) break;
      log.append(io::encode_point(i, output.hash(), static_cast<double>(::time(nullptr)), r));
      ++mine.trained;
    }
    log.log.sync();
  } catch (const io::IoError& e) {
    report_io_error(e);
    mine.io_failed = true;
    counter.exhaust();
  }
  return mine;
}

namespace {

// Messages (bytes): a header of int64s, then a record (io/point_log.hpp's encoding) or nothing.
enum Ask : int64_t { kNext = 0, kReached = 1, kFinished = 2, kStopping = 3, kIoFailed = 4 };
enum Answer : int64_t { kLeg = 0, kStop = 1 };

std::string message(std::initializer_list<int64_t> head, const std::string& record = "") {
  std::string m(head.size() * 8, '\0');
  std::memcpy(m.data(), head.begin(), m.size());
  return m + record;
}
int64_t field(const std::string& m, int k) {
  int64_t v = 0;
  std::memcpy(&v, m.data() + 8 * k, 8);
  return v;
}

// A leg to train: the point, the rungs it goes from and to, the checkpoint record to start from ("" at -1).
struct Work {
  sweep::Assignment leg;
  std::string from;
};

// What a finished leg reports: a rung record or a finished point's record (already in the rank's log).
struct Done {
  Ask kind;
  int64_t point;
  int rung;
  std::string record;
};

// Rank 0's side: the scheduler, the checkpoints it holds, and the records of the points it prunes.
class Dispatcher {
 public:
  Dispatcher(const sweep::Spec& spec, const sweep::Grid& grid, const SweepOutput& output, const std::atomic<bool>& stop)
      : h_(spec.halving), grid_(grid), output_(output), stop_(stop), halving_(spec, grid), log_(output.dir()) {}
  ~Dispatcher() { io::io_stats().halving_visits += halving_.work(); }

  // The logs of earlier runs: finished points and rung records, all taken in before the decisions they
  // allow (sweep::Halving::restore: a decision taken halfway would depend on the order they are read in).
  void restore() {
    std::lock_guard<std::mutex> lock(mu_);
    const io::LogScan scan = io::scan_point_logs(output_.dir(), output_.hash());
    std::vector<sweep::Logged> records;
    for (const io::LoggedPoint& p : scan.points)
      if (p.index >= 0 && p.index < grid_.size() && finished(p.result, false))
        records.push_back({p.index, -1, &p.result});
    for (const io::LoggedRung& g : scan.rungs) {
      if (g.index < 0 || g.index >= grid_.size() || g.rung < 0 || g.rung >= halving_.rungs() ||
          g.build != io::build_identity())   // another build's checkpoint: trained again, not mixed in
        continue;
      records.push_back({g.index, g.rung, &g.checkpoint.run});
      auto& held = held_[g.index];
      if (held.second.empty() || held.first <= g.rung)
        held = {g.rung, io::encode_rung(g.index, g.rung, output_.hash(), g.finished_unix, g.checkpoint, g.build)};
    }
    halving_.restore(records);
    record_pruned();
  }

  // Rank 0's own next leg: waits while legs are in flight elsewhere; nothing when the sweep is over.
  std::optional<Work> take_waiting() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (over()) return std::nullopt;
      if (auto w = take()) return w;
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
  // Another rank's next leg, or nothing now (it is parked), or `stop` (the sweep is over for it).
  std::optional<Work> take_now(bool* stop) {
    std::lock_guard<std::mutex> lock(mu_);
    *stop = over();
    return *stop ? std::nullopt : take();
  }

  void report(const Done& d) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string why;
    if (d.kind == kReached) {
      io::LoggedRung g;
      if (!io::decode_rung(d.record, output_.hash(), &g, &why)) throw std::runtime_error("a rung message: " + why);
      halving_.reached(d.point, d.rung, g.checkpoint.run);
      held_[d.point] = {d.rung, d.record};
    } else if (d.kind == kFinished) {
      io::LoggedPoint p;
      if (!io::decode_point(d.record, output_.hash(), &p, &why)) throw std::runtime_error("a point message: " + why);
      halving_.finished(d.point, p.result);
      held_.erase(d.point);
    }
    record_pruned();
    changed_.notify_all();
  }

  // Any rank's stop (a signal, an I/O error): no more legs for anyone.
  void halt(bool io_failed) {
    std::lock_guard<std::mutex> lock(mu_);
    halted_ = true;
    io_failed_ = io_failed_ || io_failed;
    changed_.notify_all();
  }
  bool io_failed() const { return io_failed_; }

 private:
  bool over() const { return halted_ || stop_.load() || halving_.all_finished(); }

  std::optional<Work> take() {
    const std::optional<sweep::Assignment> a = halving_.next();
    if (!a) return std::nullopt;
    Work w{*a, a->from >= 0 ? held_.at(a->point).second : std::string()};
    return w;
  }

  // Writes the records of the points the last decisions pruned, from their checkpoints.
  void record_pruned() {
    bool wrote = false;
    for (const sweep::Pruned& p : halving_.take_pruned()) {
      io::LoggedRung g;
      std::string why;
      if (!io::decode_rung(held_.at(p.point).second, output_.hash(), &g, &why)) throw std::runtime_error("a held checkpoint: " + why);
      const Result r = sweep::pruned_result(h_, g.checkpoint, p, halving_.rung_step(p.rung));
      try {
        log_.append(p.point, output_.hash(), r);
        stored_a_record();
        wrote = true;
      } catch (const io::IoError& e) {
        report_io_error(e);
        halted_ = io_failed_ = true;
      }
      halving_.finished(p.point, r);
      held_.erase(p.point);
    }
    if (wrote) log_.sync();
  }

  const sweep::HalvingSpec h_;
  const sweep::Grid& grid_;
  const SweepOutput& output_;
  const std::atomic<bool>& stop_;
  sweep::Halving halving_;
  io::PointLog log_;                                          // the pruned points' records
  std::map<int64_t, std::pair<int, std::string>> held_;       // point -> (rung, its latest rung record)
  std::mutex mu_;
  std::condition_variable changed_;
  bool halted_ = false, io_failed_ = false;
};

// Trains one leg and appends its record to `log`: a rung record, or the finished point (cancelled: nothing).
std::optional<Done> run_leg(const sweep::HalvingSpec& h, const sweep::Grid& grid, const SweepOutput& output, const Work& w,
                            SyncedLog& log, InjectedFaults& faults, const std::atomic<bool>& stop) {
  const Point p = grid.point(w.leg.point);
  io::LoggedRung from;
  if (w.leg.from >= 0) {
    std::string why;
    if (!io::decode_rung(w.from, output.hash(), &from, &why)) throw std::runtime_error("a checkpoint message: " + why);
  }
  const int rungs = static_cast<int>(h.rungs.size());
  const Leg leg{w.leg.from >= 0 ? &from.checkpoint : nullptr, w.leg.until < rungs ? h.rungs[w.leg.until] : 0};
  Checkpoint stopped;
  faults.point = w.leg.point;
  const Result r = run_point(p, &stop, faults.any() ? &faults : nullptr, leg, &stopped, log.live.begin(w.leg.point, p.steps));
  log.live.end();
  if (r.status == Status::cancelled) return std::nullopt;
  const double now = static_cast<double>(::time(nullptr));
  Done d{kFinished, w.leg.point, w.leg.until, ""};
  if (r.status == Status::ok && r.steps_done < p.steps) {
    d.kind = kReached;
    d.record = io::encode_rung(w.leg.point, w.leg.until, output.hash(), now, stopped);
  } else {
    d.record = io::encode_point(w.leg.point, output.hash(), now, r);
  }
  log.append(d.record);
  return d;
}

// Rank 0's service thread: answers every other rank until each has been told to stop.
void serve(Dispatcher& dispatcher, const std::atomic<bool>& stop) {
  int active = par::size() - 1;
  std::deque<int> parked;
  auto answer = [&](int rank) {   // false: parked
    bool over = false;
    const std::optional<Work> w = dispatcher.take_now(&over);
    if (over) {
      par::send(rank, message({kStop}));
      --active;
      return true;
    }
    if (!w) return false;
    par::send(rank, message({kLeg, w->leg.point, w->leg.from, w->leg.until}, w->from));
    return true;
  };
  while (active > 0) {
    if (stop.load()) dispatcher.halt(false);
    int from = 0;
    std::string m;
    if (par::try_receive(&from, &m)) {
      const int64_t kind = field(m, 0);
      if (kind == kReached || kind == kFinished)
        dispatcher.report({static_cast<Ask>(kind), field(m, 1), static_cast<int>(field(m, 2)), m.substr(24)});
      else if (kind == kStopping || kind == kIoFailed)
        dispatcher.halt(kind == kIoFailed);
      if (!answer(from)) parked.push_back(from);
      continue;
    }
    for (size_t k = parked.size(); k-- > 0;) {   // something may have become runnable (rank 0's own legs)
      const int rank = parked.front();
      parked.pop_front();
      if (!answer(rank)) parked.push_back(rank);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

LoopOutcome train_halving(const sweep::Spec& spec, const sweep::Grid& grid, const SweepOutput& output,
                          const std::atomic<bool>& stop, double live_every) {
  LoopOutcome mine;
  InjectedFaults faults(std::getenv("ICL_SWEEP_FAULTS"));
  const sweep::HalvingSpec& h = spec.halving;
  if (par::rank() == 0) {
    std::unique_ptr<Dispatcher> dispatcher;
    try {
      dispatcher = std::make_unique<Dispatcher>(spec, grid, output, stop);
      dispatcher->restore();
    } catch (const io::IoError& e) {
      report_io_error(e);
      mine.io_failed = true;
      // The other ranks still ask once: tell each to stop.
      for (int k = 1; k < par::size(); ++k) {
        par::receive(k);
        par::send(k, message({kStop}));
      }
      return mine;
    }
    std::thread service([&] { serve(*dispatcher, stop); });
    try {
      SyncedLog log(output.dir(), live_every);
      while (const std::optional<Work> w = dispatcher->take_waiting()) {
        const std::optional<Done> d = run_leg(h, grid, output, *w, log, faults, stop);
        if (!d) break;
        dispatcher->report(*d);
        ++mine.trained;
      }
      log.log.sync();
    } catch (const io::IoError& e) {
      report_io_error(e);
      mine.io_failed = true;
    }
    dispatcher->halt(mine.io_failed);
    service.join();
    mine.io_failed = mine.io_failed || dispatcher->io_failed();
    return mine;
  }
  std::string ask = message({kNext});
  try {
    SyncedLog log(output.dir(), live_every);
    for (;;) {
      par::send(0, ask);
      const std::string m = par::receive(0);
      if (field(m, 0) == kStop) break;
      const Work w{{field(m, 1), static_cast<int>(field(m, 2)), static_cast<int>(field(m, 3))}, m.substr(32)};
      const std::optional<Done> d = run_leg(h, grid, output, w, log, faults, stop);
      if (!d) {
        ask = message({kStopping});
        continue;
      }
      ask = message({d->kind, d->point, d->rung}, d->record);
      ++mine.trained;
    }
    log.log.sync();
  } catch (const io::IoError& e) {
    report_io_error(e);
    mine.io_failed = true;
    par::send(0, message({kIoFailed}));
    while (field(par::receive(0), 0) != kStop) par::send(0, message({kIoFailed}));
  }
  return mine;
}

}  // namespace icl::cli
