// Where a `RedisStore` connects, and how it authenticates: `store.url`
// parsed once, before any connection is made, so that a bad URL is an error
// at startup rather than an endless reconnect loop.
//
// Accepted forms (docs/shared-state.md):
//   redis://[[USER:]PASSWORD@]HOST[:PORT][/DB]   port 6379 and db 0 by default;
//                                                HOST may be [IPv6]
//   unix:///PATH[?db=DB]
// USER and PASSWORD may be percent-encoded (`%40` for `@`).
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_REDIS_URL_H_
#define MXLIMIT_SHARED_REDIS_REDIS_URL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mxlimit::internal {

struct RedisEndpoint {
  // TCP when `unix_path` is empty.
  std::string host;
  int port = 6379;
  std::string unix_path;
  // AUTH: PASSWORD alone, or USER and PASSWORD (Redis 6 ACLs). No AUTH when
  // `password` is empty.
  std::string user;
  std::string password;
  // SELECT, when not 0.
  int db = 0;
};

// InvalidArgument naming `store.url` for anything else. The message never
// repeats the password.
absl::StatusOr<RedisEndpoint> ParseRedisUrl(std::string_view url);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_REDIS_URL_H_
