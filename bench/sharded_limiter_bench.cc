// The thread-safe limiter against the obvious alternative, on one workload.
//
//   BM_Sharded_Check/shards:N  ShardedLimiter with N shards (N = 0: the
//                          default count, 256 for these tables), called
//                          from 1 and 2 threads.
//   BM_Sharded_Check_Contended/shards:0  the same, every thread on the
//                          same clients (threads meet on shards and buckets).
//   BM_SingleMutex_Check   one Limiter behind one absl::Mutex, the way an
//                          embedder would share it without ShardedLimiter.
//   BM_PerThread_Check     one Limiter per thread, nothing shared: the
//                          ceiling the machine allows.
//   BM_ShardedPerThread_Check  one ShardedLimiter per thread: the sharded
//                          code with nothing shared, so the gap to
//                          BM_Sharded_Check is what sharing costs.
//   BM_ShardedPerThreadSharedLocks_Check  the same, and each check also
//                          takes and releases two of 256 mutexes that every
//                          thread uses, as the shards' locks are: what the
//                          lock traffic alone costs.
//
// Workload: the built-in policies plus one per-IP and one per-user catch-all
// (so every request touches two buckets), a realistic mix of targets, and
// 4096 clients per thread, each in its own IPv6 /48 with its own user. Each
// thread has its own clients (a homeserver's threads serve different
// connections), and its own clock advancing 1 ms per request, so most
// requests pass. Run with --benchmark_filter=Check; compare items_per_second
// (the total over all threads) at threads:1 and threads:2.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "mxlimit/internal/mutex.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"

namespace mxlimit {
namespace {

constexpr size_t kClientsPerThread = 4096;
constexpr size_t kRequestsPerThread = 1 << 14;

const char* const kTargets[] = {
    "/_matrix/client/v3/sync?since=s72594_4483_1934&timeout=30000",
    "/_matrix/client/r0/sync?timeout=30000",
    "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/send/"
    "m.room.message/m1712345678.1",
    "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/receipt/"
    "m.read/%24eventid123",
    "/_matrix/client/v3/keys/query",
    "/_matrix/client/v1/media/download/matrix.org/AbCdEfGh123",
    "/_matrix/federation/v1/send/1712345678901",
    "/_matrix/client/v3/pushrules/",
};

LimiterConfig BenchConfig() {
  LimiterConfig config;  // built-ins on
  config.tables.ip_capacity = 1 << 16;
  config.tables.user_capacity = 1 << 16;
  for (Scope scope : {Scope::kIp, Scope::kUser}) {
    Policy p;
    p.name = scope == Scope::kIp ? "all-ip" : "all-user";
    p.match = {"*"};
    p.scope = scope;
    p.share_threshold = true;
    p.rate = *Rate::Create(100, TimeUnit::kSecond);
    config.policies.push_back(p);
  }
  return config;
}

struct ThreadWorkload {
  std::vector<std::string> users;
  std::vector<Request> requests;
};

ThreadWorkload MakeWorkload(int thread) {
  ThreadWorkload w;
  std::mt19937_64 rng(17 + thread);
  w.users.reserve(kClientsPerThread);
  for (size_t c = 0; c < kClientsPerThread; ++c) {
    w.users.push_back("@t" + std::to_string(thread) + "u" + std::to_string(c) +
                      ":example.org");
  }
  w.requests.reserve(kRequestsPerThread);
  for (size_t i = 0; i < kRequestsPerThread; ++i) {
    const size_t c = rng() % kClientsPerThread;
    Request r;
    r.method = "GET";
    r.target = kTargets[rng() % std::size(kTargets)];
    // 2001:db8:<thread><client>::1: each client in its own /48, as clients
    // of a public homeserver mostly are (the IP shard is chosen per /48,
    // the built-in network layer's prefix, so clients inside one /48 share
    // a shard by design).
    const auto net = static_cast<uint16_t>(thread << 12 | c);
    r.client.bytes = {0x20,
                      0x01,
                      0x0d,
                      0xb8,
                      static_cast<uint8_t>(net >> 8),
                      static_cast<uint8_t>(net)};
    r.client.bytes[15] = 1;
    r.user_id = w.users[c];
    w.requests.push_back(r);
  }
  return w;
}

// Runs `check(request, now)` over the thread's workload (with `shared`,
// thread 0's: every thread on the same clients); counts passes.
template <typename CheckFn>
void RunWorkload(benchmark::State& state, CheckFn check, bool shared = false) {
  const ThreadWorkload w = MakeWorkload(shared ? 0 : state.thread_index());
  int64_t now_ns = 0;
  size_t i = 0;
  int64_t allowed = 0;
  for (auto _ : state) {
    now_ns += 1'000'000;
    allowed += check(w.requests[i], MonotonicTime::FromNanoseconds(now_ns));
    i = (i + 1) % w.requests.size();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["allowed_share"] = benchmark::Counter(
      static_cast<double>(allowed) / static_cast<double>(state.iterations()),
      benchmark::Counter::kAvgThreads);
}

std::unique_ptr<ShardedLimiter> g_sharded;

void BM_Sharded_Check(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_sharded = *ShardedLimiter::Create(BenchConfig(),
                                        static_cast<size_t>(state.range(0)));
    state.counters["shards"] = static_cast<double>(g_sharded->shard_count());
  }
  // The timing loop starts only once every thread has reached it.
  RunWorkload(state, [](const Request& r, MonotonicTime now) {
    return g_sharded->Check(r, now).allowed;
  });
  if (state.thread_index() == 0) g_sharded.reset();
}
BENCHMARK(BM_Sharded_Check)
    ->ArgName("shards")
    ->Arg(0)
    ->Arg(2)
    ->Arg(16)
    ->ThreadRange(1, 2)
    ->UseRealTime();

// The contended variant: every thread sends as the same clients, so the
// threads meet on the same shards and buckets.
void BM_Sharded_Check_Contended(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_sharded = *ShardedLimiter::Create(BenchConfig(),
                                        static_cast<size_t>(state.range(0)));
    state.counters["shards"] = static_cast<double>(g_sharded->shard_count());
  }
  RunWorkload(
      state,
      [](const Request& r, MonotonicTime now) {
        return g_sharded->Check(r, now).allowed;
      },
      /*shared=*/true);
  if (state.thread_index() == 0) g_sharded.reset();
}
BENCHMARK(BM_Sharded_Check_Contended)
    ->ArgName("shards")
    ->Arg(0)
    ->ThreadRange(1, 2)
    ->UseRealTime();

struct LockedLimiter {
  absl::Mutex mu;
  std::unique_ptr<Limiter> limiter ABSL_PT_GUARDED_BY(mu);
};
std::unique_ptr<LockedLimiter> g_locked;

void BM_SingleMutex_Check(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_locked = std::make_unique<LockedLimiter>();
    absl::MutexLock lock(&g_locked->mu);
    g_locked->limiter = *Limiter::Create(BenchConfig());
  }
  RunWorkload(state, [](const Request& r, MonotonicTime now) {
    absl::MutexLock lock(&g_locked->mu);
    return g_locked->limiter->Check(r, now).allowed;
  });
  if (state.thread_index() == 0) g_locked.reset();
}
BENCHMARK(BM_SingleMutex_Check)->ThreadRange(1, 2)->UseRealTime();

