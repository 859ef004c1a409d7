// -----------------------------------------------------------------------------
// File: policy_set.h
// -----------------------------------------------------------------------------
//
// `mxlimit::PolicySet` is a validated, compiled list of policies: operator
// policies plus (optionally) the built-in defaults. For one request it picks,
// per layer and scope (client address, user), the enforcing policy that
// applies and, beside it, the shadow policy that applies, each with the route
// component of the bucket key it charges.
//
// Resolution rules (docs/policies.md, "Resolution"):
//   * A policy matches when one of its patterns matches the request's
//     normalized route key OR its canonical query-free path (percent-escapes
//     decoded, version aliases folded: internal/canonical_path.h), its
//     `methods` (if any) include the request's method, and, for user-scope
//     policies, the request has a user.
//   * Within one layer and scope, enforcing and shadow policies are resolved
//     separately, each to at most one policy: an exact pattern beats every
//     wildcard with a literal byte, which beats `<fallback>`, which beats a
//     wildcard without literal bytes (`*`); within those an operator policy
//     beats a built-in, then more literal bytes win (a `{name}` placeholder
//     counts none), then the earlier one (operator file order, then
//     built-in table order).
//   * Every layer applies: the limiter charges all resolved policies of all
//     layers all-or-nothing.
//   * The bucket route is the request's `RouteId` for non-sharing policies and
//     `kSharedBucketRoute` for `share_threshold: true` ones. It is never
//     derived from the raw path, so a wildcard cannot mint one bucket per room
//     or transaction, and every unknown path shares the fallback route id.
//
// Thread safety: immutable after `Compile`; `Resolve` and `Explain` may run
// concurrently from any number of threads.
//
// Example:
//   #include "mxlimit/options.h"
//
//   void Charge(const mxlimit::ResolvedPolicy& p);  // the embedder's
//
//   absl::Status ChargeAll(const mxlimit::LimiterConfig& config,
//                          std::string_view method, std::string_view target,
//                          std::string_view user) {
//     const mxlimit::RouteNormalizer normalizer;
//     absl::StatusOr<mxlimit::PolicySet> set = mxlimit::PolicySet::Compile(
//         config.policies, config.builtin_policies, normalizer.keys(),
//         config.shadow_mode);
//     if (!set.ok()) return set.status();
//     mxlimit::Route route = normalizer.Normalize(method, target);
//     mxlimit::PolicySet::Resolution r = set->Resolve(
//         method, route.id, mxlimit::QueryFreePath(target), !user.empty());
//     for (const mxlimit::ResolvedPolicy& p : r.all()) Charge(p);
//     return absl::OkStatus();
//   }

#ifndef MXLIMIT_POLICY_SET_H_
#define MXLIMIT_POLICY_SET_H_

#include <algorithm>
#include <array>
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
#include "mxlimit/limit_error.h"
#include "mxlimit/policy.h"
#include "mxlimit/route.h"

