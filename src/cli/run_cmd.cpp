// icl-sweep run SPEC -o OUT.h5: the sweep driver, read top to bottom.
//   prolog:  parse and validate the spec (every rank, identically); rank 0 prepares the output
//            (sweep_output.hpp: refuse to clobber, lock, check the spec and builds of a resumed run,
//            take OUT.h5's finished rows into the logs) and writes the plan.
//   loop:    every rank takes the next point of the longest-first order from a shared counter, skips
//            it if it finished in an earlier run (rank 0 read the logs and broadcast the set), trains it
//            and appends it to its own log (sweep_loop.hpp; with successive halving, legs between rungs
//            from rank 0's scheduler instead); rank 0's monitor thread (sweep_monitor.hpp) prints progress
//            and re-merges the logs into OUT.h5 every --merge-every seconds, so a running sweep can be reported.
//   epilog:  rank 0 merges the logs into OUT.h5 (complete, or incomplete after a signal).
// Durability: a finished point is appended, as one self-checking record, to its rank's log in
// OUT.h5.points/ at once, so kill -9 loses only the points in flight (a torn last record is detected and
// recomputed); each rank fdatasyncs its log at most once a second and at the end, so a node crash loses
// at most about a second of results.  SIGTERM / SIGUSR1 / SIGINT stop handing out points, abandon the
// ones in flight at their next step, merge what is done and exit 0.  An I/O failure on any rank (disk
// full, ...) stops the whole sweep: every rank exits 1, everything stored stays, --resume continues.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <numeric>
#include <sstream>

#include "icl/build_info.hpp"
#include "icl/cli/cli.hpp"
#include "icl/cli/install_paths.hpp"
#include "icl/cli/measure_cost.hpp"
#include "icl/cli/spec_file.hpp"
#include "icl/cli/stop_merge.hpp"
#include "icl/cli/sweep_loop.hpp"
#include "icl/cli/sweep_monitor.hpp"
#include "icl/cli/sweep_output.hpp"
#include "icl/io/io_error.hpp"
#include "icl/io/point_log.hpp"
#include "icl/parallel/parallel.hpp"
#include "icl/run/options.hpp"
#include "icl/run/run_point.hpp"
#include "icl/sweep/grid.hpp"
#include "icl/sweep/halving.hpp"
#include "icl/sweep/spec_keys.hpp"

namespace po = boost::program_options;

namespace icl::cli {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
char g_stop_message[512] = "";   // rank 0's word at the first stop signal, written while mpirun still forwards it
extern "C" void on_stop_signal(int s) {
  if (g_signal.exchange(s) == 0 && g_stop_message[0])
    if (::write(2, g_stop_message, std::strlen(g_stop_message)) < 0) {}
  g_stop.store(true);
}

// SIGTERM / SIGUSR1 / SIGINT: stop handing out points, abandon those in flight at their next step.
constexpr int kStopSignals[] = {SIGTERM, SIGUSR1, SIGINT};
struct sigaction g_before_handlers[std::size(kStopSignals)];   // their actions before ours
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t k = 0; k < std::size(kStopSignals); ++k) ::sigaction(kStopSignals[k], &sa, &g_before_handlers[k]);
}

// A dry run writes nothing, so a stop signal ends it as it would have without our handlers (by default, at
// once): --measure trains and analyses for seconds to minutes (a 12-layer transformer's analysis for over 25),
// and nothing there polls the stop flag.  A signal that came before is acted on now.
void restore_stop_actions() {
  for (size_t k = 0; k < std::size(kStopSignals); ++k) ::sigaction(kStopSignals[k], &g_before_handlers[k], nullptr);
  if (const int s = g_signal.load()) ::raise(s);
}

using io::utc_now;

// The spec when none is given: the quickstart preset, from the current directory's jobs/presets (the
// source tree), else beside the executable (installed, or the build tree: install_paths.hpp).
std::string default_spec() {
  std::vector<std::string> candidates{"jobs/presets/quickstart.ini"};
  for (const std::string& p : preset_candidates("quickstart.ini")) candidates.push_back(p);
  for (const std::string& p : candidates)
    if (path_exists(p)) return p;
  return candidates.front();
}

