// Per-point memory, mirroring the allocations of run_point (sizes in bytes, doubles so that no
// product overflows):
//   TaskBatch<T> of B tasks (data.cpp): ceil(B/V) chunks x (D N + 2) lanes (Z, y, mask), B (d+1)
//     doubles (w, sigma), and a scratch of 2 ceil((d + (n+1) d + n) / 2) + d + 1 lanes; a lane is 64 bytes.
//   LaneModel<T> (model.cpp): L D N lanes of layer outputs, 2 L H D^2 lanes of gradient accumulators,
//     2 D N of backward scratch; linear: 2 L D^2 + L H D^2 + 3 D^2 lanes of caches; softmax:
//     L H (2 D N + n N) + 2 D N + n N lanes.  Objective<T> adds P, Q (T) and dP, dQ (double).
//   training keeps the batch, the evaluation set, Objective<T> (train.cpp), the landscape observer's Objective<double> and
//     its sets (when it applies), and the curves alive through analyse (analysis.cpp), which adds its tuning sets
//     (AnalysisSets; GD++'s validation set at every L: at L = 1 too it is drawn where a search ends off the tied
//     optimum, gdpp.cpp), the per-task spectra of the 16,000 tuning tasks or of the evaluation set (Spectra: s, b, z a
//     task), three readouts (layers + d doubles per task), and an out-of-distribution
//     set of 1000 tasks at context length 2n with its model; for a causal transformer trained at every prefix,
//     Fu et al.'s probes (probes.hpp): two sets of AnalysisSets::probe tasks, the model in double, the probes'
//     normal equations, their errors at every x token and the spectra of every prefix.
//   LaneTransformer<T> (transformer.cpp, arch = transformer): its buffers as transformer_buffers declares
//     them (the constructor allocates from the same list), and theta as T plus a lane accumulator each.
#include "icl/sweep/memory.hpp"

#include "icl/analysis/analysis.hpp"
#include "icl/analysis/baselines.hpp"
#include "icl/analysis/landscape.hpp"
#include "icl/analysis/probes.hpp"
#include "icl/model/gram.hpp"
#include "icl/model/transformer.hpp"
#include "icl/train/train.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace icl::sweep {
namespace {

constexpr double kLane = 64;                 // bytes of a lane vector (lane.hpp)
constexpr double kProcess = 48.0 * (1 << 20);   // executable, Eigen/HDF5/MPI libraries, MPI buffers
constexpr int kTuneTasks = AnalysisSets::tune, kTuneModelTasks = AnalysisSets::tune_model,
              kGdppValidationTasks = AnalysisSets::gdpp_validation, kOodTasks = AnalysisSets::ood;
constexpr int kNoiseBatches = Landscape::kNoiseBatches, kFullBatches = Landscape::kFullBatches, kFullMax = Landscape::kFullMax;

double batch_bytes(double B, double d, double n, double s) {
  const double V = kLane / s, D = d + 1, N = n + 1;
  const double chunks = std::ceil(B / V);
  const double mp = std::ceil((d + N * d + n) / 2);
  return kLane * (chunks * (D * N + 2) + 2 * mp + d + 1) + 8 * B * (d + 1);
}

double model_bytes(double L, double H, double d, double n, bool softmax, double s) {
  const double D = d + 1, N = n + 1;
  double lanes = L * D * N + 2 * L * H * D * D + 2 * D * N;
  lanes += softmax ? L * H * (2 * D * N + n * N) + 2 * D * N + n * N : 2 * L * D * D + L * H * D * D + 3 * D * D;
  return kLane * lanes + 2 * L * H * D * D * s;
}

double objective_bytes(double L, double H, double d, double n, bool softmax, double s) {
  return model_bytes(L, H, d, n, softmax, s) + L * H * (d + 1) * (d + 1) * (2 * s + 16);
}

// The transformer's buffers as its constructor allocates them (transformer_buffers), and theta in T and as
// lane accumulators.
double transformer_bytes(const Point& p, double s) {
  const TransformerShape t = transformer_shape(p);
  double lanes = 0;
  for (const TransformerBuffer& b : transformer_buffers(t)) lanes += static_cast<double>(b.lanes);
  const double params = transformer_param_count(t);
  return kLane * (lanes + params) + params * s;
}

// The task sets' spectra beside the raw ones (analysis.cpp's make_bases): a copy and a reduction in progress for
// each basis that is a matrix (a scalar basis scales the raw spectra as they are laid out in blocks; the raw
// basis is always reduced).  Counted from the covariance alone: the prior's basis as a matrix under any
// covariance (it is one where w_prior = inverse_cov, which stays an option that changes no estimate).
struct SpectraBases {
  double copies = 0, reductions = 1;
};
SpectraBases spectra_bases(const Point& p) {
  const bool matrix = p.cov != CovKind::identity && p.cov != CovKind::rotated_per_task;
  return {2.0 * matrix, 1.0 + 2 * matrix};
}

// Per-task spectra (Spectra): s, b and z, each d doubles rounded up to 64 bytes, and |y|^2 and n (12 bytes) a task,
// 1 + copies of them; and while they are computed each reduction's a, e, X y, x_q (4 d doubles a task) and sums
// (24 bytes), reserved for the set; the set's labels and noise levels (16 bytes a task).
double spectra_bytes(double tasks, double d, SpectraBases bases = {}) {
  const double segment = std::ceil(d / 8) * 64;
  return (1 + bases.copies) * tasks * (3 * segment + 12) + bases.reductions * (4 * 8 * d + 24) * tasks + 2 * 8 * tasks;
}

}  // namespace

