#pragma once
// The large-d table's shapes (bench/run_bench_d.sh; bench_train d:d, bench_lsa_products d): n = 2d, L = 2.
#include <algorithm>

namespace icl::bench {

// The batch at d: about 2^15 / d tasks (at least 64), so one step stays near a second at d = 128.
inline int batch_for_d(int d) { return std::max(64, (32768 / d) / 16 * 16); }

}  // namespace icl::bench
