// -----------------------------------------------------------------------------
// File: daemon/token_digest.h
// -----------------------------------------------------------------------------
//
// An access token as mxlimitd keeps it: its SipHash-2-4-128 digest under the
// daemon's secret. Tables of tokens (appservices, the whoami cache) are
// keyed by this, so no token is stored where it is looked up, and lookups
// take the same time however much of a guess matches.
//
// Example:
//   const mxlimit::daemon::TokenDigest d =
//       mxlimit::daemon::DigestOf(secret, "syt_abc");
//   absl::flat_hash_set<mxlimit::daemon::TokenDigest> seen = {d};

#ifndef MXLIMIT_DAEMON_TOKEN_DIGEST_H_
#define MXLIMIT_DAEMON_TOKEN_DIGEST_H_

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include "src/util/siphash.h"

namespace mxlimit::daemon {

struct TokenDigest {
  uint64_t hi = 0;
  uint64_t lo = 0;

  friend bool operator==(const TokenDigest&, const TokenDigest&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TokenDigest& d) {
    return H::combine(std::move(h), d.hi, d.lo);
  }
};

inline TokenDigest DigestOf(const internal::SipKey& secret,
                            std::string_view token) {
  const internal::SipDigest d = internal::SipHash128(secret, token);
  TokenDigest out;
  std::memcpy(&out.hi, d.data(), 8);
  std::memcpy(&out.lo, d.data() + 8, 8);
  return out;
}

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_TOKEN_DIGEST_H_
