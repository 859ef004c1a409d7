#include "src/replay/top_k.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <functional>

namespace mxlimit::replay {
namespace {

// Cuts `item` to at most `max` bytes without splitting a UTF-8 sequence.
std::string_view TruncateUtf8(std::string_view item, size_t max) {
  if (item.size() <= max) return item;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(item[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return item.substr(0, cut);
}

}  // namespace

namespace {

// Index buckets for `capacity` counters, as BucketTable::IndexBucketCount:
// a full TopK stays within 25/32 of the index, where abseil clears erase
// tombstones by rehashing in place instead of growing, so the steady churn of
// a full sketch (erase one, insert one) never allocates.
size_t IndexBucketCount(size_t capacity) {
  const size_t wanted = capacity + (capacity * 7 + 24) / 25 + 1;
  return wanted < 32 ? 32 : wanted;
}

}  // namespace

TopK::TopK(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)),
      counters_(capacity_),
      text_(capacity_ * kMaxItemBytes),
      index_(IndexBucketCount(capacity_), IndexHash{counters_.data()},
             IndexEq{counters_.data(), text_.data()}) {
  assert(capacity >= 1 && capacity < (size_t{1} << 31));
  assert(capacity_ * 32 <= index_.capacity() * 25);
  heap_.reserve(capacity_);
}

void TopK::HeapSwap(uint32_t a, uint32_t b) {
  std::swap(heap_[a], heap_[b]);
  counters_[heap_[a]].heap_pos = a;
  counters_[heap_[b]].heap_pos = b;
}

void TopK::SiftUp(uint32_t pos) {
  while (pos > 0) {
    uint32_t parent = (pos - 1) / 2;
    if (!Less(heap_[pos], heap_[parent])) break;
    HeapSwap(pos, parent);
    pos = parent;
  }
}

void TopK::SiftDown(uint32_t pos) {
  const uint32_t n = static_cast<uint32_t>(heap_.size());
  for (;;) {
    uint32_t smallest = pos;
    uint32_t l = 2 * pos + 1, r = l + 1;
    if (l < n && Less(heap_[l], heap_[smallest])) smallest = l;
    if (r < n && Less(heap_[r], heap_[smallest])) smallest = r;
    if (smallest == pos) return;
    HeapSwap(pos, smallest);
    pos = smallest;
  }
}

TopK::Slot TopK::Add(std::string_view item, uint64_t weight) {
  if (weight == 0) return {};
  total_ += weight;
  std::string_view text = TruncateUtf8(item, kMaxItemBytes);
  bool truncated = text.size() < item.size();
  uint64_t hash = std::hash<std::string_view>{}(text);

  uint32_t c;
  if (auto it = index_.find(ItemRef{text, hash}); it != index_.end()) {
    c = *it;
    counters_[c].count += weight;
    counters_[c].truncated = counters_[c].truncated || truncated;
    SiftDown(counters_[c].heap_pos);
    return {c, false};
  }

  uint64_t inherited = 0;
  if (size_ < capacity_) {
    c = static_cast<uint32_t>(size_++);
    counters_[c].heap_pos = static_cast<uint32_t>(heap_.size());
    heap_.push_back(c);
  } else {
    // Replace the item with the smallest count; it stays at the heap root
    // until its new count sifts it down.
    c = heap_[0];
    inherited = counters_[c].count;
    index_.erase(c);
  }
  Counter& counter = counters_[c];
  std::memcpy(&text_[size_t{c} * kMaxItemBytes], text.data(), text.size());
  counter.length = static_cast<uint8_t>(text.size());
  counter.hash = hash;
  counter.truncated = truncated;
  counter.count = inherited + weight;
  counter.error = inherited;
  index_.insert(c);
  if (inherited == 0) {
    SiftUp(counter.heap_pos);
  } else {
    SiftDown(counter.heap_pos);
  }
  return {c, true};
}

std::vector<TopKEntry> TopK::Top(size_t n) const {
  std::vector<uint32_t> order(heap_.begin(), heap_.end());
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (counters_[a].count != counters_[b].count) {
      return counters_[a].count > counters_[b].count;
    }
    return TextOf(a) < TextOf(b);
  });
  std::vector<TopKEntry> out;
  out.reserve(std::min(n, order.size()));
  for (size_t i = 0; i < order.size() && i < n; ++i) {
    const Counter& c = counters_[order[i]];
    out.push_back(TopKEntry{std::string(TextOf(order[i])), c.count, c.error,
                            c.truncated, order[i]});
  }
  return out;
}

uint64_t TopK::max_error() const {
  return size_ < capacity_ || heap_.empty() ? 0 : counters_[heap_[0]].count;
}

size_t TopK::memory_bytes() const {
  constexpr size_t kGroupWidth = 16;  // Cloned control bytes at the end.
  return sizeof(*this) + counters_.capacity() * sizeof(Counter) +
         text_.capacity() + heap_.capacity() * sizeof(uint32_t) +
         index_.capacity() * (sizeof(uint32_t) + 1) + kGroupWidth + 1;
}

}  // namespace mxlimit::replay
