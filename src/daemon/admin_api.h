// -----------------------------------------------------------------------------
// File: daemon/admin_api.h
// -----------------------------------------------------------------------------
//
// mxlimitd's admin API: what its own listener (admin_server.h; never the
// auth listener) answers. Every request must carry
// `Authorization: Bearer <the --admin-token-file token>`; anything else is
// 401 before its path is even looked at, and the token is compared by its
// keyed digest in constant time, so neither a wrong token's length nor its
// first differing byte shows in the answer's timing. Endpoints (their names
// are what operators' scripts and `mxlimit admin` call):
//   GET    /_mxlimit/admin/v1/tiers                   every assignment
//   PUT    /_mxlimit/admin/v1/tiers/users/{userId}    {"tier": NAME,
//   PUT    /_mxlimit/admin/v1/tiers/networks/{cidr}    "expires_in_ms": N?}
//   DELETE the same two                               ends the runtime one
//   POST   /_mxlimit/admin/v1/reset                   {"user_id": ID} or
//                                                     {"address": ADDR|CIDR}
// Path parameters are percent-decoded ("%40bot%3Aexample.org",
// "10.0.0.0%2F8"; a network's '/' may also be left as it is). Errors are
// Matrix-style bodies, {"errcode": "M_...", "error": "..."}. Every change
// and every refused token is logged. Runs on the admin server's one thread.
//
// Example:
//   absl::StatusOr<AdminToken> token = AdminToken::Load("/etc/mxlimit/admin");
//   AdminApi api(limiter, *std::move(token));
//   AdminReply reply = api.Handle(request, MonotonicTime::FromSteadyClock());

#ifndef MXLIMIT_DAEMON_ADMIN_API_H_
#define MXLIMIT_DAEMON_ADMIN_API_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mxlimit/internal/mutex.h"
#include "mxlimit/shared_limiter.h"
#include "mxlimit/time.h"
#include "src/daemon/tier_sync.h"
#include "src/util/siphash.h"

namespace mxlimit::daemon {

// The longest `expires_in_ms` taken: a year. Longer is an operator's typo;
// an assignment meant to last is one without an expiry.
inline constexpr int64_t kMaxAdminExpiresInMs = int64_t{366} * 86'400'000;

// Shortest token accepted: shorter ones can be guessed.
inline constexpr size_t kMinAdminTokenBytes = 16;

// The bearer token, kept only as its digest under a key drawn at start.
class AdminToken {
 public:
  // Reads `path` as a secret file (one trailing newline dropped): at least
  // kMinAdminTokenBytes of printable ASCII without spaces, since it is sent
  // in a header.
  static absl::StatusOr<AdminToken> Load(const std::string& path);
  static absl::StatusOr<AdminToken> FromText(std::string_view token);

  // Whether `authorization` is "Bearer <the token>" (the scheme in any
  // case). Costs the same whatever the header holds, up to its length.
  bool Matches(std::string_view authorization) const;

 private:
  AdminToken() = default;
  internal::SipKey key_{};
  internal::SipDigest digest_{};
};

struct AdminRequest {
  std::string_view method;
  std::string_view target;
  // The Authorization field's value; empty when absent.
  std::string_view authorization;
  std::string_view body;
  // Who asked, for the log ("unix" or the TCP peer's address).
  std::string_view peer;
};

struct AdminReply {
  int status = 200;
  std::string body;  // JSON
};

class AdminApi {
 public:
  // `limiter` is borrowed. `on_change`, when set, runs after every change
  // of an assignment (the state dir writes them down). `shared`, when set
  // (mxlimitd with a store), publishes every change to the other processes
  // on the store; a change the store does not take is undone and answered
  // 503 M_UNAVAILABLE.
  AdminApi(SharedLimiter& limiter, AdminToken token,
           std::function<void()> on_change = nullptr,
           TierSync* shared = nullptr);

  AdminReply Handle(const AdminRequest& request, MonotonicTime now);

 private:
  AdminReply Tiers(MonotonicTime now) const;
  AdminReply SetTier(std::string_view kind, std::string_view subject,
                     std::string_view body, std::string_view peer,
                     MonotonicTime now);
  AdminReply ClearTier(std::string_view kind, std::string_view subject,
                       std::string_view peer);
  AdminReply Reset(std::string_view body, std::string_view peer);

  SharedLimiter& limiter_;
  const AdminToken token_;
  std::function<void()> on_change_;
  TierSync* const shared_;
  // Serializes changes when there is no store (the admin server has one
  // thread; this keeps the API safe for any caller).
  internal::Mutex unshared_mu_;
};

// A Matrix-style error body: {"errcode": errcode, "error": message}.
AdminReply AdminError(int status, std::string_view errcode,
                      std::string_view message);

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_ADMIN_API_H_
