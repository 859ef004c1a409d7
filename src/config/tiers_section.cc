// The `tiers:` section: each key names a tier (`scale`, `policies`,
// `exempt`), but `assign`, which maps users and networks to tiers.
// mxlimit/tiers.h has the model; docs/config.md the file's shape.

#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/ip.h"
#include "mxlimit/policy.h"
#include "mxlimit/tiers.h"
#include "mxlimit/user_id.h"
#include "src/config/sections.h"
#include "src/config/yaml_fields.h"
#include "src/util/quote.h"

namespace mxlimit::config_internal {
namespace {

using internal::QuoteForError;

constexpr std::string_view kTierKeys[] = {"scale", "policies", "exempt"};
constexpr std::string_view kReplacementKeys[] = {"rate_limit", "burst",
                                                 "unlimited"};
constexpr std::string_view kAssignKeys[] = {"users", "networks"};

// One `key: value` pair of a map whose keys are names the file chooses.
struct Entry {
  std::string key;
  Field field;
};

// The pairs of the map in `field` whose keys are strings; others, and
// repeated keys, are errors. An empty value is an empty map.
std::vector<Entry> ReadEntries(const Field& field, std::string_view what,
                               ConfigErrors& errors) {
  std::vector<Entry> out;
  if (!field.value.IsDefined() || field.value.IsNull()) return out;
  if (!field.value.IsMap()) {
    errors.Add(field.mark(),
               absl::StrCat(field.path, ": got ", DescribeValue(field.value),
                            ", expected a map of ", internal::ToAbsl(what)));
    return out;
  }
  absl::flat_hash_map<std::string, int> first_line;
  for (const auto& pair : field.value) {
    std::optional<std::string> key = ReadString(
        pair.first, pair.first.Mark(), field.path,
        absl::StrCat("a key naming ", internal::ToAbsl(what)), errors);
    if (!key.has_value()) continue;
    const int line = pair.first.Mark().line + 1;
    if (auto [it, fresh] = first_line.emplace(*key, line); !fresh) {
      errors.Add(
          pair.first.Mark(),
          absl::StrCat(field.path, ": ", QuoteForError(*key),
                       " is given twice (first on line ", it->second, ")"));
      continue;
    }
    Entry& e = out.emplace_back();
    e.key = *key;
    e.field.name = *key;
    e.field.path = absl::StrCat(field.path, ".", *key);
    e.field.key = pair.first;
    e.field.value = pair.second;
  }
  return out;
}

// `scale`: a plain number within the tier scale's range.
std::optional<double> ReadScale(const Field& field, ConfigErrors& errors) {
  const std::string expected =
      absl::StrCat("a number from ", kMinTierScale, " to ", kMaxTierScale,
                   ", e.g. 10 or 0.1");
  return ReadDecimal(field, kMinTierScale, kMaxTierScale, /*min_open=*/false,
                     expected, errors);
}

// The policies a tier may name: operator ones and the built-ins in force,
// by name, with whether each limits requests in flight.
using PolicyKinds = absl::flat_hash_map<std::string, bool>;

void ReadTier(const Entry& entry, const PolicyKinds& known, Tier& tier,
              ConfigErrors& errors) {
  tier.name = entry.key;
  tier.source_line = entry.field.key.Mark().line + 1;
  if (std::string problem = TierNameProblem(entry.key); !problem.empty()) {
    errors.Add(entry.field.key.Mark(),
               absl::StrCat("tiers: tier name ", QuoteForError(entry.key), ": ",
                            problem));
    return;
  }
  MapFields fields(entry.field, kTierKeys, /*null_is_empty=*/true, errors);
  if (const Field* f = fields.Find("scale")) {
    if (std::optional<double> v = ReadScale(*f, errors)) tier.scale = *v;
  }
  if (const Field* f = fields.Find("exempt")) {
    if (std::optional<bool> v = ReadBool(*f, errors)) tier.exempt = *v;
    if (tier.exempt && fields.fields().size() > 1) {
      errors.Add(f->mark(),
                 absl::StrCat(entry.field.path,
                              ": an exempt tier is neither checked nor "
                              "charged, so it takes no scale or policies"));
    }
  }
  if (const Field* f = fields.Find("policies")) {
    for (const Entry& p : ReadEntries(*f, "policy names", errors)) {
      if (std::string problem = PolicyNameProblem(p.key); !problem.empty()) {
        errors.Add(p.field.key.Mark(),
                   absl::StrCat(f->path, ": policy name ", QuoteForError(p.key),
                                ": ", problem));
        continue;
      }
      auto kind = known.find(p.key);
      if (kind == known.end()) {
        errors.Add(
            p.field.key.Mark(),
            absl::StrCat(f->path, ": no policy is named ", QuoteForError(p.key),
                         " (operator policies and, unless "
                         "builtin_policies is false, the built-ins "
                         "are)"));
        continue;
      }
      if (kind->second) {
        errors.Add(p.field.key.Mark(),
                   absl::StrCat(f->path, ".", p.key,
                                ": limits requests in flight; a tier replaces "
                                "rates only"));
        continue;
      }
      MapFields rate_fields(p.field, kReplacementKeys,
                            /*null_is_empty=*/false, errors);
      TierRate& r = tier.policies.emplace_back();
      r.policy = p.key;
      r.source_line = p.field.key.Mark().line + 1;
      ReadRateFields(rate_fields, p.field.value, p.field.path, r.rate, errors);
    }
  }
}

void ReadAssign(const Field& field, TierOptions& tiers, ConfigErrors& errors) {
  MapFields map(field, kAssignKeys, /*null_is_empty=*/true, errors);
  auto tier_of = [&](const Entry& e) -> std::optional<std::string> {
    std::optional<std::string> tier =
        ReadString(e.field, "a tier name", errors);
    if (tier.has_value() && !TierNameProblem(*tier).empty()) {
      errors.Add(e.field.mark(),
                 absl::StrCat(e.field.path, ": got ", QuoteForError(*tier),
                              ", expected a tier name"));
      return std::nullopt;
    }
    return tier;
  };
  if (const Field* f = map.Find("users")) {
    for (const Entry& e : ReadEntries(*f, "user IDs to tiers", errors)) {
      if (std::string problem = UserIdProblem(e.key); !problem.empty()) {
        errors.Add(e.field.key.Mark(),
                   absl::StrCat(f->path, ": got ", QuoteForError(e.key),
                                ", expected a Matrix user ID such as "
                                "\"@bridge:example.org\" (",
                                problem, ")"));
        continue;
      }
      if (std::optional<std::string> tier = tier_of(e)) {
        tiers.users.push_back({e.key, *std::move(tier)});
      }
    }
  }
  if (const Field* f = map.Find("networks")) {
    for (const Entry& e : ReadEntries(*f, "networks to tiers", errors)) {
      absl::StatusOr<Cidr> network = ParseCidr(e.key);
      if (!network.ok()) {
        errors.Add(e.field.key.Mark(),
                   absl::StrCat(f->path, ": ", network.status().message()));
        continue;
      }
      if (std::optional<std::string> tier = tier_of(e)) {
        tiers.networks.push_back({*network, *std::move(tier)});
      }
    }
  }
}

}  // namespace

void ReadTiers(const Field& field, const std::vector<Policy>& policies,
               bool builtins, TierOptions& tiers, ConfigErrors& errors) {
  const size_t errors_before = errors.size();
  PolicyKinds known;
  if (builtins) {
    for (const Policy& p : BuiltinPolicies()) {
      known[p.name] = p.concurrency.has_value();
    }
  }
  for (const Policy& p : policies) known[p.name] = p.concurrency.has_value();
  const Field* assign = nullptr;
  std::vector<Entry> entries = ReadEntries(field, "tier names", errors);
  for (const Entry& e : entries) {
    if (e.key == "assign") {
      assign = &e.field;
      continue;
    }
    ReadTier(e, known, tiers.tiers.emplace_back(), errors);
  }
  if (tiers.tiers.size() > kMaxTiers) {
    errors.Add(field.mark(),
               absl::StrCat("tiers: ", tiers.tiers.size(),
                            " tiers, expected at most ", kMaxTiers));
  }
  if (assign != nullptr) ReadAssign(*assign, tiers, errors);
  // Names the tiers the assignments use, and the rest of the section's
  // rules, at the section (its parts are checked where they are written).
  if (errors.size() == errors_before) {
    if (absl::Status ok = ValidateTierOptions(tiers); !ok.ok()) {
      errors.Add(field.mark(), std::string(internal::FromAbsl(ok.message())));
    }
  }
}

}  // namespace mxlimit::config_internal
