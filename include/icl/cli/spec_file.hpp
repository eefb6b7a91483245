#pragma once
// Sweep spec files: Boost.Program_options config syntax ("name = value" lines, '#' comments).
//   layers = 1 2 3             a list: whitespace-separated values (values never contain spaces)
//   noise = none               repeated lines add to the option's list
//   noise = uniform:1 set:1,3
//   zip = layers lr            a sweep-level key (not an option of a point): zip, repeats, sweep_seed,
//   repeats = 3                seeds, max_point_memory and successive halving's search, rungs, reduction,
//                              rung_metric, each declared once in sweep/spec_keys.hpp
// Options given on the command line replace the file's list for that option.
// The file must be a regular file of text (no NUL bytes), 1 byte to 1 MiB, and set at least one option:
// a directory, a FIFO, a device or an empty file is refused, never read as an empty (default) sweep.
#include <string>
#include <vector>

#include "icl/sweep/grid.hpp"

namespace icl::cli {

// The text of a spec or config file, or false with the reason: only a regular file (stat of the open
// descriptor, opened without blocking, so a FIFO never hangs) of 1 byte to 1 MiB without NUL bytes.
bool read_spec_text(const std::string& path, std::string* text, std::string* why);

// Command-line overrides: an option of the table or a sweep-level key, and its values.
using Overrides = std::vector<std::pair<std::string, std::vector<std::string>>>;

// Reads `path` and applies `overrides`; false with messages on failure.
bool read_spec(const std::string& path, const Overrides& overrides,
               sweep::Spec* spec, std::vector<std::string>* errors);

// The same for a spec's text (e.g. the one stored in OUT.h5); `path` names it in messages.
bool parse_spec(const std::string& text, const std::string& path, const Overrides& overrides, sweep::Spec* spec,
                std::vector<std::string>* errors);

}  // namespace icl::cli
