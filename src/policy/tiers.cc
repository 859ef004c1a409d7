// mxlimit/tiers.h: the rules of the `tiers:` section, scaling a rate, and
// reading a SetTier subject. Compiling tiers against a policy set is
// src/engine/tier_set.cc.

#include "mxlimit/tiers.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/policy.h"
#include "mxlimit/user_id.h"
#include "src/policy/tier_where.h"
#include "src/util/quote.h"

namespace mxlimit {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

bool IsTierNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// "tier \"bridge\" (line 12)" or "tier #2".
std::string Who(const Tier& t, size_t index) {
  if (t.name.empty() || !TierNameProblem(t.name).empty()) {
    return t.source_line > 0 ? absl::StrCat("tiers (line ", t.source_line, ")")
                             : absl::StrCat("tier #", index + 1);
  }
  return internal::TierWhere(t);
}

absl::Status CheckTier(const Tier& t, const std::string& who) {
  if (!std::isfinite(t.scale) || t.scale < kMinTierScale ||
      t.scale > kMaxTierScale) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": scale: got ", t.scale, ", expected a number from ",
                     kMinTierScale, " to ", kMaxTierScale));
  }
  if (t.exempt && (t.scale != 1.0 || !t.policies.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        who,
        ": an exempt tier is neither checked nor charged, so it takes no "
        "scale or policies; remove them or exempt: true"));
  }
  absl::flat_hash_set<std::string> seen;
  for (const TierRate& r : t.policies) {
    if (std::string problem = PolicyNameProblem(r.policy); !problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          who, ": policies: got ", QuoteForError(r.policy), ", ", problem));
    }
    if (!seen.insert(r.policy).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": policies: \"", r.policy, "\" is given twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string TierNameProblem(std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxTierNameBytes;
  for (size_t i = 0; ok && i < name.size(); ++i) ok = IsTierNameChar(name[i]);
  if (!ok) {
    return absl::StrCat("expected 1 to ", kMaxTierNameBytes,
                        " letters, digits, '.', '_' or '-'");
  }
  if (name == "assign") {
    return "\"assign\" is the key of the assignments, not a tier name";
  }
  return "";
}

absl::Status ValidateTierOptions(const TierOptions& tiers) {
  if (tiers.tiers.size() > kMaxTiers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tiers: ", tiers.tiers.size(), " tiers, expected at most ", kMaxTiers));
  }
  absl::flat_hash_map<std::string, size_t> index;
  for (size_t i = 0; i < tiers.tiers.size(); ++i) {
    const Tier& t = tiers.tiers[i];
    const std::string who = Who(t, i);
    if (std::string problem = TierNameProblem(t.name); !problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          who, ": name: got ", QuoteForError(t.name), ", ", problem));
    }
    if (!index.emplace(t.name, i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": the tier \"", t.name, "\" is defined twice"));
    }
    if (absl::Status ok = CheckTier(t, who); !ok.ok()) return ok;
  }
  const size_t assignments = tiers.users.size() + tiers.networks.size();
  if (assignments > kMaxFileTierAssignments) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tiers.assign: ", assignments, " assignments, expected at most ",
        kMaxFileTierAssignments));
  }
  auto known = [&](std::string_view where,
                   const std::string& tier) -> absl::Status {
    if (index.contains(tier)) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(where), ": the tier ", QuoteForError(tier),
                     " is not defined under tiers:"));
  };
  absl::flat_hash_set<std::string> users;
  for (const TierUser& u : tiers.users) {
    const std::string where =
        absl::StrCat("tiers.assign.users ", QuoteForError(u.user_id));
    if (std::string problem = UserIdProblem(u.user_id); !problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where,
                       ": expected a Matrix user ID such as "
                       "\"@bridge:example.org\" (",
                       problem, ")"));
    }
    if (!users.insert(u.user_id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": assigned twice"));
    }
    if (absl::Status ok = known(where, u.tier); !ok.ok()) return ok;
  }
  absl::flat_hash_set<std::string> networks;
  for (const TierNetwork& n : tiers.networks) {
    const std::string text = FormatCidr(n.network);
    const std::string where = absl::StrCat("tiers.assign.networks ", text);
    if (!networks.insert(text).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": assigned twice"));
    }
    if (absl::Status ok = known(where, n.tier); !ok.ok()) return ok;
  }
  return absl::OkStatus();
}

absl::StatusOr<Rate> ScaleRate(const Rate& rate, double scale) {
  if (!std::isfinite(scale) || scale <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("scale: got ", scale, ", expected a number above 0"));
  }
  if (rate.kind() != Rate::Kind::kLimited) return rate;
  // Saturated at Rate's range rather than refused: a bridge at ten times
  // every limit must not fail on a byte quota already near the top.
  const double burst =
      std::clamp(std::round(static_cast<double>(rate.burst()) * scale), 1.0,
                 static_cast<double>(Rate::kMaxBurst));
  // The same rate per longer units until it is a whole number; else the
  // longest unit, rounded (at least one a day).
  static constexpr TimeUnit kUnits[] = {TimeUnit::kSecond, TimeUnit::kMinute,
                                        TimeUnit::kHour, TimeUnit::kDay};
  const double per_ns = static_cast<double>(rate.requests_per_unit()) * scale /
                        static_cast<double>(UnitNanoseconds(rate.unit()));
  double count = 0;
  TimeUnit unit = TimeUnit::kDay;
  for (TimeUnit u : kUnits) {
    if (UnitNanoseconds(u) < UnitNanoseconds(rate.unit())) continue;
    count = per_ns * static_cast<double>(UnitNanoseconds(u));
    unit = u;
    if (count >= 1 && std::abs(count - std::round(count)) <= 1e-9 * count) {
      break;
    }
  }
  count = std::clamp(std::round(count), 1.0,
                     static_cast<double>(Rate::kMaxRequestsPerUnit));
  const int64_t n = static_cast<int64_t>(count);
  // A burst whose tau would pass Rate's bound is cut to the longest that
  // fits.
  const int64_t interval = UnitNanoseconds(unit) / n;
  const int64_t b =
      std::min(static_cast<int64_t>(burst),
               Rate::kMaxToleranceNs / std::max<int64_t>(interval, 1));
  return Rate::Create(n, unit, std::max<int64_t>(b, 1));
}

absl::StatusOr<TierSubject> ParseTierSubject(std::string_view text) {
  TierSubject s;
  if (!text.empty() && text.front() == '@') {
    if (std::string problem = UserIdProblem(text); !problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("subject ", QuoteForError(text),
                       ": expected a Matrix user ID such as "
                       "\"@bridge:example.org\" (",
                       problem, ")"));
    }
    s.kind = TierSubjectKind::kUser;
    s.user_id = std::string(text);
    return s;
  }
  absl::StatusOr<Cidr> network = ParseCidr(text);
  if (!network.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("subject: expected a user ID (\"@name:server\") or a "
                     "network (\"10.0.0.0/8\", \"2001:db8::/48\"); ",
                     network.status().message()));
  }
  s.kind = TierSubjectKind::kNetwork;
  s.network = *network;
  return s;
}

}  // namespace mxlimit
