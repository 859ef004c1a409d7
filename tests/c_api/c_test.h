/* A few checks for the C tests of the C ABI, which are plain C programs, as
 * a C embedder's would be: no test framework. Each failed check prints
 * FILE:LINE and the values; main() returns c_test_result(). */

#ifndef MXLIMIT_TESTS_C_API_C_TEST_H_
#define MXLIMIT_TESTS_C_API_C_TEST_H_

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mxlimit/c.h"

static int c_test_failures = 0;

#define EXPECT(cond)                                                     \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: EXPECT(%s)\n", __FILE__, __LINE__, #cond); \
      ++c_test_failures;                                                 \
    }                                                                    \
  } while (0)

#define EXPECT_INT(actual, expected)                                       \
  do {                                                                     \
    const long long c_test_a = (long long)(actual);                        \
    const long long c_test_e = (long long)(expected);                      \
    if (c_test_a != c_test_e) {                                            \
      fprintf(stderr, "%s:%d: %s is %lld, expected %s = %lld\n", __FILE__, \
              __LINE__, #actual, c_test_a, #expected, c_test_e);           \
      ++c_test_failures;                                                   \
    }                                                                      \
  } while (0)

/* A status: prints both names on failure. */
#define EXPECT_STATUS(actual, expected)                                 \
  do {                                                                  \
    const int c_test_a = (actual);                                      \
    const int c_test_e = (expected);                                    \
    if (c_test_a != c_test_e) {                                         \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, \
              __LINE__, #actual, mxlimit_status_name(c_test_a),         \
              mxlimit_status_name(c_test_e));                           \
      ++c_test_failures;                                                \
    }                                                                   \
  } while (0)

/* A (pointer, length) string from the library against a C string. */
#define EXPECT_STRN(ptr, len, expected)                                     \
  do {                                                                      \
    const char* c_test_p = (ptr);                                           \
    const size_t c_test_n = (len);                                          \
    const char* c_test_e = (expected);                                      \
    if (c_test_p == NULL || c_test_n != strlen(c_test_e) ||                 \
        memcmp(c_test_p, c_test_e, c_test_n) != 0) {                        \
      fprintf(stderr, "%s:%d: %s is \"%.*s\", expected \"%s\"\n", __FILE__, \
              __LINE__, #ptr, c_test_p ? (int)c_test_n : 6,                 \
              c_test_p ? c_test_p : "(NULL)", c_test_e);                    \
      ++c_test_failures;                                                    \
    }                                                                       \
  } while (0)

/* `haystack` (NUL-terminated, may be NULL) contains `needle`. */
#define EXPECT_CONTAINS(haystack, needle)                                     \
  do {                                                                        \
    const char* c_test_h = (haystack);                                        \
    if (c_test_h == NULL || strstr(c_test_h, (needle)) == NULL) {             \
      fprintf(stderr, "%s:%d: %s is \"%s\", expected it to contain \"%s\"\n", \
              __FILE__, __LINE__, #haystack, c_test_h ? c_test_h : "(NULL)",  \
              (needle));                                                      \
      ++c_test_failures;                                                      \
    }                                                                         \
  } while (0)

static inline int c_test_result(const char* name) {
  if (c_test_failures == 0) {
    printf("%s: all checks passed\n", name);
    return 0;
  }
  fprintf(stderr, "%s: %d check(s) failed\n", name, c_test_failures);
  return 1;
}

#endif /* MXLIMIT_TESTS_C_API_C_TEST_H_ */
