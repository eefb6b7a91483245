// trajectory_dump NAME=VALUE...: trains one point with the engine's own loop (train(), float64 only) and
// prints, as JSON on stdout, everything an independent implementation needs to replay it:
//   {"settings": {option: text, ...},                 every option, canonical text
//    "views": [{"name", "layer", "head", "offset", "rows", "cols"}, ...],   theta's layout (row-major views:
//                                                     ParamLayout for arch = lsa; TransformerLayout for
//                                                     arch = transformer, head 0, W stored in x out)
//    "theta0": [...],                                 the initial parameters
//    "steps": [{"X": B x d x (n+1), "y": B x (n+1),   the batch of step s (y[n]: the query's label)
//               "lr": ..., "loss": ...,               the rate and the training loss of step s
//               "theta": [...]}, ...]}                the parameters after step s
// torch_trajectory.py (arch = lsa) and torch_transformer.py (arch = transformer) replay it in PyTorch
// float64 and compare every step.
#include <cstdio>
#include <string>
#include <vector>

#include "icl/data/data.hpp"
#include "icl/model/params.hpp"
#include "icl/model/transformer.hpp"
#include "icl/run/options.hpp"
#include "icl/train/optim.hpp"
#include "icl/train/train.hpp"

namespace {

using namespace icl;

// Records theta before every step and after the last one (the observer sees them all).
struct ThetaRecorder : TrainObserver {
  std::vector<std::vector<double>> theta;   // theta[s]: the parameters before step s
  bool wanted(int64_t) const override { return true; }
  void measure(int64_t step, const std::vector<double>& th, const std::vector<double>&) override {
    if (static_cast<int64_t>(theta.size()) == step) theta.push_back(th);
  }
};

void print_array(const double* x, int count) {
  std::printf("[");
  for (int i = 0; i < count; ++i) std::printf("%s%.17g", i ? ", " : "", x[i]);
  std::printf("]");
}

void print_array(const std::vector<double>& x) { print_array(x.data(), static_cast<int>(x.size())); }

// The batch of step s, as the loop draws it: X as B x d x (n+1), y as B x (n+1).
void print_batch(const Point& p, const TaskLaw& law, int64_t s) {
  TaskBatch<double> batch;
  batch.resize(p.batch, p.d, p.n);
  const Draw draw = draws::train_batch(s / p.refresh);
  sample_tasks(law, p.seed, draw.stream, draw.block, batch);
  std::vector<Eigen::MatrixXd> X(p.batch);
  std::vector<Eigen::VectorXd> y(p.batch);
  for (int t = 0; t < p.batch; ++t) batch_task(batch, t, &X[t], &y[t]);
  std::printf("\"X\": [");
  for (int t = 0; t < p.batch; ++t) {
    std::printf("%s[", t ? ", " : "");
    for (int i = 0; i < p.d; ++i) {
      const Eigen::VectorXd row = X[t].row(i).transpose();
      std::printf("%s", i ? ", " : "");
      print_array(row.data(), static_cast<int>(row.size()));
    }
    std::printf("]");
  }
  std::printf("], \"y\": [");
  for (int t = 0; t < p.batch; ++t) {
    std::printf("%s", t ? ", " : "");
    print_array(y[t].data(), static_cast<int>(y[t].size()));
  }
  std::printf("]");
}

}  // namespace

int main(int argc, char** argv) {
  Point p;
  p.precision = Precision::f64;
  p.analysis = false;
  p.eval_every = 1;   // the training loss of every step is then a curve point of its own
  p.eval_tasks = 8;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto eq = arg.find('=');
    const std::string why = eq == std::string::npos ? "expected NAME=VALUE, got '" + arg + "'"
                                                    : point_set(p, arg.substr(0, eq), arg.substr(eq + 1));
    if (!why.empty()) { std::fprintf(stderr, "trajectory_dump: %s\n", why.c_str()); return 2; }
  }
  std::vector<std::string> problems = point_validate(p);
  if (p.precision != Precision::f64) problems.push_back("precision must be float64");
  if (p.eval_every != 1) problems.push_back("eval_every must be 1 (one training loss per step)");
  for (const auto& why : problems) std::fprintf(stderr, "trajectory_dump: %s\n", why.c_str());
  if (!problems.empty()) return 2;

  ThetaRecorder recorder;
  const Trained r = train(p, nullptr, &recorder);
  if (r.status != Status::ok || static_cast<int64_t>(recorder.theta.size()) != p.steps + 1) {
    std::fprintf(stderr, "trajectory_dump: training stopped: %s\n", r.message.c_str());
    return 1;
  }

  std::printf("{\"settings\": {");
  bool first = true;
  for (const OptionDef& o : option_table()) {
    std::printf("%s\"%s\": \"%s\"", first ? "" : ", ", o.name.c_str(), o.get(p).c_str());
    first = false;
  }
  std::printf("},\n \"views\": [");
  auto print_view = [](size_t k, const std::string& name, int layer, int head, int offset, int rows, int cols) {
    std::printf("%s{\"name\": \"%s\", \"layer\": %d, \"head\": %d, \"offset\": %d, \"rows\": %d, \"cols\": %d}",
                k ? ", " : "", name.c_str(), layer, head, offset, rows, cols);
  };
  if (p.arch == Arch::transformer) {   // the heads are column blocks of one view: head 0 throughout
    const TransformerLayout layout(transformer_shape(p));
    for (size_t k = 0; k < layout.views().size(); ++k) {
      const TransformerView& v = layout.views()[k];
      print_view(k, v.name, v.layer, 0, v.offset, v.rows, v.cols);
    }
  } else {
    const ParamLayout layout(p);
    for (size_t k = 0; k < layout.views().size(); ++k) {
      const ParamView& v = layout.views()[k];
      print_view(k, v.name, v.layer, v.head, v.offset, v.rows, v.cols);
    }
  }
  std::printf("],\n \"theta0\": ");
  print_array(recorder.theta[0]);
  std::printf(",\n \"steps\": [");
  const TaskLaw law = make_task_law(p);
  for (int64_t s = 0; s < p.steps; ++s) {
    std::printf("%s{", s ? ",\n  " : "\n  ");
    print_batch(p, law, s);
    std::printf(", \"lr\": %.17g, \"loss\": %.17g, \"theta\": ", lr_at(p, s), r.curve_train_loss[s + 1]);
    print_array(recorder.theta[s + 1]);
    std::printf("}");
  }
  std::printf("]}\n");
  return 0;
}
