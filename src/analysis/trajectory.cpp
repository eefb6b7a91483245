#include "icl/analysis/trajectory.hpp"

#include "icl/analysis/copy.hpp"
#include "icl/analysis/landscape.hpp"

namespace icl {

std::vector<std::unique_ptr<TrainObserver>> trajectory_observers(const Point& p, const std::atomic<bool>* stop) {
  std::vector<std::unique_ptr<TrainObserver>> list;
  if (copy_applies(p)) list.push_back(std::make_unique<CopyCurve>(p));
  if (landscape_applies(p)) list.push_back(std::make_unique<Landscape>(p, stop));
  return list;
}

}  // namespace icl
