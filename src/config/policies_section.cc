// The `policies:` section of the config file: a list of policy maps.
//
// The rules for name, match, methods and share_threshold are the core's
// (`PolicyNameProblem` etc. in mxlimit/policy.h, also run by
// `PolicySet::Compile`); this file reads the values and pins each problem to
// its position. tests/policy/policy_rules_agreement_test.cc holds the two
// together.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/options.h"
#include "mxlimit/policy.h"
#include "mxlimit/rate.h"
#include "src/config/config_warnings.h"
#include "src/config/sections.h"
#include "src/config/yaml_fields.h"
#include "src/util/quote.h"

namespace mxlimit::config_internal {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

constexpr std::string_view kPolicyKeys[] = {
    "name",         "match",         "methods",
    "scope",        "rate_limit",    "burst",
    "unlimited",    "shadow_mode",   "share_threshold",
    "layer",        "client_prefix", "sharing",
    "on_limit",     "max_delay",     "concurrency",
    "query_absent", "query_present", "charge",
    "status",       "cost",          "errcode",
    "info_uri",     "can_upgrade"};
constexpr std::string_view kPrefixKeys[] = {"ipv4", "ipv6"};
constexpr std::string_view kRateKeys[] = {"unit", "requests_per_unit", "burst"};
constexpr std::string_view kScopes[] = {"ip", "user", "origin", "room",
                                        "target"};
constexpr std::string_view kUnits[] = {"second", "minute", "hour", "day"};
constexpr std::string_view kSharings[] = {"exact", "approximate", "local"};

// The dotted path of `field`'s parent ("policies[0].rate_limit"), so that
// Rate::Create's "burst: got 0, ..." reads as a full path.
std::string_view ParentPath(const Field& field) {
  std::string_view path = field.path;
  return path.substr(0, path.size() - field.name.size());
}

}  // namespace

