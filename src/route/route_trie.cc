// The trie builder and the allocation-free matcher. See
// src/route/route_trie.h.

#include "src/route/route_trie.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/canonical_path.h"
#include "src/route/byte_scan.h"
#include "src/route/route_template.h"

namespace mxlimit::internal {
namespace {

// log2 of the size of an open-addressing table for `entries`: a power of two
// (at least 16) at most half full, so probes stay short and always reach an
// empty slot.
int HalfFullTableBits(size_t entries) {
  int bits = 4;
  while ((size_t{1} << bits) < 2 * entries) ++bits;
  return bits;
}

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

// A literal edge found while the patterns are added, before the edge table
// is sized.
struct PendingEdge {
  uint32_t parent;
  uint32_t child;
  std::string_view text;  // points into the expanded patterns
};

// The literal text the edge table keeps: only literals over 16 bytes keep
// theirs, shorter ones are confirmed by their words alone (FindLiteral).
// Sets `longest`; an error for a literal over `max_bytes`.
absl::StatusOr<size_t> KeptLiteralBytes(const std::vector<PendingEdge>& edges,
                                        size_t max_bytes, size_t& longest) {
  size_t kept = 0;
  for (const PendingEdge& edge : edges) {
    if (edge.text.size() > 16) kept += edge.text.size();
    if (edge.text.size() > max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "route table too large for the matcher: a literal segment of ",
          edge.text.size(), " bytes (at most ", max_bytes, ")"));
    }
    longest = std::max(longest, edge.text.size());
  }
  return kept;
}

// The prefix jumps' paths: three literal edges down from the root, through
// nodes (`jumpable[node]`) with no placeholder edge, each segment at most 16
// bytes (so the words alone identify it). In the order of `edges`.
using JumpPath = std::array<const PendingEdge*, 3>;
std::vector<JumpPath> FindJumpPaths(const std::vector<PendingEdge>& edges,
                                    const std::vector<bool>& jumpable) {
  // Each node's outgoing edges, as one run of `children` (in `edges` order):
  // two arrays, not one per node.
  std::vector<uint32_t> first(jumpable.size() + 1, 0);
  for (const PendingEdge& edge : edges) ++first[edge.parent + 1];
  for (size_t n = 0; n < jumpable.size(); ++n) first[n + 1] += first[n];
  std::vector<const PendingEdge*> children(edges.size());
  std::vector<uint32_t> fill(first.begin(), first.end() - 1);
  for (const PendingEdge& edge : edges) children[fill[edge.parent]++] = &edge;
  auto children_of = [&](uint32_t node) {
    return std::span<const PendingEdge* const>(children.data() + first[node],
                                               first[node + 1] - first[node]);
  };
  std::vector<JumpPath> paths;
  if (!jumpable[0]) return paths;
  for (const PendingEdge* e0 : children_of(0)) {
    if (!jumpable[e0->child]) continue;
    for (const PendingEdge* e1 : children_of(e0->child)) {
      if (!jumpable[e1->child]) continue;
      for (const PendingEdge* e2 : children_of(e1->child)) {
        paths.push_back({e0, e1, e2});
      }
    }
  }
  std::erase_if(paths, [](const JumpPath& path) {
    for (const PendingEdge* e : path) {
      if (e->text.size() > 16) return true;
    }
    return false;
  });
  return paths;
}

}  // namespace

absl::StatusOr<RouteTrie> RouteTrie::Build(const RouteTableSpec& spec) {
  absl::StatusOr<std::vector<ExpandedPattern>> expanded =
      ExpandRouteTable(spec);
  if (!expanded.ok()) return expanded.status();
  return Build(spec, *std::move(expanded));
}

