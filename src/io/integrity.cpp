#include "integrity.hpp"

#include <cstring>

#include "icl/base/rng.hpp"

namespace icl::io {

uint64_t digest_key(const std::string& path) {
  uint64_t h = 0x452821e638d01377ULL;
  for (unsigned char c : path) h = mix64(h ^ c);
  return mix64(h ^ 0xffULL);
}

uint64_t digest_part(uint64_t key, const void* bytes, size_t n) {
  uint64_t h = key;
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

uint64_t row_index_part(uint64_t i) {
  static const uint64_t key = digest_key("@row");
  return digest_part(key, &i, 8);
}

uint64_t attributes_digest(const File& f) {
  uint64_t h = 0;
  for (const std::string& name : attr_names(f, "/")) {
    if (name == "attributes_digest") continue;
    if (attr_is_string(f, "/", name)) {
      const std::string v = get_attr_string(f, "/", name);
      h += digest_part(digest_key("@" + name), v.data(), v.size());
    } else {
      const int64_t v = get_attr_int64(f, "/", name);
      h += digest_part(digest_key("@" + name), &v, 8);
    }
  }
  return h;
}

void seal(File& f, std::vector<uint64_t> row_digest) {
  for (size_t i = 0; i < row_digest.size(); ++i) row_digest[i] += row_index_part(i);
  Rows d = Rows::create(f, "/points/row_digest", Type::i64, row_digest.size(), 0);
  d.write(0, row_digest.size(), row_digest.data());
  set_attr(f, "/points/row_digest", "help", std::string("digest of everything stored for the point (icl-sweep verify checks it)"));
  set_attr(f, "/", "attributes_digest", static_cast<int64_t>(attributes_digest(f)));
}

}  // namespace icl::io
