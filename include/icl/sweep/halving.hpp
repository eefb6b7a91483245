#pragma once
// Successive halving over a sweep's searched axes (the spec's `search`, `rungs`, `reduction`,
// `rung_metric`; grid.hpp HalvingSpec).  Pure: no MPI, no I/O, no clocks.
//   condition   the points that differ only in searched axes (e.g. 5 seeds x 3 rates of one L, param,
//               noise): its members are the candidates
//   rung r      step rungs[r]: every candidate still in the condition trains to it (a leg, train.hpp)
//               and stops with a checkpoint; once all of them have reached it (or finished early:
//               diverged, failed), the best max(1, floor(n / reduction)) of the n go on to the next rung
//               (the last goes on to p.steps) and the others are pruned there
//   order       by (metric at the rung, point index); a metric that is missing (a point that diverged or
//               failed before the rung) or not finite ranks last
// Determinism: a decision depends only on the candidates' metrics at that rung, which depend only on
// their points; never on timing, rank count or the order results arrive in.  The metric is read from the
// curves every record carries (a checkpoint's, or a finished point's, whose curves pass through every
// rung it reached), so a resumed sweep replays the same decisions from its logs: the candidates at a rung
// are the same points whether their later records (pruned at that rung or a later one, diverged, trained
// to the end) are already read or not.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "icl/base/result.hpp"
#include "icl/sweep/grid.hpp"

namespace icl::sweep {

// The conditions of a sweep: of_point[i] is point i's; members[c] its points in index order.
struct Conditions {
  std::vector<int64_t> of_point;
  std::vector<std::vector<int64_t>> members;
};
Conditions conditions(const Spec& spec, const Grid& grid);

// The rules a halving spec obeys beyond its own keys (checked after expansion): the searched axes exist,
// every rung is an evaluation step of every point and below its `steps`, and no point measures along
// its trajectory (landscape, [VO23]'s copy analysis), which legs do not carry over.
bool check_halving(const Spec& spec, const Grid& grid, std::vector<std::string>* errors);

// The grid of a sweep (grid.hpp's expand), and its halving keys checked against it when halving is on:
// what every command that runs, resumes or verifies a sweep calls.
bool expand_sweep(const Spec& spec, Grid* grid, std::vector<std::string>* errors);

// The rung metric of a run at `step`: the value its curves recorded there; NaN if they did not reach it.
double metric_at(const HalvingSpec& h, const Trained& t, int64_t step);

// The planned cost: the fraction of the full grid's estimated cost a sweep spends if no point diverges
// (each condition's survivors train the legs between rungs).
double planned_fraction(const Spec& spec, const Grid& grid);

// The fraction of the full grid's estimated cost that the points' steps_done (per point) represent, at
// each point's estimated cost per step.
double spent_fraction(const Grid& grid, const std::vector<int64_t>& steps_done);

// A leg of work: train `point` from its checkpoint at rung `from` (-1: from its initialisation) to rung
// `until` = from + 1 (rungs(): to the end).
struct Assignment {
  int64_t point;
  int from, until;
};

// A point a decision pruned: at rung `rung`, ranked `place` (1 = best) of `candidates`.
struct Pruned {
  int64_t point;
  int rung, place, candidates;
};

// The record of a point pruned at `p.rung` (step `step`) from its checkpoint there: status pruned, the
// curves, weights and timings up to the rung, every final loss NaN (it did not finish), no analysis.
Result pruned_result(const HalvingSpec& h, const Checkpoint& c, const Pruned& p, int64_t step);

// A record of a resumed run's logs: a rung record (`rung`, the checkpoint's run) or a finished point's.
struct Logged {
  int64_t point;
  int rung;        // finished: -1
  const Trained* run;
};

// The scheduler's state: what every point has reached, what each condition decided.  Fed with a resumed
// run's logs (restore), then with results as they arrive; hands out runnable legs in the grid's
// longest-first order.
class Halving {
 public:
  Halving(const Spec& spec, const Grid& grid);

  // A resumed run's records, in any order: all are taken in before any decision, which then sees every
  // candidate's metric (a point that failed after a rung carries no curves: its metric there is in its
  // rung record only).  Decisions the records allow but had not recorded show in take_pruned().
  void restore(const std::vector<Logged>& records);

  // A checkpoint at rung `rung` (a rung record).
  void reached(int64_t point, int rung, const Trained& run);
  // A finished record (ok, diverged, failed or pruned): the point needs no more work; its curves give
  // its metrics at the rungs it passed.
  void finished(int64_t point, const Trained& run);
  // The next runnable leg (marked in flight), or nothing now.
  std::optional<Assignment> next();
  // Points pruned by decisions since the last call; they count as finished (the driver writes their records).
  std::vector<Pruned> take_pruned();

  bool all_finished() const { return unfinished_ == 0; }
  int64_t in_flight() const { return in_flight_; }
  int rungs() const { return static_cast<int>(rung_step_.size()); }
  int64_t rung_step(int r) const { return rung_step_[r]; }
  int64_t work() const { return work_; }      // members visited in deciding: linear in the points (test_scale.sh)

 private:
  bool known(int64_t p, int r) const { return known_[p * rungs() + r] != 0; }
  void learn(int64_t p, const Trained& run);  // its metrics at every rung its curves passed
  void take_rung(int64_t p, int rung, const Trained& run);   // reached() and finished() without deciding
  void take_finished(int64_t p, const Trained& run);
  void decide(int64_t condition);             // every decision of the condition that its results allow
  bool pending_at(int64_t p, int r) const;    // p owes its condition a result at rung r
  bool pending_now(int64_t p) const;          // ... at the rung its condition decides next
  void recount(int64_t condition);
  void refresh(int64_t p);                    // in or out of the runnable set

  HalvingSpec h_;
  Conditions cond_;
  std::vector<int64_t> rung_step_;
  std::vector<int64_t> position_;            // of each point in the grid's order (priority)
  std::vector<uint8_t> known_;               // points x rungs: the metric is known
  std::vector<double> metric_;               // points x rungs
  std::vector<int> reached_, promoted_;      // highest rung with a checkpoint (-1); rungs it may train to
  std::vector<int> stood_;                   // highest rung it stood at still training: a checkpoint, a record past it (-1)
  std::vector<uint8_t> final_, flying_;
  std::vector<int> decided_;                 // per condition: rungs decided
  std::vector<int64_t> pending_;             // per condition: members pending_at its next rung
  std::vector<int64_t> order_;               // the grid's longest-first order
  std::set<int64_t> runnable_;               // positions in it
  std::vector<Pruned> pruned_;
  int64_t unfinished_ = 0, in_flight_ = 0, work_ = 0;
};

}  // namespace icl::sweep
