// Validation of the policy model (mxlimit/policy.h): every rule that a policy
// list must satisfy before `PolicySet::Compile` accepts it. The YAML loader
// (src/config/policies_section.cc) calls the per-field checks below rather
// than keeping rules of its own, so a file it accepts always compiles.

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/policy.h"
#include "mxlimit/route.h"
#include "src/util/quote.h"

namespace mxlimit {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

// Names end up in metrics labels and tab-separated CLI output, so they are
// kept to characters that need no quoting anywhere.
bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

std::string Subject(const Policy& p) {
  std::string s = absl::StrCat("policy ", QuoteForError(p.name));
  if (p.source_line > 0) absl::StrAppend(&s, " (line ", p.source_line, ")");
  return s;
}

// Policy and layer names: 1 to `max_bytes` name characters.
std::string NameProblem(std::string_view name, size_t max_bytes) {
  bool ok = !name.empty() && name.size() <= max_bytes;
  for (size_t i = 0; ok && i < name.size(); ++i) ok = IsNameChar(name[i]);
  if (ok) return "";
  return absl::StrCat("expected 1 to ", max_bytes,
                      " letters, digits, '.', '_', ':' or '-'");
}

// The problems of `concurrency`, `query_absent` and `query_present`, each
// passed to `add(field, message)`.
template <typename Add>
void AddInFlightProblems(const Policy& p, const std::string& who,
                         const Add& add) {
  if (p.concurrency.has_value()) {
    if (std::string problem = ConcurrencyProblem(*p.concurrency, p.rate);
        !problem.empty()) {
      add("concurrency", absl::StrCat(who, ": concurrency: ", problem));
    }
  }
  for (const auto& [field, names] :
       {std::pair<std::string_view, const std::vector<std::string>*>{
            "query_absent", &p.query_absent},
        {"query_present", &p.query_present}}) {
    for (const std::string& q : *names) {
      if (std::string problem = QueryNameProblem(q); !problem.empty()) {
        add(field, absl::StrCat(who, ": ", ToAbsl(field), ": got ",
                                QuoteForError(q), ", ", problem));
      }
    }
  }
}

}  // namespace

std::string_view SharingName(Sharing sharing) {
  switch (sharing) {
    case Sharing::kExact:
      return "exact";
    case Sharing::kApproximate:
      return "approximate";
    case Sharing::kLocal:
      return "local";
  }
  return "exact";
}

std::optional<Sharing> ParseSharing(std::string_view name) {
  for (Sharing s : {Sharing::kExact, Sharing::kApproximate, Sharing::kLocal}) {
    if (name == SharingName(s)) return s;
  }
  return std::nullopt;
}

std::string PolicyNameProblem(std::string_view name) {
  return NameProblem(name, kMaxPolicyNameBytes);
}

std::string PatternProblem(std::string_view match) {
  if (match == kFallbackRouteKey) return "";
  if (match.empty() || (match[0] != '/' && match[0] != '*')) {
    return absl::StrCat(
        "expected a path pattern starting with '/' or '*', or \"",
        ToAbsl(kFallbackRouteKey), "\"");
  }
  if (match.size() > kMaxPatternBytes) {
    return absl::StrCat("expected a path pattern of at most ", kMaxPatternBytes,
                        " bytes");
  }
  for (char ch : match) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) {
      return "expected a path pattern without spaces or control characters";
    }
    if (c == '?') {
      // Patterns match the path only, never the query or fragment.
      return "expected a pattern for the query-free path (drop the '?' or "
             "'#' part)";
    }
    if (c == '#') {
      // A '#' in a path is a room alias's sigil more often than a fragment:
      // clients must send it as %23, the spelling a pattern matches.
      std::string encoded;
      for (char e : match) {
        if (e == '#') {
          encoded += "%23";
        } else {
          encoded += e;
        }
      }
      return absl::StrCat(
          "expected a '#' in a path percent-encoded as %23: clients send it "
          "so (a raw '#' starts the fragment, which never reaches the "
          "server); did you mean ",
          QuoteForError(encoded), "?");
    }
  }
  return "";
}

std::string MethodProblem(std::string_view method) {
  // Operators write methods in any case; only the nine standard ones can be
  // told apart by the policy tables (every other method is one class).
  std::string upper(method);
  absl::AsciiStrToUpper(&upper);
  if (internal::ClassifyMethod(upper) != internal::kOtherMethod) return "";
  return "expected an HTTP method (GET, HEAD, POST, PUT, DELETE, OPTIONS, "
         "PATCH, CONNECT or TRACE)";
}

