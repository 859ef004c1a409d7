// Internal to mxlimit::config: one reader per top-level section of the file.
// Each fills its part of the result and records every problem in `errors`;
// the caller discards the result unless `errors` stays empty.

#ifndef MXLIMIT_SRC_CONFIG_SECTIONS_H_
#define MXLIMIT_SRC_CONFIG_SECTIONS_H_

#include <yaml-cpp/yaml.h>

#include <string_view>
#include <vector>

#include "mxlimit/options.h"
#include "mxlimit/policy.h"
#include "src/config/yaml_fields.h"

namespace mxlimit::config_internal {

// `tables:` (capacities and address prefixes).
void ReadTables(const Field& field, TableOptions& tables, ConfigErrors& errors);

// `exempt:` (networks and user IDs that are never limited).
void ReadExempt(const Field& field, ExemptOptions& exempt,
                ConfigErrors& errors);

// `policies:` (operator policies, in file order). `tables` supplies the
// prefix for a family a `client_prefix` leaves out.
void ReadPolicies(const Field& field, const TableOptions& tables,
                  std::vector<Policy>& policies, ConfigErrors& errors);

}  // namespace mxlimit::config_internal

#endif  // MXLIMIT_SRC_CONFIG_SECTIONS_H_
