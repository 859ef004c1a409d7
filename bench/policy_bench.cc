// PolicySet::Resolve against the number of trailing-'*' policies, with the
// naive design (scan every policy, glob both forms) in the same binary.
//
//   BM_PolicySet_Resolve/policies:N   N = 10, 1k, 10k operator prefix policies
//                                     over 4 layers plus the built-ins; should
//                                     stay flat.
//   BM_NaiveScan_Resolve/policies:N   the linear scan; grows with N.
//   BM_Canonicalize_Hostile           the canonical cursor over 64 KiB of
//                                     '%' escapes (bytes/s of raw path).
//
// The request mix cycles through Matrix requests whose raw paths walk deep
// into the trie (a send into one of the policies' rooms), plus sync, keys,
// media and an unknown path.

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "benchmark/benchmark.h"
#include "mxlimit/internal/canonical_path.h"
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
    p.match = {(i % 2 ? "/_matrix/client/v3/rooms/!room"
                      : "/_matrix/client/r0/rooms/!r") +
               std::to_string(i) + ":example.org/*"};
    p.scope = i % 3 ? Scope::kUser : Scope::kIp;
    static constexpr const char* kLayers[] = {"route", "l1", "l2", "l3"};
    p.layer = kLayers[i % 4];
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

// The straightforward design: every pattern of every policy, both canonical
// forms, every request, best per layer and scope.
class NaiveScan {
 public:
  explicit NaiveScan(std::vector<Policy> policies)
      : policies_(std::move(policies)) {
    for (size_t i = 0; i < policies_.size(); ++i) {
      const Policy& p = policies_[i];
      const std::string c = p.match[0] == kFallbackRouteKey
                                ? std::string(kFallbackRouteKey)
                                : internal::CanonicalPath(p.match[0]);
      const internal::PatternShape shape = internal::ShapeOf(c);
      const uint64_t tier = c == kFallbackRouteKey                        ? 1
                            : shape.kind == internal::PatternKind::kExact ? 3
                            : shape.literal_bytes > 0                     ? 2
                                                                          : 0;
      rank_.push_back((tier << 60) | (p.builtin ? 0 : uint64_t{1} << 59) |
                      (static_cast<uint64_t>(shape.rank_bytes) << 24) |
                      (0xFFFF - i));
      canonical_.push_back(c);
      auto it = std::find(layers_.begin(), layers_.end(), p.layer);
      layer_.push_back(static_cast<int>(it - layers_.begin()));
      if (it == layers_.end()) layers_.push_back(p.layer);
    }
  }

  PolicySet::Resolution Resolve(std::string_view method, RouteId route,
                                std::string_view path, bool has_user) const {
    PolicyId best[kMaxLayers][2];
    for (auto& b : best) b[0] = b[1] = kNoPolicy;
    const std::string_view key = kRouteKeys[route];
    const std::string canonical = internal::CanonicalPath(path);
    for (size_t i = 0; i < policies_.size(); ++i) {
      const Policy& p = policies_[i];
      const int s = p.scope == Scope::kIp ? 0 : 1;
      if (s == 1 && !has_user) continue;
      if (!p.methods.empty() && std::find(p.methods.begin(), p.methods.end(),
                                          method) == p.methods.end()) {
        continue;
      }
      PolicyId& b = best[layer_[i]][s];
      if (b != kNoPolicy && rank_[i] <= rank_[b]) continue;
      if (internal::GlobMatch(canonical_[i], key) ||
          internal::GlobMatch(canonical_[i], canonical)) {
        b = static_cast<PolicyId>(i);
      }
    }
    PolicySet::Resolution r;
    for (size_t l = 0; l < layers_.size(); ++l) {
      for (int s = 0; s < 2; ++s) {
        if (best[l][s] == kNoPolicy) continue;
        r.applied[r.count++] =
            ResolvedPolicy{best[l][s], route, static_cast<uint8_t>(l),
                           s == 0 ? Scope::kIp : Scope::kUser, false};
      }
    }
    r.ip = best[0][0];
    r.user = best[0][1];
    return r;
  }

 private:
  std::vector<Policy> policies_;
  std::vector<uint64_t> rank_;
  std::vector<std::string> canonical_;
  std::vector<int> layer_;
  std::vector<std::string> layers_;
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

// 64 KiB of escapes a client chose: decoded ones, kept ones ('%2F') and
// broken ones, read through the cursor the policy trie and globs use.
void BM_Canonicalize_Hostile(benchmark::State& state) {
  std::string path = "/_matrix/client/%72%30/";
  while (path.size() < 65536) path += "%41%2f%7E%zz%4";
  for (auto _ : state) {
    internal::CanonicalCursor c(path);
    uint8_t b;
    uint64_t sum = 0;
    while (c.Next(b)) sum += b;
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(path.size()));
}
BENCHMARK(BM_Canonicalize_Hostile);

}  // namespace
}  // namespace mxlimit
