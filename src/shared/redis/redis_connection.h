// A blocking connection to the store's Redis for the few commands that are
// not checks (mxlimitd's shared runtime tiers): the same endpoints as a
// `RedisStore`, TLS included, and every call bounded by one deadline, so a
// dead or frozen Redis costs the caller at most the time it allows. Not for
// the request path: it allocates, and one caller at a time.
//
//   const auto deadline = std::chrono::steady_clock::now() + 1s;
//   absl::StatusOr<std::unique_ptr<RedisConnection>> c =
//       RedisConnection::Connect(endpoint, tls.get(), deadline);
//   absl::StatusOr<std::vector<RedisReplyPtr>> r =
//       (*c)->Run({{"GET", "k"}, {"INCR", "v"}}, deadline);
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_REDIS_CONNECTION_H_
#define MXLIMIT_SHARED_REDIS_REDIS_CONNECTION_H_

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "src/options/store_url.h"
#include "src/shared/redis/tls_client.h"

namespace mxlimit::internal {

struct RedisReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using RedisReplyPtr = std::unique_ptr<redisReply, RedisReplyDeleter>;

class RedisConnection {
 public:
  // Connects (TLS when `endpoint.tls`, with `tls`), then AUTH and SELECT
  // as the endpoint says, all by `deadline`. Unavailable when Redis cannot
  // be reached or refuses the setup.
  static absl::StatusOr<std::unique_ptr<RedisConnection>> Connect(
      const StoreEndpoint& endpoint, const TlsContext* tls,
      std::chrono::steady_clock::time_point deadline);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends the commands in one write and reads one reply per command, all
  // by `deadline`. An error reply is a reply; an I/O failure or a missed
  // deadline is Unavailable and leaves the connection broken().
  absl::StatusOr<std::vector<RedisReplyPtr>> Run(
      const std::vector<std::vector<std::string_view>>& commands,
      std::chrono::steady_clock::time_point deadline);

  bool broken() const { return broken_; }

 private:
  explicit RedisConnection(int fd);
  absl::Status Handshake(std::chrono::steady_clock::time_point deadline);
  absl::Status WriteAll(std::string_view bytes,
                        std::chrono::steady_clock::time_point deadline);
  // Some bytes into `buf`, or 0 with the status set when none can come.
  absl::StatusOr<size_t> ReadSome(
      char* buf, size_t size, std::chrono::steady_clock::time_point deadline);
  absl::Status Broken(std::string_view why);

  int fd_;
  TlsSession tls_;
  redisReader* reader_;
  bool broken_ = false;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_REDIS_CONNECTION_H_
