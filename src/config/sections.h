// Internal to mxlimit::config: one reader per top-level section of the file.
// Each fills its part of the result, records every problem in `errors` and
// every doubt in `warnings` (config_warnings.h); the caller discards the
// result unless `errors` stays empty.

#ifndef MXLIMIT_SRC_CONFIG_SECTIONS_H_
#define MXLIMIT_SRC_CONFIG_SECTIONS_H_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/options.h"
#include "mxlimit/policy.h"
#include "src/config/yaml_fields.h"
#include "src/route/route_table_builder.h"

namespace mxlimit::config_internal {

// `tables:` (capacities and address prefixes). `shards`: the shard count
// capacities are checked against.
void ReadTables(const Field& field, size_t shards, TableOptions& tables,
                ConfigErrors& errors, ConfigErrors& warnings);

// `routes:` (route packs and extra templates). Checks the whole table, so
// that every problem is reported at the entry it is about. Returns the table
// that check built: null when a problem is an error or the options spell the
// default table.
std::shared_ptr<const internal::MergedRouteTable> ReadRoutes(
    const Field& field, RouteOptions& routes, ConfigErrors& errors,
    ConfigErrors& warnings);

// `exempt:` (networks and user IDs that are never limited).
void ReadExempt(const Field& field, ExemptOptions& exempt, ConfigErrors& errors,
                ConfigErrors& warnings);

// What of the rest of the file the policy set the operator policies join
// depends on, for the warning about outranked policies.
struct PolicySetShape {
  bool builtins = true;     // `builtin_policies`
  bool all_shadow = false;  // top-level `shadow_mode`
  // False: skip the checks that compile the set (nobody reads the warnings).
  bool want_warnings = true;
};

// `policies:` (operator policies, in file order). `tables` supplies the
// prefix for a family a `client_prefix` leaves out; `route_table` the route
// table patterns are checked against (warnings; null: the default table);
// `builtin_policies` whether the built-ins' layers count toward the limit of
// layers, which is checked here too.
void ReadPolicies(const Field& field, const TableOptions& tables,
                  const internal::MergedRouteTable* route_table,
                  const PolicySetShape& set, std::vector<Policy>& policies,
                  ConfigErrors& errors, ConfigErrors& warnings);

// A policy's `charge`, `status`, `cost`, `errcode`, `info_uri` and
// `can_upgrade`, read from its `fields` into `policy` once its rate and
// `on_limit` are read (the rules weigh them too). `node` and `path` are the
// policy's, for problems of a field the file leaves out.
void ReadPolicyOutcome(const MapFields& fields, const YAML::Node& node,
                       std::string_view path, Policy& policy,
                       ConfigErrors& errors);

// A rate from `rate_limit` (with `burst` beside it or inside it) or
// `unlimited: true` among `fields`, the fields of the map `node` at `path`
// (a policy, or a tier's replacement): into `rate`, or errors.
void ReadRateFields(const MapFields& fields, const YAML::Node& node,
                    const std::string& path, Rate& rate, ConfigErrors& errors);

// `tiers:` (named tiers, and `assign` of users and networks to them). A
// tier may replace the rate of a policy of `policies` or, with `builtins`,
// of a built-in one, unless it limits requests in flight.
void ReadTiers(const Field& field, const std::vector<Policy>& policies,
               bool builtins, TierOptions& tiers, ConfigErrors& errors);

// `store:` (the shared store of a SharedLimiter). `file_name`: the config
// file, whose directory a relative `key_secret_file` is read from.
void ReadStore(const Field& field, std::string_view file_name,
               StoreOptions& store, ConfigErrors& errors,
               ConfigErrors& warnings);

}  // namespace mxlimit::config_internal

#endif  // MXLIMIT_SRC_CONFIG_SECTIONS_H_
