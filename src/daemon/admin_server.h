// -----------------------------------------------------------------------------
// File: daemon/admin_server.h
// -----------------------------------------------------------------------------
//
// The admin API's own listener (`--admin-listen`): a unix socket created
// with mode 0600, or a loopback TCP port. Never the auth listener, so the
// documented proxy configs, which forward only the decision endpoints to
// that one, cannot reach it. One thread serves one connection at a time,
// `Connection: close` after each answer: the API is an operator's, called
// now and then. What a client controls is bounded: the head and body sizes
// (kMaxAdminHeadBytes, kMaxAdminBodyBytes, else 431 or 413) and the time
// (a request must arrive, and its answer be taken, within kAdminDeadline;
// else the connection is closed), so a stalled client delays others by at
// most that.
//
// Example:
//   absl::StatusOr<AdminListenAddress> at = ParseAdminListen("unix:/run/a");
//   absl::StatusOr<std::unique_ptr<AdminServer>> server =
//       AdminServer::Start(*at, api);
//   // ... (*server)->Stop();

#ifndef MXLIMIT_DAEMON_ADMIN_SERVER_H_
#define MXLIMIT_DAEMON_ADMIN_SERVER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "src/daemon/admin_api.h"

namespace mxlimit::daemon {

inline constexpr size_t kMaxAdminHeadBytes = 16 * 1024;
inline constexpr size_t kMaxAdminBodyBytes = 4 * 1024;
inline constexpr std::chrono::milliseconds kAdminDeadline{5'000};

struct AdminListenAddress {
  bool unix_socket = false;
  std::string path;  // unix_socket
  std::string host;  // else: a numeric loopback address
  uint16_t port = 0;
};

// "unix:PATH" (an absolute or relative path) or "HOST:PORT" with a
// loopback host ("127.0.0.1:8090", "[::1]:8090"): the admin API is never
// served on a routable address.
absl::StatusOr<AdminListenAddress> ParseAdminListen(std::string_view text);

class AdminServer {
 public:
  // Binds (a stale socket file left by an earlier run is replaced; a live
  // one is an error) and starts the thread.
  static absl::StatusOr<std::unique_ptr<AdminServer>> Start(
      const AdminListenAddress& address, AdminApi& api);

  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;
  ~AdminServer();

  // "unix:PATH" or "HOST:PORT" with the bound port.
  const std::string& bound() const { return bound_; }

  // Stops the thread (after the connection under way) and removes the
  // socket file. Idempotent.
  void Stop();

 private:
  AdminServer(AdminApi& api) : api_(api) {}
  void Serve();
  void ServeConnection(int fd, std::string_view peer);

  AdminApi& api_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd
  std::string bound_;
  std::string unlink_path_;
  ino_t inode_ = 0;
  bool tcp_ = false;
  std::thread thread_;
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_ADMIN_SERVER_H_
