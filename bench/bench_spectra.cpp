// The closed-form baselines' task spectra (issue 32, item 4): per task, the eigenvalues of X X^T and the
// projections U^T X y, U^T x_q, by Eigen's SelfAdjointEigenSolver with its eigenvectors (how the analysis
// computed them until 2026-11-26, tests/test_baselines.cpp's frozen reference) and by TaskSpectra
// (src/analysis/spectra.cpp: tridiagonal QR steps applied to the two projections, 8 tasks side by side),
// on d x 2d uniform contexts, one thread.  Prints microseconds a task, best of 5 passes over 4,000 tasks.
// usage: bench_spectra
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "icl/analysis/baselines.hpp"

namespace {

struct Task {
  Eigen::MatrixXd X;
  Eigen::VectorXd y, xq;
};

template <class F>
double best_microseconds(int tasks, F pass) {
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 1e6 * best / tasks;
}

}  // namespace

int main() {
  std::printf("| d | n | eigendecomposition (us a task) | TaskSpectra (us a task) | speed-up |\n|---|---|---|---|---|\n");
  for (int d : {5, 10, 20, 40}) {
    const int n = 2 * d, B = 4000;
    std::mt19937_64 rng(d);
    std::uniform_real_distribution<double> U(-0.5, 0.5);
    std::vector<Task> tasks(B);
    for (Task& t : tasks) {
      t.X.resize(d, n);
      t.y.resize(n);
      t.xq.resize(d);
      for (int i = 0; i < d * n; ++i) t.X.data()[i] = U(rng);
      for (int i = 0; i < n; ++i) t.y(i) = U(rng);
      for (int i = 0; i < d; ++i) t.xq(i) = U(rng);
    }
    double sink = 0;
    const double eigen = best_microseconds(B, [&] {
      for (const Task& t : tasks) {
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(t.X * t.X.transpose());
        sink += es.eigenvalues()(0) + (es.eigenvectors().transpose() * (t.X * t.y))(0) + (es.eigenvectors().transpose() * t.xq)(0);
      }
    });
    const double ours = best_microseconds(B, [&] {
      icl::TaskSpectra spectra;
      for (const Task& t : tasks) spectra.add(t.X, t.y, t.xq);
      const icl::Spectra all = spectra.take();
      for (size_t t = 0; t < all.size(); ++t) sink += all[t].s(0) + all[t].b(0) + all[t].z(0);
    });
    std::printf("| %d | %d | %.2f | %.2f | %.2fx |%s\n", d, n, eigen, ours, eigen / ours, sink == 42 ? " " : "");
  }
  return 0;
}
