// SharedLimiter (issue #15) against its baselines, in one run.
//
// Always (Google Benchmark, in-process store):
//   BM_Sharded_Check_Flooded      ShardedLimiter::Check on a flooded client:
//                                 the baseline for the local-denial path.
//   BM_Shared_LocalDenial         SharedLimiter::Check on the same client once
//                                 the mirror proves the denial (no store call).
//   BM_Sharded_Check_Spread       ShardedLimiter::Check over many clients.
//   BM_Shared_BreakerOpen         SharedLimiter::Check over the same clients
//                                 with the store down and the breaker open.
//
// With MXLIMIT_BENCH_REDIS_URL set (bench/shared_limiter/run starts a
// redis-server and sets it), against that Redis, before the cases above:
//   latency   1 caller thread, keys from 100k users x 20k addresses, the
//             built-in policies: SharedLimiter::Check p50/p99/max, beside the
//             raw PING and raw EVALSHA of the same script with as many keys
//             (hiredis, synchronous, one connection);
//   throughput 16 caller threads on one store connection: checks/s;
//   server    INFO commandstats usec_per_call of EVALSHA, calls per check;
//   memory    used_memory delta per live bucket.
// The run script compares the throughput with redis-benchmark -c 1 -P 32
// running the same script.
//
// With MXLIMIT_BENCH_REDIS_CLUSTER_URL (and _PORTS, the primaries' ports)
// too, a three-primary Redis Cluster beside the single Redis (issue #35):
//   cluster   1 caller thread, the same requests checked alternately on one
//             SharedLimiter per store: p50/p99 each; EVALSHA calls and
//             server time per primary (INFO commandstats) and their spread
//             around the mean; server time per check summed over the
//             primaries against the single Redis's; the checks/s N
//             primaries would take at full load, from that cost;
//   window    4 SharedLimiters x 4 threads paced at 8,000 checks/s, the
//             same request streams on each store, from the throughput
//             phase's subjects to hot ones: denials per check on the
//             cluster against the single Redis (the all-or-nothing
//             refunds' transient window), beside a second run on the
//             single Redis (the noise).

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mxlimit/shared_limiter.h"
#include "src/shared/fake_store.h"

