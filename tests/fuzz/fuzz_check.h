// Invariant checks for the fuzz targets. A violated invariant is a finding:
// print what broke, then trap, so libFuzzer saves the input as a crash and the
// corpus driver (corpus_main.cc) dies with a signal that ctest reports.
//
// `assert` is not used because release-style builds compile it away; these
// checks are always on.

#ifndef MXLIMIT_TESTS_FUZZ_FUZZ_CHECK_H_
#define MXLIMIT_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>

#define MXLIMIT_FUZZ_CHECK(cond)                                        \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, \
                   __LINE__, #cond);                                    \
      __builtin_trap();                                                 \
    }                                                                   \
  } while (0)

#endif  // MXLIMIT_TESTS_FUZZ_FUZZ_CHECK_H_
