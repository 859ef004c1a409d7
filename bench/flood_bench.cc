// Floods of attacker-chosen identifiers against a Limiter with the built-in
// policies and default tables (100k buckets each), at full size. Each
// benchmark runs its flood once and reports what it cost as counters:
//
//   BM_Flood_DistinctAddresses   10M distinct IPv4 clients: the IP table stays
//                                at capacity, RSS at 1M and at 10M requests.
//   BM_Flood_Ipv6OneSlash64      1M addresses of one /64: one bucket, and the
//                                attacker gets exactly that bucket's burst.
//   BM_Flood_RoomIds             1M distinct room IDs on one send route: one
//                                user bucket, the message-send burst.
//   BM_Flood_UnknownPaths        1M distinct unknown paths: one IP bucket, the
//                                unknown-paths-per-ip burst.
//   BM_Flood_HugeUserIds         100k distinct 64 KiB user IDs: one overflow
//                                bucket, RSS unchanged.
//
// Counters: `requests`, `allowed`, `ip_size`/`user_size` (buckets at the end),
// `evictions`, `rss_MiB_*` (VmRSS from /proc/self/status at that point) and
// `hwm_MiB` (VmHWM, the process's peak; run one benchmark per process, with
// --benchmark_filter, for a clean peak). docs/security.md quotes the figures.
//
//   build/release/bench/flood_bench
//   --benchmark_filter=BM_Flood_DistinctAddresses

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "mxlimit/limiter.h"

namespace mxlimit {
namespace {

// A field of /proc/self/status in MiB ("VmRSS", "VmHWM"); 0 if unreadable.
double StatusMiB(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  double kib = 0;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, field, n) == 0 && line[n] == ':') {
      kib = std::strtod(line + n + 1, nullptr);
      break;
    }
  }
  std::fclose(f);
  return kib / 1024.0;
}

std::unique_ptr<Limiter> DefaultLimiter() {
  absl::StatusOr<std::unique_ptr<Limiter>> limiter =
      Limiter::Create(LimiterConfig{});
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

void Report(benchmark::State& state, const Limiter& limiter, int64_t requests,
            int64_t allowed) {
  const LimiterStats s = limiter.Stats();
  state.counters["requests"] = static_cast<double>(requests);
  state.counters["allowed"] = static_cast<double>(allowed);
  state.counters["ip_size"] = static_cast<double>(s.ip_table.size);
  state.counters["user_size"] = static_cast<double>(s.user_table.size);
  state.counters["evictions"] =
      static_cast<double>(s.ip_table.evictions + s.user_table.evictions);
  state.counters["hwm_MiB"] = StatusMiB("VmHWM");
  state.SetItemsProcessed(requests);
}

constexpr MonotonicTime kNow = MonotonicTime::FromNanoseconds(0);

void BM_Flood_DistinctAddresses(benchmark::State& state) {
  constexpr int64_t kRequests = 10'000'000;
  for (auto _ : state) {
    auto limiter = DefaultLimiter();
    state.counters["rss_MiB_created"] = StatusMiB("VmRSS");
    Request req;
    req.method = "GET";
    req.target = "/_matrix/client/v3/sync";
    req.client.bytes[10] = req.client.bytes[11] = 0xFF;  // IPv4, v4-mapped.
    int64_t allowed = 0;
    for (int64_t i = 0; i < kRequests; ++i) {
      const uint32_t a = 0x0A000000u + static_cast<uint32_t>(i);
      req.client.bytes[12] = a >> 24;
      req.client.bytes[13] = a >> 16;
      req.client.bytes[14] = a >> 8;
      req.client.bytes[15] = a;
      // One request a microsecond: 10 s of traffic.
      allowed +=
          limiter->Check(req, MonotonicTime::FromNanoseconds(i * 1000)).allowed;
      if (i + 1 == 1'000'000) state.counters["rss_MiB_1M"] = StatusMiB("VmRSS");
    }
    state.counters["rss_MiB_10M"] = StatusMiB("VmRSS");
    Report(state, *limiter, kRequests, allowed);
  }
}
BENCHMARK(BM_Flood_DistinctAddresses)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_Flood_Ipv6OneSlash64(benchmark::State& state) {
  constexpr int64_t kRequests = 1'000'000;
  for (auto _ : state) {
    auto limiter = DefaultLimiter();
    Request req;
    req.method = "GET";
    req.target = "/_matrix/client/v3/sync";
    req.client = *ParseIpAddress("2001:db8:1:2::");
    int64_t allowed = 0;
    for (int64_t i = 0; i < kRequests; ++i) {
      // Rotate the interface identifier (low 64 bits) only.
      const uint64_t iid = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15u;
      std::memcpy(req.client.bytes.data() + 8, &iid, 8);
      allowed += limiter->Check(req, kNow).allowed;
    }
    Report(state, *limiter, kRequests, allowed);
  }
}
BENCHMARK(BM_Flood_Ipv6OneSlash64)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_Flood_RoomIds(benchmark::State& state) {
  constexpr int64_t kRequests = 1'000'000;
  for (auto _ : state) {
    auto limiter = DefaultLimiter();
    std::string target;
    Request req;
    req.method = "PUT";
    req.client = *ParseIpAddress("203.0.113.9");
    req.user_id = "@mallory:example.org";
    int64_t allowed = 0;
    for (int64_t i = 0; i < kRequests; ++i) {
      target = "/_matrix/client/v3/rooms/!" + std::to_string(i) +
               "%3Aexample.org/send/m.room.message/t" + std::to_string(i);
      req.target = target;
      allowed += limiter->Check(req, kNow).allowed;
    }
    Report(state, *limiter, kRequests, allowed);
  }
}
BENCHMARK(BM_Flood_RoomIds)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Flood_UnknownPaths(benchmark::State& state) {
  constexpr int64_t kRequests = 1'000'000;
  for (auto _ : state) {
    auto limiter = DefaultLimiter();
    std::string target;
    Request req;
    req.method = "GET";
    req.client = *ParseIpAddress("198.51.100.7");
    int64_t allowed = 0;
    for (int64_t i = 0; i < kRequests; ++i) {
      target = "/probe/" + std::to_string(i) + "/wp-login.php";
      req.target = target;
      allowed += limiter->Check(req, kNow).allowed;
    }
    Report(state, *limiter, kRequests, allowed);
  }
}
BENCHMARK(BM_Flood_UnknownPaths)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Flood_HugeUserIds(benchmark::State& state) {
  constexpr int64_t kRequests = 100'000;
  for (auto _ : state) {
    auto limiter = DefaultLimiter();
    // One 64 KiB buffer made distinct per request: the limiter must not keep
    // (or copy) what it is given.
    std::string user = "@" + std::string(64 * 1024 - 13, 'm') + ":example.org";
    Request req;
    req.method = "GET";
    req.target = "/_matrix/client/v3/sync";
    req.client = *ParseIpAddress("2001:db8::1");
    state.counters["rss_MiB_before"] = StatusMiB("VmRSS");
    int64_t allowed = 0;
    for (int64_t i = 0; i < kRequests; ++i) {
      const std::string n = std::to_string(i);
      user.replace(1, n.size(), n);
      req.user_id = user;
      allowed += limiter->Check(req, kNow).allowed;
    }
    state.counters["rss_MiB_after"] = StatusMiB("VmRSS");
    Report(state, *limiter, kRequests, allowed);
  }
}
BENCHMARK(BM_Flood_HugeUserIds)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mxlimit
