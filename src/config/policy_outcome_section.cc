// A policy's `charge`, `status`, `cost`, `errcode`, `info_uri` and
// `can_upgrade`: what it charges, when, and how its denials read. The rules
// are the core's (`OutcomeProblems` in mxlimit/policy.h); this file reads the
// values and pins each problem to its position.

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/policy.h"
#include "src/config/sections.h"
#include "src/config/yaml_fields.h"
#include "src/util/quote.h"

namespace mxlimit::config_internal {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

constexpr std::string_view kStatusExpected =
    "a status code or a range such as 400-499";

std::optional<int> ParseCode(std::string_view text) {
  int v = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() ||
      text.size() != 3) {
    return std::nullopt;
  }
  return v;
}

// "401" or "400-499".
std::optional<StatusRange> ParseStatusRange(std::string_view text) {
  const size_t dash = text.find('-');
  std::optional<int> first = ParseCode(text.substr(0, dash));
  std::optional<int> last =
      dash == std::string_view::npos ? first : ParseCode(text.substr(dash + 1));
  if (!first.has_value() || !last.has_value()) return std::nullopt;
  return StatusRange{*first, *last};
}

void ReadStatus(const Field& f, Policy& policy, ConfigErrors& errors) {
  for (ListString& item :
       ReadStringList(f, "a list of status codes or ranges, e.g. [401, 403]",
                      kStatusExpected, errors)) {
    std::optional<StatusRange> range = ParseStatusRange(item.text);
    if (!range.has_value()) {
      errors.Add(item.mark,
                 absl::StrCat(item.path, ": got ", QuoteForError(item.text),
                              ", expected ", ToAbsl(kStatusExpected)));
      continue;
    }
    policy.status.push_back(*range);
  }
}

// A word of `choices` (e.g. "request or response"), parsed by `parse`.
template <typename T, typename Parse>
std::optional<T> ReadWord(const Field& f, std::string_view choices, Parse parse,
                          ConfigErrors& errors) {
  std::optional<std::string> text = ReadString(f, choices, errors);
  if (!text.has_value()) return std::nullopt;
  std::optional<T> v = parse(*text);
  if (!v.has_value()) {
    errors.Add(f.mark(), absl::StrCat(f.path, ": got ", DescribeValue(f.value),
                                      ", expected ", ToAbsl(choices)));
  }
  return v;
}

}  // namespace

void ReadPolicyOutcome(const MapFields& fields, const YAML::Node& node,
                       std::string_view path, Policy& policy,
                       ConfigErrors& errors) {
  const Field* charge = fields.Find("charge");
  if (charge != nullptr) {
    std::optional<ChargeOn> c = ReadWord<ChargeOn>(
        *charge, "request or response", ParseChargeOn, errors);
    if (!c.has_value()) return;
    policy.charge = *c;
  }
  if (const Field* f = fields.Find("status")) ReadStatus(*f, policy, errors);
  if (const Field* f = fields.Find("cost")) {
    std::optional<CostKind> c = ReadWord<CostKind>(
        *f, "requests, request_bytes or response_bytes", ParseCostKind, errors);
    if (!c.has_value()) return;
    policy.cost = *c;
    if (*c == CostKind::kResponseBytes && charge != nullptr &&
        policy.charge == ChargeOn::kRequest) {
      errors.Add(charge->mark(),
                 absl::StrCat(charge->path,
                              ": got request, but cost: response_bytes is "
                              "known only from the response; remove charge "
                              "or say charge: response"));
      return;
    }
  }
  for (std::string_view key : {"errcode", "info_uri"}) {
    const Field* f = fields.Find(key);
    if (f == nullptr) continue;
    std::optional<std::string> text =
        ReadString(*f, key == "errcode" ? "a Matrix errcode" : "a URI", errors);
    if (!text.has_value()) return;
    (key == "errcode" ? policy.errcode : policy.info_uri) = *std::move(text);
  }
  if (const Field* f = fields.Find("can_upgrade")) {
    policy.can_upgrade = ReadBool(*f, errors);
    if (!policy.can_upgrade.has_value()) return;
  }
  // A rate_limit that did not read (reported already) leaves the policy
  // unlimited: saying that it needs a limited rate would only repeat it.
  const bool rate_unread =
      fields.Find("rate_limit") != nullptr && policy.rate.unlimited();
  for (const FieldProblem& p : OutcomeProblems(policy)) {
    if (rate_unread && (p.field == "charge" || p.field == "cost")) continue;
    // A problem of `charge` where the file says only `cost: response_bytes`
    // (which implies it) points at `cost`; of another field the file does
    // not set, at the policy.
    const Field* at = fields.Find(p.field);
    if (at == nullptr && p.field == "charge") at = fields.Find("cost");
    errors.Add(at != nullptr ? at->mark() : node.Mark(),
               absl::StrCat(at != nullptr ? at->path
                                          : absl::StrCat(ToAbsl(path), ".",
                                                         ToAbsl(p.field)),
                            ": ", p.problem));
  }
}

}  // namespace mxlimit::config_internal