std::string ShareThresholdProblem(std::span<const std::string> match) {
  if (match.size() > 1) return "";
  for (const std::string& m : match) {
    if (m.find('*') != std::string::npos) return "";
  }
  // One exact pattern has one route: there is nothing to share.
  return "has no '*'; sharing needs a wildcard pattern or a list of patterns";
}

std::string LayerProblem(std::string_view layer) {
  return NameProblem(layer, kMaxLayerNameBytes);
}

std::string ClientPrefixProblem(const ClientPrefix& prefix, Scope scope) {
  std::string problem;
  if (scope != Scope::kIp && scope != Scope::kOrigin) {
    problem = absl::StrCat("expected no client_prefix on a ",
                           internal::ToAbsl(ScopeName(scope)),
                           "-scope policy (it masks client addresses; only "
                           "ip and origin scopes key by them)");
  }
  if (prefix.ipv4 < 0 || prefix.ipv4 > 32 || prefix.ipv6 < 0 ||
      prefix.ipv6 > 128) {
    absl::StrAppend(&problem, problem.empty() ? "" : "; and ",
                    "expected ipv4 from 0 to 32 and ipv6 from 0 to 128");
  }
  return problem;
}

std::string ConcurrencyProblem(const Concurrency& concurrency,
                               const Rate& rate) {
  if (concurrency.limit < 1 || concurrency.limit > kMaxConcurrency) {
    return absl::StrCat("got limit ", concurrency.limit, ", expected 1 to ",
                        kMaxConcurrency, " requests in flight");
  }
  if (concurrency.lease.count() <= 0 || concurrency.lease > kMaxLease) {
    return "expected a lease above 0 and at most 1h (how long an admitted "
           "request may hold its slot when it is never released)";
  }
  if (rate.kind() != Rate::Kind::kUnlimited) {
    return absl::StrCat("expected no rate beside it, got ", rate.ToString(),
                        " (an in-flight policy limits concurrency alone; "
                        "write the rate as another policy)");
  }
  return {};
}

std::string QueryNameProblem(std::string_view name) {
  if (name.empty() || name.size() > kMaxQueryNameBytes) {
    return absl::StrCat("expected a query parameter name of 1 to ",
                        kMaxQueryNameBytes, " bytes");
  }
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '&' || c == '=' || c == '#') {
      return "expected a query parameter name without '&', '=', '#', "
             "spaces or control bytes";
    }
  }
  return {};
}

std::string OnLimitProblem(OnLimit on_limit, std::chrono::nanoseconds max_delay,
                           const Rate& rate, bool in_flight) {
  if (on_limit == OnLimit::kDeny) {
    return max_delay.count() == 0
               ? std::string()
               : "max_delay is set, but on_limit is deny; set on_limit: "
                 "delay or remove max_delay";
  }
  if (rate.kind() != Rate::Kind::kLimited && !in_flight) {
    return "got delay, but the policy has no limited rate or in-flight "
           "limit to wait for";
  }
  if (max_delay.count() <= 0 || max_delay > kMaxDelayLimit) {
    return "got delay, but max_delay must be above 0 and at most 60s";
  }
  return {};
}

std::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kIp:
      return "ip";
    case Scope::kUser:
      return "user";
    case Scope::kOrigin:
      return "origin";
    case Scope::kRoom:
      return "room";
    case Scope::kTarget:
      return "target";
  }
  return "ip";
}

std::optional<Scope> ParseScope(std::string_view name) {
  for (Scope s : {Scope::kIp, Scope::kUser, Scope::kOrigin, Scope::kRoom,
                  Scope::kTarget}) {
    if (ScopeName(s) == name) return s;
  }
  return std::nullopt;
}

