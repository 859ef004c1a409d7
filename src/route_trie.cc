// The route table's validation and expansion, the trie builder, and the
// allocation-free matcher. See include/mxlimit/internal/route_trie.h.

#include "mxlimit/internal/route_trie.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/byte_scan.h"

namespace mxlimit::internal {
namespace {

// --- Byte classes for the one pass over the target -------------------------

constexpr uint8_t kPlain = 0;    // part of a segment
constexpr uint8_t kSlash = 1;    // ends a segment
constexpr uint8_t kPathEnd = 2;  // '?' or '#': the path ends here
constexpr uint8_t kInvalid = 3;  // C0 control, space, DEL: never in a target

constexpr std::array<uint8_t, 256> MakeByteClasses() {
  std::array<uint8_t, 256> classes{};
  for (int c = 0; c <= 0x20; ++c) classes[c] = kInvalid;
  classes[0x7F] = kInvalid;
  classes['/'] = kSlash;
  classes['?'] = kPathEnd;
  classes['#'] = kPathEnd;
  return classes;
}

constexpr std::array<uint8_t, 256> kByteClass = MakeByteClasses();

bool IsDotSegment(const char* data, size_t size) {
  return (size == 1 && data[0] == '.') ||
         (size == 2 && data[0] == '.' && data[1] == '.');
}

// --- Template syntax
// ----------------------------------------------------------

struct ParsedSegment {
  std::string_view text;  // the literal, or the placeholder's name
  bool placeholder = false;
};

bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

bool IsLiteralByte(char c) {
  auto u = static_cast<unsigned char>(c);
  // Literals are matched against raw, still-encoded targets, so they hold no
  // '%' (an encoded literal would never equal what a client sends) and
  // nothing the matcher treats as a delimiter or rejects.
  return kByteClass[u] == kPlain && c != '%' && c != '{' && c != '}';
}

absl::Status ParseTemplate(std::string_view text,
                           std::vector<ParsedSegment>* out) {
  out->clear();
  auto error = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("route template \"", ToAbsl(text), "\": ", ToAbsl(why)));
  };
  if (text.empty() || text[0] != '/') return error("must start with '/'");
  size_t start = 1;
  while (true) {
    size_t end = text.find('/', start);
    bool last = end == std::string_view::npos;
    std::string_view segment =
        text.substr(start, last ? std::string_view::npos : end - start);
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
    if (last) break;
    start = end + 1;
  }
  return absl::OkStatus();
}

