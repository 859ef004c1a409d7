// The C ABI against the C++ API it wraps, in one binary, on one config and
// one traffic:
//
//   BM_CApi_Check/buckets:N     mxlimit_check through libmxlimit_c.so (the
//                               PLT call, the argument checks, the decision
//                               copied into the caller's struct)
//   BM_Sharded_Check/buckets:N  ShardedLimiter::Check, linked statically
//
// N = 1024 and 1048576 buckets per table. The budget (issue #16):
// mxlimit_check at most 1.15x ShardedLimiter::Check at both sizes; the ratios
// are printed at the end, from the medians when run with repetitions:
//
//   c_api_bench --benchmark_repetitions=10
//       --benchmark_enable_random_interleaving=true
//
// The workload, the same in the Rust and Go tests (bindings/): the built-in
// policies, tables of N buckets each, N clients (client c at
// 2001:db8:CCCC:CC00::1, user "@u<c>:example.org"), request i by client
// splitmix64(i) % N to one of eight targets chosen by the high half, one
// millisecond apart. Each limiter is filled first (every client once), so the
// tables are full and evict as they go. Single-threaded; shards: the default.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "mxlimit/c.h"
#include "mxlimit/config.h"
#include "mxlimit/request.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/time.h"

namespace mxlimit {
namespace {

constexpr std::pair<const char*, const char*> kTargets[] = {
    {"GET", "/_matrix/client/v3/sync?since=s72594_4483_1934&timeout=30000"},
    {"GET", "/_matrix/client/r0/sync?timeout=30000"},
    {"PUT",
     "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/send/"
     "m.room.message/m1712345678.1"},
    {"POST",
     "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/receipt/"
     "m.read/%24eventid123"},
    {"POST", "/_matrix/client/v3/keys/query"},
    {"GET", "/_matrix/client/v1/media/download/matrix.org/AbCdEfGh123"},
    {"PUT", "/_matrix/federation/v1/send/1712345678901"},
    {"GET", "/_matrix/client/v3/pushrules/"},
};

// Requests cycled through by the timed loop: enough that at 1M buckets the
// clients met are spread over the whole table.
constexpr size_t kRequests = size_t{1} << 20;

uint64_t SplitMix64(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

std::string ConfigText(size_t buckets) {
  return "tables:\n  ip: { capacity: " + std::to_string(buckets) +
         " }\n  user: { capacity: " + std::to_string(buckets) + " }\n";
}

// The traffic for one table size, built once and shared by both benchmarks.
struct Traffic {
  std::vector<std::string> users;
  // One request per client first (to fill the tables), then the cycle.
  std::vector<Request> fill;
  std::vector<Request> requests;
};

const Traffic& TrafficFor(size_t buckets) {
  static std::map<size_t, std::unique_ptr<Traffic>> cache;
  std::unique_ptr<Traffic>& t = cache[buckets];
  if (t != nullptr) return *t;
  t = std::make_unique<Traffic>();
  t->users.reserve(buckets);
  std::vector<IpAddress> clients(buckets);
  for (size_t c = 0; c < buckets; ++c) {
    t->users.push_back("@u" + std::to_string(c) + ":example.org");
    clients[c].bytes = {0x20,
                        0x01,
                        0x0d,
                        0xb8,
                        static_cast<uint8_t>(c >> 16),
                        static_cast<uint8_t>(c >> 8),
                        static_cast<uint8_t>(c)};
    clients[c].bytes[15] = 1;
  }
  auto make = [&](size_t c, size_t target) {
    Request r;
    r.method = kTargets[target].first;
    r.target = kTargets[target].second;
    r.client = clients[c];
    r.user_id = t->users[c];
    return r;
  };
  for (size_t c = 0; c < buckets; ++c) t->fill.push_back(make(c, 0));
  t->requests.reserve(kRequests);
  for (size_t i = 0; i < kRequests; ++i) {
    const uint64_t x = SplitMix64(i);
    t->requests.push_back(make(x % buckets, (x >> 32) % std::size(kTargets)));
  }
  return *t;
}

// A limiter of either kind with its own clock, kept across the benchmark
// library's repeated runs of one function (filling 1M buckets is costly).
template <typename Handle>
struct Kept {
  Handle handle;
  int64_t now_ns = 0;
};

using ShardedHandle = std::unique_ptr<ShardedLimiter>;
struct CHandle {
  mxlimit_limiter* limiter = nullptr;
};

// Checks `r` at `now_ns` through each API; returns whether it was allowed.
bool CheckWith(ShardedHandle& h, const Request& r, int64_t now_ns) {
  return h->Check(r, MonotonicTime::FromNanoseconds(now_ns)).allowed;
}
bool CheckWith(CHandle& h, const Request& r, int64_t now_ns) {
  mxlimit_decision d = MXLIMIT_DECISION_INIT;
  mxlimit_check(h.limiter, r.method.data(), r.method.size(), r.target.data(),
                r.target.size(), r.client.bytes.data(), r.user_id.data(),
                r.user_id.size(), r.cost, 0, now_ns, &d);
  return d.allowed != 0;
}

ShardedHandle Create(ShardedHandle*, size_t buckets) {
  absl::StatusOr<LimiterConfig> config =
      ParseConfig(ConfigText(buckets), "bench.yaml");
  return *ShardedLimiter::Create(*config);
}
CHandle Create(CHandle*, size_t buckets) {
  const std::string text = ConfigText(buckets);
  CHandle h;
  if (mxlimit_limiter_new_from_yaml(text.data(), text.size(), "bench.yaml",
                                    nullptr, &h.limiter,
                                    nullptr) != MXLIMIT_OK) {
    std::abort();
  }
  return h;
}

template <typename Handle>
Kept<Handle>& KeptFor(size_t buckets) {
  static std::map<size_t, Kept<Handle>> kept;
  auto [it, fresh] = kept.try_emplace(buckets);
  if (fresh) {
    it->second.handle = Create(static_cast<Handle*>(nullptr), buckets);
    for (const Request& r : TrafficFor(buckets).fill) {
      it->second.now_ns += 1'000'000;
      CheckWith(it->second.handle, r, it->second.now_ns);
    }
  }
  return it->second;
}

template <typename Handle>
void RunChecks(benchmark::State& state) {
  const size_t buckets = static_cast<size_t>(state.range(0));
  const std::vector<Request>& requests = TrafficFor(buckets).requests;
  Kept<Handle>& kept = KeptFor<Handle>(buckets);
  size_t i = 0;
  int64_t allowed = 0;
  for (auto _ : state) {
    kept.now_ns += 1'000'000;
    allowed += CheckWith(kept.handle, requests[i], kept.now_ns);
    i = (i + 1) % requests.size();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["allowed_share"] =
      static_cast<double>(allowed) / static_cast<double>(state.iterations());
}

void BM_CApi_Check(benchmark::State& state) { RunChecks<CHandle>(state); }
void BM_Sharded_Check(benchmark::State& state) {
  RunChecks<ShardedHandle>(state);
}
BENCHMARK(BM_CApi_Check)->ArgName("buckets")->Arg(1 << 10)->Arg(1 << 20);
BENCHMARK(BM_Sharded_Check)->ArgName("buckets")->Arg(1 << 10)->Arg(1 << 20);

// The console output, then the ratio mxlimit_check / ShardedLimiter::Check
// per size: of the medians with --benchmark_repetitions, else of the runs.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.aggregate_name == "median";
      if (!median && run.run_type == Run::RT_Aggregate) continue;
      Seen& seen = ns_[run.run_name.str()];
      if (median || !seen.median) {
        seen.ns = run.GetAdjustedCPUTime();
        seen.median = median;
      }
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const char* size : {"1024", "1048576"}) {
      const std::string arg = std::string("/buckets:") + size;
      const auto c = ns_.find("BM_CApi_Check" + arg);
      const auto cxx = ns_.find("BM_Sharded_Check" + arg);
      if (c == ns_.end() || cxx == ns_.end()) continue;
      std::printf(
          "mxlimit_check / ShardedLimiter::Check at %7s buckets: %.0f / %.0f "
          "ns = %.3fx (%s; budget 1.15x)\n",
          size, c->second.ns, cxx->second.ns, c->second.ns / cxx->second.ns,
          c->second.median ? "medians" : "single runs");
    }
  }

 private:
  struct Seen {
    double ns = 0;
    bool median = false;
  };
  std::map<std::string, Seen> ns_;
};

}  // namespace
}  // namespace mxlimit

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  mxlimit::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
