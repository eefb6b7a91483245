// The registry of metrics.hpp.  Losses are plain MSE (result.hpp); [VO23] and [V24] report half of it.
#include "icl/analysis/metrics.hpp"

#include <string>

#include "icl/analysis/baselines.hpp"

namespace icl {
namespace {

constexpr const char* kMse = "MSE (plain mean squared error; [VO23], [V24] tables show half)";

// The Newton start (baselines.hpp kNewtonAlpha) in the doc of every Newton dataset.
std::string newton_similarity_doc() {
  return std::string("per layer l and Newton step k = 0..K_max (K_max = min(64, max(12, 4L))): cosine similarity over "
                     "the evaluation tasks of the errors yhat_l - y and yhat_Newton,k - y (Fu et al. 2023), "
                     "L x (K_max + 1) row-major; ") +
         kNewtonAlpha;
}

std::string probe_newton_similarity_doc() {
  return std::string("causal transformers trained at every prefix (probes.hpp): per layer l and Newton step k = 0..K_max, "
                     "the cosine between the vectors over the x tokens of the errors of l's least-squares probe and of "
                     "k Newton steps on the prefix, averaged over 2,000 fresh tasks (Fu et al. 2023's own metric), "
                     "L x (K_max + 1) row-major; ") +
         kNewtonAlpha;
}

std::string newton_doc() {
  return std::string("K = L steps of iterative Newton for the pseudo-inverse of S = X X^T, nothing tuned (Fu et al. "
                     "2023): ") +
         kNewtonAlpha;
}

struct Entry {   // a family or an exact name
  std::string name, doc, convention;
};

const std::vector<Entry>& families() {
#define ICL_FAMILY(prefix, doc, convention) {#prefix "_", doc, convention},
  static const std::vector<Entry> f = {ICL_FAMILIES(ICL_FAMILY)};
#undef ICL_FAMILY
  return f;
}

const std::vector<Entry>& exact() {
#define ICL_METRIC(name, doc, convention) {#name, doc, convention},
  static const std::vector<Entry> e = {ICL_METRICS(ICL_METRIC)};
#undef ICL_METRIC
  return e;
}

}  // namespace

const std::vector<MethodInfo>& methods() {
#define ICL_METHOD(key, label, doc) {#key, label, doc},
  static const std::vector<MethodInfo> m = {ICL_METHODS(ICL_METHOD)};
#undef ICL_METHOD
  return m;
}

const MethodInfo& method_info(Method m) { return methods()[static_cast<size_t>(m)]; }

const MethodInfo* find_method(const std::string& key) {
  for (const MethodInfo& m : methods())
    if (key == m.key) return &m;
  return nullptr;
}

MetricName::MetricName(Metric m) : text_(exact()[static_cast<size_t>(m)].name) {}

MetricName::MetricName(Family f, Method m) : text_(families()[static_cast<size_t>(f)].name + method_info(m).key) {}

bool metric_info(const std::string& name, MetricInfo* out) {
  for (const Entry& e : exact())
    if (name == e.name) {
      *out = {e.doc, "", e.convention};
      return true;
    }
  for (const Entry& f : families()) {   // no prefix is the start of another
    const MethodInfo* m = name.compare(0, f.name.size(), f.name) == 0 ? find_method(name.substr(f.name.size())) : nullptr;
    if (!m) continue;
    std::string doc = f.doc;
    doc.replace(doc.find("%s"), 2, m->doc);
    *out = {doc, m->label, f.convention};
    return true;
  }
  return false;
}

}  // namespace icl
