// BM_Limiter_Check's hit path (bench/limiter_bench.cc: the default
// configuration, `keys` buckets per client table, every client warm, clients
// drawn uniformly, a request a millisecond), written against the API every
// tree it is built with has, from 7f0229a on: Limiter::Create, Request's
// method, target, client and user_id, and Check. Compiled once per tree with
// that tree's namespace renamed; MXLIMIT_BENCH_NAME names the benchmark.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

// Found beside this file's folder, not in the trees measured.
#include "../client_workload.h"
#include "mxlimit/limiter.h"

namespace {

using mxlimit::IpAddress;
using mxlimit::Limiter;
using mxlimit::LimiterConfig;
using mxlimit::MonotonicTime;
using mxlimit::Request;

constexpr auto& kTargets = mxlimit_bench::kClientTargets;
constexpr size_t kDraws = 1 << 16;
constexpr int64_t kMillisecond = 1'000'000;

IpAddress ClientAddress(uint64_t i) {
  return mxlimit_bench::ClientAddress<IpAddress>(i);
}

std::string UserOf(uint64_t i) {
  return "@user" + std::to_string(i) + ":example.org";
}

Request RequestOf(uint64_t client, const std::string& user) {
  Request r;
  r.method = "GET";
  r.target = kTargets[client % std::size(kTargets)];
  r.client = ClientAddress(client);
  r.user_id = user;
  return r;
}

}  // namespace

void MXLIMIT_BENCH_NAME(benchmark::State& state) {
  const size_t keys = static_cast<size_t>(state.range(0));
  const size_t clients = keys / 2;  // a route's bucket and the aggregate one
  LimiterConfig config;             // built-ins on
  config.tables.ip_capacity = keys;
  config.tables.user_capacity = keys;
  auto limiter = *Limiter::Create(config);
  for (uint64_t i = 0; i < clients; ++i) {
    const std::string user = UserOf(i);
    limiter->Check(RequestOf(i, user), MonotonicTime::FromNanoseconds(0));
  }
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> uniform(0, clients - 1);
  std::vector<uint64_t> ids(kDraws);
  for (uint64_t& id : ids) id = uniform(rng);
  std::vector<std::string> users;
  users.reserve(kDraws);
  for (uint64_t id : ids) users.push_back(UserOf(id));
  std::vector<Request> requests;
  requests.reserve(kDraws);
  for (size_t i = 0; i < kDraws; ++i) {
    requests.push_back(RequestOf(ids[i], users[i]));
  }
  int64_t now = 1'000 * kMillisecond;
  size_t i = 0;
  for (auto _ : state) {
    const Request& r = requests[i++ & (kDraws - 1)];
    now += kMillisecond;
    benchmark::DoNotOptimize(
        limiter->Check(r, MonotonicTime::FromNanoseconds(now)).allowed);
  }
  state.SetItemsProcessed(state.iterations());
}
