// The bytes a `RedisStore` sends: protocol mxl:1's EVALSHA for one
// `StoreOp`, formatted as RESP into a caller's fixed buffer (so the check
// path allocates nothing), and the few setup commands of a connection.
//
// EVALSHA <sha1> N key_1..key_N op cost now_s now_ns
//         [T_ns_i burst_i mode_i] for i = 1..N
// (mode_i: 1 enforcing, 0 shadow, 2 observed; for op `sync`, delta_ns_i in
// its place)
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_MXL1_CALL_H_
#define MXLIMIT_SHARED_REDIS_MXL1_CALL_H_

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "src/shared/store.h"

namespace mxlimit::internal {

namespace mxl1_call_internal {
constexpr size_t Digits(size_t n) { return n < 10 ? 1 : 1 + Digits(n / 10); }
// `$<len>\r\n<bytes>\r\n`.
constexpr size_t Bulk(size_t n) { return 1 + Digits(n) + 2 + n + 2; }
constexpr size_t kInt64Chars = 20;  // -9223372036854775808
constexpr size_t kArgs = 3 + 4 + 4 * kMaxStoreBuckets + 1;
}  // namespace mxl1_call_internal

// The longest call: every bucket used, every number at its widest.
inline constexpr size_t kMxl1CallMaxBytes = [] {
  using namespace mxl1_call_internal;
  size_t n = 1 + Digits(kArgs) + 2;                          // *<argc>
  n += Bulk(7) + Bulk(40) + Bulk(Digits(kMaxStoreBuckets));  // EVALSHA sha N
  n += kMaxStoreBuckets * Bulk(StoreKey::kCapacity);         // keys
  n += Bulk(6) + 3 * Bulk(kInt64Chars);  // op cost now_s now_ns
  // T burst mode|delta (a mode is at most "1/" and a queue below 2^40)
  n += kMaxStoreBuckets * 3 * Bulk(kInt64Chars);
  n += Bulk(kInt64Chars);  // at
  return n;
}();

// Writes the call for `op` (its first `op.count` buckets) into `out`, which
// has room for kMxl1CallMaxBytes, and returns its length. A caller clock
// before 0 is sent as 0. REQUIRES: op.count <= kMaxStoreBuckets, and
// `sha1` is 40 characters.
size_t FormatMxl1Call(const StoreOp& op, std::string_view sha1, char* out);

// Any command as RESP, for the ones a connection sends once (AUTH, SELECT,
// SCRIPT LOAD, INFO): these may allocate.
std::string FormatRespCommand(std::span<const std::string_view> args);
inline std::string FormatRespCommand(
    std::initializer_list<std::string_view> args) {
  return FormatRespCommand(std::span<const std::string_view>(args));
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_MXL1_CALL_H_
