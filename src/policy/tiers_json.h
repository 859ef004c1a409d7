// -----------------------------------------------------------------------------
// File: policy/tiers_json.h
// -----------------------------------------------------------------------------
//
// Tier assignments as JSON, the one format the C ABI (`mxlimit_list_tiers`)
// and mxlimitd's admin API (`GET /_mxlimit/admin/v1/tiers`) both answer:
//   [{"kind":"user","subject":"@bridge:example.org","tier":"bridge",
//     "runtime":true,"expires_in_ms":59000}, ...]
// `expires_in_ms` only for a runtime assignment that ends by itself, rounded
// up (an assignment still in force has at least 1 left).

#ifndef MXLIMIT_POLICY_TIERS_JSON_H_
#define MXLIMIT_POLICY_TIERS_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "mxlimit/tiers.h"
#include "mxlimit/time.h"

namespace mxlimit::internal {

// Milliseconds from `now` to `expires`, rounded up; 0 once past.
int64_t MillisecondsLeft(MonotonicTime now, MonotonicTime expires);

// One assignment as a JSON object.
void AppendTierAssignmentJson(std::string& out, const TierAssignment& a,
                              MonotonicTime now);

// The array of `tiers`.
std::string TierAssignmentsJson(const std::vector<TierAssignment>& tiers,
                                MonotonicTime now);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_TIERS_JSON_H_