namespace mxlimit {

// How a policy's pattern matched a request (for `Explain`).
enum class MatchForm : uint8_t { kRouteKey, kRawPath, kBoth };

// What became of a matching policy (for `Explain`).
enum class MatchVerdict : uint8_t {
  kChosen,          // The policy applied in its layer, scope and mode.
  kOutranked,       // Eligible, but the chosen policy ranks higher.
  kMethodExcluded,  // Pattern matched; its `methods` exclude the request's.
  kNeedsUser,       // User-scope policy, and the request has no user.
  kNeedsSubject,    // Origin-, room- or target-scope policy, and the request
                    // has no origin, room placeholder or target account.
  kQueryExcluded    // Pattern matched; its query conditions exclude the
                    // request's query.
};

// What a request carries besides its client address. A policy whose scope's
// subject is absent does not apply. The room is not listed: a request has
// one exactly when its route has a `{roomId}` or `{roomIdOrAlias}`
// placeholder (`PolicySet::RouteHasRoom`).
//
// `request_target` is the request target (path and query), read only when
// some policy has query conditions (`Policy::query_absent`/`query_present`);
// empty means no query.
struct RequestSubjects {
  bool user = false;
  bool origin = false;
  bool target = false;
  std::string_view request_target = {};
};

// Why one policy beat another: the first rule that separates them.
enum class RankReason : uint8_t {
  kOnlyCandidate,     // Nothing else was eligible in its group.
  kExact,             // Exact pattern over a wildcard.
  kMoreSpecific,      // A wildcard with literal bytes over `<fallback>`, or
                      // `<fallback>` over a wildcard without any.
  kMoreLiteralBytes,  // More bytes outside '*' and `{name}` placeholders.
  kOperatorOverBuiltin,
  kEarlier  // Earlier in the operator file / built-in table.
};

std::string_view MatchFormName(MatchForm form);           // "route key", ...
std::string_view MatchVerdictName(MatchVerdict verdict);  // "chosen", ...
std::string_view RankReasonName(RankReason reason);       // "exact", ...

// Most policies one request resolves to: one enforcing and one shadow per
// layer and scope.
inline constexpr size_t kMaxResolved = 32;

// One policy a request resolved to. Trivial on purpose (no member
// initializers): a `Resolution` holds kMaxResolved of them and clearing the
// unused ones would cost more than resolving; write `ResolvedPolicy{}` for a
// zeroed one.
struct ResolvedPolicy {
  PolicyId policy;
  // The route component of the bucket key it charges.
  RouteId bucket_route;
  // Index into `PolicySet::layer_name`.
  uint8_t layer;
  Scope scope;
  bool shadow;
  friend bool operator==(const ResolvedPolicy&,
                         const ResolvedPolicy&) = default;
};
// PolicySet::Resolve writes one as a little-endian word of these fields.
static_assert(sizeof(ResolvedPolicy) == 8 &&
              offsetof(ResolvedPolicy, policy) == 0 &&
              offsetof(ResolvedPolicy, bucket_route) == 2 &&
              offsetof(ResolvedPolicy, layer) == 4 &&
              offsetof(ResolvedPolicy, scope) == 5 &&
              offsetof(ResolvedPolicy, shadow) == 6);

// One policy whose pattern matched a request.
struct PolicyMatch {
  PolicyId policy = kNoPolicy;
  Scope scope = Scope::kIp;
  uint8_t layer = 0;
  bool shadow = false;
  MatchForm form = MatchForm::kRouteKey;
  // The pattern of the policy's list that ranks best among those that
  // matched (index into `Policy::match`).
  uint8_t pattern = 0;
  MatchVerdict verdict = MatchVerdict::kOutranked;
  // kChosen: why it beat the best other eligible policy of its group
  // (`versus`), or kOnlyCandidate. kOutranked: why the chosen policy
  // (`versus`) beat it. Otherwise unused.
  RankReason reason = RankReason::kOnlyCandidate;
  PolicyId versus = kNoPolicy;
  // kChosen only: the route component of the bucket key it charges.
  RouteId bucket_route = kFallbackRouteId;
};

// An operator policy that another policy of its layer, scope and mode
// outranks on every request of some route its patterns may match
// (`PolicySet::Outranked`; `mxlimit check-config` warns about each).
struct OutrankedPolicy {
  // Where it loses to one other policy.
  struct Loss {
    PolicyId by = kNoPolicy;
    // Why `by` wins there (on the first route listed).
    RankReason reason = RankReason::kEarlier;
    // The routes, in RouteId order, and the methods (upper case; "other"
    // for non-standard ones) for which it loses each request to `by`.
    std::vector<RouteId> routes;
    std::vector<std::string> methods;
  };
  PolicyId policy = kNoPolicy;
  // True when it loses every request its patterns may match: it can never
  // apply. Then `losses` lists every policy it loses to; otherwise only
  // those that are no more specific than its pattern (see `Outranked`).
  bool never_applies = false;
  std::vector<Loss> losses;
};

namespace internal {
class OutrankedAnalysis;  // policy_outranked.cc
}  // namespace internal

// -----------------------------------------------------------------------------
// PreparedRouteForms
// -----------------------------------------------------------------------------
//
// A normalizer's route forms (`RouteNormalizer::forms()`) in the shape
// `PolicySet::Compile` reads them: one canonical glob per form, by route.
// `Compile` prepares them itself when given the forms; a caller that compiles
// many policy sets against one normalizer (a fuzzer, a tool) prepares them
// once and passes this instead. Immutable.
class PreparedRouteForms {
 public:
  explicit PreparedRouteForms(std::span<const RouteForm> forms);

