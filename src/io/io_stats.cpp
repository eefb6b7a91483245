#include "icl/io/io_stats.hpp"

#include <cstdio>
#include <cstdlib>

namespace icl::io {

IoStats& io_stats() {
  static IoStats s;
  return s;
}

void print_io_stats(const char* command) {
  if (!std::getenv("ICL_SWEEP_STATS")) return;
  const IoStats& s = io_stats();
  std::fprintf(stderr, "icl-sweep stats (%s): records_decoded %lld hdf5_calls %lld rows_read %lld rows_written %lld rows_formatted %lld halving_visits %lld\n", command,
               static_cast<long long>(s.records_decoded.load()), static_cast<long long>(s.hdf5_calls.load()),
               static_cast<long long>(s.rows_read.load()), static_cast<long long>(s.rows_written.load()),
               static_cast<long long>(s.rows_formatted.load()), static_cast<long long>(s.halving_visits.load()));
}

}  // namespace icl::io