absl::StatusOr<RouteTrie> RouteTrie::Build(
    const RouteTableSpec& spec, std::vector<ExpandedPattern> expanded) {
  const absl::flat_hash_set<std::string_view> may_be_empty(
      spec.may_be_empty.begin(), spec.may_be_empty.end());

  RouteTrie trie;
  trie.nodes_.emplace_back();  // the root: the empty path before the first '/'
  // Segment texts point into `expanded`, which outlives both.
  std::vector<PendingEdge> edges;
  absl::flat_hash_map<std::pair<uint32_t, std::string_view>, uint32_t>
      literal_children;
  // Patterns share most of their segments: a little over one new literal
  // and node each, so growing from empty would rehash many times.
  const size_t expected = expanded.size() + expanded.size() / 2;
  literal_children.reserve(expected);
  edges.reserve(expected);
  trie.nodes_.reserve(expected + 1);

  std::vector<ParsedSegment> parsed;
  // The previous pattern's segments and the node each led to. Patterns of a
  // pack come grouped, so most share their leading segments with the one
  // before: those reuse its nodes without a lookup.
  std::vector<ParsedSegment> previous;
  std::vector<uint32_t> previous_nodes;
  std::vector<uint32_t> nodes;
  for (const ExpandedPattern& pattern : expanded) {
    absl::Status status = ParseTemplate(pattern.pattern, &parsed);
    if (!status.ok()) return status;
    uint32_t node = 0;
    nodes.clear();
    size_t shared = 0;
    while (shared < parsed.size() && shared < previous.size() &&
           parsed[shared].placeholder == previous[shared].placeholder &&
           parsed[shared].text == previous[shared].text) {
      node = previous_nodes[shared];
      nodes.push_back(node);
      ++shared;
    }
    for (const ParsedSegment& segment :
         std::span<const ParsedSegment>(parsed).subspan(shared)) {
      if (segment.placeholder) {
        const bool empty_ok = may_be_empty.contains(segment.text);
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
            std::make_pair(node, segment.text),
            static_cast<uint32_t>(trie.nodes_.size()));
        if (inserted) {
          edges.push_back({node, it->second, segment.text});
          trie.nodes_[node].has_literals = true;
          trie.nodes_.emplace_back();
        }
        node = it->second;
      }
      nodes.push_back(node);
    }
    // ExpandRouteTable leaves one pattern per shape, so the node is free.
    trie.nodes_[node].route = pattern.id;
    trie.max_segments_ = std::max(trie.max_segments_, parsed.size());
    std::swap(previous, parsed);
    std::swap(previous_nodes, nodes);
  }

  // The literal edge table, at most half full.
  const int bits = HalfFullTableBits(edges.size());
  const size_t slots = size_t{1} << bits;
  trie.slots_.assign(slots, LiteralEdge{});
  trie.slot_shift_ = 64 - bits;
  trie.slot_mask_ = slots - 1;
  absl::StatusOr<size_t> text_bytes =
      KeptLiteralBytes(edges, kMaxLiteralBytes, trie.max_literal_size_);
  if (!text_bytes.ok()) return text_bytes.status();
  if (trie.nodes_.size() >= kNoEdge || *text_bytes > UINT16_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "route table too large for the matcher: ", trie.nodes_.size(),
        " trie nodes (at most ", kNoEdge - 1, "), ", *text_bytes,
        " bytes of literal segments (at most ", UINT16_MAX, ")"));
  }
  for (const PendingEdge& edge : edges) {
    LiteralEdge slot;
    slot.words = Words(edge.text.data(), edge.text.size());
    slot.parent = static_cast<uint16_t>(edge.parent);
    slot.child = static_cast<uint16_t>(edge.child);
    slot.size = static_cast<uint16_t>(edge.text.size());
    slot.text_offset = static_cast<uint16_t>(trie.literal_text_.size());
    slot.child_node = trie.nodes_[edge.child];  // final: all patterns added
    if (edge.text.size() > 16) trie.literal_text_.append(edge.text);
    size_t i = trie.SlotIndex(slot.words, slot.size, slot.parent);
    while (trie.slots_[i].parent != kNoEdge) i = (i + 1) & trie.slot_mask_;
    trie.slots_[i] = slot;
  }
  trie.literal_edge_count_ = edges.size();

  // The prefix jumps: every node three literal edges below the root with no
  // placeholder edge at the root or the two nodes between.
  static_assert(std::tuple_size_v<JumpPath> == kJumpDepth);
  std::vector<bool> jumpable(trie.nodes_.size());
  for (size_t n = 0; n < trie.nodes_.size(); ++n) {
    jumpable[n] = trie.nodes_[n].placeholder == kNone;
  }
  const std::vector<JumpPath> jump_candidates = FindJumpPaths(edges, jumpable);
  const int jump_bits = HalfFullTableBits(jump_candidates.size());
  const size_t jump_slots = size_t{1} << jump_bits;
  trie.jumps_.assign(jump_slots, PrefixJump{});
  trie.jump_mask_ = jump_slots - 1;
  trie.jump_shift_ = 64 - jump_bits;
  for (const JumpPath& path : jump_candidates) {
    PrefixJump jump;
    size_t sizes[kJumpDepth];
    for (size_t d = 0; d < kJumpDepth; ++d) {
      jump.words[d] = Words(path[d]->text.data(), path[d]->text.size());
      jump.sizes[d] = static_cast<uint16_t>(path[d]->text.size());
      sizes[d] = path[d]->text.size();
    }
    jump.node = static_cast<uint16_t>(path[kJumpDepth - 1]->child);
    jump.target = trie.nodes_[jump.node];
    size_t i = JumpIndex(jump.words, sizes, trie.jump_shift_);
    while (trie.jumps_[i].node != kNoEdge) i = (i + 1) & trie.jump_mask_;
    trie.jumps_[i] = jump;
  }
  trie.prefix_jump_count_ = jump_candidates.size();

  trie.keys_.reserve(spec.templates.size() + 1);
  trie.keys_.push_back(kFallbackRouteKey);
  for (std::string_view key : spec.templates) trie.keys_.push_back(key);
  // Last: the edges' texts point into the patterns, which move here.
  trie.forms_.reserve(expanded.size());
  for (ExpandedPattern& pattern : expanded) {
    trie.forms_.push_back(RouteForm{pattern.id, std::move(pattern.pattern)});
  }
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

