// What the C ABI's opaque handle holds, and the struct-size rules shared by
// the files of src/c/.

#ifndef MXLIMIT_SRC_C_C_HANDLE_H_
#define MXLIMIT_SRC_C_C_HANDLE_H_

#include <cstddef>
#include <memory>
#include <string_view>

#include "mxlimit/c.h"
#include "mxlimit/sharded_limiter.h"

// Declared, incomplete, in c.h; C callers only ever hold a pointer.
struct mxlimit_limiter {
  // The ShardedLimiter does the locking, so one handle serves every thread;
  // it also keeps every policy name it has loaded, which is what lets
  // decisions point at names for the handle's whole life.
  std::unique_ptr<mxlimit::ShardedLimiter> limiter;
};

namespace mxlimit::c_api {

// The sizes of the structs of version 0.1, the first: a caller's
// `struct_size` may never be smaller. Fixed forever; a later version that
// appends fields grows sizeof() but not these.
inline constexpr size_t kFirstOptionsSize = 8;
inline constexpr size_t kFirstDecisionSize =
    offsetof(mxlimit_decision, shadow_policy_len) + sizeof(size_t);

static_assert(sizeof(mxlimit_options) == kFirstOptionsSize);
// The second version appended `delay_ns`; the third `leases` and
// `lease_count` (padded to 8 bytes).
inline constexpr size_t kSecondDecisionSize =
    kFirstDecisionSize + sizeof(int64_t);
static_assert(offsetof(mxlimit_decision, leases) == kSecondDecisionSize);
inline constexpr size_t kThirdDecisionSize =
    kSecondDecisionSize + MXLIMIT_MAX_LEASES * sizeof(uint64_t) + 8;
// The fourth appended the Matrix error, the quota and `settles` (padded to
// 8 bytes).
static_assert(offsetof(mxlimit_decision, errcode) == kThirdDecisionSize);
inline constexpr size_t kFourthDecisionSize =
    kThirdDecisionSize + 6 * sizeof(void*) + 3 * sizeof(int64_t) + 8;
// The fifth appended `tier`.
static_assert(offsetof(mxlimit_decision, tier) == kFourthDecisionSize);
inline constexpr size_t kFifthDecisionSize = sizeof(mxlimit_decision);
static_assert(kFifthDecisionSize == kFourthDecisionSize + 2 * sizeof(void*));

// `mxlimit_request_options` of its first version (the 0.1 series).
inline constexpr size_t kFirstRequestOptionsSize =
    offsetof(mxlimit_request_options, request_bytes) + sizeof(int64_t);
static_assert(sizeof(mxlimit_request_options) == kFirstRequestOptionsSize);

// A (pointer, length) string of the C ABI: NULL only with length 0.
inline bool ReadString(const char* data, size_t len, std::string_view& out) {
  if (data == nullptr) {
    out = std::string_view();
    return len == 0;
  }
  out = std::string_view(data, len);
  return true;
}

}  // namespace mxlimit::c_api

#endif  // MXLIMIT_SRC_C_C_HANDLE_H_
