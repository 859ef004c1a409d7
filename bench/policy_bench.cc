// PolicySet::Resolve against the number of trailing-'*' policies, with the
// naive design (scan every policy, glob both forms) in the same binary.
//
//   BM_PolicySet_Resolve/policies:N   N = 10, 1k, 10k operator prefix policies
//                                     plus the built-ins; should stay flat.
//   BM_NaiveScan_Resolve/policies:N   the linear scan; grows with N.
//
// The request mix cycles through Matrix requests whose raw paths walk deep
// into the trie (a send into one of the policies' rooms), plus sync, keys,
// media and an unknown path.

#include <string>
#include <string_view>
#include <vector>

#include "benchmark/benchmark.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/policy_set.h"

namespace mxlimit {
namespace {

constexpr std::string_view kRouteKeys[] = {
    kFallbackRouteKey,
    "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}",
    "/_matrix/client/v3/sync",
    "/_matrix/client/v3/keys/claim",
    "/_matrix/client/v1/media/download/{serverName}/{mediaId}",
    "/_matrix/client/v3/rooms/{roomId}/messages",
};

struct BenchRequest {
  std::string method;
  RouteId route;
  std::string path;
  bool has_user;
};

std::vector<Policy> PrefixPolicies(int n) {
  std::vector<Policy> out;
  for (int i = 0; i < n; ++i) {
    Policy p;
    p.name = "room-" + std::to_string(i);
    // Alternate two shapes so the trie branches at two depths.
    p.match = (i % 2 ? "/_matrix/client/v3/rooms/!room"
                     : "/_matrix/client/r0/rooms/!r") +
              std::to_string(i) + ":example.org/*";
    p.scope = i % 3 ? Scope::kUser : Scope::kIp;
    p.share_threshold = i % 5 == 0;
    p.rate = *Rate::Create(100, TimeUnit::kMinute);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<BenchRequest> Requests(int n) {
  std::vector<BenchRequest> out;
  for (int i = 0; i < 64; ++i) {
    const int room = (i * 7919) % n;
    out.push_back({"PUT", 1,
                   "/_matrix/client/v3/rooms/!room" + std::to_string(room) +
                       ":example.org/send/m.room.message/txn" +
                       std::to_string(i),
                   true});
  }
  out.push_back({"GET", 2, "/_matrix/client/v3/sync", true});
  out.push_back({"POST", 3, "/_matrix/client/r0/keys/claim", true});
  out.push_back(
      {"GET", 4, "/_matrix/client/v1/media/download/x.org/abcdef", false});
  out.push_back(
      {"GET", 0, "/_matrix/client/v3/rooms/!room1:example.org/zz", true});
  out.push_back({"GET", 0, "/wp-login.php", false});
  return out;
}

void BM_PolicySet_Resolve(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  absl::StatusOr<PolicySet> set =
      PolicySet::Compile(PrefixPolicies(n), true, kRouteKeys);
  if (!set.ok()) {
    state.SkipWithError("compile failed");
    return;
  }
  const std::vector<BenchRequest> requests = Requests(n);
  size_t i = 0;
  for (auto _ : state) {
    const BenchRequest& r = requests[i++ % requests.size()];
    benchmark::DoNotOptimize(
        set->Resolve(r.method, r.route, r.path, r.has_user));
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["trie_nodes"] = static_cast<double>(set->trie_nodes());
}
BENCHMARK(BM_PolicySet_Resolve)
    ->Arg(10)
    ->Arg(1000)
    ->Arg(10000)
    ->ArgName("policies");

// The straightforward design: every policy, both forms, every request.
class NaiveScan {
 public:
  explicit NaiveScan(std::vector<Policy> policies)
      : policies_(std::move(policies)) {
    for (size_t i = 0; i < policies_.size(); ++i) {
      internal::PatternShape shape = internal::ShapeOf(policies_[i].match);
      rank_.push_back(
          (shape.kind == internal::PatternKind::kExact ? uint64_t{1} << 62
                                                       : 0) |
          (static_cast<uint64_t>(shape.literal_bytes) << 24) |
          (policies_[i].builtin ? 0 : uint64_t{1} << 16) | (0xFFFF - i));
    }
  }

  PolicySet::Resolution Resolve(std::string_view method, RouteId route,
                                std::string_view path, bool has_user) const {
    PolicyId best[2] = {kNoPolicy, kNoPolicy};
    const std::string_view key = kRouteKeys[route];
    for (size_t i = 0; i < policies_.size(); ++i) {
      const Policy& p = policies_[i];
      const int s = p.scope == Scope::kIp ? 0 : 1;
      if (s == 1 && !has_user) continue;
      if (!p.methods.empty() && std::find(p.methods.begin(), p.methods.end(),
                                          method) == p.methods.end()) {
        continue;
      }
      if (best[s] != kNoPolicy && rank_[i] <= rank_[best[s]]) continue;
      if (internal::GlobMatch(p.match, key) ||
          internal::GlobMatch(p.match, path)) {
        best[s] = static_cast<PolicyId>(i);
      }
    }
    PolicySet::Resolution r;
    r.ip = best[0];
    r.user = best[1];
    return r;
  }

 private:
  std::vector<Policy> policies_;
  std::vector<uint64_t> rank_;
};

void BM_NaiveScan_Resolve(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<Policy> all = PrefixPolicies(n);
  for (Policy& b : BuiltinPolicies()) all.push_back(std::move(b));
  NaiveScan naive(std::move(all));
  const std::vector<BenchRequest> requests = Requests(n);
  size_t i = 0;
  for (auto _ : state) {
    const BenchRequest& r = requests[i++ % requests.size()];
    benchmark::DoNotOptimize(
        naive.Resolve(r.method, r.route, r.path, r.has_user));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NaiveScan_Resolve)
    ->Arg(10)
    ->Arg(1000)
    ->Arg(10000)
    ->ArgName("policies");

}  // namespace
}  // namespace mxlimit
