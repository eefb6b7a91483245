#include "icl/cli/spec_file.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <fstream>
#include <sstream>

#include "icl/core/options.hpp"

namespace po = boost::program_options;

namespace icl::cli {
namespace {

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// Line number of the first "name =" in the file, for messages.
std::string where(const std::string& path, const std::string& name) {
  std::ifstream f(path);
  std::string line;
  for (int no = 1; std::getline(f, line); ++no) {
    const auto a = line.find_first_not_of(" \t");
    if (a == std::string::npos || line[a] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(a, eq - a);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key == name) return path + ":" + std::to_string(no);
  }
  return path;
}

bool parse_int(const std::string& s, long long lo, long long* out) {
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used != s.size() || v < lo) return false;
    *out = v;
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

bool read_spec(const std::string& path, const std::vector<std::pair<std::string, std::vector<std::string>>>& overrides,
               sweep::Spec* spec, std::vector<std::string>* errors) {
  errors->clear();
  *spec = sweep::Spec{};
  std::ifstream file(path);
  if (!file) {
    errors->push_back("spec '" + path + "': cannot open the file");
    return false;
  }
  po::options_description desc;
  for (const OptionDef& o : option_table())
    desc.add_options()(o.name.c_str(), po::value<std::vector<std::string>>()->composing());
  desc.add_options()("zip", po::value<std::vector<std::string>>()->composing())(
      "repeats", po::value<std::vector<std::string>>()->composing())(
      "sweep_seed", po::value<std::vector<std::string>>()->composing())(
      "seeds", po::value<std::vector<std::string>>()->composing());
  po::variables_map vm;
  try {
    po::store(po::parse_config_file(file, desc, false), vm);
  } catch (const po::error& e) {
    errors->push_back("spec '" + path + "': " + e.what());
    return false;
  }
  // Options in order of first appearance in the file, then command-line additions.
  std::vector<std::pair<int, std::string>> order;
  for (const OptionDef& o : option_table())
    if (vm.count(o.name)) {
      const std::string w = where(path, o.name);
      order.push_back({std::stoi(w.substr(w.rfind(':') + 1)), o.name});
    }
  std::sort(order.begin(), order.end());
  for (const auto& [line, name] : order) {
    sweep::SpecEntry e{name, {}, where(path, name)};
    for (const std::string& v : vm[name].as<std::vector<std::string>>())
      for (const std::string& t : split_ws(v)) e.values.push_back(t);
    spec->entries.push_back(e);
  }
  for (const auto& [name, values] : overrides) {
    if (name == "repeats" || name == "sweep_seed" || name == "seeds") continue;
    auto it = std::find_if(spec->entries.begin(), spec->entries.end(), [&](const sweep::SpecEntry& e) { return e.option == name; });
    if (it == spec->entries.end()) spec->entries.push_back({name, values, "command line"});
    else *it = {name, values, "command line"};
  }
  if (vm.count("zip"))
    for (const std::string& z : vm["zip"].as<std::vector<std::string>>()) spec->zips.push_back(split_ws(z));
  // The sweep-level keys: the command line's value if given, else the file's; `at` says which.
  std::string at;
  const auto spec_key = [&](const std::string& key) -> const std::vector<std::string>* {
    const auto o = std::find_if(overrides.begin(), overrides.end(), [&](const auto& x) { return x.first == key; });
    if (o != overrides.end()) {
      at = "command line";
      return &o->second;
    }
    if (!vm.count(key)) return nullptr;
    at = where(path, key);
    return &vm[key].as<std::vector<std::string>>();
  };
  for (const char* key : {"repeats", "sweep_seed"})
    if (const auto* v = spec_key(key)) {
      long long x = 0;
      if (v->size() != 1 || !parse_int((*v)[0], std::string(key) == "repeats" ? 1 : 0, &x))
        errors->push_back(at + ": '" + key + "' = '" + (v->empty() ? "" : v->back()) + "': must be one integer " +
                          (std::string(key) == "repeats" ? ">= 1" : ">= 0"));
      else if (std::string(key) == "repeats") spec->repeats = static_cast<int>(x);
      else spec->sweep_seed = static_cast<uint64_t>(x);
    }
  if (const auto* v = spec_key("seeds")) {
    if (v->size() != 1 || ((*v)[0] != "point" && (*v)[0] != "replica"))
      errors->push_back(at + ": 'seeds' = '" + (v->empty() ? "" : v->back()) +
                        "': must be point (a seed per point) or replica (shared by every combination)");
    else spec->seeds_per_replica = (*v)[0] == "replica";
  }
  spec->text = sweep::canonical_text(*spec);
  return errors->empty();
}

}  // namespace icl::cli
