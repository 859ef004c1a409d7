#include "src/engine/room_locator.h"

#include <algorithm>
#include <utility>

namespace mxlimit::internal {
namespace {

constexpr size_t kMaxSegments = 24;

bool IsPlaceholder(std::string_view segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte at raw[i], a %XX escape decoded (then `i` is left on its last
// digit); a broken escape is just its bytes.
char DecodedAt(std::string_view raw, size_t& i) {
  if (raw[i] == '%' && i + 2 < raw.size()) {
    const int hi = HexValue(raw[i + 1]);
    const int lo = HexValue(raw[i + 2]);
    if (hi >= 0 && lo >= 0) {
      i += 2;
      return static_cast<char>(hi * 16 + lo);
    }
  }
  return raw[i];
}

// Splits `path` (leading '/') into at most kMaxSegments segments; returns
// the count, or kMaxSegments + 1 when there are more.
size_t Split(std::string_view path, std::string_view* out) {
  if (path.empty() || path[0] != '/') return 0;
  size_t n = 0;
  size_t start = 1;
  while (true) {
    size_t end = start;
    while (end < path.size() && path[end] != '/') ++end;
    if (n == kMaxSegments) return kMaxSegments + 1;
    out[n++] = path.substr(start, end - start);
    if (end >= path.size()) break;
    start = end + 1;
  }
  return n;
}

// Whether raw segment `raw` spells `literal`, escapes decoded.
bool Spells(std::string_view raw, std::string_view literal) {
  size_t j = 0;
  for (size_t i = 0; i < raw.size(); ++i, ++j) {
    const char c = DecodedAt(raw, i);
    if (j >= literal.size() || literal[j] != c) return false;
  }
  return j == literal.size();
}

}  // namespace

RoomLocator::RoomLocator(const RouteNormalizer& normalizer)
    : forms_(normalizer.size()) {
  for (const RouteForm& f : normalizer.forms()) {
    std::string_view parts[kMaxSegments];
    const size_t n = Split(f.pattern, parts);
    if (n == 0 || n > kMaxSegments || f.id >= forms_.size()) continue;
    Form form;
    bool has_room = false;
    for (size_t i = 0; i < n; ++i) {
      if (!has_room && IsRoomPlaceholder(parts[i])) {
        has_room = true;
        form.room = static_cast<uint8_t>(i);
      }
      form.segments.emplace_back(IsPlaceholder(parts[i]) ? std::string_view()
                                                         : parts[i]);
    }
    if (has_room) forms_[f.id].push_back(std::move(form));
  }
  by_count_.assign(forms_.size(), {});
  for (size_t id = 0; id < forms_.size(); ++id) {
    for (const Form& form : forms_[id]) {
      const auto n = static_cast<uint8_t>(form.segments.size());
      auto it = std::find_if(by_count_[id].begin(), by_count_[id].end(),
                             [&](const ByCount& b) { return b.count == n; });
      if (it == by_count_[id].end()) {
        by_count_[id].push_back(ByCount{n, form.room, true});
      } else if (it->room != form.room) {
        it->agreed = false;
      }
    }
  }
}

std::string_view RoomLocator::RawSegment(RouteId route,
                                         std::string_view path) const {
  if (route >= forms_.size() || forms_[route].empty()) return {};
  // The shortcut: count the segments, and if the forms of that count agree
  // on the room's place, take that segment.
  if (!path.empty() && path[0] == '/') {
    size_t count = 1;
    for (size_t i = 1; i < path.size(); ++i) count += path[i] == '/';
    for (const ByCount& b : by_count_[route]) {
      if (b.count != count || !b.agreed) continue;
      size_t start = 1;
      for (uint8_t k = 0; k < b.room; ++k) start = path.find('/', start) + 1;
      const size_t end = path.find('/', start);
      return path.substr(start, end == std::string_view::npos
                                    ? std::string_view::npos
                                    : end - start);
    }
  }
  std::string_view parts[kMaxSegments];
  const size_t n = Split(path, parts);
  if (n == 0 || n > kMaxSegments) return {};
  const Form* fallback = nullptr;
  for (const Form& form : forms_[route]) {
    if (form.segments.size() != n) continue;
    bool literals = true;
    for (size_t i = 0; i < n && literals; ++i) {
      const std::string& lit = form.segments[i];
      literals = lit.empty() || parts[i] == lit || Spells(parts[i], lit);
    }
    if (literals) return parts[form.room];
    if (fallback == nullptr) fallback = &form;
  }
  // The normalizer served the path as this route, so a form fits; an
  // escape spelling Spells does not decode lands here.
  return fallback != nullptr ? parts[fallback->room] : std::string_view();
}

RoomValue RoomLocator::Find(RouteId route, std::string_view path,
                            std::array<char, kMaxRoomBytes>& buf) const {
  return DecodeRoom(RawSegment(route, path), buf);
}

RoomValue DecodeRoom(std::string_view raw,
                     std::array<char, kMaxRoomBytes>& buf) {
  size_t n = 0;
  bool valid = true;
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = DecodedAt(raw, i);
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7F) valid = false;
    if (n == buf.size()) return {std::string_view(buf.data(), n), false};
    buf[n++] = c;
  }
  valid = valid && n >= 2 && (buf[0] == '!' || buf[0] == '#');
  return {std::string_view(buf.data(), n), valid};
}

}  // namespace mxlimit::internal
