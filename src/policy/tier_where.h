// -----------------------------------------------------------------------------
// File: policy/tier_where.h
// -----------------------------------------------------------------------------
//
// How errors name a tier: "tiers.bridge (line 12)", or "tiers.bridge" for a
// tier built in code. Shared by validation and compilation so that both
// point at the same place.

#ifndef MXLIMIT_POLICY_TIER_WHERE_H_
#define MXLIMIT_POLICY_TIER_WHERE_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "mxlimit/tiers.h"

namespace mxlimit::internal {

inline std::string TierWhere(const Tier& t) {
  return t.source_line > 0
             ? absl::StrCat("tiers.", t.name, " (line ", t.source_line, ")")
             : absl::StrCat("tiers.", t.name);
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_TIER_WHERE_H_
