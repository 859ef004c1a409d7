// Full Limiter::Check (normalize + resolve + both tables) against the same
// check over the straightforward tables (std::unordered_map<std::string,
// std::list<...>::iterator> + std::list, keys built as strings per request).
//
// The default configuration: the built-in policies, so a request charges four
// buckets (the route layer's and the aggregate layer's, per IP and per user).
// Each client always sends to one route of a realistic mix, so it owns
// exactly two buckets per table and `keys:N` (N/2 clients) is the number of
// live buckets in each table; normalization, canonical paths and resolution
// over every layer run for real. The naive check charges the same buckets.
//   BM_Limiter_Check/keys:N         hit path: N clients, capacity N, warm
//   BM_Limiter_CheckNewKey/keys:N   every request a client not in the table
//   *_Zipf                          clients drawn Zipf(1.0): real traffic
//   BM_Limiter_Check_Federation/keys:N   federation requests from N origins
//                                   (X-Matrix, unverified: bound to the
//                                   sender's /48), federation-per-origin on
//   BM_Limiter_Check_Room/keys:N    joins to N rooms by ever new users,
//                                   joins-per-room on
//   BM_Limiter_Check_Tiers/keys:N   BM_Limiter_Check with 100,000 tier
//                                   assignments (tiers.h: 50,000 users,
//                                   50,000 /48s and /64s), none the
//                                   workload's: what a request in no tier pays
//   BM_Limiter_Check_TierMembers/keys:N  the same, and every client of the
//                                   workload in a tier (scale 10) too
//   BM_Limiter_Concurrency/buckets:N  Check + Release of requests of N users
//                                   under one in-flight policy (4 per user),
//                                   built-ins off: the lease path itself;
//                                   the naive one keeps each user's expiry
//                                   times in a vector under a string key
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/client_workload.h"
#include "mxlimit/limiter.h"

namespace mxlimit {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

constexpr auto& kTargets = mxlimit_bench::kClientTargets;

// Buckets each client owns per table: its route's and the aggregate one.
constexpr size_t kBucketsPerClient = 2;

// The default configuration with `capacity` buckets per client table (the
// origin and room tables keep their default capacities).
LimiterConfig DefaultConfig(size_t capacity) {
  LimiterConfig config;  // built-ins on
  config.tables.ip_capacity = capacity;
  config.tables.user_capacity = capacity;
  return config;
}

IpAddress ClientAddress(uint64_t i) {
  return mxlimit_bench::ClientAddress<IpAddress>(i);
}

struct Workload {
  std::vector<std::string> users;
  std::vector<Request> requests;
};

// `clients` distinct clients; `draws` requests whose client is drawn uniformly
// or Zipf(1.0) (then rank-shuffled so hot clients spread over the table).
Workload MakeWorkload(size_t clients, size_t draws, bool zipf,
                      uint64_t first_client = 0) {
  Workload w;
  std::mt19937_64 rng(7);
  std::vector<double> cdf;
  if (zipf) {
    cdf.resize(clients);
    double sum = 0;
    for (size_t i = 0; i < clients; ++i) cdf[i] = (sum += 1.0 / double(i + 1));
    for (double& c : cdf) c /= sum;
  }
  std::vector<uint64_t> ids(draws);
  std::uniform_int_distribution<uint64_t> uniform(0, clients - 1);
  std::uniform_real_distribution<double> unit(0, 1);
  for (auto& id : ids) {
    if (zipf) {
      id = std::lower_bound(cdf.begin(), cdf.end(), unit(rng)) - cdf.begin();
      id = (id * 0x9E3779B97F4A7C15ULL) % clients;  // scatter hot ranks
    } else {
      id = uniform(rng);
    }
    id += first_client;
  }
  w.users.reserve(draws);
  for (uint64_t id : ids)
    w.users.push_back("@user" + std::to_string(id) + ":example.org");
  w.requests.reserve(draws);
  for (size_t i = 0; i < draws; ++i) {
    Request r;
    r.method = "GET";
    r.target = kTargets[ids[i] % std::size(kTargets)];
    r.client = ClientAddress(ids[i]);
    r.user_id = w.users[i];
    w.requests.push_back(r);
  }
  return w;
}

// --- The naive baseline: same normalization and resolution, string keys. ---
class NaiveTable {
 public:
  explicit NaiveTable(size_t capacity) : capacity_(capacity) {}
  GcraState* FindOrAdmit(const std::string& key) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      order_.splice(order_.end(), order_, it->second);
      return &it->second->second;
    }
    if (index_.size() == capacity_) {
      index_.erase(order_.front().first);
      order_.pop_front();
    }
    order_.emplace_back(key, GcraState{});
    index_.emplace(key, std::prev(order_.end()));
    return &order_.back().second;
  }

 private:
  size_t capacity_;
  std::list<std::pair<std::string, GcraState>> order_;
  std::unordered_map<std::string,
                     std::list<std::pair<std::string, GcraState>>::iterator>
      index_;
};

