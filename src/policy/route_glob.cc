#include "src/policy/route_glob.h"

#include <cstddef>
#include <vector>

#include "mxlimit/internal/canonical_path.h"

namespace mxlimit::internal {
namespace {

bool IsPlaceholder(std::string_view segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

bool IsStar(char c) { return c == '*' || c == kSegmentStar; }

}  // namespace

std::optional<std::string> RouteFormGlob(std::string_view form) {
  if (form.empty() || form.front() != '/') return std::nullopt;
  std::vector<std::string_view> segments;
  for (size_t start = 1;;) {
    const size_t end = form.find('/', start);
    segments.push_back(
        form.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  // How many leading segments a version fold can read: two to know the API,
  // then up to two more (`api/v1`) under the APIs that fold.
  size_t fold_segments = 2;
  if (segments.size() >= 2 && segments[0] == "_matrix" &&
      (segments[1] == "client" || segments[1] == "media")) {
    fold_segments = 4;
  }
  // Canonical form first (placeholders spelled as one '{' each, which
  // canonicalization leaves alone), then each '{' becomes kSegmentStar: the
  // fold never reaches a placeholder, so the two steps commute.
  std::string text;
  text.reserve(form.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string_view segment = segments[i];
    text.push_back('/');
    if (IsPlaceholder(segment)) {
      if (i < fold_segments) return std::nullopt;
      text.push_back('{');
      continue;
    }
    if (segment.find_first_of(std::string_view("%{\0", 3)) !=
        std::string_view::npos) {
      return std::nullopt;
    }
    text.append(segment);
  }
  std::string glob = CanonicalPath(text);
  for (char& c : glob) {
    if (c == '{') c = kSegmentStar;
  }
  return glob;
}

std::string_view FormGlobHead(std::string_view glob) {
  size_t i = 0;
  while (i < glob.size() && !IsStar(glob[i])) ++i;
  return glob.substr(0, i);
}

namespace {

// Whether the literal heads of `a` (a pattern) and `b` (a form glob) agree up
// to the first wildcard of either, and their literal tails back to the last.
bool LiteralEndsAgree(std::string_view a, std::string_view b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == '*' || IsStar(b[i])) break;
    if (a[i] != b[i]) return false;
  }
  for (size_t i = 1; i <= a.size() && i <= b.size(); ++i) {
    const char x = a[a.size() - i];
    const char y = b[b.size() - i];
    if (x == '*' || IsStar(y)) break;
    if (x != y) return false;
  }
  return true;
}

}  // namespace

bool GlobsOverlap(std::string_view pattern, std::string_view form) {
  const std::string_view a = pattern;
  const std::string_view b = form;
  // Every common text starts with both literal heads and ends with both
  // literal tails: compare those first, which settles most pairs.
  if (!LiteralEndsAgree(a, b)) return false;
  // reach[i][j]: some text takes `a` to position i and `b` to j. A common
  // text exists in which no byte is produced by two wildcards at once (drop
  // such a byte and both still match), so these moves suffice: a wildcard
  // ends, a wildcard produces the other side's literal byte (a segment star
  // any but '/'), or two literals agree.
  const size_t na = a.size();
  const size_t nb = b.size();
  std::vector<char> reach((na + 1) * (nb + 1), 0);
  auto at = [&](size_t i, size_t j) -> char& {
    return reach[i * (nb + 1) + j];
  };
  at(0, 0) = 1;
  for (size_t i = 0; i <= na; ++i) {
    for (size_t j = 0; j <= nb; ++j) {
      if (!at(i, j)) continue;
      const bool a_star = i < na && a[i] == '*';
      const bool b_star = j < nb && IsStar(b[j]);
      if (a_star) at(i + 1, j) = 1;
      if (b_star) at(i, j + 1) = 1;
      if (i == na || j == nb) continue;
      if (a_star && !b_star) at(i, j + 1) = 1;
      if (b_star && !a_star && (b[j] == '*' || a[i] != '/')) {
        at(i + 1, j) = 1;
      }
      if (!a_star && !b_star && a[i] == b[j]) at(i + 1, j + 1) = 1;
    }
  }
  return at(na, nb) != 0;
}

}  // namespace mxlimit::internal
