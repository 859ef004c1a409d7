// -----------------------------------------------------------------------------
// File: policy/idle_checks.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// Which policies' checks a decision may leave out while they cannot deny.
// A policy charged on the response by the bytes it sent asks, at the
// decision, for one byte of room (Engine::DecisionCost) and charges nothing
// then (Engine::SettleCost): as long as none of its buckets is within one
// byte of its limit, its check allows every request and changes no bucket.
// Most of the time no client is near a download quota, so the engine leaves
// such a check out of `Check` while its horizon says none can be
// (Engine::idle_from_), and makes it in full otherwise. PolicySet marks
// these policies when it compiles (`PolicySet::Resolution::idled`).

#ifndef MXLIMIT_POLICY_IDLE_CHECKS_H_
#define MXLIMIT_POLICY_IDLE_CHECKS_H_

#include "mxlimit/policy.h"

namespace mxlimit::internal {

// Whether a check of `p` may be left out while no bucket of `p` lacks a
// byte of room: an enforcing policy per address or user (a shadow one
// counts its would-be denials), so that the one effect of the check left
// out is its count (Engine::CountIdled). Validation already gives a policy
// charged on the response a limited rate that denies, in every tier too
// (OutcomeProblems, TierSet::Compile).
inline bool IdlesWhileRoomy(const Policy& p) {
  return p.cost == CostKind::kResponseBytes && !p.shadow_mode &&
         (p.scope == Scope::kIp || p.scope == Scope::kUser);
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_IDLE_CHECKS_H_
