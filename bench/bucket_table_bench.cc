// Benchmarks of the bounded bucket table against two baselines, in one binary
// so that one run gives the ratios:
//
//   BM_BucketTable_*   internal::BucketTable<IpBucketKey, BucketKeyHash>: slab
//   +
//                      intrusive uint32_t LRU links + abseil index.
//   BM_NaiveLru_*      std::unordered_map<std::string, std::list<>::iterator>
//                      + std::list, building the key string per request: the
//                      straightforward design.
//   BM_ScanEvict_*     absl::flat_hash_map with a last-used stamp per entry;
//                      a full table evicts by scanning for the oldest entry
//                      (the rejected O(n) option).
//
// Operations:
//   Touch/keys:N            N live keys; look up a present key (uniform) and
//                           write its state.
//   AdmitAtCapacity/keys:N  a full table of N; every operation admits a key
//                           never seen before, evicting the LRU entry.
//   *_Zipf                  the same, keys Zipf-distributed (s = 1). Touch:
//                           over the N live keys. AdmitAtCapacity: a full
//                           table of N fed from 4N keys, so hot keys hit and
//                           the tail admits and evicts (hit_ratio reported).
//
// Counter bytes_per_entry: heap bytes in use (glibc mallinfo2: uordblks +
// hblkhd, so allocator headers, rounding and mmapped blocks count) after
// building the container and filling it with N keys, minus before, over N.
// For BucketTable, model_bytes_per_entry is memory_bytes() / N, its own
// capacity arithmetic.

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "benchmark/benchmark.h"
#include "mxlimit/rate.h"
#include "src/engine/bucket_keys.h"
#include "src/engine/bucket_table.h"

