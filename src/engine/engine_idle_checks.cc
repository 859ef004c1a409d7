// The horizon of the checks an idle resolution leaves out (IdleChecks,
// src/policy/idle_checks.h): kept by the cold paths that write buckets,
// apart from engine.cc so that none of it joins Check's flattened call tree.

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>

#include "src/engine/engine.h"
#include "src/policy/idle_checks.h"

namespace mxlimit::internal {

void Engine::UpdateIdleFrom() {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if (idle_tokens_.empty()) {
    idle_from_ = std::numeric_limits<int64_t>::max();
    return;
  }
  // idle_tat_ - idle_slack_, saturated (no bucket yet: at once).
  idle_from_ = idle_tat_ < kMin + idle_slack_ ? kMin : idle_tat_ - idle_slack_;
}

bool Engine::IdleToken(uint16_t token) const {
  return std::find(idle_tokens_.begin(), idle_tokens_.end(), token) !=
         idle_tokens_.end();
}

int64_t Engine::IdleSlack(const PolicySet& policies, const TierSet* tiers) {
  int64_t slack = std::numeric_limits<int64_t>::max();
  auto add = [&](const Rate& rate) {
    assert(rate.kind() == Rate::Kind::kLimited);  // IdlesWhileRoomy's note
    slack = std::min(slack, rate.tolerance_ns() - rate.interval_ns());
  };
  for (size_t id = 0; id < policies.size(); ++id) {
    const Policy& p = policies.policy(static_cast<PolicyId>(id));
    if (!IdlesWhileRoomy(p)) continue;
    add(p.rate);
    for (size_t t = 0; tiers != nullptr && t < tiers->size(); ++t) {
      const CompiledTier& tier = tiers->tier(static_cast<uint16_t>(t));
      if (id < tier.policies.size()) add(tier.policies[id].rate);
    }
  }
  return slack;
}

}  // namespace mxlimit::internal
