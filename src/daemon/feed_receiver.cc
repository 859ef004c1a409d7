#include "src/daemon/feed_receiver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/status/status.h"
#include "src/daemon/flags.h"
#include "src/daemon/local_socket.h"
#include "src/daemon/log.h"

namespace mxlimit::daemon {
namespace {

constexpr size_t kBatch = 16;
// Full batches read before Drain returns to its caller.
constexpr int kMaxRounds = 64;
// Datagrams a unix socket must be able to queue for its reader to nap.
constexpr long kNapQueue = 256;

long UnixQueueLength() {
  long n = 0;
  if (FILE* f = std::fopen("/proc/sys/net/unix/max_dgram_qlen", "r")) {
    if (std::fscanf(f, "%ld", &n) != 1) n = 0;
    std::fclose(f);
  }
  return n;
}

// A receive buffer to absorb bursts (capped by net.core.rmem_max) and, on
// UDP, the kernel's count of datagrams it dropped on this socket with each
// datagram (SO_RXQ_OVFL; a unix datagram sender is refused instead).
void TuneSocket(int fd, bool udp) {
  const int bytes = 4 << 20;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  if (udp) {
    const int on = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof(on));
  }
}

absl::StatusOr<int> BindUdp(const FeedAddress& a, uint16_t& port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  const bool v6 = a.host.find(':') != std::string::npos;
  if (v6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a.port);
    inet_pton(AF_INET6, a.host.c_str(), &s6->sin6_addr);
    len = sizeof(*s6);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(a.port);
    inet_pton(AF_INET, a.host.c_str(), &s4->sin_addr);
    len = sizeof(*s4);
  }
  const std::string where = a.host + ":" + std::to_string(a.port);
  const int fd = socket(v6 ? AF_INET6 : AF_INET,
                        SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus("cannot create the feed socket", where);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    absl::Status error = ErrnoStatus("cannot bind the feed socket", where);
    close(fd);
    return error;
  }
  port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                  : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return fd;
}

}  // namespace

absl::StatusOr<FeedAddress> ParseFeedAddress(std::string_view text) {
  FeedAddress a;
  if (text.substr(0, 5) == "unix:") {
    a.kind = FeedAddress::Kind::kUnix;
    a.path = std::string(text.substr(5));
    if (a.path.empty() || a.path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return absl::InvalidArgumentError(
          "--feed unix:PATH needs a path of 1 to 107 bytes");
    }
    return a;
  }
  if (text.substr(0, 4) == "udp:") {
    a.kind = FeedAddress::Kind::kUdp;
    if (!ParseListenAddress(text.substr(4), a.host, a.port)) {
      return absl::InvalidArgumentError(
          "--feed udp:HOST:PORT needs a numeric address and a port, e.g. "
          "udp:127.0.0.1:5140");
    }
    if (!IsLoopbackHost(a.host)) {
      return absl::InvalidArgumentError(
          "--feed udp: listens on loopback only (127.0.0.0/8 or ::1): whoever "
          "can send the feed datagrams can end in-flight leases early");
    }
    return a;
  }
  return absl::InvalidArgumentError(
      "--feed takes unix:PATH or udp:127.0.0.1:PORT");
}

FeedReceiver::FeedReceiver(FeedSink& sink, int stop_fd)
    : sink_(sink), stop_fd_(stop_fd), buffers_(kBatch * kMaxDatagramBytes) {}

absl::StatusOr<std::unique_ptr<FeedReceiver>> FeedReceiver::Start(
    std::span<const FeedAddress> addresses, FeedSink& sink) {
  const int stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop < 0) return ErrnoStatus("cannot create", "the feed's eventfd");
  std::unique_ptr<FeedReceiver> r(new FeedReceiver(sink, stop));
  for (const FeedAddress& a : addresses) {
    auto socket = std::make_unique<Socket>();
    if (a.kind == FeedAddress::Kind::kUnix) {
      absl::StatusOr<int> fd =
          BindUnixSocket(a.path, SOCK_DGRAM, 0660, "feed", socket->inode);
      if (!fd.ok()) return fd.status();
      socket->fd = *fd;
      socket->unlink_path = a.path;
      socket->may_nap = UnixQueueLength() >= kNapQueue;
      r->bound_.push_back("unix:" + a.path);
    } else {
      uint16_t port = 0;
      absl::StatusOr<int> fd = BindUdp(a, port);
      if (!fd.ok()) return fd.status();
      socket->fd = *fd;
      socket->may_nap = true;
      const bool v6 = a.host.find(':') != std::string::npos;
      r->bound_.push_back("udp:" + (v6 ? "[" + a.host + "]" : a.host) + ":" +
                          std::to_string(port));
    }
    TuneSocket(socket->fd, a.kind == FeedAddress::Kind::kUdp);
    socket->udp = a.kind == FeedAddress::Kind::kUdp;
    r->sockets_.push_back(std::move(socket));
  }
  r->thread_ = std::thread([p = r.get()] { p->Run(); });
  return r;
}