void ReadRateFields(const MapFields& fields, const YAML::Node& node,
                    const std::string& path, Rate& rate, ConfigErrors& errors) {
  const Field* rate_field = fields.Find("rate_limit");
  const Field* unlimited_field = fields.Find("unlimited");
  const Field* outer_burst = fields.Find("burst");
  bool unlimited = false;
  if (unlimited_field != nullptr) {
    std::optional<bool> v = ReadBool(*unlimited_field, errors);
    if (!v.has_value()) return;
    unlimited = *v;
  }
  if (unlimited) {
    if (rate_field != nullptr) {
      errors.Add(unlimited_field->mark(),
                 absl::StrCat(unlimited_field->path,
                              ": got true, but rate_limit is also given "
                              "(line ",
                              rate_field->key.Mark().line + 1,
                              "); a policy is either unlimited or has a "
                              "rate, not both"));
    } else if (outer_burst != nullptr) {
      errors.Add(outer_burst->key.Mark(),
                 absl::StrCat(outer_burst->path,
                              ": an unlimited policy has no burst; remove "
                              "it or replace unlimited with a rate_limit"));
    }
    rate = Rate::Unlimited();
    return;
  }
  if (rate_field == nullptr) {
    if (outer_burst != nullptr) {
      errors.Add(outer_burst->key.Mark(),
                 absl::StrCat(outer_burst->path,
                              ": burst needs a rate_limit in the same "
                              "policy"));
    }
    errors.Add(node.Mark(),
               absl::StrCat(path,
                            ": needs either rate_limit: {unit: ..., "
                            "requests_per_unit: ...} or unlimited: true"));
    return;
  }
  MapFields rate_map(*rate_field, kRateKeys, /*null_is_empty=*/false, errors);
  if (!rate_field->value.IsMap()) return;
  const Field* unit_field = rate_map.Find("unit");
  const Field* count_field = rate_map.Find("requests_per_unit");
  const Field* burst_field = rate_map.Find("burst");
  if (burst_field != nullptr && outer_burst != nullptr) {
    errors.Add(
        outer_burst->key.Mark(),
        absl::StrCat(outer_burst->path,
                     ": burst is also given in rate_limit (line ",
                     burst_field->key.Mark().line + 1, "); keep one of them"));
    return;
  }
  if (burst_field == nullptr) burst_field = outer_burst;
  auto missing = [&](std::string_view key) {
    errors.Add(rate_field->value.Mark(),
               absl::StrCat(rate_field->path, ": missing required key \"",
                            ToAbsl(key), "\""));
  };
  // Each field is read and range-checked on its own, so a map with several
  // bad values reports every one of them.
  std::optional<TimeUnit> unit;
  if (unit_field == nullptr) {
    missing("unit");
  } else if (std::optional<std::string> name = ReadString(
                 *unit_field, "second, minute, hour or day", errors)) {
    unit = ParseTimeUnit(*name);
    if (!unit.has_value()) {
      std::string message = absl::StrCat(
          unit_field->path, ": got ", DescribeValue(unit_field->value),
          ", expected second, minute, hour or day");
      if (auto near = NearestWord(*name, kUnits)) {
        absl::StrAppend(&message, " (did you mean \"", ToAbsl(*near), "\"?)");
      }
      errors.Add(unit_field->mark(), std::move(message));
    }
  }
  // Rate::Create words the range errors (one copy of the rules); the unit
  // plays no part in a range, so any unit checks a value alone.
  auto range_error = [&](const Field& field, const absl::Status& status) {
    errors.Add(field.mark(),
               absl::StrCat(ToAbsl(ParentPath(field)), status.message()));
  };
  const std::string count_expected =
      absl::StrCat("an integer from 0 to ", Rate::kMaxRequestsPerUnit);
  // A plain value and a flag: GCC 12 warns that an optional reset here
  // "may be used uninitialized" below.
  int64_t count = 0;
  bool count_ok = false;
  if (count_field == nullptr) {
    missing("requests_per_unit");
  } else if (std::optional<int64_t> v =
                 ReadInteger(*count_field, count_expected, errors)) {
    absl::Status ok = Rate::Create(*v, TimeUnit::kDay).status();
    if (ok.ok()) {
      count = *v;
      count_ok = true;
    } else {
      range_error(*count_field, ok);
    }
  }
  std::optional<int64_t> burst;
  if (burst_field != nullptr) {
    burst = ReadInteger(*burst_field,
                        absl::StrCat("an integer from 1 to ", Rate::kMaxBurst),
                        errors);
    if (burst.has_value()) {
      // The range alone: at the fastest rate no burst in range is too
      // long (that is checked with the rate below).
      absl::Status ok =
          Rate::Create(Rate::kMaxRequestsPerUnit, TimeUnit::kSecond, burst)
              .status();
      if (!ok.ok()) {
        range_error(*burst_field, ok);
        return;
      }
    }
    if (!burst.has_value()) return;
  }
  if (!unit.has_value() || !count_ok) return;
  // What is left concerns the burst with the rest: too long a tolerance,
  // or a burst on a blocked policy.
  absl::StatusOr<Rate> created = Rate::Create(count, *unit, burst);
  if (!created.ok()) {
    range_error(burst_field != nullptr ? *burst_field : *count_field,
                created.status());
    return;
  }
  rate = *created;
}

namespace {

// One policy's fields, read in the order an error list reads best.
class PolicyReader {
 public:
  PolicyReader(const YAML::Node& node, std::string path,
               const TableOptions& tables, RouteFacts& routes,
               ConfigErrors& errors, ConfigErrors& warnings)
      : table_ipv4_(tables.ipv4_prefix),
        table_ipv6_(tables.ipv6_prefix),
        node_(node),
        path_(std::move(path)),
        routes_(routes),
        errors_(errors),
        warnings_(warnings),
        fields_(node, path_, kPolicyKeys, /*null_is_empty=*/false, errors) {}

