// Helpers for the route normalizer tests: the TSV route lists in tests/data,
// template instantiation, and a naive reference matcher to compare the trie
// against. Header-only so that only the route tests compile it.

#ifndef MXLIMIT_TESTS_TESTING_ROUTE_TEST_SUPPORT_H_
#define MXLIMIT_TESTS_TESTING_ROUTE_TEST_SUPPORT_H_

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/route.h"
#include "src/route/route_trie.h"

namespace mxlimit::testing {

// One default normalizer per test binary: building one is cheap, but sharing
// it also exercises the read-only contract.
inline const RouteNormalizer& SharedNormalizer() {
  static const auto* normalizer = new RouteNormalizer();
  return *normalizer;
}

// One row of a TSV file with a header line, by column name.
using TsvRow = std::map<std::string, std::string>;

// Reads tests/data/<name>; an unreadable file yields no rows (the callers
// assert a minimum row count, so that cannot pass silently).
inline std::vector<TsvRow> ReadTsv(std::string_view name) {
  std::ifstream in(std::string(MXLIMIT_TEST_DATA_DIR) + "/" +
                   std::string(name));
  std::vector<TsvRow> rows;
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& text) {
    std::vector<std::string> fields;
    std::stringstream stream(text);
    std::string field;
    while (std::getline(stream, field, '\t')) fields.push_back(field);
    if (!text.empty() && text.back() == '\t') fields.emplace_back();
    return fields;
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields = split(line);
    if (header.empty()) {
      header = fields;
      continue;
    }
    TsvRow row;
    for (size_t i = 0; i < header.size(); ++i) {
      row[header[i]] = i < fields.size() ? fields[i] : "";
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// `route_template` with every `{name}` replaced by `value`.
inline std::string Instantiate(std::string_view route_template,
                               std::string_view value) {
  std::string out;
  for (size_t i = 0; i < route_template.size(); ++i) {
    if (route_template[i] == '{') {
      i = route_template.find('}', i);
      out.append(value);
    } else {
      out.push_back(route_template[i]);
    }
  }
  return out;
}

// Identifier shapes every placeholder is instantiated with: ordinary IDs,
// encoded and raw sigils, the hostile encodings the issue lists, raw UTF-8,
// broken percent-encoding, a long value. None equals a literal segment of the
// table (that case has its own tests: the literal wins).
inline const std::vector<std::string>& IdentifierShapes() {
  static const auto* shapes = new std::vector<std::string>{
      "abc",
      "%21abcdef%3Aexample.org",
      "!abcdef:example.org",
      "%24Ab3%2Fcd%2Bef%3D",  // room v3 event ID with an encoded '/'
      "@alice:example.org",
      "%40%3Aexample.org",             // historical user ID, empty localpart
      "a%3Fb",                         // encoded '?'
      "a%23b",                         // encoded '#'
      "a%25b",                         // encoded '%'
      "a%2F..%2Fb",                    // encoded dot segment
      "caf\xC3\xA9-\xF0\x9F\x98\x80",  // raw UTF-8
      "a+b=c",
      "%zz%4",  // broken percent-encoding
      "%",
      "%2e%2E",  // encoded "..": not a dot segment as received
      "m.room.message",
      "1",
      std::string(300, 'x'),
  };
  return *shapes;
}

// A deliberately naive matcher over the expanded table: split the path, try
// every pattern, prefer the one whose segments are literal earliest. It
// shares no code with the trie beyond ExpandRouteTable.
class ReferenceMatcher {
 public:
  explicit ReferenceMatcher(const internal::RouteTableSpec& spec) {
    absl::StatusOr<std::vector<internal::ExpandedPattern>> expanded =
        internal::ExpandRouteTable(spec);
    if (!expanded.ok()) return;
    for (const internal::ExpandedPattern& pattern : *expanded) {
      Pattern p;
      p.id = pattern.id;
      std::string_view text = pattern.pattern;
      size_t start = 1;
      while (true) {
        size_t end = text.find('/', start);
        std::string_view segment = text.substr(
            start, end == std::string_view::npos ? end : end - start);
        Segment s;
        s.placeholder = !segment.empty() && segment.front() == '{';
        s.text = std::string(segment);
        if (s.placeholder) {
          std::string_view name = segment.substr(1, segment.size() - 2);
          for (std::string_view empty_ok : spec.may_be_empty) {
            if (empty_ok == name) s.may_be_empty = true;
          }
        }
        p.segments.push_back(std::move(s));
        if (end == std::string_view::npos) break;
        start = end + 1;
      }
      patterns_.push_back(std::move(p));
    }
  }

  size_t pattern_count() const { return patterns_.size(); }

  RouteId Match(std::string_view target) const {
    std::string_view path = QueryFreePath(target);
    if (path.empty() || path[0] != '/') return kFallbackRouteId;
    for (char c : path) {
      auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u == 0x7F) return kFallbackRouteId;
    }
    std::vector<std::string_view> segments;
    size_t start = 1;
    while (true) {
      size_t end = path.find('/', start);
      segments.push_back(path.substr(
          start, end == std::string_view::npos ? end : end - start));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
    for (std::string_view s : segments) {
      if (s == "." || s == "..") return kFallbackRouteId;
    }
    const Pattern* best = nullptr;
    for (const Pattern& p : patterns_) {
      if (p.segments.size() != segments.size()) continue;
      bool ok = true;
      for (size_t i = 0; ok && i < segments.size(); ++i) {
        const Segment& s = p.segments[i];
        // A literal matches its decoded spelling (route.h); a segment
        // without '%' is its own canonical form.
        ok = s.placeholder ? (!segments[i].empty() || s.may_be_empty)
                           : s.text == internal::CanonicalPath(segments[i]);
      }
      if (ok && (best == nullptr || MoreLiteral(p, *best))) best = &p;
    }
    return best == nullptr ? kFallbackRouteId : best->id;
  }

 private:
  struct Segment {
    std::string text;
    bool placeholder = false;
    bool may_be_empty = false;
  };
  struct Pattern {
    std::vector<Segment> segments;
    RouteId id = kFallbackRouteId;
  };

  // True when `a` has a literal at the first position where `a` and `b`
  // differ in kind.
  static bool MoreLiteral(const Pattern& a, const Pattern& b) {
    for (size_t i = 0; i < a.segments.size(); ++i) {
      if (a.segments[i].placeholder != b.segments[i].placeholder) {
        return !a.segments[i].placeholder;
      }
    }
    return false;
  }

  std::vector<Pattern> patterns_;
};

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_ROUTE_TEST_SUPPORT_H_
