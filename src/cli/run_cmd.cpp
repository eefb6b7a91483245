// icl-sweep run SPEC -o OUT.h5: the sweep driver, read top to bottom.
//   prolog:  parse and validate the spec (every rank, identically); rank 0 prepares the output
//            (sweep_output.hpp: refuse to clobber, lock, check the spec and builds of a resumed run,
//            take OUT.h5's finished rows into the logs) and writes the plan.
//   loop:    every rank takes the next point of the longest-first order from a shared counter, skips
//            it if it finished in an earlier run (rank 0 read the logs and broadcast the set), trains it
//            and appends it to its own log; rank 0's monitor thread prints progress and re-merges the
//            logs into OUT.h5 every --merge-every seconds, so a running sweep can be reported.
//   epilog:  rank 0 merges the logs into OUT.h5 (complete, or incomplete after a signal).
// Durability: a finished point is appended, as one self-checking record, to its rank's log in
// OUT.h5.points/ at once, so kill -9 loses only the points in flight (a torn last record is detected and
// recomputed); each rank fdatasyncs its log at most once a second and at the end, so a node crash loses
// at most about a second of results.  SIGTERM / SIGUSR1 / SIGINT stop handing out points, abandon the
// ones in flight at their next step, merge what is done and exit 0.  An I/O failure on any rank (disk
// full, ...) stops the whole sweep: every rank exits 1, everything stored stays, --resume continues.
#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>

#include "icl/cli/cli.hpp"
#include "icl/cli/spec_file.hpp"
#include "icl/cli/sweep_output.hpp"
#include "icl/core/options.hpp"
#include "icl/core/run_point.hpp"
#include "icl/io/io_error.hpp"
#include "icl/io/point_log.hpp"
#include "icl/parallel/parallel.hpp"
#include "icl/sweep/grid.hpp"

namespace po = boost::program_options;

namespace icl::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }

using io::utc_now;

std::string default_spec() {
  for (const std::string& p : {std::string("jobs/presets/quickstart.ini"), std::string(ICL_SOURCE_DIR) + "/jobs/presets/quickstart.ini"})
    if (path_exists(p)) return p;
  return "jobs/presets/quickstart.ini";
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
  std::printf("estimate    %.2f core-hours in all; longest point %.0f s; about %.0f s on %d ranks\n", g.total_cost / 3600,
              g.longest_cost, std::max(g.longest_cost, g.total_cost / par::size()), par::size());
  const sweep::PointMemory& m = g.largest_memory;
  std::printf("memory      largest point %s (%s%s; most of it the %s); limit %s per point (%s)\n",
              sweep::format_bytes(m.total).c_str(), g.largest_memory_at.empty() ? "every point" : "at ",
              g.largest_memory_at.c_str(), m.largest().c_str(),
              spec.max_point_bytes > 0 ? sweep::format_bytes(spec.max_point_bytes).c_str() : "none",
              spec.max_point_source.c_str());
}

void print_summary(const sweep::Grid& g, const std::vector<Result>& results) {
  std::vector<std::string> varying;
  for (const sweep::Axis& a : g.axes)
    if (a.values.size() > 1) varying.insert(varying.end(), a.options.begin(), a.options.end());
  std::printf("%6s", "point");
  for (const std::string& o : varying) std::printf(" %14s", o.c_str());
  std::printf(" %9s %12s %12s %12s\n", "status", "test_loss", "loss_gd", "loss_bayes");
  for (size_t i = 0; i < g.points.size() && i < 200; ++i) {
    std::printf("%6zu", i);
    for (const std::string& o : varying) std::printf(" %14s", find_option(o)->get(g.points[i]).c_str());
    const Result& r = results[i];
    auto metric = [&](const char* k) { return r.metrics.count(k) ? r.metrics.at(k) : std::nan(""); };
    std::printf(" %9s %12.5g %12.5g %12.5g\n", status_name(r.status), r.test_loss, metric("loss_gd"), metric("loss_bayes"));
  }
  if (g.points.size() > 200) std::printf("... (%zu points in all)\n", g.points.size());
}

// A notifier: a number of seconds must be finite and >= 0.
std::function<void(double)> seconds_rule(const std::string& option) {
  return [option](double v) {
    std::ostringstream text;
    text << v;
    if (!std::isfinite(v) || v < 0)
      throw po::error("option '--" + option + "' = '" + text.str() + "': must be a finite number of seconds >= 0 (0 = never)");
  };
}

