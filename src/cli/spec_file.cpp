#include "icl/cli/spec_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "icl/core/options.hpp"

namespace po = boost::program_options;

namespace icl::cli {
namespace {

constexpr long kMaxSpecBytes = 1 << 20;   // a spec is a few hundred bytes; 1 MiB leaves room for long lists

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// Line number of the first "name =" in the text (0 if none), for messages and the order of options.
int line_of(const std::string& text, const std::string& name) {
  std::istringstream f(text);
  std::string line;
  for (int no = 1; std::getline(f, line); ++no) {
    const auto a = line.find_first_not_of(" \t");
    if (a == std::string::npos || line[a] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos || eq < a) continue;
    std::string key = line.substr(a, eq - a);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key == name) return no;
  }
  return 0;
}

std::string where(const std::string& path, const std::string& text, const std::string& name) {
  const int no = line_of(text, name);
  return no > 0 ? path + ":" + std::to_string(no) : path;
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

// A memory size: bytes, or a number with a binary unit K, M, G, T (optionally KiB, KB, ...); 0 or off: no limit.
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

// The default limit: this machine's memory (or its cgroup's limit, if lower) shared by the ranks the
// MPI launcher put on this node.
void default_memory_limit(double* bytes, std::string* source) {
  double mem = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  std::string what = "physical memory";
  for (const char* cg : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(cg);
    double limit = 0;
    if (f >> limit && limit > 0 && limit < mem) {
      mem = limit;
      what = "cgroup memory limit";
    }
  }
  long ranks = 1;
  for (const char* env : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(env)) {
      long long r = 0;
      if (parse_int(v, 1, 1 << 20, &r)) {
        ranks = static_cast<long>(r);
        break;
      }
    }
  *bytes = mem / ranks;
  *source = "the default: this machine's " + what + ", " + sweep::format_bytes(mem) + ", / " + std::to_string(ranks) +
            " rank" + (ranks > 1 ? "s" : "") + " on this node; set max_point_memory to change it";
}

// Successive halving's keys (sweep/halving.hpp): `search` and `rungs` together or neither.
template <class Key, class Shown>
void read_halving(const Key& spec_key, const std::string& at, const Shown& shown, sweep::HalvingSpec* h,
                  std::vector<std::string>* errors) {
  if (const auto* v = spec_key("search")) {
    for (const std::string& s : *v)
      for (const std::string& t : split_ws(s)) h->search.push_back(t);
    if (h->search.empty()) errors->push_back(at + ": 'search' = '': names the searched axes (search = replica lr)");
  }
  if (const auto* v = spec_key("rungs")) {
    std::vector<std::string> values;
    for (const std::string& s : *v)
      for (const std::string& t : split_ws(s)) values.push_back(t);
    long long x = 0;
    for (const std::string& t : values) {
      if (!parse_int(t, 1, std::numeric_limits<int>::max(), &x) || (!h->rungs.empty() && x <= h->rungs.back())) {
        errors->push_back(at + ": 'rungs' = '" + shown(values) + "': must be increasing step counts >= 1 (rungs = 500 1500)");
        break;
      }
      h->rungs.push_back(x);
    }
    if (values.empty()) errors->push_back(at + ": 'rungs' = '': must list at least one step (rungs = 500 1500)");
  }
  if (const auto* v = spec_key("reduction")) {
    long long x = 0;
    if (v->size() != 1 || !parse_int((*v)[0], 2, 1000, &x))
      errors->push_back(at + ": 'reduction' = '" + shown(*v) + "': must be one integer from 2 to 1000 (keep the best 1/reduction)");
    else h->reduction = static_cast<int>(x);
  }
  if (const auto* v = spec_key("rung_metric")) {
    if (v->size() != 1 || ((*v)[0] != "test_loss" && (*v)[0] != "train_loss"))
      errors->push_back(at + ": 'rung_metric' = '" + shown(*v) + "': must be test_loss (the evaluation loss at the rung) or train_loss");
    else h->metric = (*v)[0];
  }
  if (h->search.empty() != h->rungs.empty() && errors->empty())
    errors->push_back(std::string("'") + (h->search.empty() ? "rungs" : "search") + "': successive halving needs both " +
                      "'search' (the searched axes) and 'rungs' (the steps at which candidates are compared)");
  if (!h->on() && (spec_key("reduction") || spec_key("rung_metric")) && errors->empty())
    errors->push_back("'reduction' and 'rung_metric' apply to successive halving only: set 'search' and 'rungs'");
}

}  // namespace

bool read_spec_text(const std::string& path, std::string* text, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = std::string("cannot open the file (") + std::strerror(errno) + ")";
    return false;
  }
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0;
  if (!ok) *why = std::string("cannot stat the file (") + std::strerror(errno) + ")";
  else if (!S_ISREG(st.st_mode)) {
    ok = false;
    *why = std::string("is ") + (S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" :
                                  S_ISCHR(st.st_mode) ? "a character device" : S_ISBLK(st.st_mode) ? "a block device" :
                                  S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file") +
           ": a spec must be a regular file";
  }
  text->clear();
  char buf[65536];
  while (ok) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      ok = false;
      *why = std::string("cannot read the file (") + std::strerror(errno) + ")";
    } else if (got == 0) {
      break;
    } else {
      text->append(buf, static_cast<size_t>(got));
      if (static_cast<long>(text->size()) > kMaxSpecBytes) {
        ok = false;
        *why = "the file has more than " + std::to_string(kMaxSpecBytes) + " bytes (1 MiB), the limit for a spec";
      }
    }
  }
  ::close(fd);
  if (ok && text->empty()) {
    ok = false;
    *why = "the file is empty: a spec names at least one option";
  }
  if (ok && text->find('\0') != std::string::npos) {
    ok = false;
    *why = "the file contains NUL bytes: a spec is text";
  }
  return ok;
}