  // Fills `policy`; returns false when the node is not a map at all.
  bool Read(Policy& policy) {
    if (!node_.IsMap()) return false;  // MapFields reported it.
    policy.source_line = node_.Mark().line + 1;
    policy.builtin = false;
    ReadName(policy);
    ReadMatch(policy);
    ReadMethods(policy);
    ReadScope(policy);
    ReadFlags(policy);
    ReadLayer(policy);
    ReadClientPrefix(policy);
    if (fields_.Find("concurrency") != nullptr) {
      ReadConcurrency(policy);
    } else {
      ReadRate(policy);
    }
    ReadQueryConditions(policy);
    ReadSharing(policy);
    ReadOnLimit(policy);
    ReadPolicyOutcome(fields_, node_, path_, policy, errors_);
    CheckRoomPatterns(policy);
    return true;
  }

  const Field* name_field() const { return fields_.Find("name"); }
  const Field* layer_field() const { return fields_.Find("layer"); }

 private:
  void Missing(std::string_view key) {
    errors_.Add(node_.Mark(), absl::StrCat(path_, ": missing required key \"",
                                           ToAbsl(key), "\""));
  }

  void ReadName(Policy& policy) {
    const Field* f = fields_.Find("name");
    if (f == nullptr) return Missing("name");
    std::optional<std::string> name = ReadString(*f, "a policy name", errors_);
    if (!name.has_value()) return;
    if (std::string problem = PolicyNameProblem(*name); !problem.empty()) {
      errors_.Add(f->mark(), absl::StrCat(f->path, ": got ",
                                          QuoteForError(*name), ", ", problem));
      return;
    }
    policy.name = *std::move(name);
  }

  // One pattern or a list of them.
  void ReadMatch(Policy& policy) {
    const Field* f = fields_.Find("match");
    if (f == nullptr) return Missing("match");
    constexpr std::string_view kExpected =
        "a path pattern such as \"/_matrix/client/*\"";
    if (!f->value.IsSequence()) {
      std::optional<std::string> match = ReadString(*f, kExpected, errors_);
      if (!match.has_value()) return;
      AddPattern(f->path, f->mark(), *std::move(match), policy);
      return;
    }
    if (f->value.size() == 0 || f->value.size() > kMaxPatternsPerPolicy) {
      errors_.Add(
          f->mark(),
          absl::StrCat(f->path, ": got a list of ", f->value.size(),
                       " patterns, expected 1 to ", kMaxPatternsPerPolicy));
      return;
    }
    for (ListString& item : ReadStringList(
             *f, "a path pattern or a list of them", kExpected, errors_)) {
      AddPattern(item.path, item.mark, std::move(item.text), policy);
    }
  }

  void AddPattern(std::string_view path, const YAML::Mark& mark,
                  std::string pattern, Policy& policy) {
    if (std::string problem = PatternProblem(pattern); !problem.empty()) {
      errors_.Add(mark, absl::StrCat(ToAbsl(path), ": got ",
                                     QuoteForError(pattern), ", ", problem));
      return;
    }
    WarnPattern(path, mark, pattern, routes_, warnings_);
    pattern_at_.emplace_back(std::string(path), mark);
    policy.match.push_back(std::move(pattern));
  }

  // A room-scope policy keys by the route's room placeholder: each pattern
  // must reach a route that has one.
  void CheckRoomPatterns(const Policy& policy) {
    if (policy.scope != Scope::kRoom) return;
    for (size_t i = 0; i < policy.match.size() && i < pattern_at_.size(); ++i) {
      if (routes_.ReachesRoomRoute(
              policy.match[i] == kFallbackRouteKey
                  ? std::string(kFallbackRouteKey)
                  : internal::CanonicalPath(policy.match[i]))) {
        continue;
      }
      const auto& [path, mark] = pattern_at_[i];
      errors_.Add(mark,
                  absl::StrCat(path, ": got ", QuoteForError(policy.match[i]),
                               ", but a room-scope policy applies only to "
                               "routes with a {roomId} or {roomIdOrAlias} "
                               "placeholder, and this pattern matches none"));
    }
  }

