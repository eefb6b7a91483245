#include "icl/sweep/spec_keys.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "icl/base/rng.hpp"

namespace icl::sweep {
namespace {

// Every value's words, in order.
std::vector<std::string> words(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values)
    for (const std::string& w : split_ws(v)) out.push_back(w);
  return out;
}

std::string joined(const std::string& key, const std::vector<std::string>& items) {
  std::string s = key + " =";
  for (const std::string& x : items) s += " " + x;
  return s + "\n";
}

// The one value of a single-valued key ("" when there are several, which every parser refuses).
std::string one(const std::vector<std::string>& values) { return values.size() == 1 ? values[0] : ""; }

bool parse_zip(const std::vector<std::string>& values, const std::string&, Spec* spec, std::string* rule) {
  for (const std::string& group : values) {
    spec->zips.push_back(split_ws(group));
    if (spec->zips.back().empty()) {
      *rule = "a zip group names the options it advances together (zip = layers lr)";
      return false;
    }
  }
  return true;
}

std::string canonical_zip(const Spec& spec) {
  std::string s;
  for (const auto& z : spec.zips) s += joined("zip", z);
  return s;
}

bool parse_repeats(const std::vector<std::string>& values, const std::string&, Spec* spec, std::string* rule) {
  long long x = 0;
  if (!parse_int(one(values), 1, kMaxPoints, &x)) {
    *rule = "must be one integer >= 1 and at most " + std::to_string(kMaxPoints) + " (the limit of points per sweep)";
    return false;
  }
  spec->repeats = static_cast<int>(x);
  return true;
}

bool parse_sweep_seed(const std::vector<std::string>& values, const std::string&, Spec* spec, std::string* rule) {
  long long x = 0;
  if (!parse_int(one(values), 0, std::numeric_limits<long long>::max(), &x)) {
    *rule = "must be one integer >= 0 and at most " + std::to_string(std::numeric_limits<long long>::max());
    return false;
  }
  spec->sweep_seed = static_cast<uint64_t>(x);
  return true;
}

bool parse_seeds(const std::vector<std::string>& values, const std::string&, Spec* spec, std::string* rule) {
  if (one(values) != "point" && one(values) != "replica") {
    *rule = "must be point (a seed per point) or replica (shared by every combination)";
    return false;
  }
  spec->seeds_per_replica = values[0] == "replica";
  return true;
}

bool parse_max_point_memory(const std::vector<std::string>& values, const std::string& at, Spec* spec, std::string* rule) {
  double bytes = 0;
  if (!parse_bytes(one(values), &bytes) || (bytes == 0 && one(values) != "off")) {   // 0 is "off" inside
    *rule = "must be one size above 0 such as 4G, 512M or 1.5GiB (binary units), or off (no limit)";
    return false;
  }
  spec->max_point_bytes = bytes;
  spec->max_point_source = "set at " + at;
  return true;
}

bool parse_search(const std::vector<std::string>& values, const std::string&, Spec* spec, std::string* rule) {
  spec->halving.search = words(values);
  if (spec->halving.search.empty()) *rule = "names the searched axes (search = replica lr)";
  return !spec->halving.search.empty();
}

bool parse_rungs(const std::vector<std::string>& values, const std::string&, Spec* spec, std::string* rule) {
  std::vector<int64_t> rungs;
  for (const std::string& w : words(values)) {
    long long x = 0;
    if (!parse_int(w, 1, std::numeric_limits<int>::max(), &x) || (!rungs.empty() && x <= rungs.back())) {
      *rule = "must be increasing step counts >= 1 (rungs = 500 1500)";
      return false;
    }
    rungs.push_back(x);
  }
  if (rungs.empty()) *rule = "must list at least one step (rungs = 500 1500)";
  spec->halving.rungs = rungs;
  return !rungs.empty();
}

bool parse_reduction(const std::vector<std::string>& values, const std::string&, Spec* spec, std::string* rule) {
  long long x = 0;
  if (!parse_int(one(values), 2, 1000, &x)) {
    *rule = "must be one integer from 2 to 1000 (keep the best 1/reduction)";
    return false;
  }
  spec->halving.reduction = static_cast<int>(x);
  return true;
}

bool parse_rung_metric(const std::vector<std::string>& values, const std::string&, Spec* spec, std::string* rule) {
  if (one(values) != "test_loss" && one(values) != "train_loss") {
    *rule = "must be test_loss (the evaluation loss at the rung) or train_loss";
    return false;
  }
  spec->halving.metric = values[0];
  return true;
}

// Successive halving's lines, only when it is on (a spec without it hashes as before it existed).
std::string halving_line(const Spec& spec, const std::string& line) { return spec.halving.on() ? line : ""; }

}  // namespace