namespace mxlimit {
namespace {

constexpr char kSecret[] = "bench-secret-of-at-least-16-bytes";
constexpr char kTarget[] = "/_matrix/client/v3/sync?timeout=30000";
constexpr char kIncrementalSync[] =
    "/_matrix/client/v3/sync?since=s1_2_3&timeout=30000";

IpAddress Address(uint32_t i) {
  IpAddress a;
  a.bytes = {0,
             0,
             0,
             0,
             0,
             0,
             0,
             0,
             0,
             0,
             0xff,
             0xff,
             10,
             static_cast<uint8_t>(i >> 16),
             static_cast<uint8_t>(i >> 8),
             static_cast<uint8_t>(i)};
  return a;
}

struct Workload {
  std::vector<std::string> users;
  std::vector<Request> requests;
  Workload(size_t n, size_t users_count, size_t ips, uint32_t seed) {
    std::mt19937 rng(seed);
    users.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      users.push_back("@user" + std::to_string(rng() % users_count) +
                      ":example.org");
    }
    requests.resize(n);
    for (size_t i = 0; i < n; ++i) {
      Request& r = requests[i];
      r.method = "GET";
      r.target = kTarget;
      r.client = Address(static_cast<uint32_t>(rng() % ips));
      r.user_id = users[i];
    }
  }
};

// --- In-process paths ----------------------------------------------------

LimiterConfig StoreConfig() {
  LimiterConfig config;  // The built-in policies.
  config.store.key_secret = kSecret;
  return config;
}

Request Flooded() {
  Request r;
  r.method = "POST";
  r.target = "/_matrix/client/v3/login";
  r.client = Address(7);
  return r;
}

void BM_Sharded_Check_Flooded(benchmark::State& state) {
  auto limiter = ShardedLimiter::Create(StoreConfig(), 2);
  const Request r = Flooded();
  MonotonicTime now = MonotonicTime::FromNanoseconds(1'000'000'000);
  for (int i = 0; i < 100; ++i) (*limiter)->Check(r, now);
  for (auto _ : state) benchmark::DoNotOptimize((*limiter)->Check(r, now));
}
BENCHMARK(BM_Sharded_Check_Flooded);

void BM_Shared_LocalDenial(benchmark::State& state) {
  auto limiter = SharedLimiter::CreateWithStore(
      StoreConfig(), std::make_unique<internal::FakeStore>(), 2);
  const Request r = Flooded();
  MonotonicTime now = MonotonicTime::FromNanoseconds(1'000'000'000);
  for (int i = 0; i < 100; ++i) (*limiter)->Check(r, now);
  const uint64_t before = (*limiter)->StoreStats().store_decisions;
  for (auto _ : state) benchmark::DoNotOptimize((*limiter)->Check(r, now));
  if ((*limiter)->StoreStats().store_decisions != before) {
    state.SkipWithError("a flooded check reached the store");
  }
}
BENCHMARK(BM_Shared_LocalDenial);

void BM_Sharded_Check_Spread(benchmark::State& state) {
  auto limiter = ShardedLimiter::Create(StoreConfig(), 2);
  Workload w(1 << 14, 100'000, 20'000, 1);
  size_t i = 0;
  int64_t t = 0;
  for (auto _ : state) {
    const Request& r = w.requests[i++ & (w.requests.size() - 1)];
    benchmark::DoNotOptimize(
        (*limiter)->Check(r, MonotonicTime::FromNanoseconds(t += 1000)));
  }
}
BENCHMARK(BM_Sharded_Check_Spread);

void BM_Shared_BreakerOpen(benchmark::State& state) {
  auto store = std::make_unique<internal::FakeStore>();
  store->SetDown(true);
  auto limiter =
      SharedLimiter::CreateWithStore(StoreConfig(), std::move(store), 2);
  Workload w(1 << 14, 100'000, 20'000, 1);
  // Open the breaker: five failures in a row.
  for (int k = 0; k < 10; ++k) {
    (*limiter)->Check(w.requests[k], MonotonicTime::FromNanoseconds(k));
  }
  size_t i = 0;
  int64_t t = 0;
  for (auto _ : state) {
    const Request& r = w.requests[i++ & (w.requests.size() - 1)];
    benchmark::DoNotOptimize(
        (*limiter)->Check(r, MonotonicTime::FromNanoseconds(t += 1000)));
  }
  if (!(*limiter)->StoreStats().breaker_open) {
    state.SkipWithError("the breaker did not open");
  }
}
BENCHMARK(BM_Shared_BreakerOpen);

// --- Against Redis ---------------------------------------------------------

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
};

Percentiles Summarize(std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  Percentiles p;
  p.p50 = us[us.size() / 2];
  p.p99 = us[us.size() * 99 / 100];
  p.max = us.back();
  return p;
}

double MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - start)
      .count();
}

redisContext* Connect(const std::string& url) {
  // redis://HOST:PORT/DB only: the run script's server.
  std::string rest = url.substr(std::string("redis://").size());
  const std::string host = rest.substr(0, rest.find(':'));
  const int port = std::atoi(rest.substr(rest.find(':') + 1).c_str());
  redisContext* c = redisConnect(host.c_str(), port);
  if (c == nullptr || c->err) {
    std::fprintf(stderr, "bench: cannot connect to %s\n", url.c_str());
    std::exit(1);
  }
  return c;
}

long long InfoField(redisContext* c, const char* section, const char* field) {
  auto* r = static_cast<redisReply*>(redisCommand(c, "INFO %s", section));
  long long v = -1;
  if (r != nullptr && r->type == REDIS_REPLY_STRING) {
    const std::string text(r->str, r->len);
    const std::string key = std::string(field) + ":";
    const size_t at = text.find(key);
    if (at != std::string::npos) v = std::atoll(text.c_str() + at + key.size());
  }
  freeReplyObject(r);
  return v;
}