  void ReadLayer(Policy& policy) {
    const Field* f = fields_.Find("layer");
    if (f == nullptr) return;
    std::optional<std::string> layer =
        ReadString(*f, "a layer name such as \"network\"", errors_);
    if (!layer.has_value()) return;
    if (std::string problem = LayerProblem(*layer); !problem.empty()) {
      errors_.Add(f->mark(),
                  absl::StrCat(f->path, ": got ", QuoteForError(*layer), ", ",
                               problem));
      return;
    }
    policy.layer = *std::move(layer);
  }

  // `client_prefix: {ipv4: N, ipv6: M}`; a key left out keeps the tables'
  // prefix for that family.
  void ReadClientPrefix(Policy& policy) {
    const Field* f = fields_.Find("client_prefix");
    if (f == nullptr) return;
    // The values are checked even on a user-scope policy, so that fixing
    // the scope does not reveal a second error.
    bool ok = true;
    if (policy.scope != Scope::kIp && policy.scope != Scope::kOrigin) {
      errors_.Add(f->key.Mark(),
                  absl::StrCat(f->path,
                               ": only ip- and origin-scope policies mask "
                               "client addresses; remove it or use scope: "
                               "ip"));
      ok = false;
    }
    MapFields prefix(*f, kPrefixKeys, /*null_is_empty=*/false, errors_);
    if (!f->value.IsMap()) return;
    ClientPrefix out = policy.scope == Scope::kOrigin
                           ? kOriginNetworkPrefix
                           : ClientPrefix{table_ipv4_, table_ipv6_};
    if (const Field* v4 = prefix.Find("ipv4")) {
      std::optional<int64_t> v = ReadIntegerInRange(*v4, 0, 32, errors_);
      ok = ok && v.has_value();
      if (v.has_value()) out.ipv4 = static_cast<int>(*v);
    }
    if (const Field* v6 = prefix.Find("ipv6")) {
      std::optional<int64_t> v = ReadIntegerInRange(*v6, 0, 128, errors_);
      ok = ok && v.has_value();
      if (v.has_value()) out.ipv6 = static_cast<int>(*v);
    }
    if (ok) policy.client_prefix = out;
  }

  void ReadMethods(Policy& policy) {
    const Field* f = fields_.Find("methods");
    if (f == nullptr) return;
    // `methods:` with no value and `methods: []` say the same thing, and
    // neither may silently mean "every method".
    if (f->value.IsNull() || (f->value.IsSequence() && f->value.size() == 0)) {
      errors_.Add(f->mark(),
                  absl::StrCat(f->path,
                               ": lists no method, expected at least one, "
                               "e.g. [GET, POST] (leave methods out to match "
                               "every method)"));
      return;
    }
    for (const ListString& item :
         ReadStringList(*f, "a list of HTTP methods, e.g. [GET, POST]",
                        "an HTTP method", errors_)) {
      std::string upper = absl::AsciiStrToUpper(item.text);
      if (std::string problem = MethodProblem(item.text); !problem.empty()) {
        std::string message = absl::StrCat(
            item.path, ": got ", QuoteForError(item.text), ", ", problem);
        if (auto near = NearestWord(upper, internal::kMethodNames)) {
          absl::StrAppend(&message, "; did you mean ", ToAbsl(*near), "?");
        }
        errors_.Add(item.mark, std::move(message));
        continue;
      }
      // A repeated method changes nothing; keep one.
      if (std::find(policy.methods.begin(), policy.methods.end(), upper) ==
          policy.methods.end()) {
        policy.methods.push_back(std::move(upper));
      }
    }
  }