// Constant time whatever the segment's length: the first and last 8 bytes.
// Placeholder values (long room and event IDs) cost no more to look up than
// short literals. Up to 16 bytes the two words cover every byte.
inline RouteTrie::SegmentWords RouteTrie::Words(const char* data,
                                                size_t size) noexcept {
  SegmentWords w;
  if (size >= 8) {
    w.head = Load64(data);
    w.tail = Load64(data + size - 8);
  } else if (size >= 4) {
    w.head = Load32(data);
    w.tail = Load32(data + size - 4);
  } else if (size > 0) {  // bytes 0, size / 2 and size - 1 are all of them
    w.head =
        static_cast<uint64_t>(static_cast<unsigned char>(data[0])) |
        static_cast<uint64_t>(static_cast<unsigned char>(data[size / 2])) << 8 |
        static_cast<uint64_t>(static_cast<unsigned char>(data[size - 1])) << 16;
  }
  return w;
}

// One multiply; the index is the product's top bits, which depend on every
// input bit. The parent goes in unmultiplied, so the walk's critical path
// (parent known -> slot loaded) is an xor, a multiply and a shift.
inline size_t RouteTrie::SlotIndex(const SegmentWords& w, size_t size,
                                   uint32_t parent) const noexcept {
  const uint64_t x = w.head ^ ((w.tail << 29) | (w.tail >> 35)) ^
                     (size * 0xC2B2AE3D27D4EB4FULL) ^
                     (static_cast<uint64_t>(parent) << 40);
  return static_cast<size_t>((x * 0x9E3779B97F4A7C15ULL) >> slot_shift_);
}

inline size_t RouteTrie::JumpIndex(const SegmentWords* words,
                                   const size_t* sizes, int shift) noexcept {
  uint64_t x = 0;
  for (size_t d = 0; d < kJumpDepth; ++d) {
    x = (x ^ words[d].head ^ ((words[d].tail << 29) | (words[d].tail >> 35)) ^
         (sizes[d] * 0xC2B2AE3D27D4EB4FULL)) *
        0x9E3779B97F4A7C15ULL;
  }
  return static_cast<size_t>(x >> shift);
}

