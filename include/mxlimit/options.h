// -----------------------------------------------------------------------------
// File: options.h
// -----------------------------------------------------------------------------
//
// Everything about a `Limiter` that is not a policy: table capacities, address
// prefixes, exemptions. The YAML loader fills these in from `tables:` and
// `exempt:`; embedders can also build them in code.

#ifndef MXLIMIT_OPTIONS_H_
#define MXLIMIT_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "mxlimit/ip.h"
#include "mxlimit/policy.h"

namespace mxlimit {

struct TableOptions {
  // Per-IP table: at most this many buckets; the least recently used is
  // evicted to admit a new one.
  size_t ip_capacity = 100'000;
  // Client addresses are masked to these prefixes before keying: one IPv6
  // host usually owns a whole /64, so per-address IPv6 keys would limit
  // nothing.
  int ipv4_prefix = 32;
  int ipv6_prefix = 64;
  // Per-user table capacity.
  size_t user_capacity = 100'000;

  // Capacities above this are rejected as absurd (memory is allocated up
  // front).
  static constexpr size_t kMaxCapacity = 100'000'000;
};

struct ExemptOptions {
  // Requests from these networks are neither checked nor charged.
  std::vector<Cidr> ips;
  // Requests by these Matrix user IDs are neither checked nor charged.
  std::vector<std::string> users;
};

// Checks capacities (1 to kMaxCapacity) and prefixes (IPv4 0-32, IPv6
// 0-128). Messages name the field as the YAML file spells it.
absl::Status ValidateTableOptions(const TableOptions& tables);

// A whole limiter configuration, as a YAML file describes it.
struct LimiterConfig {
  // Whether the documented built-in policies apply (operators may switch them
  // off, or replace one by defining a policy with its name).
  bool builtin_policies = true;
  // Observe only: every policy, built-ins included, becomes a shadow policy
  // (counted and reported, never denying). For a first deployment.
  bool shadow_mode = false;
  TableOptions tables;
  ExemptOptions exempt;
  // Operator policies, in file order.
  std::vector<Policy> policies;
};

}  // namespace mxlimit

#endif  // MXLIMIT_OPTIONS_H_