const std::vector<SweepKey>& sweep_keys() {
  static const std::vector<SweepKey> keys = {
      {"zip", nullptr, false, "layers lr", parse_zip, canonical_zip},
      {"repeats", "replicas of every combination", false, "3", parse_repeats,
       [](const Spec& s) { return "repeats = " + std::to_string(s.repeats) + "\n"; }},
      {"sweep_seed", "the sweep's seed", false, "7", parse_sweep_seed,
       [](const Spec& s) { return "sweep_seed = " + std::to_string(s.sweep_seed) + "\n"; }},
      {"seeds", "point | replica: a seed per point, or per replica shared by every combination", false, "replica",
       parse_seeds, [](const Spec& s) { return std::string(s.seeds_per_replica ? "seeds = replica\n" : ""); }},
      {"max_point_memory", "refuse points whose estimated memory exceeds this (e.g. 8G; off = no limit; default: "
       "this machine's memory / the ranks on this node)", false, "8G", parse_max_point_memory, nullptr},
      {"search", "successive halving: the searched axes, e.g. replica lr", true, "replica", parse_search,
       [](const Spec& s) { return halving_line(s, joined("search", s.halving.search)); }},
      {"rungs", "successive halving: steps at which candidates are compared", true, "500 1500", parse_rungs,
       [](const Spec& s) {
         std::vector<std::string> r;
         for (int64_t x : s.halving.rungs) r.push_back(std::to_string(x));
         return halving_line(s, joined("rungs", r));
       }},
      {"reduction", "successive halving: keep the best 1/reduction at every rung (default 3)", false, "4",
       parse_reduction,
       [](const Spec& s) { return halving_line(s, "reduction = " + std::to_string(s.halving.reduction) + "\n"); }},
      {"rung_metric", "successive halving: test_loss or train_loss at the rung (default test_loss)", false,
       "train_loss", parse_rung_metric,
       [](const Spec& s) { return halving_line(s, "rung_metric = " + s.halving.metric + "\n"); }},
  };
  return keys;
}

const SweepKey* find_sweep_key(const std::string& name) {
  for (const SweepKey& k : sweep_keys())
    if (name == k.name) return &k;
  return nullptr;
}

void check_sweep_keys(const Spec& spec, const std::vector<std::string>& given, std::vector<std::string>* errors) {
  if (!errors->empty()) return;   // a key that did not parse says more than a rule between keys
  const HalvingSpec& h = spec.halving;
  const auto has = [&](const char* key) { return std::find(given.begin(), given.end(), key) != given.end(); };
  if (h.search.empty() != h.rungs.empty())
    errors->push_back(std::string("'") + (h.search.empty() ? "rungs" : "search") + "': successive halving needs both " +
                      "'search' (the searched axes) and 'rungs' (the steps at which candidates are compared)");
  else if (!h.on() && (has("reduction") || has("rung_metric")))
    errors->push_back("'reduction' and 'rung_metric' apply to successive halving only: set 'search' and 'rungs'");
}

std::string canonical_text(const Spec& spec) {
  std::string s;
  for (const SpecEntry& e : spec.entries) s += joined(e.option, e.values);
  for (const SweepKey& k : sweep_keys())
    if (k.canonical) s += k.canonical(spec);
  return s;
}

uint64_t spec_hash(const std::string& canonical) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (unsigned char c : canonical) h = mix64(h ^ c);
  return h;
}

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool parse_int(const std::string& s, long long lo, long long hi, long long* out) {
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used != s.size() || v < lo || v > hi) return false;
    *out = v;
    return true;
  } catch (...) {
    return false;
  }
}

bool parse_bytes(const std::string& s, double* out) {
  if (s == "off") {
    *out = 0;
    return true;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !std::isfinite(v) || v < 0) return false;
  std::string unit(end);
  const std::string units = "KMGT";
  double scale = 1;
  if (!unit.empty()) {
    const auto u = units.find(unit[0]);
    if (u == std::string::npos) return false;
    scale = std::ldexp(1.0, 10 * static_cast<int>(u + 1));
    unit = unit.substr(1);
    if (unit != "" && unit != "B" && unit != "iB") return false;
  }
  *out = v * scale;
  return std::isfinite(*out) && *out < 1e30;
}

}  // namespace icl::sweep
