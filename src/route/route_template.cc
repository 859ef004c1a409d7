// The route table's template syntax, validation and expansion (prefix
// aliases, forms). See src/route/route_template.h and
// src/route/route_trie.h.

#include "src/route/route_template.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/route/byte_scan.h"
#include "src/route/route_trie.h"

namespace mxlimit::internal {
namespace {

bool IsNameByte(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Literals are matched against raw, still-encoded targets, so they hold no
// '%' (an encoded literal would never equal what a client sends) and nothing
// the matcher treats as a delimiter or rejects. As a table: every merge
// parses every pattern of the table.
constexpr std::array<bool, 256> kLiteralBytes = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) {
    table[c] = !IsTargetStopByte(static_cast<unsigned char>(c)) && c != '/' &&
               c != '%' && c != '{' && c != '}';
  }
  return table;
}();

bool IsLiteralByte(char c) {
  return kLiteralBytes[static_cast<unsigned char>(c)];
}

// True when `alias` spells `text` anew: `text` lies under its stable prefix.
bool Spells(std::string_view text, const PrefixAliasRow& alias) {
  const std::string_view stable = alias.stable_prefix;
  return text.size() > stable.size() &&
         text.substr(0, stable.size()) == stable && text[stable.size()] == '/';
}

// The bytes of every pattern ExpandRouteTable may add for `spec`: each
// explicit line and each of its version spellings.
size_t ExpandedBytes(const RouteTableSpec& spec) {
  size_t bytes = 0;
  auto line = [&](std::string_view text) {
    bytes += text.size();
    for (const PrefixAliasRow& alias : spec.prefix_aliases) {
      if (Spells(text, alias)) {
        bytes += alias.alias_prefix.size() + text.size() -
                 alias.stable_prefix.size();
      }
    }
  };
  for (std::string_view text : spec.templates) line(text);
  for (const RouteFormRow& form : spec.forms) line(form.form);
  return bytes;
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

void AppendTemplateShape(const std::vector<ParsedSegment>& segments,
                         std::string* out) {
  for (const ParsedSegment& s : segments) {
    out->push_back('/');
    if (s.placeholder) {
      out->append("{}");
    } else {
      out->append(s.text.data(), s.text.size());
    }
  }
}

std::string TemplateShape(const std::vector<ParsedSegment>& segments) {
  std::string shape;
  AppendTemplateShape(segments, &shape);
  return shape;
}

namespace {

// One segment of a template into `parsed`; the reason it is refused, or
// empty.
std::string_view ParseTemplateSegment(std::string_view segment, bool last,
                                      ParsedSegment& parsed) {
  if (!segment.empty() && segment.front() == '{') {
    if (segment.size() < 3 || segment.back() != '}') {
      return "a placeholder is '{name}' and fills its segment";
    }
    parsed.placeholder = true;
    parsed.text = segment.substr(1, segment.size() - 2);
    for (char c : parsed.text) {
      if (!IsNameByte(c)) return "placeholder names are [A-Za-z0-9_]";
    }
    return {};
  }
  if (segment.empty() && !last) return "empty segment ('//')";
  if (IsDotSegment(segment.data(), segment.size())) return "dot segment";
  for (char c : segment) {
    if (!IsLiteralByte(c)) {
      return "literal segments are raw path bytes without '%', braces, '?', "
             "'#', spaces or controls";
    }
  }
  parsed.text = segment;
  return {};
}

}  // namespace

absl::Status ParseTemplate(std::string_view text,
                           std::vector<ParsedSegment>* out) {
  out->clear();
  auto error = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("route template \"", ToAbsl(text), "\": ", ToAbsl(why)));
  };
  if (text.empty() || text[0] != '/') return error("must start with '/'");
  // One segment at a time, so that a template of a million segments stops at
  // the limit.
  for (size_t start = 1, end = 0; end < text.size(); start = end + 1) {
    end = std::min(text.find('/', start), text.size());
    ParsedSegment parsed;
    const std::string_view why = ParseTemplateSegment(
        text.substr(start, end - start), end == text.size(), parsed);
    if (!why.empty()) return error(why);
    // A name says which identifier a segment holds (an alias must name the
    // same ones); two segments cannot hold the same one.
    const bool repeated =
        parsed.placeholder &&
        std::any_of(out->begin(), out->end(), [&](const ParsedSegment& e) {
          return e.placeholder && e.text == parsed.text;
        });
    if (repeated) {
      return error(absl::StrCat("the placeholder {", ToAbsl(parsed.text),
                                "} appears twice; give each its own name"));
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
    const RouteTableSpec& spec, ExpansionRuns* runs) {
  using Origin = ExpandedPattern::Origin;
  if (spec.templates.size() >= UINT16_MAX) {
    return absl::InvalidArgumentError("route table: too many templates");
  }
  // The explicit lines, templates then forms, as views into `spec`: a
  // pattern's text is copied once, into the result.
  struct Line {
    std::string_view text;
    RouteId id;
    Origin origin;
  };
  std::vector<Line> explicit_lines;
  explicit_lines.reserve(spec.templates.size() + spec.forms.size());
  absl::flat_hash_map<std::string_view, RouteId> template_ids;
  template_ids.reserve(spec.templates.size());
  for (size_t i = 0; i < spec.templates.size(); ++i) {
    auto id = static_cast<RouteId>(i + 1);
    template_ids.emplace(spec.templates[i], id);
    explicit_lines.push_back({spec.templates[i], id, Origin::kTemplate});
  }
  for (const RouteFormRow& form : spec.forms) {
    auto it = template_ids.find(form.route_template);
    if (it == template_ids.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "route form \"", ToAbsl(form.form), "\" names \"",
          ToAbsl(form.route_template), "\", which is not a route template"));
    }
    explicit_lines.push_back({form.form, it->second, Origin::kForm});
  }

