// -----------------------------------------------------------------------------
// File: internal/prefix_trie.h
// -----------------------------------------------------------------------------
//
// `PrefixTrie` is a byte trie over a set of strings, each carrying 32-bit
// values: a *prefix* value (the literal prefix of a trailing-'*' pattern)
// and an *exact* value (an exact pattern). One walk over a text visits every
// stored prefix of that text, shortest first, then the exact entry for the
// text itself, in O(|text|) steps whatever the number of stored strings: the
// cost of resolving a raw path does not grow with the number of policies,
// and an exact raw-path pattern costs no hashing of the path.
//
// Layout: a radix tree. Chains of single-child nodes without a value are
// folded into one node whose label holds the chain's bytes, so a walk does one
// dependent load per branch point, not per byte. Nodes are in breadth-first
// order, each with a contiguous run of outgoing edges sorted by first byte
// (labels and targets in two parallel arrays, so the byte search touches one
// small array). Immutable once built.
//
// Example:
//   PrefixTrie::Builder b;
//   b.Slot("/_matrix/client/v3/keys/") = 7;
//   PrefixTrie trie = std::move(b).Build();
//   trie.ForEachMatch("/_matrix/client/v3/keys/claim",
//                     [](uint32_t v) { /* v == 7 */ });

#ifndef MXLIMIT_INTERNAL_PREFIX_TRIE_H_
#define MXLIMIT_INTERNAL_PREFIX_TRIE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "mxlimit/internal/canonical_path.h"

namespace mxlimit::internal {

class PrefixTrie {
 public:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

  class Builder {
   public:
    Builder() : nodes_(1) {}

    // The prefix value slot for `prefix`, created (holding kNone) on first
    // use. The reference is valid until the next call.
    uint32_t& Slot(std::string_view prefix) {
      return nodes_[NodeFor(prefix)].value;
    }

    // The exact value slot for `text`: visited only when the whole text
    // equals it. The reference is valid until the next call.
    uint32_t& ExactSlot(std::string_view text) {
      return nodes_[NodeFor(text)].exact;
    }

    PrefixTrie Build() && {
      PrefixTrie trie;
      // Breadth-first renumbering of the compressed nodes: `order[i]` is the
      // builder node whose value and children compressed node i carries;
      // children of one node get consecutive ids.
      std::vector<uint32_t> order = {0};
      std::vector<std::pair<uint8_t, uint32_t>> children;
      trie.nodes_.reserve(nodes_.size());  // Never more nodes than before.
      trie.nodes_.emplace_back();          // Root: empty label.
      for (size_t i = 0; i < order.size(); ++i) {
        const TmpNode& tmp = nodes_[order[i]];
        children.clear();
        for (uint32_t c = tmp.first_child; c != kNone;
             c = nodes_[c].next_sibling) {
          children.emplace_back(nodes_[c].byte, c);
        }
        std::sort(children.begin(), children.end());
        Node& node = trie.nodes_[i];
        node.value = tmp.value;
        node.exact = tmp.exact;
        node.first_edge = static_cast<uint32_t>(trie.labels_.size());
        node.edge_count = static_cast<uint16_t>(children.size());
        for (const auto& [label, child] : children) {
          trie.labels_.push_back(label);
          trie.targets_.push_back(static_cast<uint32_t>(trie.nodes_.size()));
          // Fold the chain of single-child, valueless nodes below `child`
          // into the new node's label.
          Node next;
          next.label_begin = static_cast<uint32_t>(trie.chain_bytes_.size());
          uint32_t end = child;
          while (nodes_[end].first_child != kNone &&
                 nodes_[nodes_[end].first_child].next_sibling == kNone &&
                 nodes_[end].value == kNone && nodes_[end].exact == kNone) {
            end = nodes_[end].first_child;
            trie.chain_bytes_.push_back(static_cast<char>(nodes_[end].byte));
          }
          next.label_length = static_cast<uint32_t>(trie.chain_bytes_.size()) -
                              next.label_begin;
          order.push_back(end);
          trie.nodes_.push_back(next);  // Reserved: `node` stays valid.
        }
      }
      nodes_.clear();
      return trie;
    }

