// Limiter::Check against the number of operator policies: N = 10, 1k and 10k
// trailing-'*' policies (one per room, as an operator limiting busy rooms
// would write), plus the built-ins. The cost per request should stay flat in
// N: the policy set resolves through a per-route table, an exact-path hash
// and a prefix trie, never a scan (bench/policy_bench.cc measures
// PolicySet::Resolve alone, with the naive scan as the baseline).
//
//   BM_Limiter_Check_Policies/policies:N
//
//   build/release/bench/policy_scale_bench

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "mxlimit/limiter.h"

namespace mxlimit {
namespace {

LimiterConfig ManyPolicies(int n) {
  LimiterConfig config;
  for (int i = 0; i < n; ++i) {
    Policy p;
    p.name = "room-" + std::to_string(i);
    p.match = {"/_matrix/client/v3/rooms/!room" + std::to_string(i) +
               ":example.org/*"};
    p.scope = i % 2 ? Scope::kUser : Scope::kIp;
    p.share_threshold = i % 5 == 0;
    p.rate = *Rate::Create(1'000'000, TimeUnit::kSecond);
    config.policies.push_back(std::move(p));
  }
  return config;
}

void BM_Limiter_Check_Policies(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  absl::StatusOr<std::unique_ptr<Limiter>> limiter =
      Limiter::Create(ManyPolicies(n));
  if (!limiter.ok()) {
    state.SkipWithError("limiter creation failed");
    return;
  }
  // Sends into rooms spread over the policies, and requests no room policy
  // matches (sync, keys, an unknown path).
  std::vector<std::string> targets;
  for (int i = 0; i < 61; ++i) {
    targets.push_back(
        "/_matrix/client/v3/rooms/!room" + std::to_string((i * 7919) % n) +
        ":example.org/send/m.room.message/txn" + std::to_string(i));
  }
  targets.push_back("/_matrix/client/v3/sync?timeout=30000");
  targets.push_back("/_matrix/client/v3/keys/query");
  targets.push_back("/wp-login.php");
  Request req;
  req.method = "PUT";
  req.user_id = "@alice:example.org";
  req.client = *ParseIpAddress("203.0.113.9");
  int64_t now = 0;
  size_t i = 0;
  for (auto _ : state) {
    req.target = targets[i++ % targets.size()];
    now += 1'000'000;  // 1 ms apart: every request passes.
    benchmark::DoNotOptimize(
        (*limiter)->Check(req, MonotonicTime::FromNanoseconds(now)));
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["policies"] =
      static_cast<double>((*limiter)->policies().size());
}
BENCHMARK(BM_Limiter_Check_Policies)
    ->Arg(10)
    ->Arg(1000)
    ->Arg(10000)
    ->ArgName("policies");

}  // namespace
}  // namespace mxlimit