// Test hook (ICL_SWEEP_FAULTS="train:3,7 analysis:5"): those points' training or analysis throws, to
// exercise the failure paths of a real sweep.
struct InjectedFaults : StageHook {
  std::vector<int64_t> train, analysis;
  int64_t point = -1;
  explicit InjectedFaults(const char* spec) {
    std::istringstream in(spec ? spec : "");
    for (std::string item; in >> item;) {
      const size_t colon = item.find(':');
      if (colon == std::string::npos) continue;
      std::vector<int64_t>& into = item.compare(0, colon, "train") == 0 ? train : analysis;
      std::istringstream list(item.substr(colon + 1));
      for (std::string k; std::getline(list, k, ',');) into.push_back(std::stoll(k));
    }
  }
  bool any() const { return !train.empty() || !analysis.empty(); }
  void enter(const char* stage) override {
    const std::vector<int64_t>& at = std::string(stage) == "train" ? train : analysis;
    if (std::find(at.begin(), at.end(), point) != at.end())
      throw std::runtime_error(std::string("injected fault in ") + stage + " (ICL_SWEEP_FAULTS)");
  }
};

}  // namespace

int run_main(int argc, char** argv) {
  par::init(&argc, &argv);
  const bool root = par::rank() == 0;
  auto finish = [](int code) {
    par::finalize();
    return code;
  };

  po::options_description desc("icl-sweep run [SPEC] -o OUT.h5: train every point of a sweep over MPI ranks\n\nOptions");
  desc.add_options()("help,h", "print this help")("spec", po::value<std::string>(), "the sweep spec (default: jobs/presets/quickstart.ini)")(
      "output,o", po::value<std::string>(), "the sweep's HDF5 file (default: the spec's name with .h5)")(
      "resume", po::bool_switch(), "continue the sweep in OUTPUT: recompute nothing that finished")(
      "force", po::bool_switch(), "discard an existing OUTPUT and start over")(
      "dry-run", po::bool_switch(), "print the number of points, the axes, the estimated cost and the largest point's memory, and exit")(
      "quiet", po::bool_switch(), "no progress lines, no summary table")(
      "progress", po::value<double>()->default_value(10.0)->notifier(seconds_rule("progress")), "seconds between progress lines (0 = none)")(
      "merge-every", po::value<double>()->default_value(60.0)->notifier(seconds_rule("merge-every")),
      "seconds between merges of the finished points into OUTPUT while the sweep runs (0 = only at the end)")(
      "retry-failed", po::bool_switch(), "with --resume: recompute points that failed and points whose analysis failed")(
      "allow-mixed-builds", po::bool_switch(), "with --resume: accept points computed by another build of icl-sweep");
  for (const OptionDef& o : option_table())
    desc.add_options()(o.name.c_str(), po::value<std::vector<std::string>>()->multitoken(), (o.help + " (overrides the spec)").c_str());
  desc.add_options()("repeats", po::value<std::vector<std::string>>(), "replicas of every combination (overrides the spec)")(
      "sweep_seed", po::value<std::vector<std::string>>(), "the sweep's seed (overrides the spec)")(
      "seeds", po::value<std::vector<std::string>>(), "point | replica: a seed per point, or per replica "
      "shared by every combination (overrides the spec)")(
      "max_point_memory", po::value<std::vector<std::string>>(), "refuse points whose estimated memory exceeds this "
      "(e.g. 8G; off = no limit; default: this machine's memory / the ranks on this node; overrides the spec)");
  po::positional_options_description pos;
  pos.add("spec", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    if (root) std::cerr << "icl-sweep run: " << e.what() << "\n";
    return finish(kExitUsage);
  }
  if (vm.count("help")) {
    if (root) std::cout << desc << "\n";
    return finish(kExitOk);
  }
  const std::string spec_path = vm.count("spec") ? vm["spec"].as<std::string>() : default_spec();
  std::string out = vm.count("output") ? vm["output"].as<std::string>() : "";
  if (out.empty()) {
    std::string stem = spec_path.substr(spec_path.find_last_of('/') + 1);
    out = stem.substr(0, stem.rfind('.')) + ".h5";
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> overrides;
  for (const OptionDef& o : option_table())
    if (vm.count(o.name)) overrides.push_back({o.name, vm[o.name].as<std::vector<std::string>>()});
  for (const char* key : {"repeats", "sweep_seed", "seeds", "max_point_memory"})
    if (vm.count(key)) overrides.push_back({key, vm[key].as<std::vector<std::string>>()});

  // --dry-run never materialises the points (a 10^7-point grid is checked in seconds); every rank agrees
  // on the outcome, since the default memory limit depends on the node.
  sweep::Spec spec;
  sweep::Grid grid;
  sweep::Summary summary;
  std::vector<std::string> errors;
  const bool dry_run = vm["dry-run"].as<bool>();
  const bool valid = read_spec(spec_path, overrides, &spec, &errors) &&
                     (dry_run ? sweep::summarise(spec, &summary, &errors) : sweep::expand(spec, &grid, &errors));
  const int root_invalid = par::max_int(root && !valid ? 1 : 0);
  if (par::max_int(valid ? 0 : 1) != 0) {
    if (!valid && (root || !root_invalid))
      for (const auto& e : errors)
        std::cerr << "icl-sweep run: " << (root ? "" : "rank " + std::to_string(par::rank()) + ": ") << e << "\n";
    return finish(kExitUsage);
  }
  if (dry_run) {
    if (root) print_dry_run(spec, summary);
    return finish(kExitOk);
  }
  const double merge_every = vm["merge-every"].as<double>();
  const bool quiet = vm["quiet"].as<bool>();
  OutputOptions opt;
  opt.resume = vm["resume"].as<bool>();
  opt.force = vm["force"].as<bool>();
  opt.retry_failed = vm["retry-failed"].as<bool>();
  opt.allow_mixed_builds = vm["allow-mixed-builds"].as<bool>();
  SweepOutput output(out, grid, spec.text);
  const std::string started = utc_now();
  io::Attributes attrs;
  attrs.text = {{"spec_file", spec_path}, {"started_utc", started}};
  attrs.integer = {{"rank_count", par::size()}};

  // Prolog: rank 0 prepares the output and writes the plan.
  int code = 0;
  std::vector<uint8_t> finished_before(grid.points.size(), 0);   // points done in earlier runs
  if (root) {
    try {
      code = output.prepare(opt);
      if (code == 0) {
        int done = 0;
        std::vector<std::string> problems;
        const std::vector<Result> now = output.gather(opt.retry_failed, &done, &problems);
        for (const std::string& w : problems) std::fprintf(stderr, "icl-sweep: warning: %s: recomputed\n", w.c_str());
        for (size_t i = 0; i < now.size(); ++i) finished_before[i] = finished(now[i], opt.retry_failed);
        output.write(now, "running", attrs);
        if (!quiet)
          std::printf("icl-sweep: %zu points on %d rank%s, %d already done; results in %s\n", grid.points.size(), par::size(),
                      par::size() > 1 ? "s" : "", done, out.c_str());
      }
    } catch (const io::IoError& e) {
      std::cerr << "icl-sweep run: I/O error: " << e.what() << "\n";
      code = kExitFailure;
    }
    std::fflush(stdout);
  }
  code = par::max_int(code);
  if (code != 0) return finish(code);
  par::broadcast(finished_before);

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGTERM, SIGUSR1, SIGINT}) ::sigaction(s, &sa, nullptr);

  // Monitor (rank 0, a thread that only reads the logs and rewrites OUT.h5: it never calls MPI, and
  // rank 0's main thread does no HDF5 during the loop): progress lines and live merges.
  std::atomic<bool> loop_over{false};
  std::thread monitor;
  const double every = quiet ? 0.0 : vm["progress"].as<double>();
  if (root && (every > 0 || merge_every > 0)) {
    monitor = std::thread([&, every] {
      const auto t0 = std::chrono::steady_clock::now();
      int at_start = 0;
      for (uint8_t f : finished_before) at_start += f;
      auto last_print = t0, last_merge = t0;
      double merge_gap = merge_every;
      while (!loop_over.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const auto now = std::chrono::steady_clock::now();
        const bool print = every > 0 && std::chrono::duration<double>(now - last_print).count() >= every;
        const bool merge = merge_every > 0 && std::chrono::duration<double>(now - last_merge).count() >= merge_gap;
        if (!print && !merge) continue;
        int done = 0;
        const std::vector<Result> so_far = output.gather(opt.retry_failed, &done);
        if (merge) {
          last_merge = now;
          try {
            output.write(so_far, "running", attrs);
            // A live merge costs at most ~5% of rank 0's core: huge sweeps merge less often.
            merge_gap = std::max(merge_every, 20 * std::chrono::duration<double>(std::chrono::steady_clock::now() - now).count());
          } catch (const io::IoError& e) {   // the logs hold every result; the final merge reports
            std::fprintf(stderr, "icl-sweep: warning: live merge into %s failed: %s\n", out.c_str(), e.what());
          }
        }
        if (print) {
          last_print = now;
          const double secs = std::chrono::duration<double>(now - t0).count();
          const double rate = (done - at_start) / secs;
          const double left = static_cast<double>(grid.points.size()) - done;
          std::printf("icl-sweep: %d/%zu points done, %.2f points/s, ETA %s\n", done, grid.points.size(), rate,
                      rate > 0 ? (std::to_string(static_cast<long long>(left / rate)) + " s").c_str() : "unknown");
          std::fflush(stdout);
        }
      }
    });
  }

  // Loop: every rank takes the next point of the longest-first order.
  int64_t trained = 0;
  int io_failed = 0;
  InjectedFaults faults(std::getenv("ICL_SWEEP_FAULTS"));
  const auto loop_start = std::chrono::steady_clock::now();
  {
    par::Counter counter;
    try {
      io::PointLog log(output.dir());
      auto last_sync = std::chrono::steady_clock::now();
      while (!g_stop.load()) {
        const int64_t k = counter.next();
        if (k >= static_cast<int64_t>(grid.order.size())) break;
        const int64_t i = grid.order[k];
        if (finished_before[i]) continue;
        faults.point = i;
        const Result r = run_point(grid.points[i], &g_stop, faults.any() ? &faults : nullptr);
        if (r.status == Status::cancelled) break;
        log.append(i, output.hash(), r);
        if (std::chrono::steady_clock::now() - last_sync > std::chrono::seconds(1)) {
          log.sync();
          last_sync = std::chrono::steady_clock::now();
        }
        ++trained;
      }
      log.sync();
    } catch (const io::IoError& e) {
      std::fprintf(stderr, "icl-sweep run: rank %d: I/O error: %s; stopping the sweep (what is stored stays: --resume continues)\n",
                   par::rank(), e.what());
      io_failed = 1;
      counter.exhaust();
    }
  }
  par::barrier();
  const double loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  const int stopped = par::max_int(g_stop.load() ? 1 : 0);
  const int64_t trained_all = par::sum_int64(trained);
  code = par::max_int(io_failed ? kExitFailure : 0);
  loop_over.store(true);
  if (monitor.joinable()) monitor.join();

  // Epilog: rank 0 merges the logs into OUT.h5.
  if (root) {
    int done = 0;
    const std::vector<Result> results = output.gather(opt.retry_failed, &done);
    const bool complete = done == static_cast<int>(grid.points.size());
    io::Attributes a = attrs;
    a.text.push_back({"ended_utc", utc_now()});
    try {
      output.write(results, complete ? "complete" : "incomplete", a);
    } catch (const io::IoError& e) {
      std::cerr << "icl-sweep run: I/O error: cannot write '" << out << "': " << e.what()
                << " (every finished point is kept in " << output.dir() << "/: --resume writes it once there is space)\n";
      code = kExitFailure;
    }
    if (!quiet && complete && code == 0) print_summary(grid, results);
    if (code == 0 && (!quiet || !complete))
      std::printf("icl-sweep: %d/%zu points done (%lld trained in this run, %.2f s, %.0f points/s)%s; wrote %s\n", done,
                  grid.points.size(), static_cast<long long>(trained_all), loop_seconds, trained_all / std::max(loop_seconds, 1e-9),
                  complete ? "" : (stopped ? ", stopped by a signal: continue with --resume" : ": continue with --resume"),
                  out.c_str());
    std::fflush(stdout);
  }
  return finish(par::max_int(code));
}

}  // namespace icl::cli