  absl::Status aliases_ok = ValidatePrefixAliases(spec);
  if (!aliases_ok.ok()) return aliases_ok;

  // Every pattern's shape goes into one buffer sized up front for all the
  // patterns below (a shape is never longer than its pattern), so the views
  // `by_shape` keeps stay valid: no string per pattern.
  std::string shapes;
  shapes.reserve(ExpandedBytes(spec));
  std::vector<ParsedSegment> parsed;
  std::vector<ExpandedPattern> result;
  result.reserve(explicit_lines.size());
  absl::flat_hash_map<std::string_view, size_t> by_shape;
  by_shape.reserve(explicit_lines.size());
  auto add = [&](ExpandedPattern pattern) -> absl::Status {
    absl::Status status = ParseTemplate(pattern.pattern, &parsed);
    if (!status.ok()) return status;
    if (shapes.capacity() - shapes.size() < pattern.pattern.size()) {
      return absl::InternalError("route table: shape buffer undersized");
    }
    const size_t at = shapes.size();
    AppendTemplateShape(parsed, &shapes);
    auto [it, inserted] =
        by_shape.emplace(std::string_view(shapes).substr(at), result.size());
    if (inserted) {
      result.push_back(std::move(pattern));
      return absl::OkStatus();
    }
    shapes.resize(at);
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

  for (const Line& line : explicit_lines) {
    absl::Status status = add({std::string(line.text), line.id, line.origin});
    if (!status.ok()) return status;
  }
  // Every explicit line is in (a collision was an error).
  const size_t explicit_count = result.size();
  std::optional<size_t> template_spellings;
  for (const Line& line : explicit_lines) {
    if (line.origin == Origin::kForm && !template_spellings.has_value()) {
      template_spellings = result.size() - explicit_count;
    }
    for (const PrefixAliasRow& alias : spec.prefix_aliases) {
      if (Spells(line.text, alias)) {
        std::string aliased(alias.alias_prefix);
        aliased.append(line.text.substr(alias.stable_prefix.size()));
        absl::Status status =
            add({std::move(aliased), line.id, Origin::kPrefixAlias});
        if (!status.ok()) return status;
      }
    }
  }
  if (runs != nullptr) {
    runs->templates = spec.templates.size();
    runs->forms = spec.forms.size();
    runs->template_spellings =
        template_spellings.value_or(result.size() - explicit_count);
  }
  return result;
}

}  // namespace mxlimit::internal