const std::vector<std::string>& sweep_keys() {
  static const std::vector<std::string> keys = {"repeats", "sweep_seed", "seeds", "max_point_memory",
                                                "search", "rungs", "reduction", "rung_metric"};
  return keys;
}

bool read_spec(const std::string& path, const std::vector<std::pair<std::string, std::vector<std::string>>>& overrides,
               sweep::Spec* spec, std::vector<std::string>* errors) {
  errors->clear();
  *spec = sweep::Spec{};
  std::string text, why;
  if (!read_spec_text(path, &text, &why)) {
    errors->push_back("spec '" + path + "': " + why);
    return false;
  }
  po::options_description desc;
  for (const OptionDef& o : option_table())
    desc.add_options()(o.name.c_str(), po::value<std::vector<std::string>>()->composing());
  desc.add_options()("zip", po::value<std::vector<std::string>>()->composing());
  for (const std::string& key : sweep_keys()) desc.add_options()(key.c_str(), po::value<std::vector<std::string>>()->composing());
  po::variables_map vm;
  try {
    std::istringstream file(text);
    po::store(po::parse_config_file(file, desc, false), vm);
  } catch (const std::exception& e) {
    errors->push_back("spec '" + path + "': " + e.what());
    return false;
  }
  // Options in order of first appearance in the file, then command-line additions.
  std::vector<std::pair<int, std::string>> order;
  for (const OptionDef& o : option_table())
    if (vm.count(o.name)) order.push_back({line_of(text, o.name), o.name});
  std::stable_sort(order.begin(), order.end());
  for (const auto& [line, name] : order) {
    sweep::SpecEntry e{name, {}, where(path, text, name)};
    for (const std::string& v : vm[name].as<std::vector<std::string>>())
      for (const std::string& t : split_ws(v)) e.values.push_back(t);
    spec->entries.push_back(e);
  }
  for (const auto& [name, values] : overrides) {
    if (std::find(sweep_keys().begin(), sweep_keys().end(), name) != sweep_keys().end()) continue;
    auto it = std::find_if(spec->entries.begin(), spec->entries.end(), [&](const sweep::SpecEntry& e) { return e.option == name; });
    if (it == spec->entries.end()) spec->entries.push_back({name, values, "command line"});
    else *it = {name, values, "command line"};
  }
  if (spec->entries.empty())
    errors->push_back("spec '" + path + "': sets no option: a sweep names at least one option (an empty spec "
                      "would train the default point)");
  if (vm.count("zip"))
    for (const std::string& z : vm["zip"].as<std::vector<std::string>>()) {
      spec->zips.push_back(split_ws(z));
      if (spec->zips.back().empty())
        errors->push_back(where(path, text, "zip") + ": 'zip' = '" + z +
                          "': a zip group names the options it advances together (zip = layers lr)");
    }
  // The sweep-level keys: the command line's value if given, else the file's; `at` says which.
  std::string at;
  const auto spec_key = [&](const std::string& key) -> const std::vector<std::string>* {
    const auto o = std::find_if(overrides.begin(), overrides.end(), [&](const auto& x) { return x.first == key; });
    if (o != overrides.end()) {
      at = "command line";
      return &o->second;
    }
    if (!vm.count(key)) return nullptr;
    at = where(path, text, key);
    return &vm[key].as<std::vector<std::string>>();
  };
  const auto one = [](const std::vector<std::string>& v) { return v.size() == 1 ? v[0] : ""; };
  const auto shown = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : " ") + x;
    return s;
  };
  long long x = 0;
  if (const auto* v = spec_key("repeats")) {
    if (!parse_int(one(*v), 1, sweep::kMaxPoints, &x))
      errors->push_back(at + ": 'repeats' = '" + shown(*v) + "': must be one integer >= 1 and at most " +
                        std::to_string(sweep::kMaxPoints) + " (the limit of points per sweep)");
    else spec->repeats = static_cast<int>(x);
  }
  if (const auto* v = spec_key("sweep_seed")) {
    if (!parse_int(one(*v), 0, std::numeric_limits<long long>::max(), &x))
      errors->push_back(at + ": 'sweep_seed' = '" + shown(*v) + "': must be one integer >= 0 and at most " +
                        std::to_string(std::numeric_limits<long long>::max()));
    else spec->sweep_seed = static_cast<uint64_t>(x);
  }
  if (const auto* v = spec_key("seeds")) {
    if (one(*v) != "point" && one(*v) != "replica")
      errors->push_back(at + ": 'seeds' = '" + shown(*v) +
                        "': must be point (a seed per point) or replica (shared by every combination)");
    else spec->seeds_per_replica = (*v)[0] == "replica";
  }
  default_memory_limit(&spec->max_point_bytes, &spec->max_point_source);
  if (const auto* v = spec_key("max_point_memory")) {
    double bytes = 0;
    if (!parse_bytes(one(*v), &bytes))
      errors->push_back(at + ": 'max_point_memory' = '" + shown(*v) +
                        "': must be one size such as 4G, 512M or 1.5GiB (binary units), or off");
    else {
      spec->max_point_bytes = bytes;
      spec->max_point_source = "set at " + at;
    }
  }
  read_halving(spec_key, at, shown, &spec->halving, errors);
  spec->text = sweep::canonical_text(*spec);
  return errors->empty();
}

}  // namespace icl::cli
