// -----------------------------------------------------------------------------
// File: route/route_trie.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit; embedders use `mxlimit::RouteNormalizer`
// (mxlimit/route.h). Tests and benches use this header directly.
//
// `RouteTrie` is the matcher behind `RouteNormalizer`: a trie over path
// segments built once from a route table (`RouteTableSpec`), then read-only.
//
// Building. Each template is split at '/'. A `{name}` segment becomes the
// node's single placeholder edge, any other segment a literal edge. The route
// table's prefix aliases and forms are expanded first (`ExpandRouteTable`), so
// the trie holds every concrete request shape and each terminal node stores the
// RouteId of the key it serves; an alias costs nodes, never lookup time.
//
// Matching (`Match`) is two steps with no allocation:
//   1. One pass over the target's bytes up to the first '?' or '#', 16 bytes
//      per step (src/route/byte_scan.h): it finds the segment boundaries,
//      rejects bytes no request-target may hold (C0 controls, space, DEL),
//      rejects dot segments ("." and ".."), and gives up as soon as the path
//      has more segments than the longest template.
//   2. A walk down the trie. At each node that has literal edges the segment
//      is first looked up among them (one probe into a table shared by all
//      nodes, keyed by parent node and the segment's length, first and last
//      8 bytes, which the slot stores: a literal of up to 16 bytes is
//      confirmed without reading its text); if that branch does not end in
//      a route, the placeholder edge is tried. A segment that misses the
//      literals but holds a '%' is looked up once more decoded, as the
//      canonical form of policy matching decodes it, so `%73end` is the
//      literal `send` (in a small stack buffer; placeholders still take the
//      segment as received).
//      Segments under nodes without literals (room IDs, event IDs) are never
//      hashed. The first three levels are nearly always a fixed prefix
//      (`_matrix/client/v3`), so one probe into a small table of such
//      three-literal prefixes jumps straight to depth 3 when none of the
//      nodes on the way has a placeholder to fall back on (kept while
//      BM_Normalize_Mix, bench/route_bench, is faster with it than without:
//      CHANGELOG.md has the last measurement). Every node is
//      visited at most once, so the walk is bounded by the path's segment count
//      and the trie depth, never by the number of templates.
//
// Thread safety: a built `RouteTrie` is immutable; any number of threads may
// call `Match` concurrently.

#ifndef MXLIMIT_ROUTE_ROUTE_TRIE_H_
#define MXLIMIT_ROUTE_ROUTE_TRIE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mxlimit/route.h"

namespace mxlimit::internal {

// One MXLIMIT_ROUTE_FORM line: `form` is served as the route `route_template`.
struct RouteFormRow {
  std::string_view form;
  std::string_view route_template;
};

// One MXLIMIT_PREFIX_ALIAS line: whatever is served under `stable_prefix/` is
// also served, with the same key, under `alias_prefix/`.
struct PrefixAliasRow {
  std::string_view alias_prefix;
  std::string_view stable_prefix;
};

// A route table as data. The strings must outlive every trie built from it
// (the keys point into `templates`); the built-in table is static.
struct RouteTableSpec {
  // Route keys; templates[i] gets RouteId i + 1.
  std::span<const std::string_view> templates;
  std::span<const RouteFormRow> forms;
  std::span<const PrefixAliasRow> prefix_aliases;
  // Placeholder names (without braces) that may match an empty segment.
  std::span<const std::string_view> may_be_empty;
};

// One concrete request shape the trie serves.
struct ExpandedPattern {
  enum class Origin : uint8_t { kTemplate, kForm, kPrefixAlias };
  // A template-syntax path ("/_matrix/client/r0/rooms/{roomId}/state").
  std::string pattern;
  RouteId id = kFallbackRouteId;
  Origin origin = Origin::kTemplate;
};

// Validates `spec` and expands its forms and prefix aliases into the list of
// patterns the trie will hold, in table order. Two explicit lines (templates or
// forms) with the same shape are an error; a prefix-alias expansion that hits
// an explicit line yields to it; two expansions of the same shape with
// different keys are an error. Placeholder names do not matter for the shape.
//
// `runs`, when not null, receives where the list splits: the templates, the
// forms, then the version spellings of the templates, then those of the
// forms (a merge that adds extra lines to built-in ones interleaves them).
struct ExpansionRuns {
  size_t templates = 0;
  size_t forms = 0;
  size_t template_spellings = 0;
};
absl::StatusOr<std::vector<ExpandedPattern>> ExpandRouteTable(
    const RouteTableSpec& spec, ExpansionRuns* runs = nullptr);

class RouteTrie {
 public:
  // Longest template, in segments, that a trie accepts: `Match` keeps segment
  // boundaries in a fixed array of this size.
  static constexpr size_t kMaxSegments = 24;
  // Longest literal segment a trie accepts: `Match` decodes an escaped
  // segment into a fixed buffer of this size (an extra template is at most
  // as long, RouteOptions::kMaxTemplateBytes).
  static constexpr size_t kMaxLiteralBytes = 2048;

  // Builds the trie for `spec`; InvalidArgument names the offending line.
  static absl::StatusOr<RouteTrie> Build(const RouteTableSpec& spec);
  // The same from `expanded`, which must be ExpandRouteTable(spec)'s list
  // (a caller that assembled it from parts expanded before).
  static absl::StatusOr<RouteTrie> Build(const RouteTableSpec& spec,
                                         std::vector<ExpandedPattern> expanded);