 private:
  friend class PolicySet;
  friend class internal::OutrankedAnalysis;
  struct Glob {
    std::string text;
    size_t head_size;  // of internal::FormGlobHead(text)
    friend bool operator==(const Glob&, const Glob&) = default;
  };
  // Distinct globs per RouteId (empty: no forms).
  std::vector<std::vector<Glob>> by_route_;
  // Routes with a form that has no glob (route_glob.h): never route-only.
  std::vector<bool> refused_;
};

// -----------------------------------------------------------------------------
// PolicySet
// -----------------------------------------------------------------------------
class PolicySet {
 public:
  // Movable, not copyable: the compiled tables and `limit_error` view the
  // policies' strings.
  PolicySet(PolicySet&&) = default;
  PolicySet& operator=(PolicySet&&) = default;
  PolicySet(const PolicySet&) = delete;
  PolicySet& operator=(const PolicySet&) = delete;

  // Every policy a request resolved to, in layer order (the order in which
  // layers first appear: `route` first, then operator policies' layers, then
  // the built-ins'), ip before user, enforcing before shadow.
  struct Resolution {
    // The enforcing policy per scope in the default layer (`route`), or
    // `kNoPolicy`, and the route component of its bucket key: what most
    // embedders and reports want to know.
    PolicyId ip = kNoPolicy;
    RouteId ip_bucket_route = kFallbackRouteId;
    PolicyId user = kNoPolicy;
    RouteId user_bucket_route = kFallbackRouteId;

    uint8_t count = 0;
    // Every applied policy limits a rate per address or user, charges
    // `Request::cost` at the decision and denies rather than delays: no
    // in-flight limit, no origin, room or target scope, no `on_limit:
    // delay`, byte cost or charge on the response. The engine then takes its
    // short path.
    bool plain = false;
    // Some applied policy charges other than `Request::cost` at the
    // decision: a byte cost, or a charge on the response (never `plain`).
    bool weighed = false;
    // With Resolve's `idle_checks`: the policy charged on the response
    // by its bytes whose check was left out (only the first found is), or
    // `kNoPolicy`. It is not in `applied`, nor does it make the resolution
    // weighed or not plain; the response still settles it.
    PolicyId idled = kNoPolicy;
    // The first `count` are set; the rest are unspecified.
    std::array<ResolvedPolicy, kMaxResolved> applied;

    std::span<const ResolvedPolicy> all() const {
      return {applied.data(), count};
    }
    friend bool operator==(const Resolution& a, const Resolution& b) {
      return a.ip == b.ip && a.ip_bucket_route == b.ip_bucket_route &&
             a.user == b.user && a.user_bucket_route == b.user_bucket_route &&
             std::equal(a.all().begin(), a.all().end(), b.all().begin(),
                        b.all().end());
    }
  };

  // Validates `operator_policies` (see `ValidatePolicies`) and precomputes
  // the lookup structures. With `include_builtins`, `BuiltinPolicies()` are
  // added after the operator policies, except those whose name an operator
  // policy takes (that policy replaces the built-in). Operator policies are
  // marked `builtin = false` whatever they say, and their methods are stored
  // upper case ("post" becomes "POST"). With `all_shadow` (the config's
  // top-level `shadow_mode: true`) every policy, built-ins included, is
  // stored as a shadow policy.
  //
  // `route_keys[i]` is the key of `RouteId` i, 0 being the fallback; an empty
  // span means "only the fallback". Policies matching a route key are
  // precomputed per route, so a request's route-side cost is one lookup.
  //
  // `route_forms` (`RouteNormalizer::forms()` of the normalizer whose keys
  // these are) lets resolution skip the raw-path walk for a request whose
  // route and method no raw-path pattern can tell apart from the route key:
  // where no pattern that misses the key could match any path served as the
  // route (`ResolvedByRoute`). Without forms every request walks its path.
  // The result is the same either way; only the cost differs.
  //
  // Errors (InvalidArgument) list every problem, one per line, each naming the
  // policy (and its source line when known), the field and the value; more
  // than `kMaxPolicies` policies or patterns, more than `kMaxLayers` layers,
  // or 0xFFFF route keys are also refused.
  static absl::StatusOr<PolicySet> Compile(
      std::vector<Policy> operator_policies, bool include_builtins,
      std::span<const std::string_view> route_keys, bool all_shadow = false,
      std::span<const RouteForm> route_forms = {});
  // The same with the route forms prepared in advance.
  static absl::StatusOr<PolicySet> Compile(
      std::vector<Policy> operator_policies, bool include_builtins,
      std::span<const std::string_view> route_keys, bool all_shadow,
      const PreparedRouteForms& route_forms);