// usec_per_call of cmdstat_evalsha, and its calls.
std::pair<double, long long> EvalshaStats(redisContext* c) {
  auto* r = static_cast<redisReply*>(redisCommand(c, "INFO commandstats"));
  std::pair<double, long long> out{-1, 0};
  if (r != nullptr && r->type == REDIS_REPLY_STRING) {
    const std::string text(r->str, r->len);
    const size_t at = text.find("cmdstat_evalsha:");
    if (at != std::string::npos) {
      const size_t calls = text.find("calls=", at);
      const size_t per = text.find("usec_per_call=", at);
      out.second = std::atoll(text.c_str() + calls + 6);
      out.first = std::atof(text.c_str() + per + 14);
    }
  }
  freeReplyObject(r);
  return out;
}

void RunAgainstRedis(const std::string& url) {
  LimiterConfig config = StoreConfig();
  config.store.url = url;
  config.tables.ip_capacity = 1 << 17;
  config.tables.user_capacity = 1 << 17;
  auto limiter = SharedLimiter::Create(config, 2);
  if (!limiter.ok()) {
    std::fprintf(stderr, "bench: %s\n",
                 std::string(limiter.status().message()).c_str());
    std::exit(1);
  }
  redisContext* raw = Connect(url);
  // Wait for the store's connection.
  for (int i = 0; i < 200 && !(*limiter)->StoreStats().connected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Workload w(20'000, 100'000, 20'000, 2);
  const std::vector<std::string> described =
      (*limiter)->DescribeStoreKeys(w.requests[0]);
  const size_t keys = std::count_if(
      described.begin(), described.end(), [](const std::string& s) {
        return s.find("mxl:1:") != std::string::npos;
      });

  // Warm up the connection and the mirror.
  int64_t t = 0;
  for (size_t i = 0; i < 2000; ++i) {
    (*limiter)->Check(w.requests[i], MonotonicTime::FromNanoseconds(t += 1000));
  }
  redisCommand(raw, "CONFIG RESETSTAT");
  const uint64_t decisions_before = (*limiter)->StoreStats().store_decisions;

  // The script's SHA, as the store loaded it (the run script passes its
  // text), for the raw EVALSHA baseline.
  auto* loaded = static_cast<redisReply*>(
      redisCommand(raw, "SCRIPT LOAD %s",
                   std::getenv("MXLIMIT_BENCH_SCRIPT") != nullptr
                       ? std::getenv("MXLIMIT_BENCH_SCRIPT")
                       : "return 0"));
  const std::string sha =
      loaded != nullptr && loaded->type == REDIS_REPLY_STRING
          ? std::string(loaded->str, loaded->len)
          : "";
  freeReplyObject(loaded);

  // Interleaved, so that all three meet the same machine: a check, then a
  // raw PING and a raw EVALSHA of the same script with as many keys
  // (charged like a check), on one synchronous connection.
  std::vector<double> check_us, ping_us, eval_us;
  check_us.reserve(w.requests.size());
  std::mt19937 rng(3);
  std::vector<std::string> args;
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const Request& r : w.requests) {
    auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(
        (*limiter)->Check(r, MonotonicTime::FromNanoseconds(t += 1000)));
    check_us.push_back(MicrosSince(start));

    start = std::chrono::steady_clock::now();
    freeReplyObject(redisCommand(raw, "PING"));
    ping_us.push_back(MicrosSince(start));

    args = {"EVALSHA", sha, std::to_string(keys)};
    for (size_t k = 0; k < keys; ++k) {
      args.push_back("mxl:1:bench:" + std::to_string(k) + ":" +
                     std::to_string(rng() % 100'000));
    }
    for (const char* a : {"check", "1", "", ""}) args.push_back(a);
    for (size_t k = 0; k < keys; ++k) {
      for (const char* a : {"50000000", "200", "1"}) args.push_back(a);
    }
    argv.clear();
    lens.clear();
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    start = std::chrono::steady_clock::now();
    auto* reply = static_cast<redisReply*>(redisCommandArgv(
        raw, static_cast<int>(argv.size()), argv.data(), lens.data()));
    eval_us.push_back(MicrosSince(start));
    if (reply == nullptr || reply->type == REDIS_REPLY_ERROR) {
      std::fprintf(stderr, "bench: raw EVALSHA failed%s%s\n",
                   reply != nullptr ? ": " : "",
                   reply != nullptr ? reply->str : "");
      std::exit(1);
    }
    freeReplyObject(reply);
  }
  const uint64_t decided =
      (*limiter)->StoreStats().store_decisions - decisions_before;
  const auto [usec_per_call, calls] = EvalshaStats(raw);
  const Percentiles check = Summarize(check_us), ping = Summarize(ping_us),
                    eval = Summarize(eval_us);
  std::printf("shared-store latency (1 thread, %zu keys per check, us)\n",
              keys);
  std::printf("  %-28s %8s %8s %8s\n", "", "p50", "p99", "max");
  std::printf("  %-28s %8.1f %8.1f %8.1f\n", "PING round trip", ping.p50,
              ping.p99, ping.max);
  std::printf("  %-28s %8.1f %8.1f %8.1f\n", "EVALSHA round trip", eval.p50,
              eval.p99, eval.max);
  std::printf("  %-28s %8.1f %8.1f %8.1f\n", "SharedLimiter::Check", check.p50,
              check.p99, check.max);
  std::printf(
      "  check p50 - EVALSHA p50 = %.1f us (goal <= 15); check p99 / "
      "EVALSHA p99 = %.2f (goal <= 2); max %.1f us (goal <= timeout "
      "5000 + 1000)\n",
      check.p50 - eval.p50, check.p99 / eval.p99, check.max);
  // The raw EVALSHAs ran too: calls per check counts the checks' share.
  std::printf(
      "shared-store server: EVALSHA usec_per_call %.2f, %.3f calls "
      "per check (%lld calls, %llu store decisions, %zu raw)\n",
      usec_per_call,
      decided ? static_cast<double>(calls -
                                    static_cast<long long>(eval_us.size())) /
                    decided
              : 0.0,
      calls, static_cast<unsigned long long>(decided), eval_us.size());

  // Throughput: 16 threads, one connection, no local denials. A generous
  // deadline: 16 threads on a 2-core machine wait for a core as much as for
  // Redis, and a check that falls back is not a store decision. Counted:
  // checks the store decided, per second.
  {
    LimiterConfig tc = config;
    tc.store.timeout = std::chrono::seconds(1);
    auto tl = SharedLimiter::Create(tc, 2);
    for (int i = 0; i < 200 && !(*tl)->StoreStats().connected; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    constexpr int kThreads = 16;
    constexpr auto kFor = std::chrono::seconds(2);
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    const uint64_t before = (*tl)->StoreStats().store_decisions;
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < kThreads; ++k) {
      threads.emplace_back([&, k] {
        Workload mine(4096, 100'000, 20'000, 100 + k);
        uint64_t n = 0;
        int64_t tt = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          (*tl)->Check(mine.requests[n & 4095],
                       MonotonicTime::FromNanoseconds(tt += 1000));
          ++n;
        }
      });
    }
    std::this_thread::sleep_for(kFor);
    stop = true;
    for (std::thread& th : threads) th.join();
    const double secs = MicrosSince(start) / 1e6;
    const SharedStoreStats s = (*tl)->StoreStats();
    std::printf(
        "shared-store throughput: %.0f checks/s (16 threads, 1 "
        "connection, store decisions only; fallbacks %llu)\n",
        static_cast<double>(s.store_decisions - before) / secs,
        static_cast<unsigned long long>(
            s.fallback_timeout + s.fallback_unavailable + s.fallback_error +
            s.fallback_breaker_open));
  }

  // Memory: distinct users on a slow policy, so every bucket stays live.
  {
    freeReplyObject(redisCommand(raw, "FLUSHALL"));
    LimiterConfig mem = StoreConfig();
    mem.store.url = url;
    mem.builtin_policies = false;
    Policy p;
    p.name = "mem";
    p.match = {"*"};
    p.scope = Scope::kUser;
    p.rate = *Rate::Create(1, TimeUnit::kHour, 10);
    mem.policies = {p};
    mem.tables.user_capacity = 1 << 17;
    auto m = SharedLimiter::Create(mem, 2);
    for (int i = 0; i < 200 && !(*m)->StoreStats().connected; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const long long before = InfoField(raw, "memory", "used_memory");
    Workload users(100'000, 1'000'000'000, 1, 4);
    for (size_t i = 0; i < users.requests.size(); ++i) {
      Request r = users.requests[i];
      r.user_id = users.users[i] = "@mem" + std::to_string(i) + ":example.org";
      (*m)->Check(r, MonotonicTime::FromNanoseconds(1));
    }
    const long long after = InfoField(raw, "memory", "used_memory");
    auto* size = static_cast<redisReply*>(redisCommand(raw, "DBSIZE"));
    const long long live = size != nullptr ? size->integer : 0;
    freeReplyObject(size);
    std::printf(
        "shared-store memory: %lld live buckets, %.1f bytes each "
        "(used_memory delta; goal <= 160)\n",
        live, live ? static_cast<double>(after - before) / live : 0.0);
  }
  redisFree(raw);
  std::fflush(stdout);
}

// TLS against plain TCP on one Redis that listens on both (issue #35):
// two SharedLimiters, one per port, each with its own key secret so their
// buckets do not meet, checked alternately with the same requests.
void RunTlsAgainstTcp(const std::string& url, const std::string& tls_url,
                      const std::string& ca_file) {
  auto make = [](const std::string& u, const std::string& ca,
                 const char* secret) {
    LimiterConfig c = StoreConfig();
    c.store.url = u;
    c.store.key_secret = secret;
    c.store.tls.ca_file = ca;
    c.tables.ip_capacity = 1 << 17;
    c.tables.user_capacity = 1 << 17;
    auto l = SharedLimiter::Create(c, 2);
    if (!l.ok()) {
      std::fprintf(stderr, "bench: %s\n",
                   std::string(l.status().message()).c_str());
      std::exit(1);
    }
    for (int i = 0; i < 300 && !(*l)->StoreStats().connected; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return *std::move(l);
  };
  auto tcp = make(url, "", "tcp-bench-secret-0123456789");
  auto tls = make(tls_url, ca_file, "tls-bench-secret-0123456789");
  Workload w(20'000, 100'000, 20'000, 5);
  std::vector<double> tcp_us, tls_us;
  tcp_us.reserve(w.requests.size());
  tls_us.reserve(w.requests.size());
  int64_t t = 0;
  for (size_t i = 0; i < 2000; ++i) {
    tcp->Check(w.requests[i], MonotonicTime::FromNanoseconds(t += 1000));
    tls->Check(w.requests[i], MonotonicTime::FromNanoseconds(t));
  }
  const uint64_t tcp_before = tcp->StoreStats().store_decisions;
  const uint64_t tls_before = tls->StoreStats().store_decisions;
  for (const Request& r : w.requests) {
    const MonotonicTime now = MonotonicTime::FromNanoseconds(t += 1000);
    auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(tcp->Check(r, now));
    tcp_us.push_back(MicrosSince(start));
    start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(tls->Check(r, now));
    tls_us.push_back(MicrosSince(start));
  }
  const uint64_t tcp_decided = tcp->StoreStats().store_decisions - tcp_before;
  const uint64_t tls_decided = tls->StoreStats().store_decisions - tls_before;
  // Each pair met the same machine: the median of the pairs' differences
  // is what TLS adds, with less of the machine's phases in it.
  std::vector<double> added(tcp_us.size());
  for (size_t i = 0; i < added.size(); ++i) added[i] = tls_us[i] - tcp_us[i];
  std::nth_element(added.begin(), added.begin() + added.size() / 2,
                   added.end());
  const double median_added = added[added.size() / 2];
  const Percentiles a = Summarize(tcp_us), b = Summarize(tls_us);
  std::printf("shared-store TLS (1 thread, interleaved, us)\n");
  std::printf("  %-28s %8s %8s %8s %10s\n", "", "p50", "p99", "max", "store");
  std::printf("  %-28s %8.1f %8.1f %8.1f %10llu\n", "check over TCP", a.p50,
              a.p99, a.max, static_cast<unsigned long long>(tcp_decided));
  std::printf("  %-28s %8.1f %8.1f %8.1f %10llu\n", "check over TLS", b.p50,
              b.p99, b.max, static_cast<unsigned long long>(tls_decided));
  std::printf(
      "  TLS p50 - TCP p50 = %.1f us; median of the pairs' differences "
      "%.1f us (goal <= 10)\n",
      b.p50 - a.p50, median_added);
  std::fflush(stdout);
}

// --- Redis Cluster against one Redis --------------------------------------

std::unique_ptr<SharedLimiter> WaitedLimiter(const LimiterConfig& c) {
  auto l = SharedLimiter::Create(c, 2);
  if (!l.ok()) {
    std::fprintf(stderr, "bench: %s\n",
                 std::string(l.status().message()).c_str());
    std::exit(1);
  }
  for (int i = 0; i < 500 && !(*l)->StoreStats().connected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return *std::move(l);
}

// EVALSHA calls and total server microseconds on the Redis at `port`.
std::pair<long long, double> EvalshaTotals(int port) {
  redisContext* c = Connect("redis://127.0.0.1:" + std::to_string(port));
  const auto [per_call, calls] = EvalshaStats(c);
  redisFree(c);
  return {calls, per_call > 0 ? per_call * static_cast<double>(calls) : 0.0};
}

void ResetStats(int port) {
  redisContext* c = Connect("redis://127.0.0.1:" + std::to_string(port));
  freeReplyObject(redisCommand(c, "CONFIG RESETSTAT"));
  redisFree(c);
}

// Denials per check of 16 threads (4 limiters x 4) over `url`, each thread
// checking its own fixed stream of hot subjects at its own caller clock.
struct WindowRun {
  uint64_t checks = 0, denied = 0, store_decisions = 0, fallbacks = 0;
};
WindowRun RunWindowLoad(const std::string& url, const char* secret,
                        size_t users, size_t ips) {
  LimiterConfig c = StoreConfig();
  c.store.url = url;
  c.store.key_secret = secret;
  c.store.timeout = std::chrono::seconds(1);  // Redis's clock, as deployed.
  std::vector<std::unique_ptr<SharedLimiter>> limiters;
  for (int i = 0; i < 4; ++i) limiters.push_back(WaitedLimiter(c));
  // Paced: every thread checks on a fixed schedule, so both stores are
  // offered the same requests at the same times whatever their latency.
  constexpr int kThreads = 16;
  constexpr size_t kPerThread = 2500;
  constexpr auto kPeriod = std::chrono::microseconds(2000);
  std::atomic<uint64_t> denied{0};
  std::vector<std::thread> threads;
  const auto start =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      // Few subjects: their buckets meet across threads.
      Workload mine(kPerThread, users, ips, 500 + k);
      // Incremental syncs: rates, not the initial-sync in-flight cap.
      for (Request& r : mine.requests) r.target = kIncrementalSync;
      SharedLimiter& l = *limiters[k % 4];
      uint64_t n = 0;
      for (size_t i = 0; i < kPerThread; ++i) {
        std::this_thread::sleep_until(start + kPeriod * i +
                                      kPeriod * k / kThreads);
        const auto now = std::chrono::steady_clock::now();
        const Decision d =
            l.Check(mine.requests[i],
                    MonotonicTime::FromNanoseconds(
                        std::chrono::duration_cast<std::chrono::nanoseconds>(
                            now.time_since_epoch())
                            .count()));
        if (!d.allowed) ++n;
      }
      denied += n;
    });
  }
  for (std::thread& t : threads) t.join();
  WindowRun r;
  r.checks = uint64_t{kThreads} * kPerThread;  // 8,000 a second for 5 s
  r.denied = denied;
  for (auto& l : limiters) {
    const SharedStoreStats s = l->StoreStats();
    r.store_decisions += s.store_decisions;
    r.fallbacks += s.fallback_timeout + s.fallback_unavailable +
                   s.fallback_error + s.fallback_breaker_open;
  }
  return r;
}

void RunClusterAgainstSingle(const std::string& url,
                             const std::string& cluster_url,
                             const std::vector<int>& cluster_ports,
                             int single_port) {
  LimiterConfig c = StoreConfig();
  c.tables.ip_capacity = 1 << 17;
  c.tables.user_capacity = 1 << 17;
  c.store.url = url;
  c.store.key_secret = "single-bench-secret-0123456789";
  auto single = WaitedLimiter(c);
  c.store.url = cluster_url;
  c.store.key_secret = "cluster-bench-secret-0123456789";
  auto cluster = WaitedLimiter(c);
  Workload w(20'000, 100'000, 20'000, 7);
  int64_t t = 0;
  for (size_t i = 0; i < 2000; ++i) {
    single->Check(w.requests[i], MonotonicTime::FromNanoseconds(t += 1000));
    cluster->Check(w.requests[i], MonotonicTime::FromNanoseconds(t));
  }
  ResetStats(single_port);
  for (int p : cluster_ports) ResetStats(p);
  const uint64_t single_before = single->StoreStats().store_decisions;
  const uint64_t cluster_before = cluster->StoreStats().store_decisions;
  std::vector<double> single_us, cluster_us;
  single_us.reserve(w.requests.size());
  cluster_us.reserve(w.requests.size());
  for (const Request& r : w.requests) {
    const MonotonicTime now = MonotonicTime::FromNanoseconds(t += 1000);
    auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(single->Check(r, now));
    single_us.push_back(MicrosSince(start));
    start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(cluster->Check(r, now));
    cluster_us.push_back(MicrosSince(start));
  }
  const double single_checks =
      static_cast<double>(single->StoreStats().store_decisions - single_before);
  const double cluster_checks = static_cast<double>(
      cluster->StoreStats().store_decisions - cluster_before);
  const auto [single_calls, single_usec] = EvalshaTotals(single_port);
  std::vector<std::pair<long long, double>> per;
  long long calls = 0;
  double usec = 0;
  for (int p : cluster_ports) {
    per.push_back(EvalshaTotals(p));
    calls += per.back().first;
    usec += per.back().second;
  }
  const Percentiles a = Summarize(single_us), b = Summarize(cluster_us);
  std::printf("shared-store cluster (1 thread, interleaved, us)\n");
  std::printf("  %-28s %8s %8s %8s %10s\n", "", "p50", "p99", "max", "store");
  std::printf("  %-28s %8.1f %8.1f %8.1f %10.0f\n", "check on one Redis", a.p50,
              a.p99, a.max, single_checks);
  std::printf("  %-28s %8.1f %8.1f %8.1f %10.0f\n", "check on the cluster",
              b.p50, b.p99, b.max, cluster_checks);
  const double mean_calls =
      static_cast<double>(calls) / static_cast<double>(per.size());
  const double mean_usec = usec / static_cast<double>(per.size());
  double worst_calls = 0, worst_usec = 0;
  for (size_t i = 0; i < per.size(); ++i) {
    const double dc = static_cast<double>(per[i].first) / mean_calls - 1;
    const double du = per[i].second / mean_usec - 1;
    worst_calls = std::max(worst_calls, std::abs(dc));
    worst_usec = std::max(worst_usec, std::abs(du));
    std::printf(
        "  primary %zu (port %d): %lld EVALSHA calls (%+.1f%% of the mean), "
        "%.0f us of server time (%+.1f%%)\n",
        i + 1, cluster_ports[i], per[i].first, 100 * dc, per[i].second,
        100 * du);
  }
  std::printf(
      "  spread: calls within %.1f%%, server time within %.1f%% of the "
      "mean (goal: checks within 15%%)\n",
      100 * worst_calls, 100 * worst_usec);
  const double single_per_check = single_usec / single_checks;
  const double cluster_per_check = usec / cluster_checks;
  std::printf(
      "  server time per check: one Redis %.1f us (%.2f calls), cluster "
      "%.1f us summed (%.2f calls): %.2fx (goal <= 1.3)\n",
      single_per_check, static_cast<double>(single_calls) / single_checks,
      cluster_per_check, static_cast<double>(calls) / cluster_checks,
      cluster_per_check / single_per_check);
  std::printf(
      "  projected at full load (1e6 us of server time per primary per "
      "second): one Redis %.0f checks/s; cluster of N primaries N x %.0f "
      "checks/s (3: %.0f, 6: %.0f, 12: %.0f)\n",
      1e6 / single_per_check, 1e6 / cluster_per_check, 3e6 / cluster_per_check,
      6e6 / cluster_per_check, 12e6 / cluster_per_check);
  // Three loads, from the throughput phase's to hot subjects at their
  // limits. Interleaving alone moves the denials between two runs on one
  // store (hot buckets race): a second run on the single Redis shows by how
  // much, the band the cluster's extra is read against.
  std::printf(
      "shared-store cluster window (16 threads over 4 limiters, 8,000 "
      "checks/s for 5 s on a fixed schedule, the same streams on each store; "
      "denied per check)\n");
  std::printf("  %-36s %10s %10s %10s %10s %9s\n", "load", "one Redis", "again",
              "cluster", "extra", "fallbacks");
  const struct {
    size_t users, ips;
  } loads[] = {{100'000, 20'000}, {3000, 24}, {300, 16}};
  int index = 0;
  for (const auto& load : loads) {
    const std::string tag = std::to_string(index++);
    auto run = [&](const std::string& u, const char* name) {
      const WindowRun r = RunWindowLoad(
          u,
          ("window-" + std::string(name) + "-" + tag + "-0123456789").c_str(),
          load.users, load.ips);
      return r;
    };
    const WindowRun one = run(url, "single");
    const WindowRun again = run(url, "again");
    const WindowRun many = run(cluster_url, "cluster");
    auto rate = [](const WindowRun& r) {
      return static_cast<double>(r.denied) / static_cast<double>(r.checks);
    };
    char label[64];
    std::snprintf(label, sizeof label, "%zu users, %zu addresses", load.users,
                  load.ips);
    std::printf("  %-36s %9.3f%% %9.3f%% %9.3f%% %9.3f%% %llu/%llu/%llu\n",
                label, 100 * rate(one), 100 * rate(again), 100 * rate(many),
                100 * (rate(many) - rate(one)),
                static_cast<unsigned long long>(one.fallbacks),
                static_cast<unsigned long long>(again.fallbacks),
                static_cast<unsigned long long>(many.fallbacks));
  }
  std::printf(
      "  extra = cluster - one Redis (goal <= 0.1%% of checks), read "
      "against one Redis - again; %llu checks per run\n",
      static_cast<unsigned long long>(16 * 2500));
  std::fflush(stdout);
}

}  // namespace
}  // namespace mxlimit

int main(int argc, char** argv) {
  const char* tls_url = std::getenv("MXLIMIT_BENCH_REDIS_TLS_URL");
  const char* tls_ca = std::getenv("MXLIMIT_BENCH_REDIS_TLS_CA");
  if (const char* url = std::getenv("MXLIMIT_BENCH_REDIS_URL")) {
    if (tls_url != nullptr && tls_ca != nullptr) {
      mxlimit::RunTlsAgainstTcp(url, tls_url, tls_ca);
    }
    mxlimit::RunAgainstRedis(url);
    const char* cluster_url = std::getenv("MXLIMIT_BENCH_REDIS_CLUSTER_URL");
    const char* cluster_ports =
        std::getenv("MXLIMIT_BENCH_REDIS_CLUSTER_PORTS");
    if (cluster_url != nullptr && cluster_ports != nullptr) {
      std::vector<int> ports;
      for (const char* p = cluster_ports; *p != '\0';) {
        ports.push_back(std::atoi(p));
        while (*p != '\0' && *p != ',') ++p;
        if (*p == ',') ++p;
      }
      const std::string u(url);
      mxlimit::RunClusterAgainstSingle(
          u, cluster_url, ports, std::atoi(u.substr(u.rfind(':') + 1).c_str()));
    }
  } else {
    std::printf(
        "shared-store: MXLIMIT_BENCH_REDIS_URL not set; run "
        "bench/shared_limiter/run for the Redis figures\n");
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
