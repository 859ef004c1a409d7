#include "src/daemon/pending_table.h"

#include <algorithm>

#include "absl/hash/hash.h"

namespace mxlimit::daemon {
namespace {

constexpr size_t kShards = 8;

// absl's hash is seeded per process, so no one outside can aim ids at one
// index slot; a collision only costs the entry it replaces.
uint64_t HashId(std::string_view id) {
  return absl::Hash<std::string_view>{}(id);
}

}  // namespace

PendingRequest PendingRequest::Of(const Request& request, const Decision& d) {
  PendingRequest kept;
  kept.client = request.client;
  kept.user_id = request.user_id;
  kept.origin = request.origin;
  kept.request_bytes = request.request_bytes;
  kept.leases = d.leases;
  kept.settles = d.settles;
  return kept;
}

Request PendingRequest::ToRequest(std::string_view method,
                                  std::string_view target) const {
  Request request;
  request.method = method;
  request.target = target;
  request.client = client;
  request.user_id = user_id;
  request.origin = origin;
  request.request_bytes = request_bytes;
  return request;
}

PendingRequest PendingEntry::request() const {
  PendingRequest r;
  r.client = client_;
  r.user_id = std::string_view(user_.data(), user_len_);
  r.origin = std::string_view(origin_.data(), origin_len_);
  r.request_bytes = request_bytes_;
  r.leases = leases_;
  r.settles = settles_;
  return r;
}

void PendingEntry::Assign(std::string_view id, const PendingRequest& r) {
  // std::copy, not memcpy: an empty view's data() may be null.
  std::copy(id.begin(), id.end(), id_.begin());
  std::copy(r.user_id.begin(), r.user_id.end(), user_.begin());
  std::copy(r.origin.begin(), r.origin.end(), origin_.begin());
  id_len_ = static_cast<uint8_t>(id.size());
  user_len_ = static_cast<uint8_t>(r.user_id.size());
  origin_len_ = static_cast<uint8_t>(r.origin.size());
  client_ = r.client;
  request_bytes_ = r.request_bytes;
  leases_ = r.leases;
  settles_ = r.settles;
}

PendingTable::PendingTable(size_t capacity)
    : shards_(std::clamp<size_t>(capacity, 1, kShards)),
      capacity_(std::max<size_t>(capacity, 1)) {
  const size_t n = shards_.size();
  for (size_t i = 0; i < n; ++i) {
    Shard& s = shards_[i];
    const size_t slots = capacity_ / n + (i < capacity_ % n ? 1 : 0);
    s.slots.resize(slots);
    s.free.reserve(slots);
    for (size_t k = slots; k-- > 0;) s.free.push_back(static_cast<uint32_t>(k));
    // Twice the entries, so that erasing never leaves the map so full of
    // tombstones that an insert grows it (it rehashes in place instead).
    s.index.reserve(slots * 2);
  }
}

void PendingTable::Unlink(Shard& s, uint32_t slot) {
  PendingEntry& e = s.slots[slot];
  if (e.older_ != kNil) {
    s.slots[e.older_].newer_ = e.newer_;
  } else {
    s.oldest = e.newer_;
  }
  if (e.newer_ != kNil) {
    s.slots[e.newer_].older_ = e.older_;
  } else {
    s.newest = e.older_;
  }
}

void PendingTable::Drop(Shard& s, uint32_t slot, uint64_t hash) {
  Unlink(s, slot);
  s.index.erase(hash);
  s.free.push_back(slot);
}

Leases PendingTable::Put(std::string_view id, const PendingRequest& request) {
  Leases displaced;
  if (!Keeps(id)) return displaced;
  PendingRequest kept = request;
  if (kept.user_id.size() > PendingEntry::kMaxNameBytes ||
      kept.origin.size() > PendingEntry::kMaxNameBytes) {
    if (kept.user_id.size() > PendingEntry::kMaxNameBytes) kept.user_id = {};
    if (kept.origin.size() > PendingEntry::kMaxNameBytes) kept.origin = {};
    too_long_.fetch_add(1, std::memory_order_relaxed);
  }
  const uint64_t hash = HashId(id);
  Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mu);
  if (auto it = s.index.find(hash); it != s.index.end()) {
    displaced = s.slots[it->second].leases_;
    Drop(s, it->second, hash);
    replaced_.fetch_add(1, std::memory_order_relaxed);
  }
  if (s.free.empty()) {
    const uint32_t oldest = s.oldest;
    Drop(s, oldest, HashId(s.slots[oldest].id()));
    evicted_.fetch_add(1, std::memory_order_relaxed);
  }
  const uint32_t slot = s.free.back();
  s.free.pop_back();
  PendingEntry& e = s.slots[slot];
  e.Assign(id, kept);
  e.older_ = s.newest;
  e.newer_ = kNil;
  if (s.newest != kNil) {
    s.slots[s.newest].newer_ = slot;
  } else {
    s.oldest = slot;
  }
  s.newest = slot;
  s.index.emplace(hash, slot);
  return displaced;
}

bool PendingTable::Take(std::string_view id, PendingEntry& out) {
  if (!Keeps(id)) return false;
  const uint64_t hash = HashId(id);
  Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mu);
  const uint32_t slot = Find(s, hash, id);
  if (slot == kNil) return false;
  out = s.slots[slot];
  Drop(s, slot, hash);
  return true;
}

bool PendingTable::Contains(std::string_view id) const {
  if (!Keeps(id)) return false;
  const uint64_t hash = HashId(id);
  const Shard& s = ShardOf(hash);
  std::lock_guard<std::mutex> lock(s.mu);
  return Find(s, hash, id) != kNil;
}

uint32_t PendingTable::Find(const Shard& s, uint64_t hash,
                            std::string_view id) {
  auto it = s.index.find(hash);
  if (it == s.index.end() || s.slots[it->second].id() != id) return kNil;
  return it->second;
}

PendingTable::Counters PendingTable::counters() const {
  Counters c;
  for (const Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    c.entries += s.slots.size() - s.free.size();
  }
  c.capacity = capacity_;
  c.evicted = evicted_.load(std::memory_order_relaxed);
  c.replaced = replaced_.load(std::memory_order_relaxed);
  c.too_long = too_long_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace mxlimit::daemon
