// Box-Muller over counter-based uniforms.  Pair p of a key uses uniforms (2p, 2p+1):
//   r = sqrt(-2 log u1), theta = 2 pi u2, z_{2p} = r cos theta, z_{2p+1} = r sin theta.
#include "icl/base/rng.hpp"

#include <cmath>

namespace icl {

static void box_muller(uint64_t key, uint64_t pair, double* z0, double* z1) {
  const double u1 = rng_uniform(key, 2 * pair), u2 = rng_uniform(key, 2 * pair + 1);
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 6.283185307179586476925 * u2;
  *z0 = r * std::cos(theta);
  *z1 = r * std::sin(theta);
}

double rng_normal(uint64_t key, uint64_t i) {
  double z0, z1;
  box_muller(key, i / 2, &z0, &z1);
  return (i % 2) ? z1 : z0;
}

void rng_normals(uint64_t key, uint64_t first, int count, double* out) {
  int j = 0;
  if (first % 2 && count > 0) out[j++] = rng_normal(key, first);
  for (; j + 1 < count; j += 2) box_muller(key, (first + j) / 2, &out[j], &out[j + 1]);
  if (j < count) out[j] = rng_normal(key, first + j);
}

}  // namespace icl