class NaiveLimiter {
 public:
  NaiveLimiter(const LimiterConfig& config, const Limiter& reference)
      : normalizer_(reference.normalizer()),
        policies_(reference.policies()),
        ip_(config.tables.ip_capacity),
        user_(config.tables.user_capacity),
        subjects_(config.tables.room_capacity) {}

  bool Check(const Request& r, MonotonicTime now) {
    Route route = normalizer_.Normalize(r.method, r.target);
    PolicySet::Resolution res =
        policies_.Resolve(r.method, route.id, QueryFreePath(r.target),
                          RequestSubjects{!r.user_id.empty(), !r.origin.empty(),
                                          !r.target_user.empty(), r.target});
    GcraState* buckets[kMaxResolved];
    const Rate* rates[kMaxResolved];
    size_t n = 0;
    for (const ResolvedPolicy& a : res.all()) {
      const Policy& p = policies_.policy(a.policy);
      std::string key;
      if (a.scope == Scope::kIp) {
        const ClientPrefix prefix = p.client_prefix.value_or(ClientPrefix{});
        key = FormatIpAddress(MaskAddress(r.client, prefix.ipv4, prefix.ipv6));
      } else if (a.scope == Scope::kOrigin) {
        key = std::string(r.origin) + "@" +
              FormatIpAddress(MaskAddress(r.client, 24, 48));
      } else if (a.scope == Scope::kRoom) {
        key = std::string(QueryFreePath(r.target));  // one room per path here
      } else {
        key = std::string(r.user_id);
      }
      key.append("|")
          .append(std::to_string(a.policy))
          .append("|")
          .append(std::to_string(a.bucket_route));
      NaiveTable& table = a.scope == Scope::kIp     ? ip_
                          : a.scope == Scope::kUser ? user_
                                                    : subjects_;
      buckets[n] = table.FindOrAdmit(key);
      rates[n++] = &p.rate;
    }
    for (size_t i = 0; i < n; ++i) {
      if (!GcraPeek(*rates[i], *buckets[i], now).allowed) return false;
    }
    for (size_t i = 0; i < n; ++i) GcraCharge(*rates[i], *buckets[i], now, 1);
    return true;
  }

 private:
  const RouteNormalizer& normalizer_;
  const PolicySet& policies_;
  NaiveTable ip_;
  NaiveTable user_;
  NaiveTable subjects_;
};

constexpr size_t kDraws = 1 << 16;

// `count` tier assignments, half users and half networks (/48s and /64s),
// none of the workload's clients among them unless `members`: then every
// client of the workload is in the tier too (its user or its /64 in turn),
// besides the `count`.
void AssignTiers(Limiter& limiter, size_t clients, size_t count, bool members) {
  auto set = [&](const std::string& subject) {
    if (!limiter
             .SetTier(subject, "bridge", std::nullopt,
                      MonotonicTime::FromNanoseconds(0))
             .ok()) {
      std::abort();
    }
  };
  for (uint64_t i = 0; members && i < clients; ++i) {
    set(i % 2 == 0 ? "@user" + std::to_string(i) + ":example.org"
                   : FormatCidr(Cidr{ClientAddress(i), 64, false}));
  }
  for (uint64_t i = 0; i < count; ++i) {
    IpAddress net = ClientAddress(i);
    net.bytes[1] = 0x02;  // 2002:db8:...: no client's
    set(i % 2 == 0 ? "@elsewhere" + std::to_string(i) + ":example.org"
                   : FormatCidr(Cidr{net, i % 4 == 1 ? 48 : 64, false}));
  }
}

