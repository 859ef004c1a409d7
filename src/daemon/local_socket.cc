#include "src/daemon/local_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::daemon {
namespace {

// Whether a process is serving the unix socket at `path`: a connection
// (or a datagram) would be taken. A file nobody has bound is refused.
bool Served(const sockaddr_un& sa, int type) {
  const int probe = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  const bool served =
      connect(probe, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) == 0;
  close(probe);
  return served;
}

}  // namespace

absl::Status ErrnoStatus(std::string_view what, std::string_view where) {
  return absl::UnavailableError(absl::StrCat(internal::ToAbsl(what), " ",
                                             internal::ToAbsl(where), ": ",
                                             std::strerror(errno)));
}

absl::StatusOr<int> BindUnixSocket(const std::string& path, int type,
                                   mode_t mode, std::string_view what,
                                   ino_t& inode) {
  const std::string name(what);
  sockaddr_un sa{};
  if (path.empty() || path.size() >= sizeof(sa.sun_path)) {
    return absl::InvalidArgumentError(name + " socket path too long: " + path);
  }
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.data(), path.size());
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    // A socket left by an earlier run is replaced; a live one (another
    // mxlimitd's) and anything else are not ours to remove.
    if (!S_ISSOCK(st.st_mode)) {
      return absl::AlreadyExistsError(
          name + " path exists and is not a socket: " + path);
    }
    if (Served(sa, type)) {
      return absl::AlreadyExistsError(
          name + " socket is in use by another process: " + path);
    }
    (void)unlink(path.c_str());
  }
  const int fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus("cannot create the " + name + " socket", path);
  // The file takes the socket's mode when bound: never, even for a moment,
  // more open than `mode`.
  (void)fchmod(fd, mode);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    absl::Status error =
        ErrnoStatus("cannot bind the " + name + " socket", path);
    close(fd);
    return error;
  }
  if (chmod(path.c_str(), mode) != 0 || lstat(path.c_str(), &st) != 0) {
    absl::Status error =
        ErrnoStatus("cannot set the " + name + " socket's mode", path);
    (void)unlink(path.c_str());
    close(fd);
    return error;
  }
  inode = st.st_ino;
  return fd;
}

bool IsLoopbackHost(const std::string& host) {
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 &&
         IN6_IS_ADDR_LOOPBACK(&v6);
}

void UnlinkIfOurs(const std::string& path, ino_t inode) {
  struct stat st {};
  if (!path.empty() && lstat(path.c_str(), &st) == 0 && st.st_ino == inode) {
    (void)unlink(path.c_str());
  }
}

}  // namespace mxlimit::daemon