void print_dry_run(const sweep::Spec& spec, const sweep::Summary& g) {
  std::printf("points      %lld (%d replica%s of each combination)\n", static_cast<long long>(g.points), spec.repeats,
              spec.repeats > 1 ? "s" : "");
  std::string fixed;
  for (const sweep::Axis& a : g.axes)
    if (a.values.size() == 1)
      for (size_t j = 0; j < a.options.size(); ++j) fixed += " " + a.options[j] + "=" + a.values[0][j];
  std::printf("fixed      %s\n", fixed.c_str());
  for (const sweep::Axis& a : g.axes) {
    if (a.values.size() == 1) continue;
    std::string name, vals;
    for (size_t j = 0; j < a.options.size(); ++j) name += (j ? "+" : "") + a.options[j];
    for (size_t k = 0; k < a.values.size(); ++k) {
      std::string v;
      for (size_t j = 0; j < a.values[k].size(); ++j) v += (j ? "+" : "") + a.values[k][j];
      vals += (k ? " " : "") + v;
    }
    std::printf("axis        %-14s %zu: %s\n", name.c_str(), a.values.size(), vals.c_str());
  }
  std::printf("estimate    %.2f core-hours in all; longest point %.0f s; about %s on %d rank%s\n", g.total_cost / 3600, g.longest_cost,
              duration_text(std::max(g.longest_cost, g.total_cost / par::size())).c_str(), par::size(), par::size() > 1 ? "s" : "");
  const sweep::PointMemory& m = g.largest_memory;
  std::printf("memory      largest point %s (%s%s; most of it the %s); limit %s per point (%s)\n",
              sweep::format_bytes(m.total).c_str(), g.largest_memory_at.empty() ? "every point" : "at ",
              g.largest_memory_at.c_str(), m.largest().c_str(),
              spec.max_point_bytes > 0 ? sweep::format_bytes(spec.max_point_bytes).c_str() : "none",
              spec.max_point_source.c_str());
}

// --measure: the estimate scaled by this core's measured rates (measure_cost.hpp); returns that scale (0 when
// no combination took a step).
double print_measured(const sweep::Summary& g) {
  const MeasuredCost m = measure_cost(g);
  if (m.rows.empty()) {
    std::printf("measured    nothing: no combination took a training step\n");
    return 0.0;
  }
  std::printf("measured    %.2f core-hours in all on this core (%s; %s): %zu combinations %s train at %.2fx its "
              "time per step, on average\n",
              m.total / 3600, cpu_name().c_str(), build::flags, m.rows.size(),
              g.exhaustive ? "(every one)" : "drawn in proportion to their share of the estimate", m.scale);
  for (const MeasuredCost::Row& r : m.rows)
    std::printf("            %.3g s per step measured, %.3g estimated, analysis %.3g s (%.2f%% of the estimate): %s\n",
                r.measured_step, r.estimated_step, r.analysis, 100 * r.share, r.at.empty() ? "every point" : r.at.c_str());
  std::printf("analysis    %.1f%% of the training time, the whole grid (%s)\n", 100 * m.analysis_share,
              g.exhaustive ? "every combination" : "from the same combinations");
  return m.scale;
}

void print_halving_plan(const sweep::Spec& spec, const sweep::Grid& grid, double measured_scale) {
  const sweep::Conditions c = sweep::conditions(spec, grid);
  size_t most = 0;
  for (const auto& m : c.members) most = std::max(most, m.size());
  std::string rungs;
  for (int64_t r : spec.halving.rungs) rungs += " " + std::to_string(r);
  const double planned = sweep::planned_fraction(spec, grid);
  const double full = std::accumulate(grid.cost.begin(), grid.cost.end(), 0.0);
  std::printf("halving     %zu conditions of up to %zu candidates; rungs at steps%s; the best 1/%d go on (by %s); "
              "planned cost %.1f%% of the full grid (%.2f core-hours",
              c.members.size(), most, rungs.c_str(), spec.halving.reduction, spec.halving.metric.c_str(), 100 * planned,
              planned * full / 3600);
  if (measured_scale > 0) std::printf("; %.2f measured on this core", measured_scale * planned * full / 3600);
  std::printf(")\n");
}

