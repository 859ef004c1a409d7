// -----------------------------------------------------------------------------
// File: policy.h
// -----------------------------------------------------------------------------
//
// A `Policy` says which requests share a budget and how large it is. It
// matches a request when its `match` pattern matches the request's normalized
// route key (e.g. "/_matrix/client/v3/rooms/{roomId}/send/*") or its raw,
// query-free path (e.g. "/_matrix/client/v3/keys/*"). Per scope (client
// address, user) exactly one policy applies to a request.
//
// This header holds the model (`Policy`), its validation and the documented
// built-in defaults. `mxlimit/policy_set.h` compiles a list of policies into
// the structure the limiter resolves requests against; docs/policies.md is the
// reference for the resolution rules and the built-in table.
//
// Example:
//   std::vector<mxlimit::Policy> mine = {...};  // e.g. from mxlimit::config
//   std::vector<mxlimit::PolicyError> errors = mxlimit::ValidatePolicies(mine);
//   for (const auto& e : errors) Report(mine[e.index].source_line, e.message);

#ifndef MXLIMIT_POLICY_H_
#define MXLIMIT_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/rate.h"

namespace mxlimit {

// Which bucket table a policy charges: per client address or per user.
enum class Scope : uint8_t { kIp, kUser };

// Dense index of a policy inside one compiled policy set.
using PolicyId = uint16_t;

// "No policy applies" (a resolution for a scope with no candidate). Never a
// valid index: a set holds at most `kMaxPolicies` policies.
inline constexpr PolicyId kNoPolicy = 0xFFFF;
inline constexpr size_t kMaxPolicies = kNoPolicy;  // ids 0..0xFFFE

// Longest accepted `match` pattern, in bytes. Real Matrix paths are far
// shorter; the bound keeps the literal-byte count and glob cost small.
inline constexpr size_t kMaxPatternBytes = 2048;

struct Policy {
  // Unique within a set; reports and metrics use it.
  std::string name;
  // Exact unless it contains '*'; each '*' matches zero or more bytes, '/'
  // included. A trailing '*' is the usual prefix form.
  std::string match;
  // Upper-case HTTP methods; empty means every method.
  std::vector<std::string> methods;
  Scope scope = Scope::kIp;
  // `Rate::Unlimited()` for `unlimited: true`; `Rate::Blocked()` for
  // `requests_per_unit: 0`.
  Rate rate = Rate::Unlimited();
  // Counts and reports, never denies.
  bool shadow_mode = false;
  // Wildcard policies only: true = one counter per client for every route
  // under the pattern; false = one per client per normalized route.
  bool share_threshold = false;
  // Set on the built-in defaults; operator policies win ties against them.
  bool builtin = false;
  // Where the policy was defined (config file line), for error messages; 0
  // when built in code.
  int source_line = 0;
};

// -----------------------------------------------------------------------------
// Validation
// -----------------------------------------------------------------------------

// One problem with one policy of a list.
struct PolicyError {
  // Index of the offending policy in the validated list.
  size_t index = 0;
  // The field at fault: "name", "match", "methods" or "share_threshold".
  std::string_view field;
  // Names the policy, the field, the value and what was expected, e.g.
  //   policy "media" (line 12): share_threshold: true on match "/a/b",
  //   expected a pattern containing '*'
  std::string message;
};

// Checks every policy and returns every problem (empty when all are valid):
//   * `name` non-empty, at most 200 bytes, and unique in the list;
//   * `match` non-empty, at most `kMaxPatternBytes`, starting with '/' or '*'
//     (or exactly "<fallback>", the key every unknown path shares), with no
//     control bytes, spaces, '?' or '#' (a query-free path never holds them);
//   * `methods` each an upper-case HTTP method: GET HEAD POST PUT DELETE
//     PATCH OPTIONS CONNECT TRACE;
//   * `share_threshold: true` only on a pattern containing '*'.
// `PolicySet::Compile` runs this on the operator list. The YAML loader may call
// it directly to map each error's (index, field) to a file position.
std::vector<PolicyError> ValidatePolicies(std::span<const Policy> policies);

// True if `method` is one of the methods accepted in `Policy::methods`.
bool IsKnownHttpMethod(std::string_view method);

// -----------------------------------------------------------------------------
// Built-in defaults
// -----------------------------------------------------------------------------

// The documented default policies (docs/policies.md, "Built-in policies"), in
// table order, each with `builtin = true`. Built from one data table in
// src/builtin_policies.cc, one row per policy. They resolve exactly like
// operator policies; an operator policy with the same name replaces one.
std::vector<Policy> BuiltinPolicies();

// Where a built-in's numbers come from, e.g. "Synapse rc_message: per_second
// 0.2 (= 12/minute), burst_count 10". Empty for a name that is not built in.
std::string_view BuiltinPolicySource(std::string_view name);

}  // namespace mxlimit

#endif  // MXLIMIT_POLICY_H_