  void ReadScope(Policy& policy) {
    const Field* f = fields_.Find("scope");
    if (f == nullptr) return;  // Default: per client address.
    constexpr std::string_view kExpected = "ip, user, origin, room or target";
    std::optional<std::string> scope = ReadString(*f, kExpected, errors_);
    if (!scope.has_value()) return;
    if (std::optional<Scope> parsed = ParseScope(*scope)) {
      policy.scope = *parsed;
    } else {
      std::string message =
          absl::StrCat(f->path, ": got ", DescribeValue(f->value),
                       ", expected ", ToAbsl(kExpected));
      if (auto near = NearestWord(*scope, kScopes)) {
        absl::StrAppend(&message, " (did you mean \"", ToAbsl(*near), "\"?)");
      }
      errors_.Add(f->mark(), std::move(message));
    }
  }

  void ReadFlags(Policy& policy) {
    if (const Field* f = fields_.Find("shadow_mode")) {
      policy.shadow_mode = ReadBool(*f, errors_).value_or(false);
    }
    const Field* f = fields_.Find("share_threshold");
    if (f == nullptr) return;
    std::optional<bool> share = ReadBool(*f, errors_);
    if (!share.has_value()) return;
    // Only `true` is checked: `false` is the default and means nothing on an
    // exact pattern, so stating it is harmless.
    const Field* match = fields_.Find("match");
    if (*share && match != nullptr) {
      // The same rule the core applies, on the patterns as written.
      std::vector<std::string> patterns;
      if (match->value.IsScalar()) {
        patterns.push_back(match->value.Scalar());
      } else if (match->value.IsSequence()) {
        for (const YAML::Node& item : match->value) {
          patterns.push_back(item.IsScalar() ? item.Scalar() : "*");
        }
      }
      if (!patterns.empty()) {
        if (std::string problem = ShareThresholdProblem(patterns);
            !problem.empty()) {
          errors_.Add(f->mark(),
                      absl::StrCat(f->path, ": got true, but match ",
                                   QuoteForError(patterns[0]), " (line ",
                                   match->key.Mark().line + 1, ") ", problem));
          return;
        }
      }
    }
    policy.share_threshold = *share;
  }

  // How a SharedLimiter shares the policy's buckets; read after the rate,
  // which the approximate-mode warning looks at.
  // `on_limit: deny | delay` and `max_delay: DURATION` (500ms, 2s): checked
  // against each other and the rate read before.
  void ReadOnLimit(Policy& policy) {
    const Field* on_limit = fields_.Find("on_limit");
    const Field* max_delay = fields_.Find("max_delay");
    if (on_limit != nullptr) {
      std::optional<std::string> text =
          ReadString(*on_limit, "deny or delay", errors_);
      if (!text.has_value()) return;
      if (*text == "delay") {
        policy.on_limit = OnLimit::kDelay;
      } else if (*text != "deny") {
        errors_.Add(on_limit->mark(),
                    absl::StrCat(on_limit->path, ": got ",
                                 DescribeValue(on_limit->value),
                                 ", expected deny or delay"));
        return;
      }
    }
    if (max_delay != nullptr) {
      std::optional<int64_t> us =
          ReadDuration(*max_delay, 1, 60'000'000, 1,
                       "a duration from 1us to 60s, such as 500ms", errors_);
      if (!us.has_value()) return;
      policy.max_delay = std::chrono::microseconds(*us);
    }
    if (policy.on_limit == OnLimit::kDelay && max_delay == nullptr) {
      errors_.Add(on_limit->mark(),
                  absl::StrCat(on_limit->path,
                               ": got delay, but max_delay is missing; say "
                               "how long a request may wait, e.g. "
                               "max_delay: 500ms"));
      return;
    }
    if (policy.on_limit == OnLimit::kDeny && max_delay != nullptr) {
      errors_.Add(max_delay->mark(),
                  absl::StrCat(max_delay->path,
                               ": only a policy with on_limit: delay waits; "
                               "add on_limit: delay or remove max_delay"));
      return;
    }
    if (policy.on_limit == OnLimit::kDelay &&
        policy.rate.kind() != Rate::Kind::kLimited &&
        !policy.concurrency.has_value()) {
      errors_.Add(on_limit->mark(),
                  absl::StrCat(on_limit->path,
                               ": got delay, but the policy has no limited "
                               "rate to wait for (unlimited, or "
                               "requests_per_unit: 0)"));
    }
  }

