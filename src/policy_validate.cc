// Validation of the policy model (mxlimit/policy.h): every rule that a policy
// list must satisfy before `PolicySet::Compile` accepts it.

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/policy.h"
#include "mxlimit/route.h"

namespace mxlimit {
namespace {

using internal::ToAbsl;

constexpr size_t kMaxNameBytes = 200;

// Quotes a user-supplied value for a message, escaping what would make the
// message ambiguous or unreadable, and shortening very long values.
std::string Quote(std::string_view value) {
  constexpr size_t kShown = 80;
  std::string out = "\"";
  for (size_t i = 0; i < value.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (value.size() > kShown) absl::StrAppend(&out, "...");
  out += '"';
  return out;
}

std::string Subject(const Policy& p) {
  std::string s = absl::StrCat("policy ", Quote(p.name));
  if (p.source_line > 0) absl::StrAppend(&s, " (line ", p.source_line, ")");
  return s;
}

// Why `match` can never be a valid pattern, or "" if it can.
std::string PatternProblem(std::string_view match) {
  if (match.empty()) return "expected a non-empty path pattern";
  if (match.size() > kMaxPatternBytes) {
    return absl::StrCat(match.size(), " bytes, expected at most ",
                        kMaxPatternBytes);
  }
  if (match == kFallbackRouteKey) return "";
  if (match[0] != '/' && match[0] != '*') {
    return absl::StrCat("expected a path starting with '/' or '*' (or ",
                        ToAbsl(kFallbackRouteKey), ")");
  }
  for (char ch : match) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) {
      return "contains a space or control byte, which a request path never "
             "holds";
    }
    if (c == '?' || c == '#') {
      return absl::StrCat("contains '", std::string(1, ch),
                          "', which a query-free path never holds (patterns "
                          "match the path only)");
    }
  }
  return "";
}

}  // namespace

bool IsKnownHttpMethod(std::string_view method) {
  return internal::ClassifyMethod(method) != internal::kOtherMethod;
}

std::vector<PolicyError> ValidatePolicies(std::span<const Policy> policies) {
  std::vector<PolicyError> errors;
  auto add = [&](size_t index, std::string_view field, std::string message) {
    errors.push_back(PolicyError{index, field, std::move(message)});
  };
  absl::flat_hash_map<std::string, size_t> first_with_name;

  for (size_t i = 0; i < policies.size(); ++i) {
    const Policy& p = policies[i];
    const std::string who = Subject(p);

    if (p.name.empty()) {
      add(i, "name",
          absl::StrCat(who,
                       ": name: got \"\", expected a "
                       "non-empty, unique name"));
    } else if (p.name.size() > kMaxNameBytes) {
      add(i, "name",
          absl::StrCat(who, ": name: ", p.name.size(),
                       " bytes, expected at most ", kMaxNameBytes));
    } else {
      auto [it, inserted] = first_with_name.emplace(p.name, i);
      if (!inserted) {
        const Policy& first = policies[it->second];
        std::string where = first.source_line > 0
                                ? absl::StrCat("line ", first.source_line)
                                : absl::StrCat("policy #", it->second + 1);
        add(i, "name",
            absl::StrCat(who, ": name: ", Quote(p.name), " is already used (",
                         where, "), expected a unique name"));
      }
    }

    if (std::string problem = PatternProblem(p.match); !problem.empty()) {
      add(i, "match",
          absl::StrCat(who, ": match: got ", Quote(p.match), ", ", problem));
    }

    for (const std::string& m : p.methods) {
      if (IsKnownHttpMethod(m)) continue;
      std::string hint;
      std::string upper = m;
      for (char& c : upper) {
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      }
      if (upper != m && IsKnownHttpMethod(upper)) {
        hint = absl::StrCat(" (methods are case-sensitive: write ", upper, ")");
      }
      add(i, "methods",
          absl::StrCat(who, ": methods: got ", Quote(m),
                       ", expected one of GET, HEAD, POST, PUT, DELETE, PATCH, "
                       "OPTIONS, CONNECT, TRACE",
                       hint));
    }

    if (p.share_threshold &&
        std::string_view(p.match).find('*') == std::string_view::npos) {
      add(i, "share_threshold",
          absl::StrCat(who, ": share_threshold: true on match ", Quote(p.match),
                       ", expected a pattern containing '*' (an exact pattern "
                       "has one route, nothing to share)"));
    }
  }
  return errors;
}

}  // namespace mxlimit