std::optional<LayerOverflow> FindLayerOverflow(
    std::span<const Policy> operator_policies, bool include_builtins) {
  std::vector<std::string_view> layers = {kDefaultLayer};
  auto add = [&](std::string_view layer) {
    if (std::find(layers.begin(), layers.end(), layer) != layers.end()) {
      return false;
    }
    layers.push_back(layer);
    return true;
  };
  std::vector<Policy> builtins;
  if (include_builtins) builtins = BuiltinPolicies();
  for (const Policy& b : builtins) {
    const bool replaced =
        std::any_of(operator_policies.begin(), operator_policies.end(),
                    [&](const Policy& p) { return p.name == b.name; });
    if (!replaced) add(b.layer);
  }
  std::optional<size_t> first_over;
  for (size_t i = 0; i < operator_policies.size(); ++i) {
    if (add(operator_policies[i].layer) && layers.size() > kMaxLayers &&
        !first_over.has_value()) {
      first_over = i;
    }
  }
  if (!first_over.has_value()) return std::nullopt;
  std::string in_use;
  for (size_t l = 0; l < kMaxLayers; ++l) {
    absl::StrAppend(&in_use, l == 0 ? "" : ", ", ToAbsl(layers[l]));
  }
  return LayerOverflow{
      *first_over,
      absl::StrCat("got ", QuoteForError(operator_policies[*first_over].layer),
                   ", layer ", kMaxLayers + 1, " of a set that holds at most ",
                   kMaxLayers, " (built-ins and ", ToAbsl(kDefaultLayer),
                   " included: ", in_use,
                   "); put this policy in one of those layers (the set has ",
                   layers.size(), " layers in all)")};
}

std::string PatternCanonicalNote(std::string_view pattern) {
  if (pattern == kFallbackRouteKey) return "";
  const std::string canonical = internal::CanonicalPath(pattern);
  if (canonical == pattern) return "";
  return absl::StrCat("is read as ", QuoteForError(canonical),
                      " (paths are compared in canonical form: escapes "
                      "decoded, version aliases folded)");
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

    if (std::string problem = PolicyNameProblem(p.name); !problem.empty()) {
      add(i, "name",
          absl::StrCat(who, ": name: got ", QuoteForError(p.name), ", ",
                       problem));
    } else if (auto [it, inserted] = first_with_name.emplace(p.name, i);
               !inserted) {
      const Policy& first = policies[it->second];
      std::string where = first.source_line > 0
                              ? absl::StrCat("line ", first.source_line)
                              : absl::StrCat("policy #", it->second + 1);
      add(i, "name",
          absl::StrCat(who, ": name: ", QuoteForError(p.name),
                       " is already used (", where,
                       "), expected a unique name"));
    }

    if (p.match.empty() || p.match.size() > kMaxPatternsPerPolicy) {
      add(i, "match",
          absl::StrCat(who, ": match: got ", p.match.size(),
                       " patterns, expected 1 to ", kMaxPatternsPerPolicy));
    }
    for (const std::string& m : p.match) {
      if (std::string problem = PatternProblem(m); !problem.empty()) {
        add(i, "match",
            absl::StrCat(who, ": match: got ", QuoteForError(m), ", ",
                         problem));
      }
    }

    for (const std::string& m : p.methods) {
      if (std::string problem = MethodProblem(m); !problem.empty()) {
        add(i, "methods",
            absl::StrCat(who, ": methods: got ", QuoteForError(m), ", ",
                         problem));
      }
    }

    if (std::string problem = OnLimitProblem(p.on_limit, p.max_delay, p.rate,
                                             p.concurrency.has_value());
        !problem.empty()) {
      add(i, "on_limit", absl::StrCat(who, ": on_limit: ", problem));
    }

    AddInFlightProblems(p, who, [&](std::string_view field, std::string m) {
      add(i, field, std::move(m));
    });

    for (const FieldProblem& f : OutcomeProblems(p)) {
      add(i, f.field,
          absl::StrCat(who, ": ", ToAbsl(f.field), ": ", f.problem));
    }

    if (p.share_threshold && !p.match.empty()) {
      if (std::string problem = ShareThresholdProblem(p.match);
          !problem.empty()) {
        add(i, "share_threshold",
            absl::StrCat(who, ": share_threshold: got true, but match ",
                         QuoteForError(p.match[0]), " ", problem));
      }
    }

    if (std::string problem = LayerProblem(p.layer); !problem.empty()) {
      add(i, "layer",
          absl::StrCat(who, ": layer: got ", QuoteForError(p.layer), ", ",
                       problem));
    }

    if (p.client_prefix.has_value()) {
      if (std::string problem = ClientPrefixProblem(*p.client_prefix, p.scope);
          !problem.empty()) {
        add(i, "client_prefix",
            absl::StrCat(who,
                         ": client_prefix: got {ipv4: ", p.client_prefix->ipv4,
                         ", ipv6: ", p.client_prefix->ipv6, "}, ", problem));
      }
    }
  }
  return errors;
}

}  // namespace mxlimit
