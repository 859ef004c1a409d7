#include "src/policy/route_glob.h"

#include <cstddef>
#include <vector>

#include "absl/strings/str_split.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/policy_match.h"

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
  for (const absl::string_view segment :
       absl::StrSplit(ToAbsl(form.substr(1)), '/')) {
    segments.push_back(FromAbsl(segment));
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

// Rejects most pairs in O(head + tail): every common text starts with both
// literal heads and ends with both literal tails.
bool HeadsAndTailsAgree(std::string_view a, std::string_view b) {
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

// The search over positions as 64-bit rows (forms under 64 bytes): bit j of
// `row` is "the text so far takes `b` to position j". Same moves as
// GlobsOverlapByCells, a whole row at a time.
bool GlobsOverlapByRows(std::string_view a, std::string_view b) {
  const size_t nb = b.size();
  const uint64_t all = (uint64_t{2} << nb) - 1;  // positions 0..nb
  uint64_t stars = 0;                            // b[j] is a wildcard
  uint64_t full_stars = 0;  // b[j] is '*' (may produce '/')
  for (size_t j = 0; j < nb; ++j) {
    if (IsStar(b[j])) stars |= uint64_t{1} << j;
    if (b[j] == '*') full_stars |= uint64_t{1} << j;
  }
  // Where b holds each literal byte: masks[u] is valid where `present` has
  // bit u (no 2 KiB clear per call).
  uint64_t present[4] = {0, 0, 0, 0};
  uint64_t masks[256];
  for (size_t j = 0; j < nb; ++j) {
    if (IsStar(b[j])) continue;
    const auto u = static_cast<uint8_t>(b[j]);
    if (((present[u >> 6] >> (u & 63)) & 1) == 0) {
      present[u >> 6] |= uint64_t{1} << (u & 63);
      masks[u] = 0;
    }
    masks[u] |= uint64_t{1} << j;
  }
  auto literal = [&](char c) -> uint64_t {
    const auto u = static_cast<uint8_t>(c);
    return ((present[u >> 6] >> (u & 63)) & 1) != 0 ? masks[u] : 0;
  };
  // A wildcard of b may end at once: j reachable and b[j] a wildcard makes
  // j + 1 reachable.
  auto close = [&](uint64_t x) {
    for (uint64_t y = x | ((x & stars) << 1); y != x;
         y = x | ((x & stars) << 1)) {
      x = y;
    }
    return x;
  };
  uint64_t row = close(1);
  for (const char c : a) {
    if (c == '*') {
      // a's '*' produces anything b needs from the first reachable position.
      row = all & ~((row & -row) - 1);
    } else {
      const uint64_t eats = row & (c == '/' ? full_stars : stars);
      row = close(eats | ((row & literal(c)) << 1));
    }
    if (row == 0) return false;
  }
  return (row >> nb) & 1;
}

// reach[i][j]: some text takes `a` to position i and `b` to j. A common text
// exists in which no byte is produced by two wildcards at once (drop such a
// byte and both still match), so these moves suffice: a wildcard ends, a
// wildcard produces the other side's literal byte (a segment star any but
// '/'), or two literals agree.
bool GlobsOverlapByCells(std::string_view a, std::string_view b) {
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

}  // namespace

bool GlobsOverlap(std::string_view pattern, std::string_view form,
                  OverlapSearch search) {
  if (!HeadsAndTailsAgree(pattern, form)) return false;
  // A form without wildcards is one path: a plain match.
  if (form.find_first_of(std::string_view("*\0", 2)) ==
      std::string_view::npos) {
    return GlobMatch(pattern, form);
  }
  // The literal head and tail the two share (HeadsAndTailsAgree compared
  // them) start and end every common text, produced by no wildcard: the
  // search needs only what lies between (most forms then fit in a row).
  size_t head = 0;
  while (head < pattern.size() && head < form.size() && pattern[head] != '*' &&
         !IsStar(form[head])) {
    ++head;
  }
  size_t tail = 0;
  while (tail < pattern.size() - head && tail < form.size() - head &&
         pattern[pattern.size() - 1 - tail] != '*' &&
         !IsStar(form[form.size() - 1 - tail])) {
    ++tail;
  }
  pattern = pattern.substr(head, pattern.size() - head - tail);
  form = form.substr(head, form.size() - head - tail);
  if (search == OverlapSearch::kRows ||
      (search == OverlapSearch::kAuto && form.size() < 64)) {
    return GlobsOverlapByRows(pattern, form);
  }
  return GlobsOverlapByCells(pattern, form);
}

}  // namespace mxlimit::internal
