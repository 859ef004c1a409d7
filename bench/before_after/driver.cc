// BM_Limiter_Check's hit path (bench/limiter_bench.cc: the default
// configuration, `keys` buckets per client table, every client warm, clients
// drawn uniformly, a request a millisecond), written against the API every
// tree it is built with has, from 7f0229a on: Limiter::Create, Request's
// method, target, client and user_id, and Check. Compiled once per tree with
// that tree's namespace renamed; MXLIMIT_SIDE names the entry point.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "mxlimit/limiter.h"

#define MXLIMIT_CONCAT(a, b) a##b
#define MXLIMIT_ENTRY(side) MXLIMIT_CONCAT(BeforeAfterCheck_, side)

namespace {

using mxlimit::IpAddress;
using mxlimit::Limiter;
using mxlimit::LimiterConfig;
using mxlimit::MonotonicTime;
using mxlimit::Request;

// bench/limiter_bench.cc's client targets.
const char* const kTargets[] = {
    "/_matrix/client/v3/sync?since=s72594_4483_1934&timeout=30000",
    "/_matrix/client/v3/sync?since=s72594_4483_1935&timeout=30000",
    "/_matrix/client/r0/sync?since=s72594_4483_1936&timeout=30000",
    "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/send/"
    "m.room.message/m1712345678.1",
    "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/receipt/"
    "m.read/%24eventid123",
    "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/typing/"
    "%40alice%3Aexample.org",
    "/_matrix/client/v3/rooms/!abc%3Aexample.org/state/m.room.member/"
    "%40alice%3Aexample.org",
    "/_matrix/client/v3/keys/query",
    "/_matrix/client/v1/media/download/matrix.org/AbCdEfGh123",
    "/_matrix/media/v3/thumbnail/matrix.org/XyZ987?width=96&height=96",
    "/_matrix/federation/v1/send/1712345678901",
    "/_matrix/client/v3/pushrules/",
};
constexpr size_t kDraws = 1 << 16;
constexpr int64_t kMillisecond = 1'000'000;

IpAddress ClientAddress(uint64_t i) {
  IpAddress ip;  // 2001:db8:<i>::1, one /64 per client
  ip.bytes[0] = 0x20;
  ip.bytes[1] = 0x01;
  ip.bytes[2] = 0x0d;
  ip.bytes[3] = 0xb8;
  for (int b = 0; b < 4; ++b)
    ip.bytes[4 + b] = static_cast<uint8_t>(i >> (24 - 8 * b));
  ip.bytes[15] = 1;
  return ip;
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

void MXLIMIT_ENTRY(MXLIMIT_SIDE)(benchmark::State& state) {
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