  // The RouteId `target` is served as, or kFallbackRouteId. `target` is the
  // raw request target; everything from the first '?' or '#' is ignored.
  // When `path_size` is not null it receives QueryFreePath(target).size(),
  // found by the same pass (policies match the raw path too).
  RouteId Match(std::string_view target,
                size_t* path_size = nullptr) const noexcept;

  // All keys indexed by RouteId; keys()[0] == kFallbackRouteKey.
  std::span<const std::string_view> keys() const { return keys_; }
  // Every pattern the trie holds (ExpandRouteTable's), with its id.
  std::span<const RouteForm> forms() const { return forms_; }

  // Segments in the longest expanded pattern; longer paths are fallback.
  size_t max_segments() const { return max_segments_; }
  size_t node_count() const { return nodes_.size(); }
  size_t literal_edge_count() const { return literal_edge_count_; }
  size_t prefix_jump_count() const { return prefix_jump_count_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  struct Node {
    // The route served when the path ends at this node (0: none).
    RouteId route = kFallbackRouteId;
    bool has_literals = false;
    bool placeholder_may_be_empty = false;
    uint32_t placeholder = kNone;
  };

  // A segment's identity for the literal table, with its size: the first
  // and last bytes (up to 8 each; see `Words`). Up to 16 bytes the words hold
  // every byte, so equal words and sizes mean equal segments.
  struct SegmentWords {
    uint64_t head = 0;
    uint64_t tail = 0;
  };

  // Node ids and literal text offsets fit in 16 bits (Build checks), so a
  // literal edge fits in half a cache line.
  static constexpr uint16_t kNoEdge = UINT16_MAX;

  // A slot of the open-addressing table of literal edges. It carries a copy
  // of the child node, so following a literal edge is one memory access, not
  // two dependent ones; and matching a segment of up to 16 bytes reads
  // nothing but the slot (longer literals are confirmed against
  // `literal_text_`).
  struct LiteralEdge {
    SegmentWords words;
    uint16_t parent = kNoEdge;  // kNoEdge marks an empty slot.
    uint16_t child = kNoEdge;
    uint16_t size = 0;
    uint16_t text_offset = 0;  // into literal_text_ (literals over 16 bytes)
    Node child_node;
  };
  static_assert(sizeof(LiteralEdge) == 32);

  // A path segment as `Match` sees it.
  struct Segment {
    const char* data;
    size_t size;
  };

  RouteTrie() = default;

  static SegmentWords Words(const char* data, size_t size) noexcept;
  size_t SlotIndex(const SegmentWords& w, size_t size,
                   uint32_t parent) const noexcept;

  // FindLiteral, Descend and Jump are Match's helpers, defined `inline` in
  // route_trie.cc so that they fold into Match; BM_Normalize_Mix
  // (bench/route_bench) guards it.
  const LiteralEdge* FindLiteral(uint32_t parent,
                                 const Segment& segment) const noexcept;
  // The literal edge an escaped spelling of a literal segment ("%73end")
  // stands for: the segment decoded as the canonical form decodes it
  // (internal/canonical_path.h), then looked up. Null when the segment holds
  // no '%', or decodes to something no literal can be (a kept escape, a
  // stray '%', more bytes than the longest literal). Out of line: Descend
  // calls it only after a literal lookup missed on a segment that
  // MayHoldPercent.
  const LiteralEdge* FindEscapedLiteral(uint32_t parent,
                                        const Segment& segment) const noexcept;
  // False when `segment` surely holds no '%' (tested inline, without a
  // call, for segments of up to 16 bytes).
  static bool MayHoldPercent(const Segment& segment) noexcept;
  // The walk from `node` (whose copy is `here`) at segment `depth`.
  RouteId Descend(const Segment* segments, size_t count, uint32_t node,
                  Node here, size_t depth) const noexcept;

  // The first three segments as one key: the node they lead to when each is
  // a literal edge and no node on the way has a placeholder edge, so the
  // walk could not have gone anywhere else.
  static constexpr size_t kJumpDepth = 3;
  struct PrefixJump {
    SegmentWords words[kJumpDepth];
    uint16_t sizes[kJumpDepth] = {kNoEdge, kNoEdge, kNoEdge};  // kNoEdge: empty
    uint16_t node = kNoEdge;
    Node target;
  };
  static size_t JumpIndex(const SegmentWords* words, const size_t* sizes,
                          int shift) noexcept;
  // The node the first three segments jump to, or kNone.
  uint32_t Jump(const Segment* segments, Node* target) const noexcept;

  std::vector<Node> nodes_;
  std::vector<LiteralEdge> slots_;
  std::string literal_text_;
  std::vector<std::string_view> keys_;
  std::vector<RouteForm> forms_;
  size_t literal_edge_count_ = 0;
  size_t max_segments_ = 0;
  size_t slot_mask_ = 0;
  int slot_shift_ = 64;
  std::vector<PrefixJump> jumps_;  // open addressing, at most half full
  size_t jump_mask_ = 0;
  int jump_shift_ = 64;
  size_t prefix_jump_count_ = 0;
  // The longest literal segment: a decoded segment longer than this
  // matches none (FindEscapedLiteral). Last, so that the fields Match reads
  // keep their places.
  size_t max_literal_size_ = 0;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ROUTE_ROUTE_TRIE_H_
