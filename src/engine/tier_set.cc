#include "src/engine/tier_set.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/policy/tier_where.h"

namespace mxlimit::internal {

absl::StatusOr<std::shared_ptr<const TierSet>> TierSet::Compile(
    const TierOptions& options, const PolicySet& policies) {
  if (absl::Status ok = ValidateTierOptions(options); !ok.ok()) return ok;
  auto set = std::make_shared<TierSet>();
  set->options_ = options;
  set->tiers_.reserve(options.tiers.size());
  for (const Tier& t : options.tiers) {
    CompiledTier& out = set->tiers_.emplace_back();
    out.name = t.name;
    out.exempt = t.exempt;
    out.policies.assign(policies.policies().begin(), policies.policies().end());
    std::vector<bool> replaced(out.policies.size(), false);
    for (const TierRate& r : t.policies) {
      std::optional<PolicyId> id = policies.Find(r.policy);
      if (!id.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            TierWhere(t), ": policies: no policy is named \"", r.policy,
            "\" (operator policies and, unless switched off, the built-ins "
            "are)"));
      }
      Policy& p = out.policies[*id];
      if (p.concurrency.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            TierWhere(t), ": policies: \"", r.policy,
            "\" limits requests in flight; a tier replaces rates only"));
      }
      if (ChargedOnResponse(p) && r.rate.kind() != Rate::Kind::kLimited) {
        return absl::InvalidArgumentError(absl::StrCat(
            TierWhere(t), ": policies: \"", r.policy,
            "\" is charged on the response, which needs a limited rate"));
      }
      p.rate = r.rate;
      replaced[*id] = true;
    }
    if (t.scale == 1.0) continue;
    for (size_t i = 0; i < out.policies.size(); ++i) {
      Policy& p = out.policies[i];
      if (replaced[i] || p.concurrency.has_value()) continue;
      absl::StatusOr<Rate> scaled = ScaleRate(p.rate, t.scale);
      if (!scaled.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(TierWhere(t), ": policy \"", p.name,
                         "\": ", scaled.status().message()));
      }
      p.rate = *scaled;
    }
  }
  return std::shared_ptr<const TierSet>(std::move(set));
}

std::optional<uint16_t> TierSet::Find(std::string_view name) const {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (tiers_[i].name == name) return static_cast<uint16_t>(i);
  }
  return std::nullopt;
}

}  // namespace mxlimit::internal
