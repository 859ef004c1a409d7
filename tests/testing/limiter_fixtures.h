// Helpers shared by the limiter tests: policies and requests in one line each.
#ifndef MXLIMIT_TESTS_TESTING_LIMITER_FIXTURES_H_
#define MXLIMIT_TESTS_TESTING_LIMITER_FIXTURES_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mxlimit/ip.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy.h"
#include "mxlimit/rate.h"

namespace mxlimit::testing {

inline constexpr int64_t kSecond = 1'000'000'000;

inline MonotonicTime At(int64_t seconds) {
  return MonotonicTime::FromNanoseconds(seconds * kSecond);
}

inline IpAddress Ip(std::string_view text) {
  absl::StatusOr<IpAddress> ip = ParseIpAddress(text);
  return ip.ok() ? *ip : IpAddress{};
}

// A limited policy: `n` per `unit`, burst `burst` (default n).
inline Policy MakePolicy(std::string name, std::string match, Scope scope,
                         int64_t n, TimeUnit unit,
                         std::optional<int64_t> burst = {}) {
  Policy p;
  p.name = std::move(name);
  p.match = {std::move(match)};
  p.scope = scope;
  p.rate = *Rate::Create(n, unit, burst);
  return p;
}

inline Request MakeRequest(std::string_view method, std::string_view target,
                           std::string_view ip, std::string_view user = {}) {
  Request r;
  r.method = method;
  r.target = target;
  r.client = Ip(ip);
  r.user_id = user;
  return r;
}

// The room directory search: no built-in policy limits it tighter than the
// delaying policy below.
// Requests like `r` a limiter allows at one instant before its first
// denial (-1 past 10,000: no limit in sight).
template <typename L>
int AllowedAtOnce(L& limiter, const Request& r, MonotonicTime now) {
  for (int n = 0; n < 10'000; ++n) {
    if (!limiter.Check(r, now).allowed) return n;
  }
  return -1;
}

inline constexpr char kPublicRooms[] = "/_matrix/client/v3/publicRooms";

// Per IP on kPublicRooms, 10 a second, burst 2; waits of up to 500 ms are
// served late (`on_limit: delay`).
inline Policy DelayedPolicy() {
  Policy p = MakePolicy("rooms-delayed", kPublicRooms, Scope::kIp, 10,
                        TimeUnit::kSecond, 2);
  p.on_limit = OnLimit::kDelay;
  p.max_delay = std::chrono::milliseconds(500);
  return p;
}

// `r` from an embedder that holds delayed requests.
inline Request Holdable(Request r) {
  r.may_delay = true;
  return r;
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_LIMITER_FIXTURES_H_
