#pragma once
// The HDF5 layout of a results file, declared once.  Every dataset and attribute is an entry here: its
// path, shape, type, meaning and who writes it.  The writer (results.cpp) creates exactly these, the
// verifier (results_read.cpp) checks rows by the shapes declared here, every file carries the table as
// its `layout` attribute (the Python loader reads and checks rows by it, never by a list of its own),
// and README.md's "HDF5 layout" section is `icl-sweep layout` (a test compares them).
#include <cstdint>
#include <string>
#include <vector>

namespace icl::io {

inline constexpr int64_t kFormatVersion = 2;

// How an entry is laid out:
//   row        (P,) or (P, width): one row per point, in point order; NaN / "" / -1 where a point has none
//   flat       one 1-D dataset holding every point's values back to back; `index` names the (P, 2)
//              row dataset of [start, count] that locates point i's values (count 0: none)
//   digest     (P,) int64: the row digests themselves
//   attribute  a root attribute
enum class Shape { row, flat, digest, attribute };

struct Entry {
  std::string path;      // "/metrics/*" stands for every dataset of the group (a family)
  Shape shape;
  std::string type;      // f64, i64, text (fixed-length UTF-8, NUL-padded), or the attribute's type
  std::string dims;      // e.g. "(P,)", "(P, L_max)", "(sum of #params,)"
  std::string meaning;
  std::string index;     // flat entries: the index dataset
};

const std::vector<Entry>& layout();
// The paths an entry declares ("a, b" declares two alike).
std::vector<std::string> paths_of(const Entry& e);

// The table as markdown (README.md's "HDF5 layout") and as the file's `layout` attribute: one line per
// dataset entry, "path<TAB>shape<TAB>type<TAB>index".
std::string layout_markdown();
std::string layout_attribute();
const char* shape_name(Shape s);

}  // namespace icl::io
