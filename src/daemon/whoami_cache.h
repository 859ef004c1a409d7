// -----------------------------------------------------------------------------
// File: daemon/whoami_cache.h
// -----------------------------------------------------------------------------
//
// `--user-key whoami=URL`: the real Matrix user behind an access token, asked
// of the homeserver once (`GET URL/_matrix/client/v3/account/whoami`) and
// then remembered for a TTL, so that `exempt.users` and per-user policies see
// real user IDs.
//
// The request path never waits for the homeserver. `Lookup` answers from
// the cache or says "unknown"; an unknown token is queued for the resolver
// threads and, meanwhile, the caller uses the token hash (token_key.h), so
// an unknown or unresolvable token is still limited, never let through
// unlimited. What is bounded:
//   - entries: `capacity`, least recently used evicted first, each expiring
//     `ttl` after it was resolved; slots and index are allocated at start;
//   - the queue: `max_pending` tokens waiting, the same token queued once;
//     a full queue drops the newcomer (it is looked up again next time);
//   - the homeserver: `resolvers` connections, each request abandoned after
//     `deadline`; a failure is remembered for `failure_ttl`, so a dead
//     homeserver is asked at most once per token per `failure_ttl`.
// Tokens are kept only while queued. The cache is keyed by a keyed hash of
// the token, never by the token.
//
// Example:
//   WhoamiCache::Options options;
//   options.homeserver = "http://127.0.0.1:8008";
//   auto cache = std::make_unique<WhoamiCache>(options, secret);
//   cache->Start();
//   char user[mxlimit::daemon::kMaxUserIdBytes];
//   size_t n = cache->Lookup("syt_abc", MonotonicTime::FromSteadyClock(),
//   user);
//   // n == 0 at first; once resolved, user[0..n) is "@alice:example.org"

#ifndef MXLIMIT_DAEMON_WHOAMI_CACHE_H_
#define MXLIMIT_DAEMON_WHOAMI_CACHE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "mxlimit/time.h"
#include "src/daemon/request_inputs.h"
#include "src/daemon/token_digest.h"
#include "src/util/siphash.h"

namespace mxlimit::daemon {

// The spec's limit on a user ID's length.
inline constexpr size_t kMaxUserIdBytes = 255;

class WhoamiCache {
 public:
  struct Options {
    std::string homeserver;  // scheme://host[:port], no trailing path
    size_t capacity = 100'000;
    std::chrono::seconds ttl{300};
    std::chrono::seconds failure_ttl{10};
    std::chrono::milliseconds deadline{2'000};
    size_t max_pending = 1024;
    int resolvers = 2;
  };

  struct Counters {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t resolved = 0;  // the homeserver named a user
    uint64_t rejected = 0;  // the homeserver refused the token
    uint64_t failures = 0;  // no answer in time, or an unusable one
    uint64_t queue_full = 0;
    uint64_t entries = 0;
  };

  WhoamiCache(const Options& options, const internal::SipKey& secret);
  ~WhoamiCache();  // stops the resolvers
  WhoamiCache(const WhoamiCache&) = delete;
  WhoamiCache& operator=(const WhoamiCache&) = delete;

  // Starts the resolver threads.
  void Start();

  // Copies the user ID known for `token` into `out` and returns its length;
  // 0 when none is known (not yet resolved, refused, failed or expired), in
  // which case the token is queued for resolution if it is not already.
  // Thread-safe; allocation-free.
  size_t Lookup(std::string_view token, MonotonicTime now,
                char (&out)[kMaxUserIdBytes]);

  Counters counters() const;

 private:
  // What the homeserver said of one token.
  struct Answer {
    bool failed = true;   // no usable answer in time
    std::string user_id;  // empty and not failed: the token was refused
  };

  using Key = TokenDigest;
  struct Entry {
    Key key;
    int64_t expires_ns = 0;
    uint16_t len = 0;  // 0: refused or failed (use the token hash)
    char user_id[kMaxUserIdBytes];
    uint32_t prev = 0xFFFFFFFF;
    uint32_t next = 0xFFFFFFFF;
  };
  struct Pending {
    Key key;
    std::string token;
  };

  void Run();
  void Store(const Key& key, const Answer& answer, int64_t now_ns);
  void Unlink(uint32_t i);
  void PushFront(uint32_t i);

  const Options options_;
  const internal::SipKey secret_;

  mutable std::mutex mu_;
  absl::flat_hash_map<Key, uint32_t> index_;
  std::vector<Entry> slots_;
  uint32_t head_ = 0xFFFFFFFF;  // most recently used
  uint32_t tail_ = 0xFFFFFFFF;
  absl::flat_hash_set<Key> queued_;
  std::vector<Pending> queue_;  // ring of max_pending
  size_t queue_begin_ = 0;
  size_t queue_size_ = 0;
  bool stopping_ = false;
  std::condition_variable wake_;
  std::vector<std::thread> threads_;

  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> resolved_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> queue_full_{0};
};

// Reads "user_id" out of a whoami response body; "" when absent or not a
// well-formed user ID.
std::string UserIdFromWhoami(std::string_view json);

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_WHOAMI_CACHE_H_
