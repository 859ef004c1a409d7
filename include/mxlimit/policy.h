// -----------------------------------------------------------------------------
// File: policy.h
// -----------------------------------------------------------------------------
//
// A `Policy` says which requests share a budget and how large it is. It
// matches a request when one of its `match` patterns matches the request's
// normalized route key (e.g. "/_matrix/client/v3/rooms/{roomId}/send/*") or
// its canonical query-free path (e.g. "/_matrix/client/v3/keys/*"). Every
// policy belongs to a layer; per layer and scope (client address, user) at
// most one enforcing and one shadow policy apply to a request, and every
// layer's policies apply together.
//
// This header holds the model (`Policy`), its validation rules (the only copy:
// the YAML loader calls the same checks) and the documented built-in defaults.
// `mxlimit/policy_set.h` compiles a list of policies into the structure the
// limiter resolves requests against; docs/policies.md is the reference for the
// resolution rules and the built-in table.
//
// Example:
//   void Report(int source_line, std::string_view message);  // the embedder's
//
//   // `mine` built in code, or read by a loader of the embedder's own.
//   bool AllValid(const std::vector<mxlimit::Policy>& mine) {
//     std::vector<mxlimit::PolicyError> errors =
//         mxlimit::ValidatePolicies(mine);
//     for (const mxlimit::PolicyError& e : errors) {
//       Report(mine[e.index].source_line, e.message);
//     }
//     return errors.empty();
//   }

#ifndef MXLIMIT_POLICY_H_
#define MXLIMIT_POLICY_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/rate.h"