template <bool kNaive>
void RunCheck(benchmark::State& state, bool zipf, bool new_keys,
              size_t tier_assignments = 0, bool tier_members = false) {
  const size_t keys = static_cast<size_t>(state.range(0));
  const size_t clients = keys / kBucketsPerClient;
  LimiterConfig config = DefaultConfig(keys);
  if (tier_assignments > 0) {
    config.tiers.tiers.push_back({.name = "bridge", .scale = 10});
  }
  auto limiter = *Limiter::Create(config);
  if (tier_assignments > 0) {
    AssignTiers(*limiter, clients, tier_assignments, tier_members);
  }
  NaiveLimiter naive(config, *limiter);
  // Warm: every client owns its buckets before timing.
  for (uint64_t i = 0; i < clients; ++i) {
    std::string user = "@user" + std::to_string(i) + ":example.org";
    Request r;
    r.method = "GET";
    r.target = kTargets[i % std::size(kTargets)];
    r.client = ClientAddress(i);
    r.user_id = user;
    if (kNaive) {
      naive.Check(r, MonotonicTime::FromNanoseconds(0));
    } else {
      limiter->Check(r, MonotonicTime::FromNanoseconds(0));
    }
  }
  // New-key workloads draw from clients the tables have never seen.
  Workload w = MakeWorkload(new_keys ? 64 * clients : clients, kDraws, zipf,
                            new_keys ? clients : 0);
  int64_t now = kSecond;
  size_t i = 0;
  for (auto _ : state) {
    const Request& r = w.requests[i++ & (kDraws - 1)];
    // A millisecond per request: clients stay within the built-in rates,
    // so the allowed path (every bucket charged) is what is measured.
    now += 1'000'000;
    if constexpr (kNaive) {
      benchmark::DoNotOptimize(
          naive.Check(r, MonotonicTime::FromNanoseconds(now)));
    } else {
      benchmark::DoNotOptimize(
          limiter->Check(r, MonotonicTime::FromNanoseconds(now)).allowed);
    }
  }
  state.SetItemsProcessed(state.iterations());
}

// Federation from `subjects` origin servers (each from its own network), or
// joins to `subjects` rooms by users drawn from a pool large enough that none
// exceeds join-room at a request a millisecond: the new scopes' hit path.
struct SubjectWorkload {
  size_t users = 0;
  std::vector<std::string> text;  // per draw: the origin or the target
  std::vector<std::string> user_ids;
  std::vector<Request> requests;
};

std::string RoomTarget(uint64_t room) {
  return "/_matrix/client/v3/rooms/!r" + std::to_string(room) +
         ":example.org/join";
}

std::string Origin(uint64_t origin) {
  return "s" + std::to_string(origin) + ".example.org";
}

const char* const kFederationTargets[] = {
    "/_matrix/federation/v1/send/1712345678901",
    "/_matrix/federation/v1/event/%24abcdefghijklmnop",
    "/_matrix/federation/v1/query/profile?user_id=%40a%3Aexample.org",
    "/_matrix/federation/v1/user/devices/%40a%3Aexample.org",
};

Request SubjectRequest(bool rooms, uint64_t subject, uint64_t user,
                       const std::string& text, const std::string& user_id) {
  Request r;
  if (rooms) {
    r.method = "POST";
    r.target = text;
    r.user_id = user_id;
    r.client = ClientAddress(user);
  } else {
    r.method = "PUT";
    r.target = kFederationTargets[subject % std::size(kFederationTargets)];
    r.origin = text;
    r.client = ClientAddress(subject);
  }
  return r;
}

