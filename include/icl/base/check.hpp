#pragma once
// Always-on internal consistency check: a failure is a bug in icl-sweep, not a user error.
#include <cstdio>
#include <cstdlib>

#define ICL_CHECK(cond)                                                                      \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "icl-sweep internal error: %s failed at %s:%d\n", #cond, __FILE__, \
                   __LINE__);                                                                \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