inline uint32_t RouteTrie::Jump(const Segment* segments,
                                Node* target) const noexcept {
  SegmentWords words[kJumpDepth];
  size_t sizes[kJumpDepth];
  for (size_t d = 0; d < kJumpDepth; ++d) {
    sizes[d] = segments[d].size;
    if (sizes[d] > 16) return kNone;  // never a jump (its words are partial)
    words[d] = Words(segments[d].data, sizes[d]);
  }
  for (size_t i = JumpIndex(words, sizes, jump_shift_);;
       i = (i + 1) & jump_mask_) {
    const PrefixJump& j = jumps_[i];
    if (j.node == kNoEdge) return kNone;
    bool same = true;
    for (size_t d = 0; d < kJumpDepth; ++d) {
      same &= j.sizes[d] == sizes[d] && j.words[d].head == words[d].head &&
              j.words[d].tail == words[d].tail;
    }
    if (same) {
      *target = j.target;
      return j.node;
    }
  }
}

inline const RouteTrie::LiteralEdge* RouteTrie::FindLiteral(
    uint32_t parent, const Segment& segment) const noexcept {
  const SegmentWords w = Words(segment.data, segment.size);
  for (size_t i = SlotIndex(w, segment.size, parent);;
       i = (i + 1) & slot_mask_) {
    const LiteralEdge& slot = slots_[i];
    if (slot.parent == kNoEdge) return nullptr;
    if (slot.parent == parent && slot.size == segment.size &&
        slot.words.head == w.head && slot.words.tail == w.tail &&
        (segment.size <= 16 ||
         SameBytes(literal_text_.data() + slot.text_offset, segment.data,
                   segment.size))) {
      return &slot;
    }
  }
}

// False when `segment` surely holds no '%': a segment of up to 16 bytes is
// all in its two words (Words), tested a word at a time, so the common miss
// (a placeholder's value under a node with literals, a junk segment) costs
// no call.
inline bool RouteTrie::MayHoldPercent(const Segment& segment) noexcept {
  if (segment.size > 16) return true;
  const SegmentWords w = Words(segment.data, segment.size);
  return (SwarEqual(w.head, '%') | SwarEqual(w.tail, '%')) != 0;
}

// Rare (a client spelling a literal with escapes), so out of line: Descend
// stays as small as it was for the common path. One pass, no library call:
// a segment without '%' (most misses) is known as soon as its end is
// reached.
__attribute__((noinline)) const RouteTrie::LiteralEdge*
RouteTrie::FindEscapedLiteral(uint32_t parent,
                              const Segment& segment) const noexcept {
  // Every escape decodes to one byte, so a segment of more than three times
  // the longest literal decodes to more than that.
  if (segment.size / 3 > max_literal_size_) return nullptr;
  const char* p = segment.data;
  const char* const end = p + segment.size;
  char decoded[kMaxLiteralBytes];
  size_t n = 0;
  bool escaped = false;
  while (p != end) {
    if (n == max_literal_size_) return nullptr;  // longer than every literal
    if (*p != '%') {
      decoded[n++] = *p++;
      continue;
    }
    // The canonical form's rule: an escape of '/', '?', '#' or '%' stays an
    // escape, and a '%' without two hex digits stays a '%'. Either leaves a
    // '%', which no literal holds.
    if (end - p < 3) return nullptr;
    const int hi = kHexTable.value[static_cast<uint8_t>(p[1])];
    const int lo = kHexTable.value[static_cast<uint8_t>(p[2])];
    if ((hi | lo) < 0) return nullptr;
    const auto byte = static_cast<uint8_t>(hi * 16 + lo);
    if (StaysEscaped(byte)) return nullptr;
    decoded[n++] = static_cast<char>(byte);
    p += 3;
    escaped = true;
  }
  // Without an escape it is the segment FindLiteral missed.
  return escaped ? FindLiteral(parent, Segment{decoded, n}) : nullptr;
}

