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

TopK::TopK(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  assert(capacity >= 1 && capacity < (size_t{1} << 31));
  // A load factor of at most 1/2 keeps linear probes short.
  size_t slots = 1;
  while (slots < 2 * capacity_) slots <<= 1;
  index_mask_ = slots - 1;
  counters_.resize(capacity_);
  text_.resize(capacity_ * kMaxItemBytes);
  heap_.reserve(capacity_);
  index_.assign(slots, kEmpty);
}

size_t TopK::FindSlot(uint64_t hash, std::string_view text) const {
  size_t i = hash & index_mask_;
  for (;;) {
    uint32_t c = index_[i];
    if (c == kEmpty) return i;
    if (counters_[c].hash == hash && TextOf(c) == text) return i;
    i = (i + 1) & index_mask_;
  }
}

void TopK::IndexInsert(uint32_t c) {
  size_t i = FindSlot(counters_[c].hash, TextOf(c));
  index_[i] = c;
}

void TopK::IndexErase(uint32_t c) {
  size_t i = FindSlot(counters_[c].hash, TextOf(c));
  assert(index_[i] == c);
  // Backward-shift deletion: pull later members of the probe run into the
  // hole when their home slot does not lie between the hole and them, so
  // lookups never need tombstones.
  size_t hole = i;
  size_t j = i;
  for (;;) {
    j = (j + 1) & index_mask_;
    uint32_t m = index_[j];
    if (m == kEmpty) break;
    size_t home = counters_[m].hash & index_mask_;
    bool home_in_range =
        hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!home_in_range) {
      index_[hole] = m;
      hole = j;
    }
  }
  index_[hole] = kEmpty;
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

void TopK::Add(std::string_view item, uint64_t weight) {
  if (weight == 0) return;
  total_ += weight;
  std::string_view text = TruncateUtf8(item, kMaxItemBytes);
  bool truncated = text.size() < item.size();
  uint64_t hash = std::hash<std::string_view>{}(text);

  size_t slot = FindSlot(hash, text);
  uint32_t c = index_[slot];
  if (c != kEmpty) {
    counters_[c].count += weight;
    counters_[c].truncated = counters_[c].truncated || truncated;
    SiftDown(counters_[c].heap_pos);
    return;
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
    IndexErase(c);
  }
  Counter& counter = counters_[c];
  std::memcpy(&text_[size_t{c} * kMaxItemBytes], text.data(), text.size());
  counter.length = static_cast<uint8_t>(text.size());
  counter.hash = hash;
  counter.truncated = truncated;
  counter.count = inherited + weight;
  counter.error = inherited;
  IndexInsert(c);
  if (inherited == 0) {
    SiftUp(counter.heap_pos);
  } else {
    SiftDown(counter.heap_pos);
  }
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
                            c.truncated});
  }
  return out;
}

uint64_t TopK::max_error() const {
  return size_ < capacity_ || heap_.empty() ? 0 : counters_[heap_[0]].count;
}

size_t TopK::memory_bytes() const {
  return sizeof(*this) + counters_.capacity() * sizeof(Counter) +
         text_.capacity() + heap_.capacity() * sizeof(uint32_t) +
         index_.capacity() * sizeof(uint32_t);
}

}  // namespace mxlimit::replay
