#pragma once
// The sweep-level keys of a spec: what is not an option of a point (those are run/options.hpp's table).
// One row per key declares its parser, its lines of the canonical text (what the spec hash covers, so what
// `--resume` compares) and its command-line override.  The spec reader (cli/spec_file.cpp), `icl-sweep
// run`'s overrides (cli/run_cmd.cpp) and canonical_text (grid.cpp) are driven by this table only: a new
// key is one row here and its field in Spec (grid.hpp).  Pure: no I/O.
#include <string>
#include <vector>

#include "icl/sweep/grid.hpp"

namespace icl::sweep {

struct SweepKey {
  const char* name;
  const char* help;      // the command-line override's help; nullptr: spec files only
  bool multitoken;       // the override takes several words (--rungs 500 1500)
  const char* example;   // a valid value other than the default (tests, help)
  // Parses the key's values (one string per spec line or override) into `spec`, or returns false with
  // the rule they break.  `at` says where they come from ("FILE:LINE" or "command line").
  bool (*parse)(const std::vector<std::string>& values, const std::string& at, Spec* spec, std::string* rule);
  // The key's lines of the canonical text ("" when it adds none, e.g. at a default that older files did
  // not record); nullptr: the key never enters the hash (it cannot change a result).
  std::string (*canonical)(const Spec& spec);
};

// In canonical order: canonical_text is the entries, then each row's lines in this order.
const std::vector<SweepKey>& sweep_keys();
const SweepKey* find_sweep_key(const std::string& name);

// The rules between keys, once every key in `given` is parsed (successive halving needs `search` and
// `rungs` together; `reduction` and `rung_metric` apply to it only).
void check_sweep_keys(const Spec& spec, const std::vector<std::string>& given, std::vector<std::string>* errors);

// The canonical text of a spec: its entries ("option = values" in spec order), then each key's lines in
// the table's order; and its 64-bit hash, which every point record and output file carries.
std::string canonical_text(const Spec& spec);
uint64_t spec_hash(const std::string& canonical);

// Helpers of the parsers, shared with the CLI.
std::vector<std::string> split_ws(const std::string& s);
bool parse_int(const std::string& s, long long lo, long long hi, long long* out);
// A memory size: bytes, or a number with a binary unit K, M, G, T (optionally KiB, KB, ...); off: no limit (0).
bool parse_bytes(const std::string& s, double* out);

}  // namespace icl::sweep
