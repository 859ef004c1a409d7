// Snapshot and restore of a limiter's bucket tables (mxlimit/snapshot.h),
// with a naive baseline in the same binary:
//
//   BM_Snapshot_Write/clients:N    Limiter::Snapshot into memory of the
//                                  buckets N clients' logins left: two each
//                                  (login-per-ip and login-per-network, every
//                                  client in a /48 of its own), so 2N.
//   BM_Snapshot_Restore/clients:N  Limiter::Restore of that snapshot into a
//                                  fresh limiter of the same capacity (its
//                                  creation is not timed).
//   BM_NaiveText_Write/clients:N   the straightforward alternative: every
//                                  bucket as a text line through
//                                  std::ostream's operator<<.
//
// Counters: buckets (in the snapshot), bytes (its size), and
// peak_staged_mb for a restore: the staged buckets' memory, bounded by the
// tables' capacity. Goal (issue #34): 1 Mi buckets (clients:524288)
// written and restored in at most 2 s each.

#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include "benchmark/benchmark.h"
#include "mxlimit/limiter.h"

namespace mxlimit {
namespace {

const WallTime kBenchWall = WallTime(std::chrono::hours(24 * 20000));

LimiterConfig BenchConfig(size_t clients) {
  LimiterConfig config;  // built-ins on
  config.tables.ip_capacity = 2 * clients + clients / 8;
  return config;
}

// A limiter whose ip table holds `clients` clients' login buckets.
std::unique_ptr<Limiter> Filled(size_t clients) {
  auto limiter = *Limiter::Create(BenchConfig(clients));
  Request r;
  r.method = "POST";
  r.target = "/_matrix/client/v3/login";
  for (size_t i = 0; i < clients; ++i) {
    // A /48 (login-per-network's key) and a /64 (login-per-ip's) per client.
    r.client.bytes = {0x20,
                      0x01,
                      static_cast<uint8_t>(i >> 16),
                      static_cast<uint8_t>(i >> 8),
                      static_cast<uint8_t>(i),
                      0,
                      0,
                      0,
                      0,
                      0,
                      0,
                      0,
                      0,
                      0,
                      0,
                      1};
    limiter->Check(r, MonotonicTime::FromNanoseconds(1'000'000'000));
  }
  return limiter;
}

void BM_Snapshot_Write(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto limiter = Filled(n);
  size_t bytes = 0;
  for (auto _ : state) {
    std::ostringstream out;
    benchmark::DoNotOptimize(limiter->Snapshot(
        out, MonotonicTime::FromNanoseconds(1'000'000'000), kBenchWall));
    bytes = out.str().size();
  }
  state.counters["buckets"] =
      static_cast<double>(limiter->Stats().ip_table.size);
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Snapshot_Write)
    ->ArgName("clients")
    ->Arg(1 << 15)
    ->Arg(1 << 19)
    ->Unit(benchmark::kMillisecond);

void BM_Snapshot_Restore(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::string snapshot;
  {
    auto limiter = Filled(n);
    std::ostringstream out;
    (void)limiter->Snapshot(out, MonotonicTime::FromNanoseconds(1'000'000'000),
                            kBenchWall);
    snapshot = out.str();
  }
  uint64_t restored = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto fresh = *Limiter::Create(BenchConfig(n));
    std::istringstream in(snapshot);
    state.ResumeTiming();
    absl::StatusOr<RestoreStats> r =
        fresh->Restore(in, MonotonicTime::FromNanoseconds(5), kBenchWall);
    restored = r.ok() ? r->restored : 0;
    state.PauseTiming();
    fresh.reset();
    state.ResumeTiming();
  }
  state.counters["buckets"] = static_cast<double>(restored);
  state.counters["bytes"] = static_cast<double>(snapshot.size());
  // Each staged bucket is one 64-byte SnapshotEntry.
  state.counters["peak_staged_mb"] =
      static_cast<double>(restored) * 64.0 / (1 << 20);
}
BENCHMARK(BM_Snapshot_Restore)
    ->ArgName("clients")
    ->Arg(1 << 15)
    ->Arg(1 << 19)
    ->Unit(benchmark::kMillisecond);

// The naive writer: the same buckets' data as text, field by field.
void BM_NaiveText_Write(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto limiter = Filled(n);
  std::string first;
  {
    std::ostringstream out;
    (void)limiter->Snapshot(out, MonotonicTime::FromNanoseconds(1'000'000'000),
                            kBenchWall);
    first = out.str();
  }
  // 28 bytes per ip bucket (20-byte key, 8-byte lead) after the header.
  const size_t entries = first.size() / 28;
  size_t bytes = 0;
  for (auto _ : state) {
    std::ostringstream out;
    for (size_t i = 0; i < entries; ++i) {
      const char* p = first.data() + i * 28;
      for (int b = 0; b < 20; ++b)
        out << std::hex << (static_cast<unsigned>(p[b]) & 0xff);
      int64_t lead = 0;
      std::memcpy(&lead, p + 20, 8);
      out << ' ' << std::dec << lead << '\n';
    }
    bytes = out.str().size();
  }
  state.counters["buckets"] = static_cast<double>(entries);
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_NaiveText_Write)
    ->ArgName("clients")
    ->Arg(1 << 15)
    ->Arg(1 << 19)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mxlimit