// What makes two patterns collide: their literals and where their
// placeholders are, whatever the placeholders are called.
std::string ShapeOf(const std::vector<ParsedSegment>& segments) {
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

// --- Hashing
// ------------------------------------------------------------------

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

// --- Expansion
// ----------------------------------------------------------------

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

  std::vector<ExpandedPattern> result;
  absl::flat_hash_map<std::string, size_t> by_shape;
  auto add = [&](ExpandedPattern pattern) -> absl::Status {
    absl::Status status = ParseTemplate(pattern.pattern, &parsed);
    if (!status.ok()) return status;
    auto [it, inserted] = by_shape.emplace(ShapeOf(parsed), result.size());
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

// --- Building
// -----------------------------------------------------------------

absl::StatusOr<RouteTrie> RouteTrie::Build(const RouteTableSpec& spec) {
  absl::StatusOr<std::vector<ExpandedPattern>> expanded =
      ExpandRouteTable(spec);
  if (!expanded.ok()) return expanded.status();

  absl::flat_hash_set<std::string> may_be_empty;
  for (std::string_view name : spec.may_be_empty) {
    may_be_empty.emplace(name);
  }

  RouteTrie trie;
  trie.nodes_.emplace_back();  // the root: the empty path before the first '/'
  struct PendingEdge {
    uint32_t parent;
    uint32_t child;
    std::string_view text;  // points into `expanded`, alive until the end
  };
  std::vector<PendingEdge> edges;
  absl::flat_hash_map<std::pair<uint32_t, std::string>, uint32_t>
      literal_children;

  std::vector<ParsedSegment> parsed;
  for (const ExpandedPattern& pattern : *expanded) {
    absl::Status status = ParseTemplate(pattern.pattern, &parsed);
    if (!status.ok()) return status;
    uint32_t node = 0;
    for (const ParsedSegment& segment : parsed) {
      if (segment.placeholder) {
        bool empty_ok = may_be_empty.contains(std::string(segment.text));
        if (trie.nodes_[node].placeholder == kNone) {
          auto child = static_cast<uint32_t>(trie.nodes_.size());
          trie.nodes_[node].placeholder = child;
          trie.nodes_[node].placeholder_may_be_empty = empty_ok;
          trie.nodes_.emplace_back();
        } else if (trie.nodes_[node].placeholder_may_be_empty != empty_ok) {
          return absl::InvalidArgumentError(absl::StrCat(
              "route pattern \"", pattern.pattern, "\": placeholder {",
              ToAbsl(segment.text),
              "} disagrees with another template on whether the segment "
              "may be empty"));
        }
        node = trie.nodes_[node].placeholder;
      } else {
        auto [it, inserted] = literal_children.try_emplace(
            std::make_pair(node, std::string(segment.text)),
            static_cast<uint32_t>(trie.nodes_.size()));
        if (inserted) {
          edges.push_back({node, it->second, segment.text});
          trie.nodes_[node].has_literals = true;
          trie.nodes_.emplace_back();
        }
        node = it->second;
      }
    }
    // ExpandRouteTable leaves one pattern per shape, so the node is free.
    trie.nodes_[node].route = pattern.id;
    trie.max_segments_ = std::max(trie.max_segments_, parsed.size());
  }

  // The literal edge table: a power of two at most half full, so probes stay
  // short and always reach an empty slot.
  size_t slots = 16;
  int bits = 4;
  while (slots < 2 * edges.size()) {
    slots *= 2;
    ++bits;
  }
  trie.slots_.assign(slots, LiteralEdge{});
  trie.slot_shift_ = 64 - bits;
  for (const PendingEdge& edge : edges) {
    LiteralEdge slot;
    slot.parent = edge.parent;
    slot.child = edge.child;
    slot.text_offset = static_cast<uint32_t>(trie.literal_text_.size());
    slot.text_size = static_cast<uint32_t>(edge.text.size());
    trie.literal_text_.append(edge.text);
    slot.hash =
        EdgeHash(SegmentHash(edge.text.data(), edge.text.size()), edge.parent);
    size_t i = trie.SlotIndex(slot.hash);
    while (trie.slots_[i].parent != kNone) i = (i + 1) & (slots - 1);
    trie.slots_[i] = slot;
  }
  trie.literal_edge_count_ = edges.size();

  trie.keys_.reserve(spec.templates.size() + 1);
  trie.keys_.push_back(kFallbackRouteKey);
  for (std::string_view key : spec.templates) trie.keys_.push_back(key);
  return trie;
}

// --- Matching
// -----------------------------------------------------------------

namespace {

// a[0, n) == b[0, n) without a call into libc: segments are short, and the
// caller has already matched the hash, so this almost always succeeds.
bool SameBytes(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      if (Load64(a + i) != Load64(b + i)) return false;
    }
    return Load64(a + n - 8) == Load64(b + n - 8);  // may overlap; harmless
  }
  if (n >= 4) {
    return Load32(a) == Load32(b) && Load32(a + n - 4) == Load32(b + n - 4);
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

// Constant time whatever the segment's length: the length and its first and
// last 8 bytes. Placeholder values (long room and event IDs) cost no more to
// look up than short literals; a false hit is settled by a byte compare.
// Not mixed here: `EdgeHash` multiplies once and the slot index is taken from
// the product's top bits, which depend on every input bit.
uint64_t RouteTrie::SegmentHash(const char* data, size_t size) noexcept {
  uint64_t head = 0;
  uint64_t tail = 0;
  if (size >= 8) {
    head = Load64(data);
    tail = Load64(data + size - 8);
  } else if (size >= 4) {
    head = Load32(data);
    tail = Load32(data + size - 4);
  } else if (size > 0) {
    head =
        static_cast<uint64_t>(static_cast<unsigned char>(data[0])) |
        static_cast<uint64_t>(static_cast<unsigned char>(data[size / 2])) << 8 |
        static_cast<uint64_t>(static_cast<unsigned char>(data[size - 1])) << 16;
  }
  return head ^ ((tail << 29) | (tail >> 35)) ^ (size * 0x9E3779B97F4A7C15ULL);
}

uint64_t RouteTrie::EdgeHash(uint64_t segment_hash, uint32_t parent) noexcept {
  const uint64_t h =
      (segment_hash ^ ((parent + 1ULL) * 0xC2B2AE3D27D4EB4FULL)) *
      0x9E3779B97F4A7C15ULL;
  return h ^ (h >> 31);
}

uint32_t RouteTrie::FindLiteral(uint32_t parent,
                                const Segment& segment) const noexcept {
  const uint64_t hash =
      EdgeHash(SegmentHash(segment.data, segment.size), parent);
  const size_t mask = slots_.size() - 1;
  for (size_t i = SlotIndex(hash);; i = (i + 1) & mask) {
    const LiteralEdge& slot = slots_[i];
    if (slot.parent == kNone) return kNone;
    if (slot.hash == hash && slot.parent == parent &&
        slot.text_size == segment.size &&
        SameBytes(literal_text_.data() + slot.text_offset, segment.data,
                  segment.size)) {
      return slot.child;
    }
  }
}

RouteId RouteTrie::Descend(uint32_t node, const Segment* segments, size_t count,
                           size_t depth) const noexcept {
  const Node& here = nodes_[node];
  if (depth == count) return here.route;
  const Segment& segment = segments[depth];
  // Literal first: `/query/directory` is its own route although
  // `/query/{queryType}` would match too. If the literal branch ends without
  // a route, the placeholder branch still gets its chance.
  if (here.has_literals) {
    uint32_t child = FindLiteral(node, segment);
    if (child != kNone) {
      RouteId id = Descend(child, segments, count, depth + 1);
      if (id != kFallbackRouteId) return id;
    }
  }
  if (here.placeholder != kNone &&
      (segment.size != 0 || here.placeholder_may_be_empty)) {
    return Descend(here.placeholder, segments, count, depth + 1);
  }
  return kFallbackRouteId;
}

RouteId RouteTrie::Match(std::string_view target,
                         size_t* path_size) const noexcept {
  // Every early return below goes through here, so `path_size` is always
  // right; the rescan only runs for targets that cannot match anyway.
  auto fallback = [&] {
    if (path_size != nullptr) *path_size = QueryFreePath(target).size();
    return kFallbackRouteId;
  };
  if (target.empty() || target[0] != '/' || nodes_.empty()) return fallback();
  Segment segments[kMaxSegments];
  size_t count = 0;
  const char* const begin = target.data();
  const char* const end = begin + target.size();
  const char* segment = begin + 1;
  // Handles the special byte at `q`; false when the path has ended there
  // (then `path_end` is set) or cannot match (`path_end` stays null).
  const char* path_end = nullptr;
  auto special = [&](const char* q) {
    const uint8_t cls = kByteClass[static_cast<unsigned char>(*q)];
    if (cls == kPathEnd) {
      path_end = q;
      return false;
    }
    // kInvalid, or one segment more than the longest template: no match.
    if (cls != kSlash || count == max_segments_) return false;
    const auto length = static_cast<size_t>(q - segment);
    if (IsDotSegment(segment, length)) return false;
    segments[count++] = {segment, length};
    segment = q + 1;
    return true;
  };
  // Whole blocks, then the last partial block as the final bytes of the
  // target re-read with the already-scanned ones masked off.
  const char* p = begin + 1;
  bool more = true;
  for (; more && end - p >= static_cast<ptrdiff_t>(kSpecialMaskWidth);
       p += kSpecialMaskWidth) {
    for (uint32_t m = SpecialMask(p); m != 0; m &= m - 1) {
      if (!special(p + std::countr_zero(m))) {
        more = false;
        break;
      }
    }
  }
  if (more && p != end) {
    const auto left = static_cast<size_t>(end - p);
    if (target.size() >= kSpecialMaskWidth) {
      const char* block = end - kSpecialMaskWidth;
      for (uint32_t m = SpecialMask(block) >> (kSpecialMaskWidth - left);
           m != 0; m &= m - 1) {
        if (!special(p + std::countr_zero(m))) {
          more = false;
          break;
        }
      }
    } else {
      for (; p != end; ++p) {
        if (IsSpecialTargetByte(static_cast<unsigned char>(*p)) &&
            !special(p)) {
          more = false;
          break;
        }
      }
    }
  }
  if (!more && path_end == nullptr) return fallback();
  if (path_end == nullptr) path_end = end;
  if (path_size != nullptr) *path_size = static_cast<size_t>(path_end - begin);
  // The last segment runs to the end of the path.
  if (count == max_segments_) return kFallbackRouteId;
  const auto length = static_cast<size_t>(path_end - segment);
  if (IsDotSegment(segment, length)) return kFallbackRouteId;
  segments[count++] = {segment, length};
  return Descend(0, segments, count, 0);
}

}  // namespace mxlimit::internal
