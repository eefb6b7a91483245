#pragma once
// Peak memory of one grid point, counted from what run_point allocates (train.cpp, objective.cpp,
// model.cpp, data.cpp, landscape.cpp, analysis.cpp): the training batch and the evaluation set in lane
// layout, the model's activations and gradient scratch, the [A24] landscape sets, the analysis sets and
// per-task spectra, the loss curves, and a fixed process overhead.  Pure.  Used by the grid to refuse
// points that no rank could hold and by --dry-run; measured peak RSS of real points is within ~30% of it
// (tests/test_grid.cpp states the sizes it checks, docs in README "Sweeps").
#include <string>

#include "icl/base/point.hpp"

namespace icl::sweep {

struct PointMemory {   // bytes
  double training_batch = 0;   // batch tasks, redrawn every `refresh` steps, and the task pool
  double evaluation_set = 0;   // the fixed eval_tasks tasks
  double model = 0;            // activations, caches and gradient scratch of one chunk of lanes, weights
  double landscape = 0;        // [A24] landscape: 16 x batch (<= 65,536) + 32 x batch tasks in double
  double analysis = 0;         // tuning sets, per-task spectra, readouts of the evaluation set
  double curves = 0;           // loss curves: steps / eval_every records
  double process = 0;          // the executable, its libraries and MPI
  double total = 0;            // peak: everything above (training and analysis state coexist)
  std::string largest() const; // the name of the largest part, for messages
};

PointMemory estimate_memory(const Point& p);

// "1.5 GiB", "320 MiB", ...
std::string format_bytes(double bytes);

}  // namespace icl::sweep