  // The policies for one request. `route` is the normalizer's id for the
  // request (ids outside the compiled table count as the fallback);
  // `query_free_path` the raw target up to '?' or '#' (`QueryFreePath`),
  // still percent-encoded (it is canonicalized on the fly); `method` is
  // case-sensitive. User-scope policies apply only if `has_user`.
  //
  // No allocation. Cost: one route lookup; unless `ResolvedByRoute`, one
  // byte-trie walk over the canonical path (O(path length), independent of
  // the number of exact and trailing-'*' policies), plus a glob test per
  // inner-'*' pattern that could still outrank the best found so far in its
  // group.
  //
  // `idle_checks` is an engine's word that every bucket of the policies
  // charged on the response by their bytes has a byte of room: such a
  // check cannot deny, and one is left out (Resolution::idled).
  Resolution Resolve(std::string_view method, RouteId route,
                     std::string_view query_free_path, RequestSubjects subjects,
                     bool idle_checks = false) const;
  Resolution Resolve(std::string_view method, RouteId route,
                     std::string_view query_free_path, bool has_user) const {
    return Resolve(method, route, query_free_path, RequestSubjects{has_user});
  }

  // Every policy with a pattern that matched, with the verdict and the
  // reason, grouped by layer, scope and mode (enforcing, then shadow), chosen
  // first, then by rank. Scans every policy: for `mxlimit explain` and tests,
  // not the hot path. Its choices equal `Resolve`'s (the tests hold the two
  // to each other).
  std::vector<PolicyMatch> Explain(std::string_view method, RouteId route,
                                   std::string_view query_free_path,
                                   RequestSubjects subjects) const;
  std::vector<PolicyMatch> Explain(std::string_view method, RouteId route,
                                   std::string_view query_free_path,
                                   bool has_user) const {
    return Explain(method, route, query_free_path, RequestSubjects{has_user});
  }

  // Whether requests served as `route` address a room: its key has a
  // `{roomId}` or `{roomIdOrAlias}` placeholder. Room-scope policies apply
  // only there.
  bool RouteHasRoom(RouteId route) const {
    return route < route_has_room_.size() && route_has_room_[route];
  }
  // Whether any policy of the set has `scope`.
  bool HasScope(Scope scope) const {
    return scope_slots_[static_cast<size_t>(scope)] != 0;
  }
  // Whether any policy of the set limits requests in flight.
  bool HasConcurrency() const { return concurrency_slots_ != 0; }
  // Whether the query of `request_target` meets the query conditions of
  // policy `id` (true for a policy without any).
  bool QueryConditionsHold(PolicyId id, std::string_view request_target) const;

  // True when every request on `route` with `method` resolves from the
  // route alone (compiled with `route_forms`; see `Compile`).
  bool ResolvedByRoute(RouteId route, std::string_view method) const;

  // The operator policies that are dead where they were written for: for
  // each route and method a policy's patterns may match (its route key, a
  // path served as the route, per `route_forms` of the normalizer the set
  // was compiled against, or an unknown path), whether a policy of the same
  // layer, scope and mode that matches the route key, and so takes part in
  // every request there, outranks it. Reported: a policy that loses
  // everywhere (`never_applies`); on a route whose key it matches, every
  // loss to a policy that is no more specific (no more literal bytes
  // outside placeholders: a tie lost on file order, or a wildcard such as
  // `/_matrix/client/v3/login*` under the exact built-in login policy); on
  // a route it reaches through raw paths only, a loss where it names values
  // of the route's placeholders (one room's `/rooms/!a:b/*` under the
  // exact `join-room`). Losing to a more specific policy is what ranking is
  // for, and is not reported (`/_matrix/client/v3/*` under
  // `login-per-ip`); nor is a loss to a policy that matches raw paths only
  // (it does not take part in every request of the route). Operator
  // policies in `policies()` order. For `mxlimit check-config`: scans the
  // routes of each operator policy's patterns, not for a hot path.
  std::vector<OutrankedPolicy> Outranked(
      const PreparedRouteForms& route_forms) const;