   private:
    // Children as a list threaded through the nodes (no allocation per
    // node; Build sorts each node's children once).
    struct TmpNode {
      uint32_t first_child = kNone;
      uint32_t next_sibling = kNone;
      uint32_t value = kNone;
      uint32_t exact = kNone;
      uint8_t byte = 0;  // the edge byte from the parent
    };

    // The node spelling `text`, created with its ancestors on first use.
    uint32_t NodeFor(std::string_view text) {
      uint32_t node = 0;
      for (char c : text) {
        const auto byte = static_cast<uint8_t>(c);
        uint32_t next = nodes_[node].first_child;
        while (next != kNone && nodes_[next].byte != byte) {
          next = nodes_[next].next_sibling;
        }
        if (next == kNone) {
          next = static_cast<uint32_t>(nodes_.size());
          TmpNode child;
          child.byte = byte;
          child.next_sibling = nodes_[node].first_child;
          nodes_.push_back(child);
          nodes_[node].first_child = next;
        }
        node = next;
      }
      return node;
    }

    std::vector<TmpNode> nodes_;
  };

  // An empty trie (no prefix stored, not even "").
  PrefixTrie() = default;

  // Calls `visit(value)` for the prefix value of each stored prefix of
  // `text`, shortest first, then for the exact value stored for `text`
  // itself; kNone values are skipped. No allocation.
  template <typename Visit>
  void ForEachMatch(std::string_view text, Visit&& visit) const {
    if (nodes_.empty()) return;
    uint32_t node = 0;
    size_t i = 0;
    while (true) {
      const Node& n = nodes_[node];
      if (n.label_length != 0) {
        if (text.size() - i < n.label_length ||
            std::memcmp(text.data() + i, chain_bytes_.data() + n.label_begin,
                        n.label_length) != 0) {
          return;
        }
        i += n.label_length;
      }
      if (n.value != kNone) visit(n.value);
      if (i == text.size()) {
        if (n.exact != kNone) visit(n.exact);
        return;
      }
      if (n.edge_count == 0) return;
      const uint8_t* first = labels_.data() + n.first_edge;
      const uint8_t* last = first + n.edge_count;
      const auto byte = static_cast<uint8_t>(text[i++]);
      const uint8_t* it = std::lower_bound(first, last, byte);
      if (it == last || *it != byte) return;
      node = targets_[static_cast<size_t>(it - labels_.data())];
    }
  }

  // The same walk over the canonical bytes `text` yields (the policy set's
  // raw-path side): no copy of the path, labels compared a run at a time.
  template <typename Visit>
  void ForEachMatch(CanonicalCursor text, Visit&& visit) const {
    if (nodes_.empty()) return;
    uint32_t node = 0;
    while (true) {
      const Node& n = nodes_[node];
      if (n.label_length != 0 &&
          !text.Consume(chain_bytes_.data() + n.label_begin, n.label_length)) {
        return;
      }
      if (n.value != kNone) visit(n.value);
      uint8_t byte;
      if (!text.Next(byte)) {
        if (n.exact != kNone) visit(n.exact);
        return;
      }
      if (n.edge_count == 0) return;
      const uint8_t* first = labels_.data() + n.first_edge;
      const uint8_t* last = first + n.edge_count;
      const uint8_t* it = std::lower_bound(first, last, byte);
      if (it == last || *it != byte) return;
      node = targets_[static_cast<size_t>(it - labels_.data())];
    }
  }

  size_t node_count() const { return nodes_.size(); }
  size_t memory_bytes() const {
    return nodes_.capacity() * sizeof(Node) + labels_.capacity() +
           targets_.capacity() * sizeof(uint32_t) + chain_bytes_.capacity();
  }

 private:
  struct Node {
    // Bytes that must follow the edge byte that led here (the folded chain).
    uint32_t label_begin = 0;
    uint32_t label_length = 0;
    uint32_t first_edge = 0;
    uint32_t value = kNone;   // for texts this node's string is a prefix of
    uint32_t exact = kNone;   // for the text equal to this node's string
    uint16_t edge_count = 0;  // At most 256.
  };
  std::vector<Node> nodes_;
  std::vector<uint8_t> labels_;
  std::vector<uint32_t> targets_;
  std::vector<char> chain_bytes_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_INTERNAL_PREFIX_TRIE_H_
