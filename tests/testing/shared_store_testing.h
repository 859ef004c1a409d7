// Helpers for the SharedLimiter tests: several "processes" over one
// in-process store, and the bundled Synapse log as requests.

#ifndef MXLIMIT_TESTS_TESTING_SHARED_STORE_TESTING_H_
#define MXLIMIT_TESTS_TESTING_SHARED_STORE_TESTING_H_

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "mxlimit/ip.h"
#include "mxlimit/limiter.h"
#include "mxlimit/request.h"
#include "mxlimit/shared_limiter.h"
#include "mxlimit/time.h"
#include "src/replay/log_parsers.h"
#include "src/shared/store.h"

namespace mxlimit::testing {

// A store key secret for tests (`store.key_secret`).
inline constexpr char kStoreKeySecret[] = "0123456789abcdef-test-secret";

// One process's view of a store that several share: forwards every op.
// Late replies go to the process that registered last.
class ForwardingStore final : public internal::Store {
 public:
  explicit ForwardingStore(internal::Store& to) : to_(to) {}
  internal::StoreResult Execute(
      const internal::StoreOp& op,
      std::chrono::steady_clock::time_point deadline) override {
    return to_.Execute(op, deadline);
  }
  bool Post(const internal::StoreOp& op) override { return to_.Post(op); }
  uint64_t generation() const override { return to_.generation(); }
  internal::StoreCounters counters() const override { return to_.counters(); }
  void SetLateReplyHandler(internal::LateReplyHandler* h) override {
    to_.SetLateReplyHandler(h);
  }

 private:
  internal::Store& to_;
};

// Calls `f(request, now, line)` for every request of
// examples/data/sample-synapse.log, on the log's clock made monotonic (as
// `mxlimit replay` does). Returns false if the file cannot be read.
template <typename F>
bool ForEachSampleRequest(F&& f) {
  std::ifstream in(MXLIMIT_SOURCE_DIR "/examples/data/sample-synapse.log");
  if (!in) return false;
  std::string line;
  int64_t clock_ms = 0;
  while (std::getline(in, line)) {
    replay::LogRecord rec;
    if (replay::ParseSynapseLine(line, &rec) != replay::ParseResult::kOk) {
      continue;
    }
    auto client = ParseIpAddress(rec.client_ip);
    if (!client.ok()) continue;
    Request r;
    r.method = rec.method;
    r.target = rec.target;
    r.client = *client;
    r.user_id = rec.user;
    clock_ms = std::max(clock_ms, rec.time_ms);
    if (!f(r, MonotonicTime::FromMilliseconds(clock_ms), line)) break;
  }
  return true;
}

// Replays the bundled sample round-robin over `procs` and through one
// Limiter with the built-in policies, expecting the same decision for
// every request (and, for denials, the same policy and wait); stops at the
// first difference. Returns {requests, denials}.
template <typename Procs>
std::pair<size_t, size_t> ExpectSampleDecidedAsOneLimiter(Procs& procs) {
  auto one = Limiter::Create(LimiterConfig{});
  EXPECT_TRUE(one.ok());
  size_t n = 0, denied = 0;
  if (!one.ok()) return {n, denied};
  EXPECT_TRUE(ForEachSampleRequest(
      [&](const Request& r, MonotonicTime now, const std::string& line) {
        const Decision a = procs[n % procs.size()]->Check(r, now);
        const Decision b = (*one)->Check(r, now);
        ++n;
        EXPECT_EQ(a.allowed, b.allowed) << "line " << n << ": " << line;
        if (!b.allowed) {
          ++denied;
          EXPECT_EQ(a.limited_by, b.limited_by) << "line " << n;
          EXPECT_EQ(a.policy, b.policy) << "line " << n;
          EXPECT_EQ(a.retry_after, b.retry_after) << "line " << n;
        }
        return !::testing::Test::HasFailure();  // Stop at the first.
      }));
  return {n, denied};
}

// Checks that `procs` decided without the store, summed over them.
template <typename Procs>
uint64_t TotalFallbacks(const Procs& procs) {
  uint64_t fallbacks = 0;
  for (const auto& p : procs) {
    const SharedStoreStats s = p->StoreStats();
    fallbacks += s.fallback_timeout + s.fallback_error +
                 s.fallback_unavailable + s.fallback_breaker_open;
  }
  return fallbacks;
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_SHARED_STORE_TESTING_H_
