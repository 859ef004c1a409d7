// -----------------------------------------------------------------------------
// File: tiers.h
// -----------------------------------------------------------------------------
//
// Tiers give chosen accounts and networks other limits than everyone else:
// a bridge ten times the budget, a suspect network a tenth, staff none. The
// policy file names the tiers (`tiers:`) and assigns them
// (`tiers.assign`); `Limiter::SetTier` assigns them while running.
//
// A tier applies to every policy a request resolves (per-IP, per-user and
// the other scopes alike). It changes rates, never bucket keys: a client that
// changes tier keeps its buckets, and scaling keeps a bucket's fill (scale
// multiplies the rate and the burst, so the time a full burst takes to
// refill is unchanged): switching tiers gives no fresh burst.
//
// Which assignment applies: a user's beats a network's; of networks, the
// longest prefix; for the same subject, one set at runtime beats the file's.
// docs/policies.md, "Tiers", is the reference.
//
// Example:
//   // A bridge at ten times every limit; a network at a tenth.
//   mxlimit::TierOptions BridgeAndSuspects() {
//     mxlimit::TierOptions tiers;
//     tiers.tiers.push_back({.name = "bridge", .scale = 10});
//     tiers.tiers.push_back({.name = "suspect", .scale = 0.1});
//     tiers.users.push_back({"@bridge:example.org", "bridge"});
//     tiers.networks.push_back(
//         {*mxlimit::ParseCidr("2001:db8:bad::/48"), "suspect"});
//     return tiers;  // LimiterConfig::tiers; Limiter::SetTier at runtime
//   }

#ifndef MXLIMIT_TIERS_H_
#define MXLIMIT_TIERS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mxlimit/ip.h"
#include "mxlimit/rate.h"
#include "mxlimit/time.h"

namespace mxlimit {

// A tier's own rate for one policy, replacing the policy's (and the tier's
// scale) for its members.
struct TierRate {
  std::string policy;
  Rate rate = Rate::Unlimited();
  // Where it was written (config file line), for error messages; 0 in code.
  int source_line = 0;
};

// One named tier. `exempt` excludes the others; `scale` and `policies` may
// go together (a replaced policy is not also scaled).
struct Tier {
  // 1 to kMaxTierNameBytes of [A-Za-z0-9._-]; not "assign".
  std::string name;
  // Multiplies the rate and the burst of every rate-limited policy (in-flight
  // limits are not scaled), within [kMinTierScale, kMaxTierScale].
  double scale = 1.0;
  std::vector<TierRate> policies = {};
  // Members are neither checked nor charged, as `exempt:` users are.
  bool exempt = false;
  int source_line = 0;
};

// `tiers.assign.users`: an exact Matrix user ID and its tier.
struct TierUser {
  std::string user_id;
  std::string tier;
};

// `tiers.assign.networks`: a network and its tier.
struct TierNetwork {
  Cidr network;
  std::string tier;
};

// The `tiers:` section.
struct TierOptions {
  std::vector<Tier> tiers;
  std::vector<TierUser> users;
  std::vector<TierNetwork> networks;
};

inline constexpr size_t kMaxTiers = 64;
inline constexpr size_t kMaxTierNameBytes = 32;
inline constexpr double kMinTierScale = 0.001;
inline constexpr double kMaxTierScale = 1000.0;
// Assignments in the file (users and networks together).
inline constexpr size_t kMaxFileTierAssignments = 100'000;
// Assignments made at runtime and held at once; `SetTier` beyond it fails
// with ResourceExhausted. Expired ones do not count.
inline constexpr size_t kMaxTierOverrides = 100'000;

// What is wrong with a tier name, or "".
std::string TierNameProblem(std::string_view name);

// Checks the section on its own: names (unique, valid, at most kMaxTiers),
// scales, exempt tiers without rates, assignments naming defined tiers, the
// same subject assigned twice, and the count. Which policies a tier may
// replace is checked when the policies are compiled (`Limiter::Create`).
absl::Status ValidateTierOptions(const TierOptions& tiers);

// `rate` with its requests per unit and burst multiplied by `scale` (the
// burst rounded, at least 1; the rate kept exact by moving to a longer unit
// where it is not a whole number, e.g. 1/minute * 0.1 = 6/hour, else
// rounded per day). Results beyond Rate's range are capped at it (at least
// one request a day; at most kMaxRequestsPerUnit per second, kMaxBurst).
// Unlimited and blocked rates are returned as they are. Fails only for a
// scale that is not a positive number.
absl::StatusOr<Rate> ScaleRate(const Rate& rate, double scale);

// Who an assignment is for.
enum class TierSubjectKind : uint8_t { kUser, kNetwork };

// One assignment, as `Limiter::ListTiers` and `Limiter::TierFor` report it.
struct TierAssignment {
  TierSubjectKind kind = TierSubjectKind::kUser;
  // The user ID, or the network as FormatCidr writes it.
  std::string subject;
  std::string tier;
  // Set by `SetTier` (else from the policy file's `tiers.assign`).
  bool runtime = false;
  // When a runtime assignment ends by itself; unset: never.
  std::optional<MonotonicTime> expires;
};

// A `SetTier`/`ClearTier` subject: a user ID ("@bridge:example.org") or a
// network or address ("10.0.0.0/8", "2001:db8::1"). Errors say which rule
// the text breaks.
struct TierSubject {
  TierSubjectKind kind = TierSubjectKind::kUser;
  std::string user_id;
  Cidr network;
};
absl::StatusOr<TierSubject> ParseTierSubject(std::string_view text);

}  // namespace mxlimit

#endif  // MXLIMIT_TIERS_H_
