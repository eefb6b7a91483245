#include "icl/io/layout.hpp"

#include <algorithm>

namespace icl::io {

const char* shape_name(Shape s) {
  switch (s) {
    case Shape::row: return "row";
    case Shape::flat: return "flat";
    case Shape::digest: return "digest";
    case Shape::attribute: return "attribute";
  }
  return "?";
}

const std::vector<Entry>& layout() {
  static const std::vector<Entry> entries = {
      {"@format, @format_version", Shape::attribute, "text, int64", "", "`icl-sweep results`, 2 (files of format 1 kept a group per point under /weights)", ""},
      {"@software_version, @git_revision, @build_flags, @libm", Shape::attribute, "text", "", "the build that wrote the file and the math library it ran on (`glibc 2.36`)", ""},
      {"@builds", Shape::attribute, "text", "", "every build that computed a stored row, one per line (`/points/build` indexes them)", ""},
      {"@spec", Shape::attribute, "text", "", "the sweep's canonical spec, or every option as `name = value` for `train`", ""},
      {"@written_utc, @n_points", Shape::attribute, "text, int64", "", "when the file was written; P, its number of rows", ""},
      {"@loss_convention, @normalisation_convention, @analysis_convention", Shape::attribute, "text", "", "plain MSE, never halved; c = 1/n or 1; how the analyses measure (iterative Newton's start alpha included)", ""},
      {"@methods", Shape::attribute, "text", "", "the predictors of the analyses (the registry of `include/icl/analysis/metrics.hpp`), one `key<TAB>label<TAB>doc` line each in the registry's order: `loss_<key>` and the other families name them; the Python tools take methods and legend labels from here", ""},
      {"@layout", Shape::attribute, "text", "", "this table, one `path shape type index` line per dataset entry (the Python loader reads it)", ""},
      {"@spec_hash, @spec_file, @sweep_state, @rank_count, @started_utc, @ended_utc", Shape::attribute, "text, int64", "",
       "sweeps only; `sweep_state` is `running`, `incomplete` or `complete`", ""},
      {"@attributes_digest", Shape::attribute, "int64", "", "digest of every other root attribute (`icl-sweep verify`)", ""},
      {"/points/<option>", Shape::row, "i64, f64 or text", "(P,)", "one column per option of `icl-sweep train`; attribute `help`", ""},
      {"/points/replica", Shape::row, "i64", "(P,)", "the replica of the grid combination (`repeats`); `/points/seed` is the point's derived seed", ""},
      {"/points/status", Shape::row, "text", "(P,)", "`ok`, `diverged`, `failed`, `pruned` (successive halving) or `pending`; a point that did not finish has NaN metrics", ""},
      {"/points/message", Shape::row, "text", "(P,)", "why a point diverged, failed or was pruned", ""},
      {"/points/analysis_status", Shape::row, "text", "(P,)", "`ok`, `failed` (training and weights kept) or `skipped`", ""},
      {"/points/analysis_message", Shape::row, "text", "(P,)", "why the analysis failed", ""},
      {"/points/build", Shape::row, "i64", "(P,)", "the build that computed the row: a line of `@builds` (0-based; -1 for pending rows)", ""},
      {"/points/row_digest", Shape::digest, "i64", "(P,)", "digest of everything stored for the point, every row dataset and its flat slices (`icl-sweep verify`)", ""},
      {"/metrics/*", Shape::row, "f64", "(P,)", "scalars: `test_loss`, `train_loss`, `steps_done`, `wall_seconds`, `train_seconds`, `eval_seconds`, "
       "`steps_per_second`, `flops_per_step`, and the analysis scalars (`loss_<method>`, `adjusted_<method>`, `se_*`, `align_*`, ...); "
       "attributes `doc`, and `label`, `convention` from the registry in `include/icl/analysis/metrics.hpp`", ""},
      {"/analysis/*", Shape::row, "f64", "(P, width)", "the analysis series, NaN-padded (`layer_loss_<method>`, `noise_loss_<method>`, `ood_*`, "
       "`precond_*`, `v24_w_*`, `landscape_*`, ...); attribute `doc` says the shape", ""},
      {"/layers/test_loss", Shape::row, "f64", "(P, L_max)", "readout loss after each layer, NaN-padded", ""},
      {"/curves/step", Shape::row, "i64", "(P, K_max)", "steps of the evaluation records, -1-padded", ""},
      {"/curves/train_loss, /curves/test_loss", Shape::row, "f64", "(P, K_max)", "loss curves at every record, NaN-padded; train loss is the mean since the previous record", ""},
      {"/weights/theta", Shape::flat, "f64", "(sum of #params,)", "learned flat parameters of every point back to back", "/weights/theta_index"},
      {"/weights/theta_index", Shape::row, "i64", "(P, 2)", "[start, count] of point i's theta in `/weights/theta` (count 0: nothing learned)", ""},
      {"/weights/P, /weights/Q", Shape::flat, "f64", "(sum of L H (d+1)^2,)", "expanded per-layer, per-head weights of `arch = lsa` points, each (L, H, d+1, d+1) row-major", "/weights/pq_index"},
      {"/weights/pq_index", Shape::row, "i64", "(P, 2)", "[start, count] of point i's P and of its Q", ""},
      {"/weights/views", Shape::row, "text", "(P,)", "`arch = transformer`: theta's blocks, one `name layer offset rows cols` line each", ""},
  };
  return entries;
}

std::vector<std::string> paths_of(const Entry& e) {
  std::vector<std::string> out;
  for (size_t begin = 0; begin <= e.path.size();) {
    const size_t end = std::min(e.path.find(", ", begin), e.path.size());
    out.push_back(e.path.substr(begin, end - begin));
    begin = end + 2;
  }
  return out;
}

std::string layout_markdown() {
  std::string s = "| path | shape | type | content |\n| --- | --- | --- | --- |\n";
  for (const Entry& e : layout()) {
    std::string path;
    for (const std::string& p : paths_of(e)) path += (path.empty() ? "`" : ", `") + p + "`";
    const std::string dims = e.shape == Shape::attribute ? "root attribute" : e.dims + (e.shape == Shape::flat ? ", indexed by `" + e.index + "`" : "");
    s += "| " + path + " | " + dims + " | " + e.type + " | " + e.meaning + " |\n";
  }
  return s;
}

std::string layout_attribute() {
  std::string s;
  for (const Entry& e : layout())
    if (e.shape != Shape::attribute)
      for (const std::string& p : paths_of(e))
        s += (p == "/points/<option>" ? "/points/*" : p) + "\t" + shape_name(e.shape) + "\t" + e.type + "\t" + e.index + "\n";
  return s;
}

}  // namespace icl::io
