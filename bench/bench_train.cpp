// Training throughput of one grid point, single thread: steps/s, model GFLOP/s, the share of time spent
// drawing tasks, the process's peak resident memory, and the cost of the analyses (analysis.hpp, no
// landscape) against the training time of this run and of the paper's budget for the config
// ([A24]: 10,000 steps for config 1; [V24]: 200,000 for config 2).  One line per run, machine-readable; the table
// beside PyTorch and the machine's peak is made by bench/run_bench.sh.
//   bench_train CONFIG [STEPS [OPTION=VALUE ...]]
//                                   CONFIG = 1: d=5 n=20 L=3 B=1000;  2: d=10 n=20 L=7 B=2048;
//                                   3: [VO23] Fig. 5 (classic tokens, 2 layers, softmax then linear, PE concat);
//                                   4: [VO23] Fig. 8 (12 layers, 4 heads, MLPs, activation clip)
//                                   d:D  (bench/run_bench_d.sh) d = D, n = 2D, L = 2, B = batch_for_d(D), analysis off
// Configs 3 and 4 are arch = transformer with the settings of /work/notes/vo23_protocol.md section 2 (AdamW
// b2 = 0.98, clip 10, x ~ U(-0.5, 0.5), no biases, batch 2048), timed beside bench/torch_transformer_peer.py;
// their analyses are off (config 4's GD++ tuning alone takes over a minute).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "icl/data/data.hpp"
#include "icl/run/options.hpp"
#include "icl/run/run_point.hpp"
#include "large_d.hpp"

using namespace icl;

int main(int argc, char** argv) {
  const std::string arg = argc > 1 ? argv[1] : "1";
  const int d_sweep = arg.rfind("d:", 0) == 0 ? std::atoi(arg.c_str() + 2) : 0;
  const int config = d_sweep ? 0 : std::atoi(arg.c_str());
  Point p;
  // Configs 1, 2: the same loop as bench/torch_peer.py: full P, Q, c = 1/n, fresh noiseless tasks every step,
  // Adam (0.9, 0.999), global-norm clipping at 1.  All: 10,000 evaluation tasks evaluated once at the end.
  std::vector<std::pair<std::string, std::string>> s = {{"param", "full"}, {"clip", "1"}, {"eval_tasks", "10000"}};
  const std::vector<std::pair<std::string, std::string>> vo23 = {
      {"arch", "transformer"}, {"norm", "1"}, {"d", "10"}, {"n", "10"}, {"x_dist", "uniform:0.5"}, {"bias", "false"},
      {"optimizer", "adamw"}, {"beta2", "0.98"}, {"clip", "10"}, {"init", "vs_truncated"}, {"batch", "2048"},
      {"analysis", "false"}};
  if (d_sweep) {   // the loop of bench/torch_peer.py at d, n = 2d, L = 2
    s.insert(s.end(), {{"d", std::to_string(d_sweep)}, {"n", std::to_string(2 * d_sweep)}, {"layers", "2"},
                       {"batch", std::to_string(bench::batch_for_d(d_sweep))}, {"steps", "20"}, {"eval_tasks", "256"},
                       {"analysis", "false"}});
  } else if (config == 1) {
    s.insert(s.end(), {{"d", "5"}, {"n", "20"}, {"layers", "3"}, {"batch", "1000"}, {"steps", "2000"}});
  } else if (config == 3) {   // normal_token_construct.ipynb
    s.insert(s.end(), vo23.begin(), vo23.end());
    s.insert(s.end(), {{"tokens", "classic"}, {"layers", "2"}, {"heads", "1"}, {"attention", "linear"},
                       {"attention_first", "softmax"}, {"pe", "concat"}, {"pe_size", "10"}, {"lr", "1e-3"},
                       {"init_scale", "0.02"}, {"steps", "200"}});
  } else if (config == 4) {   // constructed_token_setup.ipynb, num_layers = 12, num_heads = 4, MLPs on
    s.insert(s.end(), vo23.begin(), vo23.end());
    s.insert(s.end(), {{"tokens", "constructed"}, {"layers", "12"}, {"heads", "4"}, {"key_size", "11"},
                       {"mlp", "true"}, {"widening", "4"}, {"layer_norm", "false"}, {"act_clip", "10"},
                       {"lr", "5e-4"}, {"init_scale", "0.002"}, {"steps", "60"}});
  } else {
    s.insert(s.end(), {{"d", "10"}, {"n", "20"}, {"layers", "7"}, {"batch", "2048"}, {"steps", "200"},
                       {"lr", "1e-4"}, {"init_scale", "0.02"}});
  }
  if (argc > 2) s.push_back({"steps", argv[2]});
  for (int a = 3; a < argc; ++a) {   // OPTION=VALUE overrides, e.g. sampler=v1
    const std::string kv = argv[a];
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) { std::fprintf(stderr, "'%s': expected OPTION=VALUE\n", argv[a]); return 2; }
    s.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
  }
  for (const auto& [k, v] : s) {
    const std::string why = point_set(p, k, v);
    if (!why.empty()) { std::fprintf(stderr, "%s\n", why.c_str()); return 2; }
  }
  p.eval_every = static_cast<int>(p.steps);

  // Drawing tasks alone, for the breakdown.
  TaskBatch<float> batch;
  batch.resize(p.batch, p.d, p.n);
  const TaskLaw law = make_task_law(p);
  const int draws = 50;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < draws; ++i) sample_tasks(law, p.seed, Stream::train, i, batch);
  const double draw_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / draws;

  const Result r = run_point(p);
  const double sps = r.steps_done / r.seconds_train;
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double analysis_s = r.metrics.count("analysis_seconds") ? r.metrics.at("analysis_seconds") : 0.0;
  const double paper_steps = config == 1 ? 10000 : config == 2 ? 200000 : config == 3 ? 10000 : 50000;
  std::printf("icl config=%d d=%d n=%d layers=%d batch=%d status=%s steps=%lld steps_per_s=%.1f flops_per_step=%.4g "
              "gflops=%.2f data_share=%.3f final_loss=%.4g max_rss_mib=%.1f analysis_s=%.3f analysis_share_run=%.3f "
              "analysis_share_paper_budget=%.4f\n",
              config, p.d, p.n, p.layers, p.batch, status_name(r.status), static_cast<long long>(r.steps_done), sps,
              r.flops_per_step, r.flops_per_step * sps * 1e-9, draw_s * sps, r.test_loss, ru.ru_maxrss / 1024.0,
              analysis_s, analysis_s / r.seconds_train, analysis_s / (paper_steps / sps));
  return r.status == Status::ok ? 0 : 1;
}
