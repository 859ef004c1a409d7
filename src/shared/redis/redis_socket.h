// Non-blocking sockets to a Redis endpoint, for `RedisStore`'s I/O thread:
// TCP with TCP_NODELAY (each flush is a whole batch already; Nagle would
// only add delay), or a Unix socket.
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_REDIS_SOCKET_H_
#define MXLIMIT_SHARED_REDIS_REDIS_SOCKET_H_

#include <cstddef>
#include <string>

#include "src/options/store_url.h"

namespace mxlimit::internal {

struct ConnectAttempt {
  // -1 when the attempt failed at once (`error` says why).
  int fd = -1;
  // The connect is still in progress: wait for the socket to be writable,
  // then call FinishConnect.
  bool in_progress = false;
  std::string error;
};

// Starts connecting. A host name with several addresses (localhost: ::1 and
// 127.0.0.1) is tried one address per attempt, the `attempt`-th modulo
// their count, so a dead address does not block the others forever.
// NOTE: resolving a host name blocks (getaddrinfo); numeric addresses do not.
ConnectAttempt StartConnect(const StoreEndpoint& endpoint, size_t attempt);

// 0 once an in-progress connect has succeeded, else its errno.
int FinishConnect(int fd);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_REDIS_SOCKET_H_
