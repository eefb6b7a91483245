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

#include "icl/run/options.hpp"
#include "icl/sweep/spec_keys.hpp"

namespace po = boost::program_options;

namespace icl::cli {
namespace {

constexpr long kMaxSpecBytes = 1 << 20;   // a spec is a few hundred bytes; 1 MiB leaves room for long lists

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
      if (sweep::parse_int(v, 1, 1 << 20, &r)) {
        ranks = static_cast<long>(r);
        break;
      }
    }
  *bytes = mem / ranks;
  *source = "the default: this machine's " + what + ", " + sweep::format_bytes(mem) + ", / " + std::to_string(ranks) +
            " rank" + (ranks > 1 ? "s" : "") + " on this node; set max_point_memory to change it";
}

// The sweep-level keys (sweep/spec_keys.hpp), each from the command line if given there, else from the file.
void read_sweep_keys(const std::string& path, const std::string& text, const po::variables_map& vm, const Overrides& overrides,
                     sweep::Spec* spec, std::vector<std::string>* errors) {
  default_memory_limit(&spec->max_point_bytes, &spec->max_point_source);
  std::vector<std::string> given;
  for (const sweep::SweepKey& k : sweep::sweep_keys()) {
    const auto o = std::find_if(overrides.begin(), overrides.end(), [&](const auto& x) { return x.first == k.name; });
    if (o == overrides.end() && !vm.count(k.name)) continue;
    const std::string at = o != overrides.end() ? "command line" : where(path, text, k.name);
    const std::vector<std::string>& values = o != overrides.end() ? o->second : vm[k.name].as<std::vector<std::string>>();
    std::string rule;
    if (!k.parse(values, at, spec, &rule)) {
      std::string shown;
      for (const std::string& v : values) shown += (shown.empty() ? "" : " ") + v;
      errors->push_back(at + ": '" + k.name + "' = '" + shown + "': " + rule);
    }
    given.push_back(k.name);
  }
  sweep::check_sweep_keys(*spec, given, errors);
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

bool read_spec(const std::string& path, const Overrides& overrides,
               sweep::Spec* spec, std::vector<std::string>* errors) {
  errors->clear();
  *spec = sweep::Spec{};
  std::string text, why;
  if (!read_spec_text(path, &text, &why)) {
    errors->push_back("spec '" + path + "': " + why);
    return false;
  }
  return parse_spec(text, path, overrides, spec, errors);
}

bool parse_spec(const std::string& text, const std::string& path, const Overrides& overrides, sweep::Spec* spec,
                std::vector<std::string>* errors) {
  errors->clear();
  *spec = sweep::Spec{};
  po::options_description desc;
  for (const OptionDef& o : option_table())
    desc.add_options()(o.name.c_str(), po::value<std::vector<std::string>>()->composing());
  for (const sweep::SweepKey& k : sweep::sweep_keys())
    desc.add_options()(k.name, po::value<std::vector<std::string>>()->composing());
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
      for (const std::string& t : sweep::split_ws(v)) e.values.push_back(t);
    spec->entries.push_back(e);
  }
  for (const auto& [name, values] : overrides) {
    if (sweep::find_sweep_key(name)) continue;
    auto it = std::find_if(spec->entries.begin(), spec->entries.end(), [&](const sweep::SpecEntry& e) { return e.option == name; });
    if (it == spec->entries.end()) spec->entries.push_back({name, values, "command line"});
    else *it = {name, values, "command line"};
  }
  if (spec->entries.empty())
    errors->push_back("spec '" + path + "': sets no option: a sweep names at least one option (an empty spec "
                      "would train the default point)");
  read_sweep_keys(path, text, vm, overrides, spec, errors);
  spec->text = sweep::canonical_text(*spec);
  return errors->empty();
}

}  // namespace icl::cli
