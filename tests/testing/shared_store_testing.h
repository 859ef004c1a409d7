// Helpers for the SharedLimiter tests: several "processes" over one
// in-process store, and the bundled Synapse log as requests.

#ifndef MXLIMIT_TESTS_TESTING_SHARED_STORE_TESTING_H_
#define MXLIMIT_TESTS_TESTING_SHARED_STORE_TESTING_H_

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "mxlimit/ip.h"
#include "mxlimit/request.h"
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

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_SHARED_STORE_TESTING_H_