FeedReceiver::~FeedReceiver() {
  if (thread_.joinable()) {
    stopping_.store(true, std::memory_order_relaxed);
    const uint64_t one = 1;
    (void)write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (const auto& s : sockets_) {
    if (s->fd >= 0) close(s->fd);
    UnlinkIfOurs(s->unlink_path, s->inode);
  }
  close(stop_fd_);
}

uint64_t FeedReceiver::dropped() const {
  uint64_t n = 0;
  for (const auto& s : sockets_) n += s->drops.load(std::memory_order_relaxed);
  return n;
}

void FeedReceiver::Run() {
  if (sockets_.size() == 1) {
    RunOne(*sockets_[0]);
    return;
  }
  std::vector<pollfd> fds;
  fds.reserve(sockets_.size() + 1);
  fds.push_back({stop_fd_, POLLIN, 0});
  for (const auto& s : sockets_) fds.push_back({s->fd, POLLIN, 0});
  while (true) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      Log("error", "the feed stopped reading",
          {{"error", std::strerror(errno)}});
      return;
    }
    if (fds[0].revents != 0) return;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) Drain(*sockets_[i - 1], MSG_DONTWAIT);
    }
  }
}

// One socket (the usual case): a blocking receive that returns with what
// has arrived (MSG_WAITFORONE) saves the poll() per wake-up. The timeout
// bounds how long a stop waits.
void FeedReceiver::RunOne(Socket& socket) {
  const int flags = fcntl(socket.fd, F_GETFL);
  (void)fcntl(socket.fd, F_SETFL, flags & ~O_NONBLOCK);
  const timeval tick = {0, 50'000};
  (void)setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick));
  // After a short batch the thread naps so that the next wake-up finds
  // several datagrams: one wake-up per line would cost more than the lines
  // themselves. The socket's queue holds what arrives meanwhile: a UDP
  // socket's buffer, or a unix socket's net.unix.max_dgram_qlen datagrams
  // when that is raised from its default (10, which a nap would overflow).
  const timespec nap = {0, 1'000'000};
  while (!stopping_.load(std::memory_order_relaxed)) {
    const size_t n = Drain(socket, MSG_WAITFORONE);
    if (socket.may_nap && n > 0 && n < kBatch / 2) nanosleep(&nap, nullptr);
  }
}

size_t FeedReceiver::Drain(Socket& socket, int flags) {
  mmsghdr msgs[kBatch];
  iovec iovs[kBatch];
  alignas(cmsghdr) char controls[kBatch][CMSG_SPACE(sizeof(uint32_t))];
  // A flood keeps every batch full: come back to the caller now and then,
  // so that a stop (and, with several feeds, the other sockets) is heard.
  for (int round = 0; round < kMaxRounds; ++round) {
    for (size_t i = 0; i < kBatch; ++i) {
      iovs[i] = {buffers_.data() + i * kMaxDatagramBytes, kMaxDatagramBytes};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iovs[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      // No control buffer on a unix socket: a writer could pass file
      // descriptors (SCM_RIGHTS), which the kernel then discards instead
      // of installing them here.
      if (socket.udp) {
        msgs[i].msg_hdr.msg_control = controls[i];
        msgs[i].msg_hdr.msg_controllen = sizeof(controls[i]);
      }
    }
    const int n = recvmmsg(socket.fd, msgs, kBatch, flags, nullptr);
    // Drained (EAGAIN), or the blocking wait timed out.
    if (n <= 0) return 0;
    const MonotonicTime now = MonotonicTime::FromSteadyClock();
    for (int i = 0; i < n; ++i) {
      const msghdr& h = msgs[i].msg_hdr;
      for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr;
           c = CMSG_NXTHDR(const_cast<msghdr*>(&h), c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
          uint32_t drops = 0;
          std::memcpy(&drops, CMSG_DATA(c), sizeof(drops));
          socket.drops.store(drops, std::memory_order_relaxed);
        }
      }
      datagrams_.fetch_add(1, std::memory_order_relaxed);
      if ((h.msg_flags & MSG_TRUNC) != 0) {
        oversized_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      sink_.HandleDatagram(
          std::string_view(static_cast<const char*>(iovs[i].iov_base),
                           msgs[i].msg_len),
          now);
    }
    if (static_cast<size_t>(n) < kBatch) return static_cast<size_t>(n);
    if (stopping_.load(std::memory_order_relaxed)) break;
  }
  return kBatch;
}

}  // namespace mxlimit::daemon
