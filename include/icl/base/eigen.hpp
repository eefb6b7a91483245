#pragma once
// Eigen, for every file of the project.  GCC 12 reports its own _mm512_undefined_* idiom (`__Y = __Y`)
// as uninitialised wherever Eigen's AVX-512 code is inlined (GCC bug 105593, fixed in GCC 13); the
// diagnostics are issued at the end of the translation unit, so they are silenced for the including
// file rather than around this include.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Dense>
