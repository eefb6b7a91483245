#include "integrity.hpp"

#include <cstring>

#include "icl/core/rng.hpp"

namespace icl::io {
namespace {

const char* const kPerPointGroups[] = {"points", "metrics", "analysis", "layers", "curves"};
const std::string kDigestPath = "/points/row_digest";

uint64_t part(const std::string& name, const void* bytes, size_t n) {
  uint64_t h = 0x452821e638d01377ULL;
  for (unsigned char c : name) h = mix64(h ^ c);
  h = mix64(h ^ 0xffULL);
  const auto* b = static_cast<const unsigned char*>(bytes);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    h = mix64(h ^ w);
  }
  for (; i < n; ++i) h = mix64(h ^ b[i]);
  return mix64(h ^ n);
}

// Adds the part of every row of dataset `path` (rows along the first dimension) to digest[first..].
void add_rows(const File& f, const std::string& path, const std::string& name, size_t first, size_t rows,
              std::vector<uint64_t>& digest) {
  std::vector<uint64_t> dims;
  switch (dataset_type(f, path)) {
    case Type::str: {
      const std::vector<std::string> v = read_strings(f, path, &dims);
      const size_t width = rows ? v.size() / rows : 0;
      for (size_t r = 0; r < rows; ++r) {
        std::string row;
        for (size_t j = 0; j < width; ++j) row += v[r * width + j] + '\0';
        digest[first + r] += part(name, row.data(), row.size());
      }
      return;
    }
    case Type::i64: {
      const std::vector<int64_t> v = read_int64(f, path, &dims);
      const size_t width = rows ? v.size() / rows : 0;
      for (size_t r = 0; r < rows; ++r) digest[first + r] += part(name, v.data() + r * width, width * 8);
      return;
    }
    default: {
      const std::vector<double> v = read_double(f, path, &dims);
      const size_t width = rows ? v.size() / rows : 0;
      for (size_t r = 0; r < rows; ++r) digest[first + r] += part(name, v.data() + r * width, width * 8);
      return;
    }
  }
}

}  // namespace

std::vector<uint64_t> row_digests(const File& f, size_t P, std::vector<bool>* row_known, std::vector<std::string>* unreadable) {
  std::vector<uint64_t> digest(P, 0);
  row_known->assign(P, true);
  for (const char* group : kPerPointGroups) {
    std::vector<std::string> names;
    try {
      names = list(f, std::string("/") + group);
    } catch (const H5Error& e) {
      if (exists(f, std::string("/") + group)) unreadable->push_back(std::string("/") + group + ": " + e.what());
      continue;
    }
    for (const std::string& n : names) {
      const std::string path = std::string("/") + group + "/" + n;
      if (path == kDigestPath) continue;
      try {
        add_rows(f, path, path, 0, P, digest);
      } catch (const H5Error& e) {
        unreadable->push_back(path + ": " + e.what());
        row_known->assign(P, false);
      }
    }
  }
  if (!exists(f, "/weights")) return digest;
  std::vector<std::string> rows;
  try {
    rows = list(f, "/weights");
  } catch (const H5Error& e) {
    unreadable->push_back(std::string("/weights: ") + e.what());
    row_known->assign(P, false);
    return digest;
  }
  for (const std::string& i_text : rows) {
    size_t i = 0;
    try {
      i = std::stoul(i_text);
    } catch (...) {
      unreadable->push_back("/weights/" + i_text + ": not a point index");
      continue;
    }
    if (i >= P) {
      unreadable->push_back("/weights/" + i_text + ": no such point");
      continue;
    }
    try {
      for (const std::string& n : list(f, "/weights/" + i_text)) add_rows(f, "/weights/" + i_text + "/" + n, "/weights/" + n, i, 1, digest);
    } catch (const H5Error& e) {
      unreadable->push_back("/weights/" + i_text + ": " + e.what());
      (*row_known)[i] = false;
    }
  }
  return digest;
}

uint64_t attributes_digest(const File& f) {
  uint64_t h = 0;
  for (const std::string& name : attr_names(f, "/")) {
    if (name == "attributes_digest") continue;
    if (attr_is_string(f, "/", name)) {
      const std::string v = get_attr_string(f, "/", name);
      h += part("@" + name, v.data(), v.size());
    } else {
      const int64_t v = get_attr_int64(f, "/", name);
      h += part("@" + name, &v, 8);
    }
  }
  return h;
}

void seal(File& f, size_t P) {
  std::vector<bool> known;
  std::vector<std::string> unreadable;
  const std::vector<uint64_t> d = row_digests(f, P, &known, &unreadable);
  if (!unreadable.empty()) throw H5Error("cannot read back what was just written: " + unreadable[0]);
  write(f, kDigestPath, std::vector<int64_t>(d.begin(), d.end()));
  set_attr(f, kDigestPath, "help", std::string("digest of everything stored for the point (icl-sweep verify checks it)"));
  set_attr(f, "/", "attributes_digest", static_cast<int64_t>(attributes_digest(f)));
}

}  // namespace icl::io