SubjectWorkload MakeSubjectWorkload(size_t subjects, size_t draws, bool rooms) {
  SubjectWorkload w;
  // join-room allows 6 a minute: a user joins at most every 10 s here.
  w.users = rooms ? std::max<size_t>(subjects, 16'384) : 0;
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> subject(0, subjects - 1);
  std::uniform_int_distribution<uint64_t> user(0, rooms ? w.users - 1 : 0);
  std::vector<uint64_t> ids(draws), users(draws);
  for (size_t i = 0; i < draws; ++i) {
    ids[i] = subject(rng);
    users[i] = rooms ? i % w.users : 0;
  }
  w.text.reserve(draws);
  w.user_ids.reserve(draws);
  for (size_t i = 0; i < draws; ++i) {
    w.text.push_back(rooms ? RoomTarget(ids[i]) : Origin(ids[i]));
    w.user_ids.push_back("@j" + std::to_string(users[i]) + ":example.org");
  }
  for (size_t i = 0; i < draws; ++i) {
    w.requests.push_back(
        SubjectRequest(rooms, ids[i], users[i], w.text[i], w.user_ids[i]));
  }
  return w;
}

template <bool kNaive>
void RunSubjectCheck(benchmark::State& state, bool rooms) {
  const size_t keys = static_cast<size_t>(state.range(0));
  SubjectWorkload w = MakeSubjectWorkload(keys, kDraws, rooms);
  LimiterConfig config = DefaultConfig(keys);
  config.tables.origin_capacity = keys;
  config.tables.room_capacity = keys;
  // Every client's route and aggregate buckets fit: the hit path.
  const size_t clients = rooms ? w.users : keys;
  config.tables.ip_capacity = kBucketsPerClient * clients;
  config.tables.user_capacity = kBucketsPerClient * clients;
  auto limiter = *Limiter::Create(config);
  NaiveLimiter naive(config, *limiter);
  auto check = [&](const Request& r, int64_t at) {
    if constexpr (kNaive) {
      return naive.Check(r, MonotonicTime::FromNanoseconds(at));
    } else {
      return limiter->Check(r, MonotonicTime::FromNanoseconds(at)).allowed;
    }
  };
  // Warm: every subject, and every user, owns its buckets before timing.
  for (uint64_t i = 0; i < std::max(keys, w.users); ++i) {
    const std::string text = rooms ? RoomTarget(i % keys) : Origin(i % keys);
    const std::string user = "@j" + std::to_string(i) + ":example.org";
    check(SubjectRequest(rooms, i % keys, i, text, user), 0);
  }
  int64_t now = 100 * kSecond;
  size_t i = 0;
  for (auto _ : state) {
    const Request& r = w.requests[i++ & (kDraws - 1)];
    now += 1'000'000;
    benchmark::DoNotOptimize(check(r, now));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Limiter_Check(benchmark::State& s) { RunCheck<false>(s, false, false); }
// BM_Limiter_Check with kTierAssignments in the directory.
constexpr size_t kTierAssignments = 100'000;
void BM_Limiter_Check_Tiers(benchmark::State& s) {
  RunCheck<false>(s, false, false, kTierAssignments);
}
void BM_Limiter_Check_TierMembers(benchmark::State& s) {
  RunCheck<false>(s, false, false, kTierAssignments, /*tier_members=*/true);
}
void BM_LimiterNaive_Check(benchmark::State& s) {
  RunCheck<true>(s, false, false);
}
void BM_Limiter_Check_Zipf(benchmark::State& s) {
  RunCheck<false>(s, true, false);
}
void BM_LimiterNaive_Check_Zipf(benchmark::State& s) {
  RunCheck<true>(s, true, false);
}
void BM_Limiter_CheckNewKey(benchmark::State& s) {
  RunCheck<false>(s, false, true);
}
void BM_LimiterNaive_CheckNewKey(benchmark::State& s) {
  RunCheck<true>(s, false, true);
}

#define MXLIMIT_KEYS ->Arg(1'000)->Arg(100'000)->Arg(1'000'000)->ArgName("keys")
BENCHMARK(BM_Limiter_Check) MXLIMIT_KEYS;
BENCHMARK(BM_Limiter_Check_Tiers) MXLIMIT_KEYS;
BENCHMARK(BM_Limiter_Check_TierMembers) MXLIMIT_KEYS;
BENCHMARK(BM_LimiterNaive_Check) MXLIMIT_KEYS;
BENCHMARK(BM_Limiter_Check_Zipf) MXLIMIT_KEYS;
BENCHMARK(BM_LimiterNaive_Check_Zipf) MXLIMIT_KEYS;
BENCHMARK(BM_Limiter_CheckNewKey) MXLIMIT_KEYS;
BENCHMARK(BM_LimiterNaive_CheckNewKey) MXLIMIT_KEYS;

void BM_Limiter_Check_Federation(benchmark::State& s) {
  RunSubjectCheck<false>(s, false);
}
void BM_LimiterNaive_Check_Federation(benchmark::State& s) {
  RunSubjectCheck<true>(s, false);
}
void BM_Limiter_Check_Room(benchmark::State& s) {
  RunSubjectCheck<false>(s, true);
}
void BM_LimiterNaive_Check_Room(benchmark::State& s) {
  RunSubjectCheck<true>(s, true);
}
// --- In-flight limits: take a lease, give it back. ---------------------------

// The naive baseline: the same normalization and resolution, then each
// bucket's lease expiry times in a vector under a string key, swept on
// every check; a lease is found again by its id.
class NaiveLeases {
 public:
  explicit NaiveLeases(const Limiter& reference)
      : normalizer_(reference.normalizer()), policies_(reference.policies()) {}

  uint64_t Acquire(const Request& r, int64_t now) {
    Route route = normalizer_.Normalize(r.method, r.target);
    PolicySet::Resolution res = policies_.Resolve(
        r.method, route.id, QueryFreePath(r.target),
        RequestSubjects{!r.user_id.empty(), false, false, r.target});
    for (const ResolvedPolicy& a : res.all()) {
      const Policy& p = policies_.policy(a.policy);
      if (!p.concurrency.has_value()) continue;
      std::string key = std::string(r.user_id) + "|" +
                        std::to_string(a.policy) + "|" +
                        std::to_string(a.bucket_route);
      std::vector<std::pair<uint64_t, int64_t>>& held = groups_[key];
      std::erase_if(held, [&](const auto& l) { return l.second <= now; });
      if (held.size() >= static_cast<size_t>(p.concurrency->limit)) return 0;
      const uint64_t id = ++next_id_;
      held.emplace_back(id, now + p.concurrency->lease.count());
      owner_[id] = key;
      return id;
    }
    return 0;
  }

  void Release(uint64_t id) {
    auto it = owner_.find(id);
    if (it == owner_.end()) return;
    std::erase_if(groups_[it->second],
                  [&](const auto& l) { return l.first == id; });
    owner_.erase(it);
  }

 private:
  const RouteNormalizer& normalizer_;
  const PolicySet& policies_;
  std::unordered_map<std::string, std::vector<std::pair<uint64_t, int64_t>>>
      groups_;
  std::unordered_map<uint64_t, std::string> owner_;
  uint64_t next_id_ = 0;
};

template <bool kNaive>
void RunConcurrency(benchmark::State& state) {
  const size_t buckets = static_cast<size_t>(state.range(0));
  LimiterConfig config;
  config.builtin_policies = false;
  Policy p;
  p.name = "sync-in-flight";
  p.match = {"/_matrix/client/v3/sync"};
  p.scope = Scope::kUser;
  p.concurrency = Concurrency{4, std::chrono::seconds(60)};
  config.policies = {p};
  config.tables.user_capacity = buckets;
  config.tables.lease_capacity = 4 * buckets;
  auto limiter = *Limiter::Create(config);
  NaiveLeases naive(*limiter);
  std::vector<std::string> users;
  for (size_t i = 0; i < buckets; ++i) {
    users.push_back("@user" + std::to_string(i) + ":example.org");
  }
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<size_t> pick(0, buckets - 1);
  std::vector<Request> requests(kDraws);
  for (Request& r : requests) {
    r.method = "GET";
    r.target = "/_matrix/client/v3/sync?since=s1&timeout=30000";
    r.client = ClientAddress(7);
    r.user_id = users[pick(rng)];
  }
  int64_t now = kSecond;
  size_t i = 0;
  size_t admitted = 0;
  for (auto _ : state) {
    const Request& r = requests[i++ & (kDraws - 1)];
    now += 1'000;
    if constexpr (kNaive) {
      const uint64_t id = naive.Acquire(r, now);
      admitted += id != 0;
      naive.Release(id);
    } else {
      const Decision d = limiter->Check(r, MonotonicTime::FromNanoseconds(now));
      admitted += d.leases.count;
      limiter->Release(d.leases, MonotonicTime::FromNanoseconds(now));
    }
  }
  // Every request is admitted (each lease is back before the next).
  if (admitted != static_cast<size_t>(state.iterations())) {
    state.SkipWithError("denied");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Limiter_Concurrency(benchmark::State& s) { RunConcurrency<false>(s); }
void BM_LimiterNaive_Concurrency(benchmark::State& s) {
  RunConcurrency<true>(s);
}
BENCHMARK(BM_Limiter_Concurrency)->Arg(1'000)->Arg(100'000)->ArgName("buckets");
BENCHMARK(BM_LimiterNaive_Concurrency)
    ->Arg(1'000)
    ->Arg(100'000)
    ->ArgName("buckets");

BENCHMARK(BM_Limiter_Check_Federation) MXLIMIT_KEYS;
BENCHMARK(BM_LimiterNaive_Check_Federation) MXLIMIT_KEYS;
BENCHMARK(BM_Limiter_Check_Room) MXLIMIT_KEYS;
BENCHMARK(BM_LimiterNaive_Check_Room) MXLIMIT_KEYS;

}  // namespace
}  // namespace mxlimit
