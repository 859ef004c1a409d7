// -----------------------------------------------------------------------------
// File: policy_set.h
// -----------------------------------------------------------------------------
//
// `mxlimit::PolicySet` is a validated, compiled list of policies: operator
// policies plus (optionally) the built-in defaults. For one request it picks,
// per scope (client address, user), the single policy that applies and the
// route component of the bucket key that policy charges.
//
// Resolution rules (docs/policies.md, "Resolution"):
//   * A policy matches when its pattern matches the request's normalized route
//     key OR its raw query-free path, its `methods` (if any) include the
//     request's method, and, for user-scope policies, the request has a user.
//   * Per scope one policy applies. An exact pattern beats every wildcard;
//     among wildcards the one with more literal (non-'*') bytes wins; on a tie
//     an operator policy beats a built-in, then the earlier one wins (operator
//     file order, then built-in table order). Exact matches compare the same
//     way (more bytes, operator, earlier).
//   * The bucket route is the request's `RouteId` for non-sharing policies and
//     `kSharedBucketRoute` for `share_threshold: true` ones. It is never
//     derived from the raw path, so a wildcard cannot mint one bucket per room
//     or transaction, and every unknown path shares the fallback route id.
//
// Thread safety: immutable after `Compile`; `Resolve` and `Explain` may run
// concurrently from any number of threads.
//
// Example:
//   std::vector<std::string_view> keys = normalizer.Keys();  // index = RouteId
//   absl::StatusOr<mxlimit::PolicySet> set = mxlimit::PolicySet::Compile(
//       config.policies, config.builtin_policies, keys);
//   if (!set.ok()) return set.status();
//   mxlimit::Route route = normalizer.Normalize(method, target);
//   mxlimit::PolicySet::Resolution r = set->Resolve(
//       method, route.id, mxlimit::QueryFreePath(target), !user.empty());
//   if (r.ip != mxlimit::kNoPolicy) Charge(ip, r.ip, r.ip_bucket_route);

#ifndef MXLIMIT_POLICY_SET_H_
#define MXLIMIT_POLICY_SET_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/internal/prefix_trie.h"
#include "mxlimit/policy.h"
#include "mxlimit/route.h"

namespace mxlimit {

// How a policy's pattern matched a request (for `Explain`).
enum class MatchForm : uint8_t { kRouteKey, kRawPath, kBoth };

// What became of a matching policy (for `Explain`).
enum class MatchVerdict : uint8_t {
  kChosen,          // The one policy applied in its scope.
  kOutranked,       // Eligible, but the chosen policy ranks higher.
  kMethodExcluded,  // Pattern matched; its `methods` exclude the request's.
  kNeedsUser        // User-scope policy, and the request has no user.
};

// Why one policy beat another: the first rule that separates them.
enum class RankReason : uint8_t {
  kOnlyCandidate,     // Nothing else was eligible in the scope.
  kExact,             // Exact pattern over a wildcard.
  kMoreLiteralBytes,  // More non-'*' bytes.
  kOperatorOverBuiltin,
  kEarlier  // Earlier in the operator file / built-in table.
};

std::string_view MatchFormName(MatchForm form);           // "route key", ...
std::string_view MatchVerdictName(MatchVerdict verdict);  // "chosen", ...
std::string_view RankReasonName(RankReason reason);       // "exact", ...

// One policy whose pattern matched a request.
struct PolicyMatch {
  PolicyId policy = kNoPolicy;
  Scope scope = Scope::kIp;
  MatchForm form = MatchForm::kRouteKey;
  MatchVerdict verdict = MatchVerdict::kOutranked;
  // kChosen: why it beat the best other eligible policy (`versus`), or
  // kOnlyCandidate. kOutranked: why the chosen policy (`versus`) beat it.
  // Otherwise unused.
  RankReason reason = RankReason::kOnlyCandidate;
  PolicyId versus = kNoPolicy;
  // kChosen only: the route component of the bucket key it charges.
  RouteId bucket_route = kFallbackRouteId;
};

// -----------------------------------------------------------------------------
// PolicySet
// -----------------------------------------------------------------------------
class PolicySet {
 public:
  // Per scope, the one policy that applies (`kNoPolicy` if none) and the route
  // component of its bucket key (`kSharedBucketRoute` for sharing policies;
  // 0 when no policy applies).
  struct Resolution {
    PolicyId ip = kNoPolicy;
    RouteId ip_bucket_route = kFallbackRouteId;
    PolicyId user = kNoPolicy;
    RouteId user_bucket_route = kFallbackRouteId;

