// -----------------------------------------------------------------------------
// File: replay/top_k.h
// -----------------------------------------------------------------------------
//
// `TopK` finds the most frequent items of a stream (top routes, top limited
// clients) in memory fixed at construction, whatever the number of distinct
// items: the Space-Saving algorithm (Metwally, Agrawal, El Abbadi, 2005) with
// `capacity` counters.
//
// How it works: each counter holds an item, a count and an error. An item
// already counted gets its count raised. A new item takes a free counter or,
// when all are taken, replaces the item with the smallest count `min`: the
// new item inherits count `min + weight` and error `min` (it may have occurred
// up to `min` times while not being counted).
//
// Guarantees, with N the total weight added and m = capacity:
//   - a reported count never underestimates: count - error <= true <= count;
//   - every error is at most N / m (the smallest count never exceeds N / m);
//   - every item whose true weight exceeds N / m is in the table;
//   - while fewer than m distinct items were seen, counts are exact (error 0).
//
// Items are stored truncated to `kMaxItemBytes` (cut back to a UTF-8
// boundary); two items that agree on those bytes count as one, and the entry
// says it was truncated.
//
// PERFORMANCE: `Add` is O(log m) (a min-heap over the counters plus a hash
// index) and never allocates. `Top` sorts a copy and allocates: it
// is for the report, not the per-line path.
//
// Thread safety: none.
//
// Example:
//   mxlimit::replay::TopK routes(1024);
//   for (...) routes.Add(route_key);
//   for (const auto& e : routes.Top(10)) {
//     printf("%s %llu (+-%llu)\n", e.item.c_str(), e.count, e.error);
//   }

#ifndef MXLIMIT_REPLAY_TOP_K_H_
#define MXLIMIT_REPLAY_TOP_K_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace mxlimit::replay {

struct TopKEntry {
  std::string item;
  // Upper bound of the item's true weight.
  uint64_t count = 0;
  // How much of `count` may be overestimate: true >= count - error.
  uint64_t error = 0;
  // The item was longer than `TopK::kMaxItemBytes` and is a prefix.
  bool truncated = false;
  // The counter that holds the item (see `TopK::Add`).
  uint32_t counter = 0;
};

class TopK {
 public:
  static constexpr size_t kMaxItemBytes = 255;

  // REQUIRES: 1 <= capacity < 2^31.
  explicit TopK(size_t capacity);
  // Neither copyable nor movable: the index's functors point into the
  // counters and their text (as BucketTable's point into its slab).
  TopK(const TopK&) = delete;
  TopK& operator=(const TopK&) = delete;

  // Where `Add` counted an item: its counter (< capacity, stable while the
  // item stays in the table), and whether the item has just taken that
  // counter (new, or replacing the smallest). A caller that keeps data per
  // counter (the replay report's per-client timelines) resets it then.
  struct Slot {
    uint32_t counter = 0;
    bool new_item = false;
  };

  // Counts `weight` occurrences of `item`. A weight of 0 does nothing (and
  // returns a default Slot).
  Slot Add(std::string_view item, uint64_t weight = 1);

  // The (at most) `n` entries with the highest counts, highest first; equal
  // counts in item order, so reports are deterministic.
  std::vector<TopKEntry> Top(size_t n) const;

  // Total weight added.
  uint64_t total() const { return total_; }
  // Counters in use / available.
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // A bound on every entry's error: the smallest count when all counters are
  // taken, else 0.
  uint64_t max_error() const;
  // Bytes owned (fixed at construction).
  size_t memory_bytes() const;

 private:
  struct Counter {
    uint64_t count = 0;
    uint64_t error = 0;
    uint64_t hash = 0;
    uint32_t heap_pos = 0;
    uint8_t length = 0;  // bytes of text used, <= kMaxItemBytes
    bool truncated = false;
  };

  // The index is BucketTable's pattern (src/engine/bucket_table.h): a set of
  // counter ids whose hash and equality look through the id into the
  // counters and their text, so an item's text is stored once and lookups by
  // text need no counter. Counter ids never move; the set may.
  struct ItemRef {
    std::string_view text;
    uint64_t hash;
  };
  struct IndexHash {
    using is_transparent = void;
    const Counter* counters;
    size_t operator()(uint32_t c) const { return counters[c].hash; }
    size_t operator()(ItemRef ref) const { return ref.hash; }
  };
  struct IndexEq {
    using is_transparent = void;
    const Counter* counters;
    const char* text;
    std::string_view TextOf(uint32_t c) const {
      return std::string_view(text + size_t{c} * kMaxItemBytes,
                              counters[c].length);
    }
    bool operator()(uint32_t a, uint32_t b) const {
      return a == b ||
             (counters[a].hash == counters[b].hash && TextOf(a) == TextOf(b));
    }
    bool operator()(ItemRef a, uint32_t b) const {
      return a.hash == counters[b].hash && a.text == TextOf(b);
    }
    bool operator()(uint32_t a, ItemRef b) const { return (*this)(b, a); }
  };
  using Index = absl::flat_hash_set<uint32_t, IndexHash, IndexEq>;

  std::string_view TextOf(uint32_t c) const {
    return std::string_view(&text_[size_t{c} * kMaxItemBytes],
                            counters_[c].length);
  }
  bool Less(uint32_t a, uint32_t b) const {
    return counters_[a].count < counters_[b].count;
  }
  void SiftUp(uint32_t pos);
  void SiftDown(uint32_t pos);
  void HeapSwap(uint32_t a, uint32_t b);

  size_t capacity_;
  size_t size_ = 0;
  uint64_t total_ = 0;
  std::vector<Counter> counters_;
  std::vector<char> text_;      // capacity_ * kMaxItemBytes
  std::vector<uint32_t> heap_;  // counter ids, min-heap on count
  // The counters in use, sized at construction so that churn never grows it.
  Index index_;
};

}  // namespace mxlimit::replay

#endif  // MXLIMIT_REPLAY_TOP_K_H_