std::string PointMemory::largest() const {
  const std::pair<double, const char*> parts[] = {{training_batch, "training batch"}, {evaluation_set, "evaluation set"},
                                                  {model, "model activations"}, {landscape, "landscape sets"},
                                                  {analysis, "analysis sets"}, {curves, "loss curves"}};
  return std::max_element(std::begin(parts), std::end(parts))->second;
}

PointMemory estimate_memory(const Point& p) {
  PointMemory m;
  const double s = p.precision == Precision::f32 ? 4 : 8;
  const double d = p.d, n = p.n, L = p.layers, H = p.heads, B = p.batch, E = p.eval_tasks;
  const bool softmax = p.attention == Attention::softmax;
  const double params = 2 * L * H * (d + 1) * (d + 1);   // theta of `full` (the largest parameterisation)
  // The task pool (d x M doubles) lives in the training law and, during the analysis, in its pool law.
  m.training_batch = batch_bytes(B, d, n, s) + 8 * d * static_cast<double>(p.task_pool);
  m.evaluation_set = batch_bytes(E, d, n, s);
  // Objective<T> for training, theta, g, Adam state and the landscape probe copies.
  m.model = p.arch == Arch::transformer
                ? transformer_bytes(p, s) + 10 * 8 * transformer_param_count(transformer_shape(p))
                : objective_bytes(L, H, d, n, softmax, s) + 10 * 8 * params;
  // The landscape observer (built only when it applies: analysis/trajectory.cpp): its Objective<double> and sets.
  if (landscape_applies(p))
    m.landscape = objective_bytes(L, H, d, n, softmax, 8) + batch_bytes(std::min(kFullBatches * B, double(kFullMax)), d, n, 8) +
                  kNoiseBatches * batch_bytes(B, d, n, 8) + batch_bytes(p.hessian_tasks, d, n, 8);
  // Records of the curves (step, train, test), held in the result and once more when it is stored.
  m.curves = 2 * 24 * static_cast<double>(eval_record_bound(p));
  if (p.analysis) {
    const SpectraBases bases = spectra_bases(p);
    const double tune = batch_bytes(kTuneTasks, d, n, s) + batch_bytes(kTuneModelTasks, d, n, 8) + batch_bytes(kGdppValidationTasks, d, n, 8);
    const double readouts = 3 * E * (L + d) * 8 + E * L * 8 + 3 * E * 8;
    Point ood_point = p;
    ood_point.n = 2 * p.n;
    const double ood = batch_bytes(kOodTasks, d, 2 * n, s) + (p.arch == Arch::transformer ? transformer_bytes(ood_point, s)
                                                                                         : model_bytes(L, H, d, 2 * n, softmax, s));
    // With a pool: its second copy, dMMSE's scratch (DmmseSums: the pool's features, a block's residuals and
    // predictions, one task's weights), a second evaluation set of pool tasks with its spectra.
    const double M = static_cast<double>(p.task_pool);
    const double pool = M > 0 ? 8 * M * (d + (d * (d + 1) / 2 + d) + 2 * DmmseSums::kBlock + 1) +
                                    batch_bytes(E, d, n, s) + spectra_bytes(E, d, bases) + E * 8
                              : 0;
    // context_curve: its set of the longest length, each task's token Gram, one length's spectra; for a model
    // not of the Gram form (gram.hpp) a prefix of the set and the model at that length too.
    const double nc = p.context_curve, C = AnalysisSets::context;
    Point long_point = p;
    long_point.n = std::max(p.context_curve, 1);
    const double context = nc > 0 ? batch_bytes(C, d, nc, s) + spectra_bytes(C, d, bases) + 4 * C * 8 + C * (d + 1.0) * (d + 1) * 8 +
                                         (gram_form(p) ? 0.0
                                               : batch_bytes(C, d, nc, s) + (p.arch == Arch::transformer
                                                                                 ? transformer_bytes(long_point, s)
                                                                                 : model_bytes(L, H, d, nc, softmax, s)))
                                   : 0;
    const double P = AnalysisSets::probe, X = p.arch == Arch::transformer ? transformer_shape(p).E + 1.0 : 0;
    const double probes = probes_apply(p) ? 2 * batch_bytes(P, d, n, 8) + transformer_bytes(p, 8) + L * (X * X + X) * 8 +
                                                L * P * ((n + 1) * 8 + 32) + spectra_bytes(P * n, d)
                                          : 0;
    m.analysis = tune + std::max(spectra_bytes(kTuneTasks, d, bases),
                                 spectra_bytes(E, d, bases) + readouts + pool + std::max({ood, context, probes}));
  }
  m.process = kProcess;
  m.total = m.training_batch + m.evaluation_set + m.model + m.landscape + m.curves + m.analysis + m.process;
  return m;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 || bytes >= 100 ? "%.0f %s" : "%#.3g %s", bytes, units[u]);   // 812 GiB, 1.00 GiB
  return buf;
}

}  // namespace icl::sweep
