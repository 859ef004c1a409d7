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

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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
