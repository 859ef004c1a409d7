// -----------------------------------------------------------------------------
// File: daemon/appservice.h
// -----------------------------------------------------------------------------
//
// Application services, from their registration files: a request made with
// an appservice's `as_token` is the appservice's. The spec exempts its
// sender from rate limiting; when it masquerades as one of its users
// (`?user_id=`), the registration's `rate_limited` flag decides (false:
// exempt; true, the default: limited as that user). See docs/embedding.md.
//
// Example:
//   absl::StatusOr<mxlimit::daemon::AppserviceRegistry> registry =
//       mxlimit::daemon::AppserviceRegistry::Load(
//           {"/etc/matrix-synapse/bridge.yaml"}, secret);
//   const mxlimit::daemon::Appservice* as = registry->Find(access_token);
//   // as == nullptr unless access_token is a registered as_token

#ifndef MXLIMIT_DAEMON_APPSERVICE_H_
#define MXLIMIT_DAEMON_APPSERVICE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "src/daemon/token_digest.h"
#include "src/util/siphash.h"

namespace mxlimit::daemon {

struct Appservice {
  std::string id;  // the registration's `id`, for logs
  bool rate_limited = true;
};

class AppserviceRegistry {
 public:
  AppserviceRegistry() = default;

  // Reads every file. Each must be a YAML mapping with a non-empty string
  // `as_token` and, if present, a boolean `rate_limited`; two registrations
  // may not share an `as_token`. Errors name the file (and line, for YAML
  // syntax errors); nothing is loaded unless every file is good.
  static absl::StatusOr<AppserviceRegistry> Load(
      const std::vector<std::string>& files, const internal::SipKey& secret);

  // The appservice whose `as_token` is `token`, or nullptr. Tokens are
  // compared by keyed hash, so the lookup time does not depend on how much
  // of a guess matches. Allocation-free.
  const Appservice* Find(std::string_view token) const;

  size_t size() const { return services_.size(); }

 private:
  internal::SipKey secret_;
  absl::flat_hash_map<TokenDigest, size_t> by_token_;
  std::vector<Appservice> services_;
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_APPSERVICE_H_