// The ceiling: every thread its own Limiter, nothing shared between threads
// but the machine (caches, memory bandwidth). No thread-safe limiter can
// scale better than this on the same machine.
void BM_PerThread_Check(benchmark::State& state) {
  std::unique_ptr<Limiter> own = *Limiter::Create(BenchConfig());
  RunWorkload(state, [&own](const Request& r, MonotonicTime now) {
    return own->Check(r, now).allowed;
  });
}
BENCHMARK(BM_PerThread_Check)->ThreadRange(1, 2)->UseRealTime();

void BM_ShardedPerThread_Check(benchmark::State& state) {
  std::unique_ptr<ShardedLimiter> own =
      *ShardedLimiter::Create(BenchConfig(), 0);
  RunWorkload(state, [&own](const Request& r, MonotonicTime now) {
    return own->Check(r, now).allowed;
  });
}
BENCHMARK(BM_ShardedPerThread_Check)->ThreadRange(1, 2)->UseRealTime();

struct alignas(64) PaddedMutex {
  internal::Mutex mu;
};
PaddedMutex g_locks[256];

void BM_ShardedPerThreadSharedLocks_Check(benchmark::State& state) {
  std::unique_ptr<ShardedLimiter> own =
      *ShardedLimiter::Create(BenchConfig(), 0);
  RunWorkload(state, [&own](const Request& r, MonotonicTime now) {
    // Two different locks, lower index first, as a sharded check takes its
    // two shards'.
    size_t a = own->IpShard(r.client) % std::size(g_locks);
    size_t b = own->UserShard(r.user_id) % std::size(g_locks);
    if (a == b) b = (a + 1) % std::size(g_locks);
    if (a > b) std::swap(a, b);
    internal::MutexPairLock lock(g_locks[a].mu, g_locks[b].mu, true);
    return own->Check(r, now).allowed;
  });
}
BENCHMARK(BM_ShardedPerThreadSharedLocks_Check)
    ->ThreadRange(1, 2)
    ->UseRealTime();

}  // namespace
}  // namespace mxlimit
