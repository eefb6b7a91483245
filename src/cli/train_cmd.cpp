// icl-sweep train: parse and validate every option before any work, train one point, print a summary,
// write the result with -o.  Exit 0 for a result (ok or diverged), 1 when the point or its analysis failed
// (an exception: its reason is printed and stored), 2 for bad input.
#include <sys/stat.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "icl/cli/cli.hpp"
#include "icl/cli/spec_file.hpp"
#include "icl/cli/sweep_monitor.hpp"
#include "icl/io/h5.hpp"
#include "icl/io/results.hpp"
#include "icl/run/options.hpp"
#include "icl/run/run_point.hpp"

namespace po = boost::program_options;

namespace icl::cli {
namespace {

std::string parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

void print_summary(const Point& p, const Result& r) {
  std::printf("status      %s%s%s\n", status_name(r.status), r.message.empty() ? "" : ": ", r.message.c_str());
  std::printf("steps       %lld of %lld\n", static_cast<long long>(r.steps_done), static_cast<long long>(p.steps));
  std::printf("test loss   %.6g   (MSE on %d evaluation tasks, not halved)\n", r.test_loss, p.eval_tasks);
  std::printf("train loss  %.6g\n", r.train_loss);
  std::printf("per layer  ");
  for (double x : r.layer_test_loss) std::printf(" %.6g", x);
  std::printf("\ntime        %.2f s (train %.2f s, %.0f steps/s, %.2f GFLOP/s; eval %.2f s)\n", r.seconds_total,
              r.seconds_train, r.steps_done / std::max(r.seconds_train, 1e-9),
              r.flops_per_step * r.steps_done / std::max(r.seconds_train, 1e-9) * 1e-9, r.seconds_eval);
}

}  // namespace

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

namespace {

// A line on stderr every `every` seconds while the point trains (a long point is not silent):
// "icl-sweep train: step 3320 / 6000 (55%), test loss 0.1516, 412 steps/s, ETA 7 s", then "analysing".
std::function<void()> progress_line(const LiveTraining& live, int64_t steps) {
  const auto start = std::chrono::steady_clock::now();
  return [&live, steps, start] {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto done = live.steps_done.load(std::memory_order_relaxed);
    if (live.analysing.load(std::memory_order_relaxed)) {
      std::fprintf(stderr, "icl-sweep train: trained %lld steps, analysing (%s so far)\n", static_cast<long long>(done),
                   duration_text(secs).c_str());
      return;
    }
    const double rate = static_cast<double>(done) / secs;
    std::fprintf(stderr, "icl-sweep train: step %lld / %lld (%.0f%%), test loss %.4g, %s, ETA %s\n", static_cast<long long>(done),
                 static_cast<long long>(steps), 100.0 * static_cast<double>(done) / static_cast<double>(steps),
                 live.test_loss.load(std::memory_order_relaxed), rate_text(rate, "steps").c_str(),
                 rate > 0 ? duration_text(static_cast<double>(steps - done) / rate).c_str() : "unknown");
  };
}

}  // namespace

int train_main(int argc, char** argv) {
  po::options_description desc("icl-sweep train: train and evaluate one grid point\n\nOptions");
  desc.add_options()("help,h", "print this help")("output,o", po::value<std::string>(), "write the result to this HDF5 file")(
      "force", po::bool_switch(), "overwrite an existing output file")(
      "progress", po::value<double>()->default_value(10.0), "seconds between progress lines on stderr (0 = none)")(
      "config", po::value<std::string>(), "read options from this file (name = value lines)");
  const Point defaults;
  for (const OptionDef& o : option_table())
    desc.add_options()(o.name.c_str(), po::value<std::string>()->value_name("VALUE"),
                       (o.help + " [default: " + o.get(defaults) + "]").c_str());

  po::options_description hidden;   // bare arguments: refused below (Boost would drop them silently)
  hidden.add_options()("bare", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description bare;
  bare.add("bare", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(bare).run(), vm);
    if (vm.count("bare")) {
      const std::string a = vm["bare"].as<std::vector<std::string>>().front();
      const size_t eq = a.find('=');
      std::cerr << "icl-sweep train: argument '" << a << "': options are given as --name VALUE"
                << (eq != std::string::npos && eq > 0 ? " (here --" + a.substr(0, eq) + " " + a.substr(eq + 1) + ")" : "")
                << "; nothing was run\n";
      return kExitUsage;
    }
    if (vm.count("config")) {
      const std::string cfg = vm["config"].as<std::string>();
      std::string text, why;
      if (!read_spec_text(cfg, &text, &why)) {
        std::cerr << "icl-sweep train: option 'config' = '" << cfg << "': " << why << "\n";
        return kExitUsage;
      }
      std::istringstream in(text);
      po::store(po::parse_config_file(in, desc), vm);   // the command line wins
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "icl-sweep train: " << e.what() << "\n";
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return kExitOk;
  }

  Point p;
  std::vector<std::string> errors;
  for (const OptionDef& o : option_table())
    if (vm.count(o.name)) {
      const std::string why = point_set(p, o.name, vm[o.name].as<std::string>());
      if (!why.empty()) errors.push_back(why);
    }
  if (errors.empty()) errors = point_validate(p);
  std::string out;
  if (vm.count("output")) {
    out = vm["output"].as<std::string>();
    if (path_exists(out) && !vm["force"].as<bool>())
      errors.push_back("option 'output' = '" + out + "': the file exists; pass --force to overwrite it");
    struct stat st;
    if (::stat(parent_dir(out).c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      errors.push_back("option 'output' = '" + out + "': directory '" + parent_dir(out) + "' does not exist");
  }
  if (!errors.empty()) {
    for (const auto& e : errors) std::cerr << "icl-sweep train: " << e << "\n";
    return kExitUsage;
  }

  const double every = vm["progress"].as<double>();
  if (!std::isfinite(every) || every < 0 || every > 86400) {
    std::cerr << "icl-sweep train: option 'progress' = '" << every << "': must be a finite number of seconds from 0 to 86400 (0 = none)\n";
    return kExitUsage;
  }
  LiveTraining live;
  const Result r = [&] {
    const Ticker lines(every, progress_line(live, p.steps));
    return run_point(p, nullptr, nullptr, {}, nullptr, &live);
  }();
  print_summary(p, r);
  if (!out.empty()) {
    try {
      io::write_results_file(out, io::MemoryRows({p}, {r}), point_to_text(p));
    } catch (const std::exception& e) {
      std::cerr << "icl-sweep train: cannot write '" << out << "': " << e.what() << "\n";
      return kExitFailure;
    }
    std::printf("wrote       %s\n", out.c_str());
  }
  // run_point turns an exception (std::bad_alloc, ...) into a failed point, stored with its reason: that
  // is a failure of this command, not a result (a diverged point is one, and exits 0).
  if (r.status == Status::failed) {
    std::cerr << "icl-sweep train: the point failed: " << r.message << "\n";
    return kExitFailure;
  }
  if (r.analysis_status == AnalysisStatus::failed) {
    std::cerr << "icl-sweep train: the analysis failed: " << r.analysis_message << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace icl::cli
