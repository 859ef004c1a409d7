// The tiers of a policy file compiled against a policy set: for each tier,
// every policy of the set with the rate its members get (scaled, replaced,
// or the policy's own). An engine points a request's checks at its tier's
// copies, so the hot path reads a tier's rates exactly as it reads the
// set's.
//
// Internal: not installed. Immutable once built; engines share one.

#ifndef MXLIMIT_ENGINE_TIER_SET_H_
#define MXLIMIT_ENGINE_TIER_SET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mxlimit/policy.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/tiers.h"

namespace mxlimit::internal {

struct CompiledTier {
  std::string name;
  bool exempt = false;
  // Indexed by PolicyId of the set the tiers were compiled against.
  std::vector<Policy> policies;
};

class TierSet {
 public:
  // Checks `options` (ValidateTierOptions) and that each replaced policy is
  // in `policies` and limits a rate; scales every rate-limited policy.
  // Errors name the tier and the policy.
  static absl::StatusOr<std::shared_ptr<const TierSet>> Compile(
      const TierOptions& options, const PolicySet& policies);

  size_t size() const { return tiers_.size(); }
  const CompiledTier& tier(uint16_t index) const { return tiers_[index]; }
  std::optional<uint16_t> Find(std::string_view name) const;
  // The section it was compiled from (the file's assignments).
  const TierOptions& options() const { return options_; }

 private:
  TierOptions options_;
  std::vector<CompiledTier> tiers_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_TIER_SET_H_