  size_t size() const { return policies_.size(); }
  // REQUIRES: id < size().
  const Policy& policy(PolicyId id) const { return policies_[id]; }
  std::span<const Policy> policies() const { return policies_; }
  std::optional<PolicyId> Find(std::string_view name) const;
  // The error policy `id` names for its denials; null when it names none
  // (M_LIMIT_EXCEEDED). Views into the set's policies.
  const LimitError* limit_error(PolicyId id) const {
    return policies_[id].errcode.empty() ? nullptr : &limit_errors_[id];
  }

  // Layers in resolution order; `layer_of(id)` indexes them.
  size_t layer_count() const { return layers_.size(); }
  std::string_view layer_name(uint8_t layer) const { return layers_[layer]; }
  uint8_t layer_of(PolicyId id) const { return info_[id].layer; }

  // Route keys the set was compiled against (index = RouteId).
  size_t route_count() const { return route_keys_.size(); }
  std::string_view route_key(RouteId id) const;

  // Compiled form, for benches and `mxlimit check-config`.
  size_t trie_nodes() const { return trie_.node_count(); }
  size_t inner_star_policies() const;

 private:
  // One pattern of one policy: what is ranked. Ranks are distinct, so each
  // group's choice is a strict maximum; `order` (1 = lowest) is the rank as a
  // small integer, 0 standing for "none".
  struct Entry {
    PolicyId policy;
    uint8_t pattern;
    uint8_t slot;
    internal::MethodMask methods;
    std::string canonical;
  };
  // What Resolve needs per policy, packed away from the (large) `Policy`.
  struct PolicyInfo {
    bool share_threshold = false;
    uint8_t layer = 0;
    uint8_t slot = 0;
  };
  // A (layer, scope, mode, kind and query conditions) group: at most one
  // policy of each applies. `condition` numbers its query conditions (0:
  // none; see condition_names_).
  struct Slot {
    uint8_t layer;
    Scope scope;
    bool shadow;
    bool concurrency;
    uint8_t condition;
  };
  struct InnerStar {
    uint16_t order;
    internal::MethodMask methods;
    std::string_view pattern;  // Canonical; points into entries_.
  };

  friend class internal::OutrankedAnalysis;

  PolicySet() = default;
  // Compile's steps after validation, in order: group the policies into
  // slots, rank their patterns into entries_, then build the route side's
  // tables and the raw side's trie and lists.
  void AssignSlots();
  // Appends `names` (moved from) to condition_names_ as condition
  // `condition`'s absent or present ones.
  void AddConditionNames(uint8_t condition, std::vector<std::string>& names,
                         bool absent);
  void RankEntries();
  void BuildRouteSide(const PreparedRouteForms& route_forms);
  void BuildRawSide();
  uint32_t AddBestTable(std::span<const uint16_t> candidate_orders);
  // The entries by literal head, for BuildRouteSide (policy_set.cc).
  struct HeadIndex;
  internal::MethodMask RouteOnlyMethods(
      std::span<const PreparedRouteForms::Glob> globs,
      std::span<const char> matches_key, uint32_t table,
      const HeadIndex& index) const;
  // The raw-path half of Resolve: folds every raw-path match into `best`.
  void ResolveRawPath(std::string_view query_free_path, internal::MethodClass m,
                      uint32_t dropped_slots, uint16_t* best) const;
  // The slots of the scopes whose subject `subjects` (and the route, for
  // rooms) lacks. Query conditions are applied apart (Resolve reads the
  // query only when a conditional slot found a policy).
  uint32_t DroppedSlots(RouteId rid, const RequestSubjects& subjects) const;
  // The slots whose query conditions the request target does not meet.
  uint32_t ConditionDroppedSlots(std::string_view request_target) const;
  // The bit of the first of `candidates` (slots of idle_slots_ that found
  // a policy) whose policy idles, that policy in `idled`; 0 if none.
  uint32_t IdledSlot(uint32_t candidates, const uint16_t* best,
                     PolicyId& idled) const;
  RouteId ClampRoute(RouteId route) const;
  RouteId BucketRoute(PolicyId id, RouteId route) const;
  const Entry& entry(uint16_t order) const { return entries_[order - 1]; }