// The summary table of a complete sweep: its first 200 points beside GD and Bayes.
void print_summary(const SweepOutput& output) {
  const sweep::Grid& g = output.grid();
  std::vector<std::string> varying;
  for (const sweep::Axis& a : g.axes)
    if (a.values.size() > 1) varying.insert(varying.end(), a.options.begin(), a.options.end());
  std::printf("%6s", "point");
  for (const std::string& o : varying) std::printf(" %14s", o.c_str());
  std::printf(" %9s %12s %12s %12s\n", "status", "test_loss", "loss_gd", "loss_bayes");
  const LogIndex& index = output.index(true);
  for (int64_t i = 0; i < g.size() && i < 200; ++i) {
    std::printf("%6lld", static_cast<long long>(i));
    const Point p = g.point(i);
    for (const std::string& o : varying) std::printf(" %14s", find_option(o)->get(p).c_str());
    const Result r = index.has(i) ? index.record(i).result : pending_result();
    auto metric = [&](const char* k) { return r.metrics.count(k) ? r.metrics.at(k) : std::nan(""); };
    std::printf(" %9s %12.5g %12.5g %12.5g\n", status_name(r.status), r.test_loss, metric("loss_gd"), metric("loss_bayes"));
  }
  if (g.size() > 200) std::printf("... (%lld points in all)\n", static_cast<long long>(g.size()));
}

// A period in seconds: 0 (never), or from kLeastPeriod (a smaller one rewrites files or prints lines in a busy
// loop: a load on a parallel file system, for nothing) to `most` if given.
constexpr double kLeastPeriod = 0.1;
std::function<void(double)> seconds_rule(const std::string& option, double most = 0) {
  return [option, most](double v) {
    std::ostringstream text;
    text << v;
    if (!std::isfinite(v) || v < 0)
      throw po::error("option '--" + option + "' = '" + text.str() + "': must be a finite number of seconds >= 0 (0 = never)");
    if (v > 0 && v < kLeastPeriod) {
      std::ostringstream least;
      least << kLeastPeriod;
      throw po::error("option '--" + option + "' = '" + text.str() + "': must be 0 (never) or at least " + least.str() + " seconds");
    }
    if (most > 0 && v > most) {   // a condition variable's wait_for overflows past ~9e9 s and returns at once
      std::ostringstream limit;
      limit << most;
      throw po::error("option '--" + option + "' = '" + text.str() + "': must be at most " + limit.str() + " seconds (0 = never)");
    }
  };
}



// The command line: the run's own options, then every option of the table and the spec's keys as
// overrides of the spec.
struct RunArgs {
  std::string spec_path, out;
  Overrides overrides;
  bool dry_run = false, measure = false, quiet = false;
  double progress_every = 0, merge_every = 0, live_every = 0;   // seconds; 0 = never
  OutputOptions output;
};

void add_run_options(po::options_description& desc) {
  desc.add_options()("help,h", "print this help")("spec", po::value<std::string>(), ("the sweep spec (default: the quickstart preset, here " + default_spec() + ")").c_str())(
      "output,o", po::value<std::string>(), "the sweep's HDF5 file (default: the spec's name with .h5)")(
      "resume", po::bool_switch(), "continue the sweep in OUTPUT: recompute nothing that finished")(
      "force", po::bool_switch(), "discard an existing OUTPUT and start over")(
      "dry-run", po::bool_switch(), "print the number of points, the axes, the estimated cost and the largest point's memory, and exit")(
      "measure", po::bool_switch(),
      "with --dry-run: time a few training steps and the analysis of 6 combinations drawn in proportion to their cost on "
      "this core, and scale the estimate by the rate measured")(
      "quiet", po::bool_switch(), "no progress lines, no summary table")(
      "progress", po::value<double>()->default_value(10.0)->notifier(seconds_rule("progress")), "seconds between progress lines (0 = none)")(
      "merge-every", po::value<double>()->default_value(60.0)->notifier(seconds_rule("merge-every")),
      "seconds between merges of the finished points into OUTPUT while the sweep runs (0 = only at the end)")(
      "live-every", po::value<double>()->default_value(10.0)->notifier(seconds_rule("live-every", 86400)),
      "seconds between rewrites of each rank's line for status --watch (its point, step and loss; 0 = none)")(
      "retry-failed", po::bool_switch(), "with --resume: recompute points that failed and points whose analysis failed")(
      "allow-mixed-builds", po::bool_switch(), "with --resume: accept points computed by another build of icl-sweep");
  for (const OptionDef& o : option_table())
    desc.add_options()(o.name.c_str(), po::value<std::vector<std::string>>()->multitoken(), (o.help + " (overrides the spec)").c_str());
  for (const sweep::SweepKey& k : sweep::sweep_keys()) {
    if (!k.help) continue;
    auto* value = po::value<std::vector<std::string>>();
    desc.add_options()(k.name, k.multitoken ? value->multitoken() : value, (std::string(k.help) + " (overrides the spec)").c_str());
  }
}

