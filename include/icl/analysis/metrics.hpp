#pragma once
// The vocabulary of the analyses: every name an Analysis holds (result.hpp; analysis.hpp, landscape.hpp
// write them), what it means, its legend label and its convention, in one table.  The HDF5 writer
// stores doc, label and convention as attributes of each dataset (/metrics/<name>, /analysis/<name>);
// the Python tools read the labels from there.  A test runs every analysis and checks that each name it
// writes is in this registry.
#include <string>
#include <vector>

#include "icl/base/result.hpp"

namespace icl {

// A predictor the analyses evaluate: the trained model or a reference algorithm (docs/science.md sections 4-5).
struct Method {
  const char* key;     // as in loss_<key>, adjusted_<key>, noise_loss_<key>, ...
  const char* label;   // legend label
  const char* doc;     // what it predicts
};
const std::vector<Method>& methods();
const Method* find_method(const std::string& key);

// What a stored name means.  Names are either exact or a family over the methods: loss_<key>,
// adjusted_<key>, se_adjusted_<key>, layer_loss_<key>, noise_loss_<key>, ood_alpha_loss_<key>,
// ood_context_loss_<key>, pool_loss_<key>, context_loss_<key>.
struct MetricInfo {
  std::string doc;          // one line
  std::string label;        // legend label (the method's for a family name; empty otherwise)
  std::string convention;   // units and sign: e.g. "MSE" (plain, never halved), "seconds", "paper sign"
};
// False when `name` is not in the registry.
bool metric_info(const std::string& name, MetricInfo* info);

// Throws std::logic_error naming the first name of `a` not in the registry: run_point checks what training's
// observers and the analyses produce, so an unregistered name fails its point (or its analysis) loudly,
// in any run, instead of reaching a file without its doc and label.
void require_registered(const Analysis& a);

}  // namespace icl
