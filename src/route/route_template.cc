// The route table's template syntax, validation and expansion (prefix
// aliases, forms). See src/route/route_template.h and
// src/route/route_trie.h.

#include "src/route/route_template.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/route/byte_scan.h"
#include "src/route/route_trie.h"

namespace mxlimit::internal {
namespace {

bool IsNameByte(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool IsLiteralByte(char c) {
  // Literals are matched against raw, still-encoded targets, so they hold no
  // '%' (an encoded literal would never equal what a client sends) and
  // nothing the matcher treats as a delimiter or rejects.
  return !IsTargetStopByte(static_cast<unsigned char>(c)) && c != '/' &&
         c != '%' && c != '{' && c != '}';
}

std::string_view OriginName(ExpandedPattern::Origin origin) {
  switch (origin) {
    case ExpandedPattern::Origin::kTemplate:
      return "route";
    case ExpandedPattern::Origin::kForm:
      return "form";
    case ExpandedPattern::Origin::kPrefixAlias:
      return "prefix-alias expansion";
  }
  return "?";
}

}  // namespace

std::string TemplateShape(const std::vector<ParsedSegment>& segments) {
  std::string shape;
  for (const ParsedSegment& s : segments) {
    shape.push_back('/');
    if (s.placeholder) {
      shape.append("{}");
    } else {
      shape.append(s.text.data(), s.text.size());
    }
  }
  return shape;
}

absl::Status ParseTemplate(std::string_view text,
                           std::vector<ParsedSegment>* out) {
  out->clear();
  auto error = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("route template \"", ToAbsl(text), "\": ", ToAbsl(why)));
  };
  if (text.empty() || text[0] != '/') return error("must start with '/'");
  // Lazily, so that a template of a million segments stops at the limit.
  for (const absl::string_view piece :
       absl::StrSplit(ToAbsl(text.substr(1)), '/')) {
    const std::string_view segment = FromAbsl(piece);
    // Pieces are views into `text`: the last one ends where it ends.
    const bool last =
        segment.data() + segment.size() == text.data() + text.size();
    ParsedSegment parsed;
    if (!segment.empty() && segment.front() == '{') {
      if (segment.size() < 3 || segment.back() != '}') {
        return error("a placeholder is '{name}' and fills its segment");
      }
      parsed.placeholder = true;
      parsed.text = segment.substr(1, segment.size() - 2);
      for (char c : parsed.text) {
        if (!IsNameByte(c)) return error("placeholder names are [A-Za-z0-9_]");
      }
    } else {
      if (segment.empty() && !last) return error("empty segment ('//')");
      if (IsDotSegment(segment.data(), segment.size())) {
        return error("dot segment");
      }
      for (char c : segment) {
        if (!IsLiteralByte(c)) {
          return error(
              "literal segments are raw path bytes without '%', "
              "braces, '?', '#', spaces or controls");
        }
      }
      parsed.text = segment;
    }
    out->push_back(parsed);
    if (out->size() > RouteTrie::kMaxSegments) {
      return error(
          absl::StrCat("more than ", RouteTrie::kMaxSegments, " segments"));
    }
  }
  return absl::OkStatus();
}

namespace {

// Every prefix alias and the stable prefix it stands for are literal
// segments, so an alias rewrites a pattern's head without changing its shape.
absl::Status ValidatePrefixAliases(const RouteTableSpec& spec) {
  std::vector<ParsedSegment> parsed;
  for (const PrefixAliasRow& alias : spec.prefix_aliases) {
    for (std::string_view prefix : {alias.alias_prefix, alias.stable_prefix}) {
      absl::Status status = ParseTemplate(prefix, &parsed);
      if (!status.ok()) return status;
      for (const ParsedSegment& s : parsed) {
        if (s.placeholder || s.text.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "prefix alias \"", ToAbsl(prefix),
              "\": a prefix is literal segments without a trailing '/'"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<ExpandedPattern>> ExpandRouteTable(
    const RouteTableSpec& spec) {
  using Origin = ExpandedPattern::Origin;
  if (spec.templates.size() >= UINT16_MAX) {
    return absl::InvalidArgumentError("route table: too many templates");
  }
  std::vector<ExpandedPattern> explicit_patterns;
  absl::flat_hash_map<std::string, RouteId> template_ids;
  for (size_t i = 0; i < spec.templates.size(); ++i) {
    auto id = static_cast<RouteId>(i + 1);
    template_ids.emplace(std::string(spec.templates[i]), id);
    explicit_patterns.push_back(
        {std::string(spec.templates[i]), id, Origin::kTemplate});
  }
  for (const RouteFormRow& form : spec.forms) {
    auto it = template_ids.find(std::string(form.route_template));
    if (it == template_ids.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "route form \"", ToAbsl(form.form), "\" names \"",
          ToAbsl(form.route_template), "\", which is not a route template"));
    }
    explicit_patterns.push_back(
        {std::string(form.form), it->second, Origin::kForm});
  }

  absl::Status aliases_ok = ValidatePrefixAliases(spec);
  if (!aliases_ok.ok()) return aliases_ok;

  std::vector<ParsedSegment> parsed;
  std::vector<ExpandedPattern> result;
  absl::flat_hash_map<std::string, size_t> by_shape;
  auto add = [&](ExpandedPattern pattern) -> absl::Status {
    absl::Status status = ParseTemplate(pattern.pattern, &parsed);
    if (!status.ok()) return status;
    auto [it, inserted] =
        by_shape.emplace(TemplateShape(parsed), result.size());
    if (inserted) {
      result.push_back(std::move(pattern));
      return absl::OkStatus();
    }
    const ExpandedPattern& existing = result[it->second];
    if (pattern.origin == Origin::kPrefixAlias) {
      // An explicit line for the same shape overrides an alias expansion;
      // two expansions may only coincide when they serve the same key.
      if (existing.origin != Origin::kPrefixAlias ||
          existing.id == pattern.id) {
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(OriginName(pattern.origin)), " \"", pattern.pattern, "\" (key ",
        ToAbsl(spec.templates[pattern.id - 1]), ") collides with ",
        ToAbsl(OriginName(existing.origin)), " \"", existing.pattern,
        "\" (key ", ToAbsl(spec.templates[existing.id - 1]), ")"));
  };

  for (const ExpandedPattern& pattern : explicit_patterns) {
    absl::Status status = add(pattern);
    if (!status.ok()) return status;
  }
  for (const ExpandedPattern& pattern : explicit_patterns) {
    for (const PrefixAliasRow& alias : spec.prefix_aliases) {
      std::string_view text = pattern.pattern;
      std::string_view stable = alias.stable_prefix;
      if (text.size() > stable.size() &&
          text.substr(0, stable.size()) == stable &&
          text[stable.size()] == '/') {
        std::string aliased(alias.alias_prefix);
        aliased.append(text.substr(stable.size()));
        absl::Status status =
            add({std::move(aliased), pattern.id, Origin::kPrefixAlias});
        if (!status.ok()) return status;
      }
    }
  }
  return result;
}

}  // namespace mxlimit::internal
