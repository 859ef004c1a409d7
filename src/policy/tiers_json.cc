#include "src/policy/tiers_json.h"

#include "src/util/json_string.h"

namespace mxlimit::internal {

int64_t MillisecondsLeft(MonotonicTime now, MonotonicTime expires) {
  const int64_t ns = expires.nanoseconds() - now.nanoseconds();
  if (ns <= 0) return 0;
  return ns / 1'000'000 + (ns % 1'000'000 != 0 ? 1 : 0);
}

void AppendTierAssignmentJson(std::string& out, const TierAssignment& a,
                              MonotonicTime now) {
  out += "{\"kind\":";
  out += a.kind == TierSubjectKind::kUser ? "\"user\"" : "\"network\"";
  out += ",\"subject\":";
  AppendJsonString(out, a.subject);
  out += ",\"tier\":";
  AppendJsonString(out, a.tier);
  out += ",\"runtime\":";
  out += a.runtime ? "true" : "false";
  if (a.runtime && a.expires.has_value()) {
    out += ",\"expires_in_ms\":";
    out += std::to_string(MillisecondsLeft(now, *a.expires));
  }
  out.push_back('}');
}

std::string TierAssignmentsJson(const std::vector<TierAssignment>& tiers,
                                MonotonicTime now) {
  std::string out = "[";
  for (const TierAssignment& a : tiers) {
    if (out.size() > 1) out.push_back(',');
    AppendTierAssignmentJson(out, a, now);
  }
  out.push_back(']');
  return out;
}

}  // namespace mxlimit::internal