    friend bool operator==(const Resolution&, const Resolution&) = default;
  };

  // Validates `operator_policies` (see `ValidatePolicies`) and precomputes
  // the lookup structures. With `include_builtins`, `BuiltinPolicies()` are
  // added after the operator policies, except those whose name an operator
  // policy takes (that policy replaces the built-in). Operator policies are
  // marked `builtin = false` whatever they say, and their methods are stored
  // upper case ("post" becomes "POST").
  //
  // `route_keys[i]` is the key of `RouteId` i, 0 being the fallback; an empty
  // span means "only the fallback". Policies matching a route key are
  // precomputed per route, so a request's route-side cost is one lookup.
  //
  // Errors (InvalidArgument) list every problem, one per line, each naming the
  // policy (and its source line when known), the field and the value; more
  // than `kMaxPolicies` policies or 0xFFFF route keys are also refused.
  static absl::StatusOr<PolicySet> Compile(
      std::vector<Policy> operator_policies, bool include_builtins,
      std::span<const std::string_view> route_keys);

  // The policy per scope for one request. `route` is the normalizer's id for
  // the request (ids outside the compiled table count as the fallback);
  // `query_free_path` the raw target up to '?' or '#' (`QueryFreePath`);
  // `method` is case-sensitive. User-scope policies apply only if `has_user`.
  //
  // No allocation. Cost: one route lookup and one byte-trie walk over the
  // path (O(path length), independent of the number of exact and
  // trailing-'*' policies), plus a glob test per inner-'*' policy that could
  // still outrank the best found so far.
  Resolution Resolve(std::string_view method, RouteId route,
                     std::string_view query_free_path, bool has_user) const;

  // Every policy whose pattern matched, with the verdict and the reason, in
  // scope order (ip, user), chosen first, then by rank. Scans every policy:
  // for `mxlimit explain` and tests, not the hot path. Its choices equal
  // `Resolve`'s (the tests hold the two to each other).
  std::vector<PolicyMatch> Explain(std::string_view method, RouteId route,
                                   std::string_view query_free_path,
                                   bool has_user) const;

  size_t size() const { return policies_.size(); }
  // REQUIRES: id < size().
  const Policy& policy(PolicyId id) const { return policies_[id]; }
  std::span<const Policy> policies() const { return policies_; }
  std::optional<PolicyId> Find(std::string_view name) const;

  // Route keys the set was compiled against (index = RouteId).
  size_t route_count() const { return route_keys_.size(); }
  std::string_view route_key(RouteId id) const;

  // Compiled form, for benches and `mxlimit check-config`.
  size_t trie_nodes() const { return trie_.node_count(); }
  size_t inner_star_policies() const { return inner_.size(); }

 private:
  // Best policy per scope and method class among one group of candidates
  // (the policies matching one route key, one exact path, or one prefix).
  struct BestTable {
    PolicyId best[2][internal::kMethodClassCount];
  };
  // What Resolve needs per policy, packed away from the (large) `Policy`.
  struct PolicyInfo {
    // Higher is better: exact, then literal bytes, then operator, then
    // earlier. Distinct per policy, so resolution is a strict maximum.
    uint64_t rank = 0;
    internal::MethodMask methods = internal::kAllMethods;
    bool share_threshold = false;
  };
  struct InnerStar {
    PolicyId id;
    Scope scope;
    internal::MethodMask methods;
  };

  PolicySet() = default;
  uint32_t AddBestTable(std::span<const PolicyId> candidates);
  RouteId ClampRoute(RouteId route) const;
  RouteId BucketRoute(PolicyId id, RouteId route) const;
  uint64_t rank(PolicyId id) const { return info_[id].rank; }

  std::vector<Policy> policies_;
  std::vector<PolicyInfo> info_;
  absl::flat_hash_map<std::string, PolicyId> by_name_;
  std::vector<std::string> route_keys_;

  std::vector<BestTable> tables_;
  // Route side: index into tables_ per RouteId.
  std::vector<uint32_t> route_table_;
  // Raw side: exact paths and trailing-'*' prefixes in one byte trie, then
  // inner-'*' patterns by descending rank.
  internal::PrefixTrie trie_;
  std::vector<InnerStar> inner_;
};

}  // namespace mxlimit

#endif  // MXLIMIT_POLICY_SET_H_