// Depth-first, literal edges before the placeholder edge: `/query/directory`
// is its own route although `/query/{queryType}` would match too, and if the
// literal branch ends without a route the placeholder branch still gets its
// chance. Iterative, with the pending placeholder branches on a small stack
// (at most one per segment), deepest first as recursion would take them.
inline RouteId RouteTrie::Descend(const Segment* segments, size_t count,
                                  uint32_t node, Node here,
                                  size_t depth) const noexcept {
  struct Pending {
    uint32_t node;
    uint32_t depth;
  };
  Pending pending[kMaxSegments];
  size_t pending_count = 0;
  // The current node's id and `here`, a copy of it: a literal edge (and a
  // prefix jump) brings the copy along, so only placeholder edges and
  // backtracking read `nodes_`.
  while (true) {
    bool stuck = false;
    for (; depth < count; ++depth) {
      const Segment& segment = segments[depth];
      // "." and ".." are never a placeholder's value, and no literal is a
      // dot segment (templates reject them), so a path holding one matches
      // nothing and falls back; checked only here, where it can matter.
      const bool placeholder_fits =
          here.placeholder != kNone &&
          (segment.size != 0 || here.placeholder_may_be_empty) &&
          !IsDotSegment(segment.data, segment.size);
      const LiteralEdge* literal = nullptr;
      if (here.has_literals) {
        literal = FindLiteral(node, segment);
        if (literal == nullptr && MayHoldPercent(segment)) {
          literal = FindEscapedLiteral(node, segment);
        }
      }
      if (literal != nullptr) {
        if (placeholder_fits) {
          pending[pending_count++] = {here.placeholder,
                                      static_cast<uint32_t>(depth + 1)};
        }
        node = literal->child;
        here = literal->child_node;
      } else if (placeholder_fits) {
        node = here.placeholder;
        here = nodes_[node];
      } else {
        stuck = true;
        break;
      }
    }
    if (!stuck && here.route != kFallbackRouteId) return here.route;
    if (pending_count == 0) return kFallbackRouteId;
    --pending_count;
    node = pending[pending_count].node;
    here = nodes_[node];
    depth = pending[pending_count].depth;
  }
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
  // Ends the current segment at `q`; false when the path cannot match (one
  // segment more than the longest template). Dot segments: see Descend.
  auto cut = [&](const char* q) {
    const auto length = static_cast<size_t>(q - segment);
    if (count == max_segments_) return false;
    segments[count++] = {segment, length};
    segment = q + 1;
    return true;
  };
  // The path ends at the first stop byte ('?', '#', or a byte no target may
  // hold), else at the end of the target.
  const char* path_end = end;
  bool stopped = false;
  // Takes the masks of the bytes from `base` on: cuts at every '/' before
  // the first stop byte. False when the scan is over (stopped or no match).
  auto take = [&](const char* base, TargetMasks m) {
    // Slashes below the first stop byte; all of them when there is none
    // ((0 & 0) - 1 keeps every bit), without a branch on where the path ends.
    uint32_t slashes = m.slash & ((m.stop & (0 - m.stop)) - 1);
    for (; slashes != 0; slashes &= slashes - 1) {
      if (!cut(base + std::countr_zero(slashes))) return false;
    }
    if (m.stop == 0) return true;
    stopped = true;
    path_end = base + std::countr_zero(m.stop);
    return false;
  };
  const char* p = begin + 1;
  bool go_on = true;
  while (go_on && end - p >= static_cast<ptrdiff_t>(kScanWidth)) {
    go_on = take(p, ScanTarget(p));
    p += kScanWidth;
  }
  if (go_on && p != end) {
    const auto left = static_cast<size_t>(end - p);
    TargetMasks m;
    if (target.size() >= kScanWidth) {
      // The last kScanWidth bytes of the target, already-scanned ones
      // shifted out.
      m = ScanTarget(end - kScanWidth);
      m.slash >>= kScanWidth - left;
      m.stop >>= kScanWidth - left;
    } else {
      for (size_t i = 0; i < left; ++i) {
        const auto c = static_cast<unsigned char>(p[i]);
        if (c == '/') m.slash |= 1u << i;
        if (IsTargetStopByte(c)) m.stop |= 1u << i;
      }
    }
    go_on = take(p, m);
  }
  if (!go_on && !stopped) return fallback();
  if (stopped && *path_end != '?' && *path_end != '#') return fallback();
  if (path_size != nullptr) *path_size = static_cast<size_t>(path_end - begin);
  // The last segment runs to the end of the path.
  if (!cut(path_end)) return kFallbackRouteId;
  if (count > kJumpDepth) {
    Node target;
    const uint32_t jump = Jump(segments, &target);
    if (jump != kNone) {
      return Descend(segments, count, jump, target, kJumpDepth);
    }
  }
  return Descend(segments, count, 0, nodes_[0], 0);
}

}  // namespace mxlimit::internal