  // `concurrency: {limit: N, lease: DURATION}`, instead of a rate.
  void ReadConcurrency(Policy& policy) {
    static constexpr std::string_view kKeys[] = {"limit", "lease"};
    const Field* f = fields_.Find("concurrency");
    for (std::string_view other : {"rate_limit", "unlimited", "burst"}) {
      if (const Field* o = fields_.Find(other)) {
        errors_.Add(o->key.Mark(),
                    absl::StrCat(o->path,
                                 ": an in-flight policy (concurrency, "
                                 "line ",
                                 f->key.Mark().line + 1,
                                 ") has no rate; write the rate as another "
                                 "policy"));
      }
    }
    MapFields map(*f, kKeys, /*null_is_empty=*/false, errors_);
    if (!f->value.IsMap()) return;
    Concurrency c;
    const Field* limit = map.Find("limit");
    const Field* lease = map.Find("lease");
    for (auto [key, field] :
         {std::pair<std::string_view, const Field*>{"limit", limit},
          {"lease", lease}}) {
      if (field == nullptr) {
        errors_.Add(f->value.Mark(),
                    absl::StrCat(f->path, ": missing required key \"",
                                 ToAbsl(key), "\""));
      }
    }
    if (limit == nullptr || lease == nullptr) return;
    std::optional<int64_t> n =
        ReadIntegerInRange(*limit, 1, kMaxConcurrency, errors_);
    std::optional<int64_t> us =
        ReadDuration(*lease, 1000, 3'600'000'000, 1000,
                     "a duration from 1ms to 3600s, such as 30s", errors_);
    if (!n.has_value() || !us.has_value()) return;
    c.limit = static_cast<int>(*n);
    c.lease = std::chrono::microseconds(*us);
    policy.rate = Rate::Unlimited();
    policy.concurrency = c;
  }

  // `query_absent: [NAME, ...]` and `query_present: [NAME, ...]`.
  void ReadQueryConditions(Policy& policy) {
    for (auto [key, names] :
         {std::pair<std::string_view, std::vector<std::string>*>{
              "query_absent", &policy.query_absent},
          {"query_present", &policy.query_present}}) {
      const Field* f = fields_.Find(key);
      if (f == nullptr) continue;
      for (ListString& item :
           ReadStringList(*f, "a list of query parameter names, e.g. [since]",
                          "a query parameter name", errors_)) {
        if (std::string problem = QueryNameProblem(item.text);
            !problem.empty()) {
          errors_.Add(item.mark,
                      absl::StrCat(item.path, ": got ",
                                   QuoteForError(item.text), ", ", problem));
          continue;
        }
        names->push_back(std::move(item.text));
      }
    }
  }

  void ReadSharing(Policy& policy) {
    const Field* f = fields_.Find("sharing");
    if (f == nullptr) return;  // Default: exact.
    std::optional<std::string> name =
        ReadString(*f, "exact, approximate or local", errors_);
    if (!name.has_value()) return;
    std::optional<Sharing> sharing = ParseSharing(*name);
    if (!sharing.has_value()) {
      std::string message =
          absl::StrCat(f->path, ": got ", DescribeValue(f->value),
                       ", expected exact, approximate or local");
      if (auto near = NearestWord(*name, kSharings)) {
        absl::StrAppend(&message, " (did you mean \"", ToAbsl(*near), "\"?)");
      }
      errors_.Add(f->mark(), std::move(message));
      return;
    }
    policy.sharing = *sharing;
    if (*sharing == Sharing::kApproximate) {
      WarnApproximateSharing(*f, policy, warnings_);
    }
  }