  std::vector<Policy> policies_;
  // By PolicyId: each policy's error, viewing its strings (a move of the set
  // keeps the policies where they are).
  std::vector<LimitError> limit_errors_;
  std::vector<PolicyInfo> info_;
  absl::flat_hash_map<std::string, PolicyId> by_name_;
  std::vector<std::string> route_keys_;
  std::vector<std::string> layers_;
  std::vector<Slot> slots_;
  // Per slot, its ResolvedPolicy's bytes with policy and bucket_route 0
  // (layer, scope, shadow): Resolve writes an entry as one word.
  std::vector<uint64_t> slot_words_;
  // The slots whose policies name Resolution::ip and ::user (the default
  // layer's plain rate policies of each scope), or kNoDecisionSlot.
  static constexpr uint8_t kNoDecisionSlot = 0xFF;
  uint8_t ip_decision_slot_ = kNoDecisionSlot;
  uint8_t user_decision_slot_ = kNoDecisionSlot;
  // Sorted by rank, lowest first: entries_[order - 1].
  std::vector<Entry> entries_;
  // What Resolve needs of entry `order`, packed: order_info_[order].
  struct OrderInfo {
    PolicyId policy;
    bool share_threshold;
    // kGeneral: `on_limit: delay`, a byte cost or a charge on the response
    // (a Resolution with it is not `plain`); kWeighed: the last two (it is
    // `weighed`); kIdles: internal::IdlesWhileRoomy.
    uint8_t kind;
  };
  static constexpr uint8_t kGeneral = 1;
  static constexpr uint8_t kWeighed = 2;
  static constexpr uint8_t kIdles = 4;
  std::vector<OrderInfo> order_info_;
  // Width of a table row: slots_.size() rounded up to a multiple of 8.
  size_t lanes_ = 8;

  // Best entry order per (table, method class, slot): cells_[(table *
  // kMethodClassCount + method) * lanes_ + slot].
  std::vector<uint16_t> cells_;
  // Route side: table per RouteId.
  std::vector<uint32_t> route_table_;
  // Per RouteId, the method classes (bits) whose requests need no raw-path
  // walk: see `Compile`'s `route_forms`.
  std::vector<internal::MethodMask> route_only_;
  // Raw side: exact paths and trailing-'*' prefixes in one byte trie, then
  // inner-'*' patterns per slot by descending rank.
  internal::PrefixTrie trie_;
  std::vector<std::vector<InnerStar>> inner_;
  // The slots with inner-'*' patterns, and each scope's slots as bits.
  std::vector<uint8_t> inner_slots_;
  std::array<uint32_t, kScopeCount> scope_slots_{};
  // Per RouteId: RouteHasRoom, and the slots a route always drops (the room
  // scope's where it has no room).
  std::vector<bool> route_has_room_;
  std::vector<uint32_t> route_dropped_;
  // The slots a request drops for the subjects it lacks, by which it has
  // (bit 0: a user, 1: an origin, 2: a target).
  std::array<uint32_t, 8> subject_dropped_{};
  // One bit per slot (lanes past slots_.size() are padding).
  uint32_t slot_bits_ = 0;
  // Every name of every query condition some policies share, flat, so that
  // ConditionDroppedSlots tests them all in one pass. A condition (numbered
  // from 1) holds when none of its `absent` names is in the query and all
  // of its others are.
  struct ConditionName {
    std::string text;
    // Whether it reads the same raw and decoded
    // (internal::IsPlainQueryName), found once.
    bool plain;
    bool absent;
    uint8_t condition;
  };
  std::vector<ConditionName> condition_names_;
  // Per condition (0: none), its slots as bits.
  std::vector<uint32_t> condition_slots_;
  // Every slot with query conditions.
  uint32_t conditional_slots_ = 0;
  uint32_t concurrency_slots_ = 0;
  // Slots some of whose policies idle (kIdles).
  uint32_t idle_slots_ = 0;
  // Slots a `plain` Resolution has none of: in flight, or of a scope other
  // than ip and user.
  uint32_t general_slots_ = 0;
};

}  // namespace mxlimit

#endif  // MXLIMIT_POLICY_SET_H_
