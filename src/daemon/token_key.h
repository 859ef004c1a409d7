// -----------------------------------------------------------------------------
// File: daemon/token_key.h
// -----------------------------------------------------------------------------
//
// Who a request's user is when all the sidecar sees is an access token.
//
// `--user-key token-hash` (the default) names the user after the token:
// `@t<base64url of a keyed 128-bit hash of the token>:mxlimit`, 32 bytes, a
// well-formed user ID that the limiter keeps inline. The hash is SipHash-2-4-
// 128 under a secret that only mxlimitd knows, so neither a token nor a
// collision can be recovered from the ID, and the IDs are safe in logs and
// metrics (tokens never are). The secret lives in a file so that a restart
// keeps every client's buckets addressable.
//
// Example:
//   absl::StatusOr<mxlimit::internal::SipKey> secret =
//       mxlimit::daemon::LoadOrCreateSecret("/var/lib/mxlimitd/secret");
//   // "@t", 22 base64url characters of the hash, ":mxlimit".
//   const mxlimit::daemon::TokenUserId user =
//       mxlimit::daemon::TokenHashUserId(*secret, "syt_YWxpY2U_abc");

#ifndef MXLIMIT_DAEMON_TOKEN_KEY_H_
#define MXLIMIT_DAEMON_TOKEN_KEY_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "src/util/siphash.h"

namespace mxlimit::daemon {

inline constexpr size_t kTokenUserIdBytes = 32;  // "@t" + 22 + ":mxlimit"

struct TokenUserId {
  std::array<char, kTokenUserIdBytes> bytes{};
  std::string_view view() const { return {bytes.data(), bytes.size()}; }
};

// The user ID for `token` under `secret`. Allocation-free.
TokenUserId TokenHashUserId(const internal::SipKey& secret,
                            std::string_view token);

// Reads the secret from `path` (32 hex digits and a newline), or, when the
// file does not exist, draws a fresh one and creates the file with mode 0600
// (never replacing a file another process created first). Errors name the
// file: unreadable, malformed, or not creatable.
absl::StatusOr<internal::SipKey> LoadOrCreateSecret(const std::string& path);

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_TOKEN_KEY_H_