namespace mxlimit::internal {
namespace {

// --- Keys and random streams ---------------------------------------------

constexpr uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Key number `i`: an IPv6-looking address (distinct per i, since SplitMix is
// a bijection), one policy, one route.
inline IpBucketKey KeyFor(uint64_t i) {
  IpBucketKey k;
  const uint64_t hi = SplitMix(i);
  const uint64_t lo = SplitMix(i ^ 0x5bd1e9955bd1e995ULL);
  std::memcpy(k.address.data(), &hi, 8);
  std::memcpy(k.address.data() + 8, &lo, 8);
  k.policy = 3;
  k.route = 17;
  return k;
}

// xorshift64*: a couple of nanoseconds per draw.
struct FastRng {
  uint64_t s = 0x2545F4914F6CDD1DULL;
  uint64_t Next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  // Uniform in [0, n) for n < 2^32 (multiply-shift; bias irrelevant here).
  uint64_t Below(uint64_t n) { return ((Next() >> 32) * n) >> 32; }
};

// Key ids drawn Zipf(s = 1) over [0, universe): rank r has weight 1/(r+1).
// Ranks are scattered over ids, so hot keys are not neighbours in memory.
// Streams are long (2^23 draws) so that replaying one does not repeat a
// pattern an LRU of a million entries could remember; each is built once
// per universe and shared by every benchmark run.
constexpr size_t kZipfSamples = size_t{1} << 23;

const std::vector<uint32_t>& ZipfStream(uint64_t universe) {
  static std::map<uint64_t, std::vector<uint32_t>> cache;
  std::vector<uint32_t>& out = cache[universe];
  if (!out.empty()) return out;
  std::vector<double> cdf(universe);
  double sum = 0;
  for (uint64_t r = 0; r < universe; ++r) {
    sum += 1.0 / static_cast<double>(r + 1);
    cdf[r] = sum;
  }
  FastRng rng;
  out.resize(kZipfSamples);
  for (size_t i = 0; i < kZipfSamples; ++i) {
    const double u = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53 * sum;
    const uint64_t rank = std::min<uint64_t>(
        std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin(),
        universe - 1);
    out[i] = static_cast<uint32_t>(SplitMix(rank) % universe);
  }
  return out;
}

size_t HeapInUse() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// --- The three designs behind one interface --------------------------------

class TableLru {
 public:
  explicit TableLru(size_t capacity) : table_(capacity) {}
  GcraState* Find(const IpBucketKey& k) { return table_.Find(k); }
  GcraState* FindOrAdmit(const IpBucketKey& k) { return table_.FindOrAdmit(k); }
  const BucketTable<IpBucketKey, BucketKeyHash>& table() const {
    return table_;
  }

 private:
  BucketTable<IpBucketKey, BucketKeyHash> table_;
};

class NaiveLru {
 public:
  explicit NaiveLru(size_t capacity) : capacity_(capacity) {}

  GcraState* Find(const IpBucketKey& k) {
    auto it = map_.find(KeyString(k));
    if (it == map_.end()) return nullptr;
    order_.splice(order_.end(), order_, it->second);
    return &it->second->state;
  }

  GcraState* FindOrAdmit(const IpBucketKey& k) {
    std::string key = KeyString(k);
    auto it = map_.find(key);
    if (it != map_.end()) {
      order_.splice(order_.end(), order_, it->second);
      return &it->second->state;
    }
    if (map_.size() == capacity_) {
      map_.erase(order_.front().key);
      order_.pop_front();
    }
    order_.push_back(Node{key, GcraState{}});
    map_.emplace(std::move(key), std::prev(order_.end()));
    return &order_.back().state;
  }

 private:
  struct Node {
    std::string key;
    GcraState state;
  };
  // The per-request key string of a straightforward implementation.
  static std::string KeyString(const IpBucketKey& k) {
    return std::string(reinterpret_cast<const char*>(&k), sizeof(k));
  }

  size_t capacity_;
  std::list<Node> order_;
  std::unordered_map<std::string, std::list<Node>::iterator> map_;
};

class ScanEvictLru {
 public:
  explicit ScanEvictLru(size_t capacity) : capacity_(capacity) {
    map_.reserve(capacity);
  }

  GcraState* Find(const IpBucketKey& k) {
    auto it = map_.find(k);
    if (it == map_.end()) return nullptr;
    it->second.last_used = ++clock_;
    return &it->second.state;
  }

  GcraState* FindOrAdmit(const IpBucketKey& k) {
    if (GcraState* s = Find(k)) return s;
    if (map_.size() == capacity_) {
      auto oldest = map_.begin();
      for (auto it = map_.begin(); it != map_.end(); ++it) {
        if (it->second.last_used < oldest->second.last_used) oldest = it;
      }
      map_.erase(oldest);
    }
    Slot& slot = map_[k];
    slot.last_used = ++clock_;
    return &slot.state;
  }

 private:
  struct Slot {
    GcraState state;
    uint64_t last_used = 0;
  };
  size_t capacity_;
  uint64_t clock_ = 0;
  absl::flat_hash_map<IpBucketKey, Slot> map_;
};

// Builds a design with keys 0..n-1 admitted and reports bytes_per_entry.
template <typename Design>
std::unique_ptr<Design> BuildFull(benchmark::State& state, size_t n) {
  const size_t before = HeapInUse();
  auto design = std::make_unique<Design>(n);
  for (uint64_t i = 0; i < n; ++i) design->FindOrAdmit(KeyFor(i))->tat = 1;
  state.counters["bytes_per_entry"] =
      static_cast<double>(HeapInUse() - before) / static_cast<double>(n);
  if constexpr (std::is_same_v<Design, TableLru>) {
    state.counters["model_bytes_per_entry"] =
        static_cast<double>(design->table().memory_bytes()) /
        static_cast<double>(n);
  }
  return design;
}

// --- Benchmarks ----------------------------------------------------------

template <typename Design>
void Touch(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto design = BuildFull<Design>(state, n);
  FastRng rng;
  for (auto _ : state) {
    GcraState* s = design->Find(KeyFor(rng.Below(n)));
    s->tat += 1;  // Present by construction.
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename Design>
void AdmitAtCapacity(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto design = BuildFull<Design>(state, n);
  uint64_t next = n;  // Every key from here on is new.
  for (auto _ : state) {
    GcraState* s = design->FindOrAdmit(KeyFor(next++));
    s->tat = 1;
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename Design>
void TouchZipf(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<uint32_t>& ids = ZipfStream(n);
  auto design = BuildFull<Design>(state, n);
  size_t i = 0;
  for (auto _ : state) {
    GcraState* s = design->Find(KeyFor(ids[i]));
    i = (i + 1) & (kZipfSamples - 1);
    s->tat += 1;
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename Design>
void AdmitAtCapacityZipf(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<uint32_t>& ids = ZipfStream(4 * n);
  auto design = BuildFull<Design>(state, n);
  // Warm up on the first half of the stream (the hot keys settle in), then
  // measure from there on.
  size_t i = 0;
  for (; i < kZipfSamples / 2; ++i)
    design->FindOrAdmit(KeyFor(ids[i]))->tat = 1;
  uint64_t hits = 0;
  for (auto _ : state) {
    GcraState* s = design->FindOrAdmit(KeyFor(ids[i]));
    i = (i + 1) & (kZipfSamples - 1);
    hits += s->tat != GcraState::kFresh;
    s->tat = 1;
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["hit_ratio"] =
      static_cast<double>(hits) / static_cast<double>(state.iterations());
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgName("keys")->Arg(1'000)->Arg(100'000)->Arg(1'000'000);
}
void ScanSizes(benchmark::internal::Benchmark* b) {
  b->ArgName("keys")->Arg(1'000)->Arg(10'000)->Arg(100'000);
}

void BM_BucketTable_Touch(benchmark::State& s) { Touch<TableLru>(s); }
void BM_NaiveLru_Touch(benchmark::State& s) { Touch<NaiveLru>(s); }
void BM_BucketTable_AdmitAtCapacity(benchmark::State& s) {
  AdmitAtCapacity<TableLru>(s);
}
void BM_NaiveLru_AdmitAtCapacity(benchmark::State& s) {
  AdmitAtCapacity<NaiveLru>(s);
}
void BM_ScanEvict_AdmitAtCapacity(benchmark::State& s) {
  AdmitAtCapacity<ScanEvictLru>(s);
}
void BM_BucketTable_Touch_Zipf(benchmark::State& s) { TouchZipf<TableLru>(s); }
void BM_NaiveLru_Touch_Zipf(benchmark::State& s) { TouchZipf<NaiveLru>(s); }
void BM_BucketTable_AdmitAtCapacity_Zipf(benchmark::State& s) {
  AdmitAtCapacityZipf<TableLru>(s);
}
void BM_NaiveLru_AdmitAtCapacity_Zipf(benchmark::State& s) {
  AdmitAtCapacityZipf<NaiveLru>(s);
}

BENCHMARK(BM_BucketTable_Touch)->Apply(Sizes);
BENCHMARK(BM_NaiveLru_Touch)->Apply(Sizes);
BENCHMARK(BM_BucketTable_AdmitAtCapacity)->Apply(Sizes);
BENCHMARK(BM_NaiveLru_AdmitAtCapacity)->Apply(Sizes);
BENCHMARK(BM_ScanEvict_AdmitAtCapacity)->Apply(ScanSizes);
BENCHMARK(BM_BucketTable_Touch_Zipf)->Apply(Sizes);
BENCHMARK(BM_NaiveLru_Touch_Zipf)->Apply(Sizes);
BENCHMARK(BM_BucketTable_AdmitAtCapacity_Zipf)->Apply(Sizes);
BENCHMARK(BM_NaiveLru_AdmitAtCapacity_Zipf)->Apply(Sizes);

}  // namespace
}  // namespace mxlimit::internal