constexpr long long kMaxRanks = 1LL << 30;

// kContinue, or the exit code (usage errors and --help printed by rank 0).
int parse_run_args(int argc, char** argv, RunArgs* args) {
  const bool root = par::rank() == 0;
  po::options_description desc("icl-sweep run [SPEC] -o OUT.h5: train every point of a sweep over MPI ranks\n\nOptions");
  add_run_options(desc);
  po::positional_options_description pos;
  pos.add("spec", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    if (root) std::cerr << "icl-sweep run: " << e.what() << "\n";
    return kExitUsage;
  }
  if (vm.count("help")) {
    if (root) std::cout << desc << "\n";
    return kExitOk;
  }
  args->spec_path = vm.count("spec") ? vm["spec"].as<std::string>() : default_spec();
  args->out = vm.count("output") ? vm["output"].as<std::string>() : "";
  if (vm.count("output") && args->out.empty()) {
    if (root) std::cerr << "icl-sweep run: option '--output' = '': must name the sweep's file (OUT.h5)\n";
    return kExitUsage;
  }
  if (args->out.empty()) {
    std::string stem = args->spec_path.substr(args->spec_path.find_last_of('/') + 1);
    args->out = stem.substr(0, stem.rfind('.')) + ".h5";
  }
  for (const OptionDef& o : option_table())
    if (vm.count(o.name)) args->overrides.push_back({o.name, vm[o.name].as<std::vector<std::string>>()});
  for (const sweep::SweepKey& k : sweep::sweep_keys())
    if (k.help && vm.count(k.name)) args->overrides.push_back({k.name, vm[k.name].as<std::vector<std::string>>()});
  args->dry_run = vm["dry-run"].as<bool>();
  args->measure = vm["measure"].as<bool>();
  if (args->measure && !args->dry_run) {
    if (root) std::cerr << "icl-sweep run: option '--measure': applies only with --dry-run\n";
    return kExitUsage;
  }
  args->quiet = vm["quiet"].as<bool>();
  args->progress_every = args->quiet ? 0.0 : vm["progress"].as<double>();
  args->merge_every = vm["merge-every"].as<double>();
  args->live_every = vm["live-every"].as<double>();
  args->output.resume = vm["resume"].as<bool>();
  args->output.force = vm["force"].as<bool>();
  args->output.retry_failed = vm["retry-failed"].as<bool>();
  args->output.allow_mixed_builds = vm["allow-mixed-builds"].as<bool>();
  for (const char* name : {"retry-failed", "allow-mixed-builds"})
    if (vm[name].as<bool>() && !args->output.resume) {
      if (root) std::cerr << "icl-sweep run: option '--" << name << "': applies only with --resume\n";
      return kExitUsage;
    }
  // The job scripts set ICL_EXPECT_RANKS to the tasks they asked for: a launcher that does not join the
  // ranks into one MPI job (srun whose MPI plugin does not match this MPI: each task starts as a singleton
  // of 1 rank) is refused here, before anything is written, instead of running the sweep N times over.
  if (const char* want = std::getenv("ICL_EXPECT_RANKS"); want && *want) {
    long long expected = 0;
    if (!sweep::parse_int(want, 1, kMaxRanks, &expected)) {
      if (root)
        std::cerr << "icl-sweep run: environment ICL_EXPECT_RANKS = '" << want << "': must be a whole number of ranks "
                  << "from 1 to " << kMaxRanks << " (the job scripts set it to the tasks they asked for)\n";
      return kExitUsage;
    }
    if (expected != par::size()) {
      if (root)
        std::cerr << "icl-sweep run: started as " << par::size() << " rank" << (par::size() > 1 ? "s" : "")
                  << " but the job expects " << want << " (ICL_EXPECT_RANKS): the launcher did not join the tasks into "
                  << "one MPI job; with srun, its MPI plugin must match this MPI's process manager interface (Open MPI: "
                  << "srun --mpi=pmix; see srun --mpi=list), or launch with mpirun\n";
      return kExitUsage;
    }
  }
  return kContinue;
}

