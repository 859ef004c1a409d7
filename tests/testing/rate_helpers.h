// A Rate for tests, built through Rate::Create so an invalid one fails the
// test that asked for it rather than the next line.

#ifndef MXLIMIT_TESTS_TESTING_RATE_HELPERS_H_
#define MXLIMIT_TESTS_TESTING_RATE_HELPERS_H_

#include <cstdint>
#include <optional>

#include "gtest/gtest.h"
#include "mxlimit/rate.h"

namespace mxlimit::testing_rate {

inline constexpr int64_t kSec = 1'000'000'000;

// A monotonic instant `ns` nanoseconds after the clock's origin.
inline MonotonicTime AtNs(int64_t ns) {
  return MonotonicTime::FromNanoseconds(ns);
}

inline Rate MakeRate(int64_t n, TimeUnit unit,
                     std::optional<int64_t> burst = {}) {
  absl::StatusOr<Rate> r = Rate::Create(n, unit, burst);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Rate::Blocked();
}

}  // namespace mxlimit::testing_rate

#endif  // MXLIMIT_TESTS_TESTING_RATE_HELPERS_H_
