// -----------------------------------------------------------------------------
// File: util/await_fd.h
// -----------------------------------------------------------------------------
//
// Waiting on one file descriptor against a deadline, for the blocking-style
// loops of mxlimitd's admin server and `mxlimit admin`'s client (the request
// path has its own epoll loop, src/http/).
//
// Internal: not installed.

#ifndef MXLIMIT_UTIL_AWAIT_FD_H_
#define MXLIMIT_UTIL_AWAIT_FD_H_

#include <poll.h>

#include <cerrno>
#include <chrono>

namespace mxlimit::internal {

// Waits until `fd` is ready for `events` (POLLIN, POLLOUT); false once
// `deadline` passes or on an error. Retries on EINTR.
inline bool AwaitFd(int fd, short events,
                    std::chrono::steady_clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_AWAIT_FD_H_