  void ReadRate(Policy& policy) {
    ReadRateFields(fields_, node_, path_, policy.rate, errors_);
  }

  int table_ipv4_;
  int table_ipv6_;
  YAML::Node node_;
  std::string path_;
  RouteFacts& routes_;
  ConfigErrors& errors_;
  ConfigErrors& warnings_;
  MapFields fields_;
  // Where each pattern of `match` was read.
  std::vector<std::pair<std::string, YAML::Mark>> pattern_at_;
};

}  // namespace

void ReadPolicies(const Field& field, const TableOptions& tables,
                  const internal::MergedRouteTable* route_table,
                  const PolicySetShape& set, std::vector<Policy>& policies,
                  ConfigErrors& errors, ConfigErrors& warnings) {
  std::vector<YAML::Node> items =
      ReadList(field, "a list of policies (each \"- name: ...\")", errors);
  RouteFacts routes(route_table);
  // Name -> line of its first definition, for duplicate reports.
  absl::flat_hash_map<std::string, int> first_line;
  // Where each read policy is, by index into `policies`.
  std::vector<PolicyShape> shapes;
  std::vector<std::pair<YAML::Mark, std::string>> layer_at;
  const size_t first = policies.size();
  for (size_t i = 0; i < items.size(); ++i) {
    Policy policy;
    std::string path = absl::StrCat(field.path, "[", i, "]");
    PolicyReader reader(items[i], path, tables, routes, errors, warnings);
    if (!reader.Read(policy)) continue;
    if (!policy.name.empty()) {
      const Field* name = reader.name_field();
      int line = name->key.Mark().line + 1;
      auto [it, inserted] = first_line.try_emplace(policy.name, line);
      if (!inserted) {
        errors.Add(name->mark(),
                   absl::StrCat(name->path, ": duplicate policy name ",
                                QuoteForError(policy.name),
                                "; the first is at line ", it->second));
      }
    }
    // Where a layer-count error points: the policy's layer (a policy
    // without one is in `route`, which is always counted).
    const Field* layer = reader.layer_field();
    layer_at.push_back(layer != nullptr ? std::pair(layer->mark(), layer->path)
                                        : std::pair(items[i].Mark(), path));
    shapes.push_back(PolicyShape{std::move(path), items[i].Mark(),
                                 policy.source_line, nullptr});
    policies.push_back(std::move(policy));
  }
  // Pointers only now: `policies` no longer grows.
  for (size_t i = 0; i < shapes.size(); ++i) {
    shapes[i].policy = &policies[first + i];
  }
  const std::vector<bool> shadowed = WarnShadowedPolicies(shapes, warnings);
  // A set-level check, in the same pass as the fields' (issue #30): the
  // first policy past the layer limit, at its layer.
  const std::span<const Policy> read(policies.data() + first,
                                     policies.size() - first);
  if (std::optional<LayerOverflow> over =
          FindLayerOverflow(read, set.builtins)) {
    const auto& [mark, path] = layer_at[over->index];
    errors.Add(mark, absl::StrCat(path, ": ", over->problem));
  }
  if (std::optional<GroupOverflow> over =
          FindGroupOverflow(read, set.builtins, set.all_shadow)) {
    const PolicyShape& at = shapes[over->index];
    errors.Add(at.mark, absl::StrCat(at.path, ".", ToAbsl(over->field), ": ",
                                     over->problem));
  }
  // The whole set, built-ins included, is only known valid without errors.
  if (set.want_warnings && errors.empty() && first == 0) {
    WarnOutrankedPolicies(shapes, shadowed, set.builtins, set.all_shadow,
                          route_table, warnings);
  }
}

}  // namespace mxlimit::config_internal
