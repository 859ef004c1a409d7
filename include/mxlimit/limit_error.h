// -----------------------------------------------------------------------------
// File: limit_error.h
// -----------------------------------------------------------------------------
//
// `mxlimit::LimitError`: the Matrix error a policy names for its denials
// (`Policy::errcode`, `info_uri`, `can_upgrade`), as `Decision::error` hands
// it out and `WriteLimitBody` (matrix_response.h) writes it.

#ifndef MXLIMIT_LIMIT_ERROR_H_
#define MXLIMIT_LIMIT_ERROR_H_

#include <cstdint>
#include <string_view>

namespace mxlimit {

// Views into the policy (or, from a ShardedLimiter, into its interned
// copies). Each is JSON-safe as `ValidatePolicies` accepts it: no quote,
// backslash or control byte.
struct LimitError {
  std::string_view errcode;  // empty: M_LIMIT_EXCEEDED
  std::string_view info_uri;
  // MSC4335's `can_upgrade`: kUnset, or the value to send.
  enum class Upgrade : uint8_t { kUnset, kNo, kYes };
  Upgrade can_upgrade = Upgrade::kUnset;
};

}  // namespace mxlimit

#endif  // MXLIMIT_LIMIT_ERROR_H_
