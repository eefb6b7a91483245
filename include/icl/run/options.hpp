#pragma once
// The option table: one name per setting, shared by `icl-sweep train`, sweep spec files and the HDF5
// `/points/<option>` columns.  Values are text so that a spec can list several of them; parsing and
// validation happen here, in the numerics, before any work starts.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "icl/base/point.hpp"

namespace icl {

enum class Column { integer, real, text };   // how an option is stored in /points/<option>

// Where an option applies, declared with it: a point outside its scope must leave it at its default
// (point_validate says "applies only to arch = transformer").  Unset fields: everywhere.
struct Scope {
  std::optional<Arch> arch;
  std::optional<Attention> attention;
};

struct OptionDef {
  std::string name;
  std::string help;    // one line, with the accepted syntax
  Column column;
  // Parses `value` into `p`; returns "" or a message stating the rule the value breaks.
  std::function<std::string(Point& p, const std::string& value)> set;
  std::function<std::string(const Point& p)> get;   // canonical text, round-trips through `set`
  Scope scope = {};
};

const std::vector<OptionDef>& option_table();
const OptionDef* find_option(const std::string& name);

// Sets one option; returns "" or "option 'NAME' = 'VALUE': RULE".
std::string point_set(Point& p, const std::string& name, const std::string& value);

// Cross-option rules (spectrum length = d, warm-up < steps, ...): returns every violation, each
// naming the option, its value and the rule; empty when the point is valid.
std::vector<std::string> point_validate(const Point& p);

// Canonical "name = value" lines for every option, in table order (the spec of a single point).
std::string point_to_text(const Point& p);

}  // namespace icl
