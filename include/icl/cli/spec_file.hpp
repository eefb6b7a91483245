#pragma once
// Sweep spec files: Boost.Program_options config syntax ("name = value" lines, '#' comments).
//   layers = 1 2 3             a list: whitespace-separated values (values never contain spaces)
//   noise = none               repeated lines add to the option's list
//   noise = uniform:1 set:1,3
//   zip = layers lr            these options advance together (lists of equal length)
//   repeats = 3                replicas of every combination (each with its own seed)
//   sweep_seed = 0             every point's seed derives from it and the point's index
// Options given on the command line replace the file's list for that option.
#include <string>
#include <vector>

#include "icl/sweep/grid.hpp"

namespace icl::cli {

// Reads `path` and applies `overrides` (option -> values); false with messages on failure.
bool read_spec(const std::string& path, const std::vector<std::pair<std::string, std::vector<std::string>>>& overrides,
               sweep::Spec* spec, std::vector<std::string>* errors);

}  // namespace icl::cli