// Reads and checks the spec on every rank; kContinue, or the exit code (errors printed, dry run done).
// --dry-run never materialises the points (a 10^7-point grid is checked in seconds); every rank agrees
// on the outcome, since the default memory limit depends on the node.
int load_sweep(const RunArgs& args, sweep::Spec* spec, sweep::Grid* grid) {
  const bool root = par::rank() == 0;
  sweep::Summary summary;
  std::vector<std::string> errors;
  bool valid = read_spec(args.spec_path, args.overrides, spec, &errors) &&
               (args.dry_run ? sweep::summarise(*spec, &summary, &errors) : sweep::expand_sweep(*spec, grid, &errors));
  if (valid && args.dry_run && spec->halving.on()) valid = sweep::expand_sweep(*spec, grid, &errors);   // the plan needs the points
  if (valid && spec->halving.on() && args.output.retry_failed) {
    errors.push_back("option 'retry-failed': not with successive halving (search): the decisions already ranked the failed "
                     "points last; start over with --force to retry them");
    valid = false;
  }
  const int root_invalid = par::max_int(root && !valid ? 1 : 0);
  if (par::max_int(valid ? 0 : 1) != 0) {
    if (!valid && (root || !root_invalid))
      for (const auto& e : errors)
        std::cerr << "icl-sweep run: " << (root ? "" : "rank " + std::to_string(par::rank()) + ": ") << e << "\n";
    return kExitUsage;
  }
  if (args.dry_run) {
    restore_stop_actions();
    if (root) print_dry_run(*spec, summary);
    const double scale = root && args.measure ? print_measured(summary) : 0.0;
    if (root && spec->halving.on()) print_halving_plan(*spec, *grid, scale);
    return kExitOk;
  }
  return kContinue;
}

// The prolog's last step: rank 0 prepares OUT.h5 and writes the plan; every rank learns the outcome and
// which points earlier runs finished (`finished_before`; rank 0 also counts them in `done_before`).
int open_output(const RunArgs& args, SweepOutput& output, const io::Attributes& attrs,
                std::vector<uint8_t>* finished_before, int64_t* done_before) {
  int code = 0;
  if (par::rank() == 0) {
    code = output.begin(args.output, attrs, finished_before, done_before);
    if (code == 0 && !args.quiet)
      std::printf("icl-sweep: %lld points on %d rank%s, %lld already done; results in %s\n", static_cast<long long>(output.points()),
                  par::size(), par::size() > 1 ? "s" : "", static_cast<long long>(*done_before), args.out.c_str());
    std::fflush(stdout);
  }
  code = par::max_int(code);
  if (code == 0) par::broadcast(*finished_before);
  return code;
}

struct LoopTotals {
  int64_t trained = 0;   // over every rank
  double seconds = 0;
  bool stopped = false;  // by a signal
};