namespace mxlimit {

// Which bucket table a policy charges, i.e. what one bucket belongs to:
//   kIp      a client address, masked to the policy's prefix;
//   kUser    the authenticated user (`Request::user_id`);
//   kOrigin  the server a federation request comes from (`Request::origin`);
//            unless the embedder verified it, bound to the sender's network
//            (the policy's `client_prefix`, default /24 and /48), so a
//            forged origin spends only the forger's own budget;
//   kRoom    the room the request addresses: the matched route's `{roomId}`
//            or `{roomIdOrAlias}` segment, percent-decoded;
//   kTarget  the account a request is about (`Request::target_user`: the
//            user a login names, the invitee of an invite).
// A policy of a scope whose subject a request lacks does not apply to it.
enum class Scope : uint8_t { kIp, kUser, kOrigin, kRoom, kTarget };

inline constexpr size_t kScopeCount = 5;

// "ip", "user", "origin", "room", "target": the YAML `scope:` spellings.
std::string_view ScopeName(Scope scope);
std::optional<Scope> ParseScope(std::string_view name);

// Dense index of a policy inside one compiled policy set.
using PolicyId = uint16_t;

// "No policy applies" (a resolution for a scope with no candidate). Never a
// valid index: a set holds at most `kMaxPolicies` policies.
inline constexpr PolicyId kNoPolicy = 0xFFFF;
inline constexpr size_t kMaxPolicies = kNoPolicy;  // ids 0..0xFFFE

// Longest accepted `match` pattern, in bytes. Real Matrix paths are far
// shorter; the bound keeps the literal-byte count and glob cost small while
// leaving room for an exact raw path holding several long identifiers.
inline constexpr size_t kMaxPatternBytes = 2048;

// Longest accepted policy `name`, in bytes.
inline constexpr size_t kMaxPolicyNameBytes = 100;

// Most patterns in one policy's `match` list.
inline constexpr size_t kMaxPatternsPerPolicy = 64;

// The layer a policy belongs to unless it names one.
inline constexpr std::string_view kDefaultLayer = "route";
// Most distinct layers in one compiled set (built-ins included).
inline constexpr size_t kMaxLayers = 9;
// Longest accepted layer name, in bytes.
inline constexpr size_t kMaxLayerNameBytes = 32;

// The client address prefixes an ip-scope policy's buckets are keyed by.
struct ClientPrefix {
  int ipv4 = 32;
  int ipv6 = 64;
  friend bool operator==(const ClientPrefix&, const ClientPrefix&) = default;
};

// The network an unverified origin's buckets are bound to unless the policy
// sets `client_prefix`: IPv4 /24 and IPv6 /48, one hosting allocation.
inline constexpr ClientPrefix kOriginNetworkPrefix{24, 48};

// What a limited policy does with a request it would deny.
enum class OnLimit : uint8_t {
  kDeny,   // Deny it, with the exact wait (the default).
  kDelay,  // Admit it late when the wait is at most `max_delay` (below).
};

// Longest accepted `max_delay`: a held request holds a proxy connection.
inline constexpr std::chrono::nanoseconds kMaxDelayLimit =
    std::chrono::seconds(60);

// An in-flight limit: at most `limit` admitted requests of one bucket at a
// time. Each admission takes a lease (`Decision::leases`), given back by
// `Limiter::Release`; a lease never given back ends by itself `lease` after
// it was taken, so a handler that crashed leaks nothing for longer.
struct Concurrency {
  int limit = 0;
  std::chrono::nanoseconds lease{0};
  friend bool operator==(const Concurrency&, const Concurrency&) = default;
};

// Bounds of `Concurrency`: 1 <= limit <= kMaxConcurrency, 0 < lease <=
// kMaxLease (a lease outliving its request holds the slot that long).
inline constexpr int kMaxConcurrency = 64;
// An in-flight policy with `on_limit: delay` admits at most this many
// requests late per bucket beyond its limit; past them it denies.
inline constexpr int kMaxQueuedLeases = 64;
inline constexpr std::chrono::nanoseconds kMaxLease = std::chrono::hours(1);

// When a policy's bucket is charged.
enum class ChargeOn : uint8_t {
  kRequest,   // At the decision (the default).
  kResponse,  // Once the response is known (`Limiter::Settle`), and only
              // when its status is one `Policy::status` lists; the decision
              // only checks that the bucket has room.
};

// What one request costs a policy's bucket.
enum class CostKind : uint8_t {
  kRequests,       // `Request::cost`: 1 unless the embedder says otherwise.
  kRequestBytes,   // `Request::request_bytes` (the body's Content-Length).
  kResponseBytes,  // The response's body bytes (`Completion::body_bytes`),
                   // known only at `Limiter::Settle`: charged on the
                   // response whatever `charge` says.
};

// An inclusive range of HTTP status codes: {401, 401}, {400, 499}.
struct StatusRange {
  int first = 0;
  int last = 0;
  friend bool operator==(const StatusRange&, const StatusRange&) = default;
};

// The `errcode` whose body MSC4335 extends with `info_uri`/`can_upgrade`.
inline constexpr std::string_view kUserLimitExceededErrcode =
    "M_USER_LIMIT_EXCEEDED";
// Longest accepted `errcode` and `info_uri`, in bytes.
inline constexpr size_t kMaxErrcodeBytes = 64;
inline constexpr size_t kMaxInfoUriBytes = 1024;

// How a `SharedLimiter` shares a policy's buckets among processes.
enum class Sharing : uint8_t { kExact, kApproximate, kLocal };

// "exact", "approximate", "local".
std::string_view SharingName(Sharing sharing);
std::optional<Sharing> ParseSharing(std::string_view name);

// "request", "response"; "requests", "request_bytes", "response_bytes": the
// YAML spellings of `charge` and `cost`.
std::string_view ChargeOnName(ChargeOn charge);
std::optional<ChargeOn> ParseChargeOn(std::string_view name);
std::string_view CostKindName(CostKind cost);
std::optional<CostKind> ParseCostKind(std::string_view name);

struct Policy {
  // Unique within a set; reports, metrics labels and tab-separated CLI output
  // use it, hence 1 to `kMaxPolicyNameBytes` of [A-Za-z0-9._:-].
  std::string name;
  // One or more patterns; the policy matches when any does. Each is exact
  // unless it contains '*'; each '*' matches zero or more bytes, '/'
  // included. A trailing '*' is the usual prefix form. Patterns are compared
  // in canonical form (internal/canonical_path.h: escapes decoded, version
  // aliases folded), so "/_matrix/client/r0/login" means the v3 path.
  std::vector<std::string> match;
  // HTTP methods in any ASCII case ("post" means POST; `PolicySet::Compile`
  // stores them upper case); empty means every method. Request methods are
  // case-sensitive: only a request method "POST" matches.
  std::vector<std::string> methods;
  Scope scope = Scope::kIp;
  // `Rate::Unlimited()` for `unlimited: true`; `Rate::Blocked()` for
  // `requests_per_unit: 0`.
  Rate rate = Rate::Unlimited();
  // Counts and reports, never denies; resolved beside the enforcing policies
  // (a shadow policy never displaces one).
  bool shadow_mode = false;
  // Wildcard or multi-pattern policies only: true = one counter per client
  // for every route the patterns cover; false = one per client per
  // normalized route.
  bool share_threshold = false;
  // Policies of one layer compete (the most specific applies per scope);
  // every layer applies. Same characters as `name`, 1 to
  // `kMaxLayerNameBytes`.
  std::string layer = std::string(kDefaultLayer);
  // ip and origin scope only: the prefixes this policy's buckets mask client
  // addresses to (e.g. {24, 48} for a per-network cap); unset = the tables'
  // prefixes for ip scope, `kOriginNetworkPrefix` for origin scope (an
  // unverified origin is bound to the sender's network).
  std::optional<ClientPrefix> client_prefix;
  // Where a `SharedLimiter` keeps this policy's buckets (a `Limiter` keeps
  // every bucket in process): `kExact` in the store, decided there on every
  // check; `kApproximate` in process, with charges sent to the store in
  // batches; `kLocal` in process only. docs/shared-state.md compares them.
  Sharing sharing = Sharing::kExact;
  // `kDelay` (a limited rate or an in-flight limit): a request this policy
  // would deny with a wait of at most `max_delay` is admitted after that
  // wait instead, and charged as if it had arrived then, as nginx
  // `limit_req` without `nodelay` does (`Decision::delay`); a longer wait
  // denies as `kDeny` does. An in-flight policy takes the lease at once and
  // queues at most kMaxQueuedLeases so. 0 < max_delay <= kMaxDelayLimit
  // with `kDelay`, 0 with `kDeny`.
  OnLimit on_limit = OnLimit::kDeny;
  // When the bucket is charged, and by how much (see ChargeOn, CostKind):
  // a policy charged on the response (`charge: response`, or
  // `cost: response_bytes`) is checked at the decision (a request is denied
  // when its bucket has no room) and charged by `Limiter::Settle` when the
  // response's status is in `status`. Byte costs make the rate's numbers
  // bytes. Such policies need a limited rate and deny rather than delay; a
  // SharedLimiter keeps them in process. (Beside `on_limit`, which the
  // engine reads with them.)
  ChargeOn charge = ChargeOn::kRequest;
  CostKind cost = CostKind::kRequests;
  std::chrono::nanoseconds max_delay{0};
  // Set instead of a rate (which then stays `Rate::Unlimited()`): the
  // policy limits requests in flight, not a rate. Always kept in process,
  // whatever `sharing` says (a SharedLimiter shares rates only).
  std::optional<Concurrency> concurrency;
  // Query conditions: the policy applies only to requests whose query has
  // none of `query_absent`'s parameters and all of `query_present`'s
  // (names compared exactly, after percent-decoding). A policy with
  // conditions competes only with policies of the same conditions and
  // kind (rate or in flight) in its layer and scope: it is resolved beside
  // the others, as shadow policies are, never instead of them.
  std::vector<std::string> query_absent;
  std::vector<std::string> query_present;
  // `charge: response` (or a `cost` of response bytes): the statuses whose
  // responses charge the bucket (see `charge`); empty: any status.
  std::vector<StatusRange> status;
  // The Matrix error of this policy's denials; empty: M_LIMIT_EXCEEDED.
  // `kUserLimitExceededErrcode` (MSC4335, per-user quotas) needs
  // `info_uri` (where the user learns about the limit) and may say
  // `can_upgrade`; no other errcode takes either.
  std::string errcode;
  std::string info_uri;
  std::optional<bool> can_upgrade;
  // Set on the built-in defaults; operator policies win ties against them.
  bool builtin = false;
  // Where the policy was defined (config file line), for error messages; 0
  // when built in code.
  int source_line = 0;
};

// Whether `policy`'s bucket is charged when the response is known
// (`charge: response`, or a `cost` of response bytes).
inline bool ChargedOnResponse(const Policy& policy) {
  return policy.charge == ChargeOn::kResponse ||
         policy.cost == CostKind::kResponseBytes;
}

// Whether a response of `status` charges `policy`: it is charged on the
// response, and `status` is in one of its ranges (or it lists none).
bool StatusCharges(const Policy& policy, int status);

// -----------------------------------------------------------------------------
// Validation
// -----------------------------------------------------------------------------
//
// Every rule a policy must satisfy lives here, once. `ValidatePolicies` checks
// a whole list; the per-field checks below are what it runs, exposed so that a
// loader (the YAML one in mxlimit::config) checks each value where it reads it
// and pins the error to the value's position. A loader that calls these checks
// accepts exactly the policies `PolicySet::Compile` accepts.
//
// Each `...Problem` function returns "" when the value is valid, otherwise
// what was expected, worded to follow "got VALUE, " in a message, e.g.
//   policies[0].name: got "my policy", expected 1 to 100 letters, ...

// `name`: 1 to `kMaxPolicyNameBytes` bytes, each a letter, digit, '.', '_',
// ':' or '-'. (Uniqueness is a rule of the list; see `ValidatePolicies`.)
std::string PolicyNameProblem(std::string_view name);

// `match`: starts with '/' or '*', or is exactly "<fallback>" (the route key
// every unknown path shares); at most `kMaxPatternBytes`; no space, control
// byte, '?' or '#' (a query-free path never holds them; for a '#' the
// message suggests the pattern with %23, the spelling clients send).
std::string PatternProblem(std::string_view match);

// One entry of `methods`: GET HEAD POST PUT DELETE PATCH OPTIONS CONNECT
// TRACE, in any ASCII case.
std::string MethodProblem(std::string_view method);

// `share_threshold: true` next to `match`: only a list of two or more
// patterns, or one containing '*', has routes to share. Worded to follow
// "match VALUE ", e.g. "has no '*'; ...".
std::string ShareThresholdProblem(std::span<const std::string> match);

// `on_limit` with `max_delay`, on a policy of `rate` (or an in-flight one):
// `kDelay` needs a limited rate or `in_flight`, and 0 < max_delay <=
// kMaxDelayLimit; `kDeny` no max_delay. Worded to follow "on_limit: ".
std::string OnLimitProblem(OnLimit on_limit, std::chrono::nanoseconds max_delay,
                           const Rate& rate, bool in_flight = false);

// `concurrency` on a policy of `rate`: 1 <= limit <= kMaxConcurrency,
// 0 < lease <= kMaxLease, and no rate beside it. Worded to follow
// "concurrency: ".
std::string ConcurrencyProblem(const Concurrency& concurrency,
                               const Rate& rate);

// One name of `query_absent`/`query_present`: 1 to kMaxQueryNameBytes
// bytes, none of them '&', '=', '#', a space or a control byte.
inline constexpr size_t kMaxQueryNameBytes = 64;
std::string QueryNameProblem(std::string_view name);

// The problems of what a policy charges and answers: `charge`, `status`
// and `cost` against its rate and `on_limit`, and `errcode`, `info_uri`
// and `can_upgrade` together. Each names its field ("charge", "status",
// "cost", "errcode", "info_uri" or "can_upgrade") with the problem worded
// to follow the field's name and ": ".
struct FieldProblem {
  std::string_view field;
  std::string problem;
};
std::vector<FieldProblem> OutcomeProblems(const Policy& policy);

// `layer`: 1 to `kMaxLayerNameBytes` of the characters `name` allows.
std::string LayerProblem(std::string_view layer);

// `client_prefix`: IPv4 0-32, IPv6 0-128, and only on an ip- or
// origin-scope policy. Another scope with a prefix out of range gets both
// problems.
std::string ClientPrefixProblem(const ClientPrefix& prefix, Scope scope);

// The policy of an operator list that brings one layer too many into its set
// (at most `kMaxLayers`): its index, and the problem worded to follow
// "layer: ", e.g. `got "l6", layer 10 of a set that holds at most 9
// (built-ins and route included: route, network, response, aggregate, l1,
// ...); put this policy in one of those layers (the set has 11 layers in
// all)`.
struct LayerOverflow {
  size_t index = 0;
  std::string problem;
};

// Counts `route` first, then the layers of the built-ins in force (when
// `include_builtins`; a built-in an operator policy replaces by name brings
// none), then the operator policies' in list order: the operator can only
// change their own file, so the policy named is the first of theirs past the
// limit. nullopt when the set has at most `kMaxLayers` layers.
// `PolicySet::Compile` and the YAML loader (which adds the position) apply
// it.
std::optional<LayerOverflow> FindLayerOverflow(
    std::span<const Policy> operator_policies, bool include_builtins);

// The operator policy that brings one group too many into its set: a set
// holds at most `kMaxResolved` (32) groups of (layer, scope, mode, kind and
// query conditions), and at most `kMaxLeases` (4) of them in-flight ones (a
// request holds one lease per group). Its index, the field at fault
// ("concurrency" or "layer"), and the problem worded to follow the field's
// name and ": ". Counts the built-ins in force first, as FindLayerOverflow
// does; `all_shadow` is the top-level `shadow_mode`. `PolicySet::Compile`
// and the YAML loader apply it. nullopt when the set fits.
struct GroupOverflow {
  size_t index = 0;
  std::string_view field;
  std::string problem;
};
std::optional<GroupOverflow> FindGroupOverflow(
    std::span<const Policy> operator_policies, bool include_builtins,
    bool all_shadow);

// "" when `pattern` is already canonical; otherwise a note naming the
// canonical pattern it is read as, for `mxlimit check-config` warnings, e.g.
//   is read as "/_matrix/client/v3/login" (paths are compared in canonical
//   form: escapes decoded, version aliases folded)
std::string PatternCanonicalNote(std::string_view pattern);

// One problem with one policy of a list.
struct PolicyError {
  // Index of the offending policy in the validated list.
  size_t index = 0;
  // The field at fault: "name", "match", "methods", "share_threshold",
  // "layer", "client_prefix", "on_limit", "concurrency", "query_absent",
  // "query_present", or one of OutcomeProblems' fields.
  std::string_view field;
  // Names the policy, the field, the value and what was expected, e.g.
  //   policy "media" (line 12): share_threshold: got true, but match "/a/b"
  //   has no '*'; sharing needs a wildcard pattern
  std::string message;
};

// Checks every policy with the checks above, and that names are unique in the
// list; returns every problem (empty when all are valid). `PolicySet::Compile`
// runs this on the operator list.
std::vector<PolicyError> ValidatePolicies(std::span<const Policy> policies);

// -----------------------------------------------------------------------------
// Reloads
// -----------------------------------------------------------------------------
//
// A reload keeps a policy's buckets (its clients' budgets carry over) when a
// policy of the same name is in both configs and none of what shapes its
// buckets changed: scope, rate, whether it limits requests in flight,
// share_threshold, layer, client_prefix, sharing and cost (requests or
// bytes). An in-flight policy
// whose limit or lease changes keeps its leases: they count against the new
// limit and end by the lease time they were taken with. Matching patterns,
// methods and shadow mode may change freely.

// What a reload that replaces `before` by `after` (the same name) changes
// that resets the policy's buckets, e.g. "rate 10/minute burst 3 -> 5/minute
// burst 3"; "" when they are kept.
std::string BucketResetReason(const Policy& before, const Policy& after);

// BucketResetReason(before, after).empty(), without building a message.
bool KeepsBuckets(const Policy& before, const Policy& after);

// -----------------------------------------------------------------------------
// Built-in defaults
// -----------------------------------------------------------------------------

// The documented default policies (docs/policies.md, "Built-in policies"), in
// table order, each with `builtin = true`. Built from one data table in
// src/policy/builtin_policies.cc, one row per policy. They resolve exactly like
// operator policies; an operator policy with the same name replaces one.
std::vector<Policy> BuiltinPolicies();

// Where a built-in's numbers come from, e.g. "Synapse rc_message: per_second
// 0.2 (= 12/minute), burst_count 10". Empty for a name that is not built in.
std::string_view BuiltinPolicySource(std::string_view name);

}  // namespace mxlimit

#endif  // MXLIMIT_POLICY_H_
