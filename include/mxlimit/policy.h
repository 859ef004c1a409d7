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
// (The policy model is fixed by the foundation; the policies issue adds the
// compiled `PolicySet`, resolution rules and the built-in defaults.)

#ifndef MXLIMIT_POLICY_H_
#define MXLIMIT_POLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "mxlimit/rate.h"

namespace mxlimit {

// Which bucket table a policy charges: per client address or per user.
enum class Scope : uint8_t { kIp, kUser };

// Dense index of a policy inside one compiled policy set.
using PolicyId = uint16_t;

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

}  // namespace mxlimit

#endif  // MXLIMIT_POLICY_H_
