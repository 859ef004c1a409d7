// -----------------------------------------------------------------------------
// File: internal/policy_match.h
// -----------------------------------------------------------------------------
//
// Matching primitives shared by `PolicySet` and its tests: the '*' glob, the
// shape of a pattern (exact, trailing-'*' prefix, inner '*'), and HTTP method
// classes. Internal: embedders use `mxlimit/policy_set.h`.

#ifndef MXLIMIT_INTERNAL_POLICY_MATCH_H_
#define MXLIMIT_INTERNAL_POLICY_MATCH_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mxlimit::internal {

// True if `pattern` matches all of `text`. Each '*' matches zero or more bytes
// ('/' included); every other byte matches itself. No allocation.
//
// Greedy with a single backtrack point (the last '*' seen): when a literal
// run fails, the last '*' absorbs one more byte and the run restarts. This is
// complete for '*'-only globs because a later '*' can absorb anything an
// earlier one could.
//
// PERFORMANCE WARNING: O(|pattern| * |text|) in the worst case (many inner
// '*' against a text that almost matches); linear for exact and trailing-'*'
// patterns. `PolicySet` only runs it on inner-'*' patterns per request.
constexpr bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0;
  size_t t = 0;
  size_t star = std::string_view::npos;  // Position of the last '*' seen.
  size_t mark = 0;                       // Text position that '*' resumes at.
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

enum class PatternKind : uint8_t {
  kExact,     // No '*'.
  kPrefix,    // Every '*' is at the end: matches texts starting with `prefix`.
  kInnerStar  // A '*' followed by a literal byte.
};

struct PatternShape {
  PatternKind kind = PatternKind::kExact;
  // Bytes that are not '*': a wildcard without any is the catch-all tier.
  size_t literal_bytes = 0;
  // Literal bytes outside `{name}` placeholders: the resolution tie-breaker
  // "more literal bytes". A placeholder names any value of its segment, as
  // '*' does, so `/rooms/{roomId}/send/*` is no more specific than
  // `/rooms/*/send/*`, and less than one room's `/rooms/!a:b/send/*`.
  size_t rank_bytes = 0;
  // Everything before the first '*' (the whole pattern when exact).
  std::string_view prefix;
};

// True for the bytes of a template placeholder: `{`, then one or more of
// [A-Za-z0-9_], then `}` (the route table's syntax), starting at `at`;
// `*size` receives its length.
constexpr bool PlaceholderAt(std::string_view text, size_t at, size_t* size) {
  if (at >= text.size() || text[at] != '{') return false;
  size_t end = at + 1;
  while (end < text.size()) {
    const char c = text[end];
    const bool name = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '_';
    if (!name) break;
    ++end;
  }
  if (end == at + 1 || end == text.size() || text[end] != '}') return false;
  *size = end + 1 - at;
  return true;
}

constexpr PatternShape ShapeOf(std::string_view pattern) {
  PatternShape shape;
  size_t first_star = pattern.find('*');
  shape.prefix = pattern.substr(0, first_star);
  size_t stars = 0;
  size_t placeholder_bytes = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    size_t size = 0;
    if (PlaceholderAt(pattern, i, &size)) {
      placeholder_bytes += size;
      i += size - 1;
    } else {
      stars += pattern[i] == '*';
    }
  }
  shape.literal_bytes = pattern.size() - stars;
  shape.rank_bytes = shape.literal_bytes - placeholder_bytes;
  if (first_star == std::string_view::npos) {
    shape.kind = PatternKind::kExact;
  } else if (pattern.find_first_not_of('*', first_star) ==
             std::string_view::npos) {
    shape.kind = PatternKind::kPrefix;
  } else {
    shape.kind = PatternKind::kInnerStar;
  }
  return shape;
}

// HTTP methods a policy may name, plus one class for everything else. A
// policy's methods are a bit mask over these classes; a policy without methods
// covers every class, `kOtherMethod` included.
enum MethodClass : uint8_t {
  kGet,
  kHead,
  kPost,
  kPut,
  kDelete,
  kPatch,
  kOptions,
  kConnect,
  kTrace,
  kOtherMethod,
  kMethodClassCount
};

using MethodMask = uint16_t;
inline constexpr MethodMask kAllMethods = (1u << kMethodClassCount) - 1;

inline constexpr std::string_view kMethodNames[kOtherMethod] = {
    "GET",   "HEAD",    "POST",    "PUT",  "DELETE",
    "PATCH", "OPTIONS", "CONNECT", "TRACE"};

// Methods are case-sensitive (RFC 9110, 9.1): "get" is `kOtherMethod`.
constexpr MethodClass ClassifyMethod(std::string_view method) {
  for (uint8_t i = 0; i < kOtherMethod; ++i) {
    if (method == kMethodNames[i]) return static_cast<MethodClass>(i);
  }
  return kOtherMethod;
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_INTERNAL_POLICY_MATCH_H_