// Rank 0's last lines: the summary table of a complete sweep, then what was done and where it went.
void print_end(const RunArgs& args, const SweepOutput& output, int64_t done, const LoopTotals& totals, bool halving) {
  const int64_t total = output.points();
  const bool complete = done == total;
  if (!args.quiet && complete) print_summary(output);
  if (!args.quiet || !complete)
    std::printf("icl-sweep: %lld/%lld points done (%lld%s trained in this run, %.2f s, %s)%s; wrote %s\n",
                static_cast<long long>(done), static_cast<long long>(total), static_cast<long long>(totals.trained),
                halving ? " legs" : "", totals.seconds, rate_text(totals.trained / std::max(totals.seconds, 1e-9), halving ? "legs" : "points").c_str(),
                complete ? "" : (totals.stopped ? ", stopped by a signal: continue with --resume" : ": continue with --resume"),
                args.out.c_str());
  if (!args.quiet && halving) {
    const LogIndex& index = output.index(true);
    std::vector<int64_t> steps(static_cast<size_t>(total), 0);
    int64_t pruned = 0;
    double seconds = 0;
    index.visit_records(0, total, [&](int64_t i, const io::LoggedPoint* p) {
      if (!p) return;
      steps[static_cast<size_t>(i)] = p->result.steps_done;
      pruned += p->result.status == Status::pruned;
      if (std::isfinite(p->result.seconds_total)) seconds += p->result.seconds_total;
    });
    std::printf("icl-sweep: successive halving: %lld points pruned; compute spent %.1f%% of the full grid's (estimated, by steps "
                "trained); %.0f core-seconds measured over every leg\n",
                static_cast<long long>(pruned), 100 * sweep::spent_fraction(output.grid(), steps), seconds);
  }
}

}  // namespace

int run_main(int argc, char** argv) {
  install_stop_handlers();   // first: a stop signal during start-up is a clean stop too, not death by its default action
  par::init(&argc, &argv);
  const bool root = par::rank() == 0;
  auto finish = [](int code) {
    par::finalize();
    return code;
  };

  // Prolog: the options and the spec (every rank, identically); rank 0 prepares OUT.h5 and writes the plan.
  RunArgs args;
  int code = parse_run_args(argc, argv, &args);
  if (code != kContinue) return finish(code);
  sweep::Spec spec;
  sweep::Grid grid;
  code = load_sweep(args, &spec, &grid);
  if (code != kContinue) return finish(code);
  SweepOutput output(args.out, grid, spec.text);
  io::Attributes attrs;
  attrs.text = {{"spec_file", args.spec_path}, {"started_utc", utc_now()}};
  attrs.integer = {{"rank_count", par::size()}};
  std::vector<uint8_t> finished_before(static_cast<size_t>(grid.size()), 0);   // points done in earlier runs
  int64_t done_before = 0;
  code = open_output(args, output, attrs, &finished_before, &done_before);
  if (code != 0) return finish(code);
  std::unique_ptr<StopMerge> stop_merge;   // writes the final merge should this process die before it does
  if (root) {
    stop_merge = std::make_unique<StopMerge>(args.out);
    std::snprintf(g_stop_message, sizeof g_stop_message,
                  "icl-sweep: stop signal: no new points; finished points are kept and merged into %s as the ranks stop "
                  "(icl-sweep status %s; continue with --resume)\n", args.out.c_str(), args.out.c_str());
  }
  install_stop_handlers();   // again, in case the MPI library's start-up replaced a handler

  // Loop: every rank trains the points it takes; rank 0's monitor prints progress and merges meanwhile.
  std::unique_ptr<SweepMonitor> monitor;
  if (root)
    monitor = std::make_unique<SweepMonitor>(output, attrs, done_before, args.progress_every, args.merge_every);
  const auto loop_start = std::chrono::steady_clock::now();
  const LoopOutcome mine = spec.halving.on() ? train_halving(spec, grid, output, g_stop, args.live_every)
                                             : train_points(grid, output, finished_before, g_stop, args.live_every);
  par::idle_barrier();
  LoopTotals totals;
  totals.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  totals.stopped = par::max_int(g_stop.load() ? 1 : 0) != 0;
  totals.trained = par::sum_int64(mine.trained);
  code = par::max_int(mine.io_failed ? kExitFailure : 0);
  if (monitor) monitor->stop();

  // Epilog: rank 0 merges the logs into OUT.h5 (complete, or incomplete after a signal) and reports.
  if (root) {
    int64_t done = 0;
    if (const int merged = output.end(attrs, &done)) code = merged;
    stop_merge->done();
    if (code == 0) print_end(args, output, done, totals, spec.halving.on());
    std::fflush(stdout);
  }
  par::idle_barrier();   // the other ranks wait for rank 0's merge asleep, not spinning a core each
  code = par::max_int(code);
  if (code == 0 && par::max_int(g_signal.load() == SIGINT ? 1 : 0)) code = kExitInterrupted;   // Ctrl-C: the shell's 130
  return finish(code);
}

}  // namespace icl::cli
