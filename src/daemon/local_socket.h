// -----------------------------------------------------------------------------
// File: daemon/local_socket.h
// -----------------------------------------------------------------------------
//
// The sockets of mxlimitd that only local processes may reach (the
// completion feed's, the admin API's). Unix sockets are bound
// with their final mode from the first moment, a stale socket file of an
// earlier run replaced, a live one or any other file left alone, and on
// shutdown only the file this process bound removed (a later process may
// have replaced it).
//
// Example:
//   ino_t inode = 0;
//   absl::StatusOr<int> fd = BindUnixSocket("/run/mxlimit/admin.sock",
//                                           SOCK_STREAM, 0600, "admin", inode);
//   ...
//   UnlinkIfOurs("/run/mxlimit/admin.sock", inode);

#ifndef MXLIMIT_DAEMON_LOCAL_SOCKET_H_
#define MXLIMIT_DAEMON_LOCAL_SOCKET_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mxlimit::daemon {

// A non-blocking, close-on-exec socket of `type` (SOCK_DGRAM,
// SOCK_STREAM) bound at `path` with `mode`; `inode` is the file's. `what`
// names it in errors ("feed" gives "feed socket path too long: PATH").
// A stream socket is not listening yet.
absl::StatusOr<int> BindUnixSocket(const std::string& path, int type,
                                   mode_t mode, std::string_view what,
                                   ino_t& inode);

// Removes `path` if it is still the file of `inode`.
void UnlinkIfOurs(const std::string& path, ino_t inode);

// Whether `host` is a numeric loopback address (127.0.0.0/8, ::1).
bool IsLoopbackHost(const std::string& host);

// "`what` PATH: strerror(errno)", Unavailable.
absl::Status ErrnoStatus(std::string_view what, std::string_view where);

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_LOCAL_SOCKET_H_
