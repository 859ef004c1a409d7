// Internal to mxlimit::config: what a valid file may hold that is probably
// not what its author meant. Each check records a warning (never an error:
// warnings never reject a file) at the position of the value it is about;
// docs/config.md, "Warnings", lists them.

#ifndef MXLIMIT_SRC_CONFIG_CONFIG_WARNINGS_H_
#define MXLIMIT_SRC_CONFIG_CONFIG_WARNINGS_H_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/ip.h"
#include "mxlimit/policy.h"
#include "mxlimit/route_options.h"
#include "src/config/yaml_fields.h"
#include "src/route/route_table_builder.h"

namespace mxlimit::config_internal {

// The facts about the route table that pattern warnings need, built on first
// use (most files have no pattern that needs them); the default table's once
// per process.
class RouteFacts {
 public:
  // `table`: the table of the file's `routes:`; null for the default table,
  // and when `routes:` is invalid (its errors are reported anyway). Must
  // outlive this.
  explicit RouteFacts(const internal::MergedRouteTable* table);
  ~RouteFacts();
  RouteFacts(const RouteFacts&) = delete;
  RouteFacts& operator=(const RouteFacts&) = delete;

  // Every `{name}` a route template or form uses, e.g. "roomId".
  const std::vector<std::string>& placeholders();
  // True when `canonical_pattern` is a template or form of the active
  // table.
  bool IsKey(std::string_view canonical_pattern);
  // True when `canonical_pattern` matches the key of a route with a
  // `{roomId}` or `{roomIdOrAlias}` placeholder: a room-scope policy needs
  // every pattern to (PolicySet::Compile applies the same rule).
  bool ReachesRoomRoute(std::string_view canonical_pattern);
  // "spec, msc, synapse", plus the extra count: for messages.
  const std::string& table_name();
  // True when some route form may serve a path the canonical `pattern`
  // matches (route_glob.h; a form it cannot reason about counts as yes).
  bool AnyRouteMayMatch(std::string_view canonical_pattern);

 private:
  struct Facts;
  // The facts, with the part `build` makes built (null: none).
  const Facts& facts(void (Facts::*build)());

  const internal::MergedRouteTable* table_;
  const Facts* facts_ = nullptr;  // made on first use
  std::unique_ptr<Facts> owned_;  // unless the default table's
};

// A `match` pattern written at `path`/`mark`: not in canonical form, a
// `{placeholder}` no route uses, a template with placeholders that is no key
// of the active table, a trailing '/' no route has.
void WarnPattern(std::string_view path, const YAML::Mark& mark,
                 std::string_view pattern, RouteFacts& routes,
                 ConfigErrors& warnings);

// An `exempt.ips` entry covering loopback, private, shared or link-local
// addresses: behind a proxy that is the address every request comes from.
void WarnExemptNetwork(std::string_view path, const YAML::Mark& mark,
                       const Cidr& network, ConfigErrors& warnings);

// A table capacity below the shard count a ShardedLimiter (mxlimitd) would
// split it over, which it refuses.
void WarnCapacity(const Field& field, size_t capacity, size_t shards,
                  ConfigErrors& warnings);

// `store.clock: caller`: each process's own clock times the shared
// buckets, which is only safe when there is one clock (replays, tests).
void WarnCallerClock(const Field& field, ConfigErrors& warnings);

// `sharing: approximate` on a policy with a small burst: the over-admission
// bound grows with the process count, not the burst, so a small policy can
// be overrun many times over.
void WarnApproximateSharing(const Field& field, const Policy& policy,
                            ConfigErrors& warnings);

// Below this burst, `sharing: approximate` draws a warning.
inline constexpr int64_t kApproximateMinBurst = 10;

// One operator policy as the duplicate check compares it.
struct PolicyShape {
  std::string path;  // "policies[2]"
  YAML::Mark mark;
  int line = 0;
  const Policy* policy = nullptr;
};

// Policies with the same patterns (canonical, as a set), methods, scope,
// layer and mode as an earlier one: the earlier wins every tie, so the later
// can never apply.
// Returns, per policy, whether it was warned about.
std::vector<bool> WarnShadowedPolicies(const std::vector<PolicyShape>& policies,
                                       ConfigErrors& warnings);

// Operator policies that another policy of their layer and scope (a
// built-in or an earlier one) outranks on every request of a route they
// were written for, or everywhere (PolicySet::Outranked), each named with
// the policy that wins. `policies`: every operator policy of the file, in
// order; `skip[i]`: policy i has a warning saying so already
// (WarnShadowedPolicies); `builtins`, `all_shadow`: the file's
// `builtin_policies` and `shadow_mode`; `route_table`: as for RouteFacts.
void WarnOutrankedPolicies(const std::vector<PolicyShape>& policies,
                           const std::vector<bool>& skip, bool builtins,
                           bool all_shadow,
                           const internal::MergedRouteTable* route_table,
                           ConfigErrors& warnings);

}  // namespace mxlimit::config_internal

#endif  // MXLIMIT_SRC_CONFIG_CONFIG_WARNINGS_H_
