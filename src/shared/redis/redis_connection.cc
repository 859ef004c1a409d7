#include "src/shared/redis/redis_connection.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/shared/redis/mxl1_call.h"
#include "src/shared/redis/redis_socket.h"
#include "src/util/await_fd.h"

namespace mxlimit::internal {
namespace {

using Clock = std::chrono::steady_clock;

bool IsError(const redisReply* r) {
  return r == nullptr || r->type == REDIS_REPLY_ERROR;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Connect(
    const StoreEndpoint& endpoint, const TlsContext* tls,
    Clock::time_point deadline) {
  ConnectAttempt a = StartConnect(endpoint, 0);
  if (a.fd < 0) return absl::UnavailableError(a.error);
  std::unique_ptr<RedisConnection> c(new RedisConnection(a.fd));
  if (c->reader_ == nullptr) {
    return absl::ResourceExhaustedError("out of memory");
  }
  if (a.in_progress) {
    if (!AwaitFd(a.fd, POLLOUT, deadline)) {
      return absl::UnavailableError("connect timed out");
    }
    if (const int err = FinishConnect(a.fd); err != 0) {
      return absl::UnavailableError(
          absl::StrCat("connect: ", std::strerror(err)));
    }
  }
  if (endpoint.tls) {
    if (tls == nullptr) {
      return absl::InvalidArgumentError("rediss:// without a TLS context");
    }
    if (absl::Status s = c->tls_.Start(*tls, a.fd, endpoint.host); !s.ok()) {
      return s;
    }
    if (absl::Status s = c->Handshake(deadline); !s.ok()) return s;
  }
  std::vector<std::vector<std::string_view>> setup;
  const std::string db = std::to_string(endpoint.db);
  if (!endpoint.password.empty()) {
    if (endpoint.user.empty()) {
      setup.push_back({"AUTH", endpoint.password});
    } else {
      setup.push_back({"AUTH", endpoint.user, endpoint.password});
    }
  }
  if (endpoint.db != 0) setup.push_back({"SELECT", db});
  if (!setup.empty()) {
    absl::StatusOr<std::vector<RedisReplyPtr>> replies =
        c->Run(setup, deadline);
    if (!replies.ok()) return replies.status();
    for (const RedisReplyPtr& r : *replies) {
      if (IsError(r.get())) {
        return absl::UnavailableError(
            absl::StrCat("setup refused: ",
                         r != nullptr ? std::string(r->str, r->len) : ""));
      }
    }
  }
  return c;
}

RedisConnection::RedisConnection(int fd)
    : fd_(fd), reader_(redisReaderCreate()) {}

RedisConnection::~RedisConnection() {
  tls_.Reset();
  close(fd_);
  if (reader_ != nullptr) redisReaderFree(reader_);
}

absl::Status RedisConnection::Broken(std::string_view why) {
  broken_ = true;
  return absl::UnavailableError(std::string(why));
}

absl::Status RedisConnection::Handshake(Clock::time_point deadline) {
  for (;;) {
    switch (tls_.Handshake()) {
      case TlsSession::Io::kDone:
        return absl::OkStatus();
      case TlsSession::Io::kWantRead:
        if (!AwaitFd(fd_, POLLIN, deadline)) {
          return Broken("TLS handshake timed out");
        }
        break;
      case TlsSession::Io::kWantWrite:
        if (!AwaitFd(fd_, POLLOUT, deadline)) {
          return Broken("TLS handshake timed out");
        }
        break;
      case TlsSession::Io::kClosed:
        return Broken("TLS handshake: connection closed by Redis");
      case TlsSession::Io::kError:
        return Broken(tls_.error());
    }
  }
}

absl::Status RedisConnection::WriteAll(std::string_view bytes,
                                       Clock::time_point deadline) {
  while (!bytes.empty()) {
    size_t n = 0;
    short wait = POLLOUT;  // NOLINT(runtime/int): poll's type.
    if (tls_.active()) {
      switch (tls_.Write(bytes.data(), bytes.size(), &n)) {
        case TlsSession::Io::kDone:
          break;
        case TlsSession::Io::kWantRead:
          wait = POLLIN;
          break;
        case TlsSession::Io::kWantWrite:
          break;
        case TlsSession::Io::kClosed:
          return Broken("connection closed by Redis");
        case TlsSession::Io::kError:
          return Broken(tls_.error());
      }
    } else {
      const ssize_t w = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Broken(absl::StrCat("send: ", std::strerror(errno)));
      }
      n = w > 0 ? static_cast<size_t>(w) : 0;
    }
    bytes.remove_prefix(n);
    if (n == 0 && !AwaitFd(fd_, wait, deadline)) {
      return Broken("the store did not take the command in time");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> RedisConnection::ReadSome(char* buf, size_t size,
                                                 Clock::time_point deadline) {
  for (;;) {
    size_t n = 0;
    short wait = POLLIN;  // NOLINT(runtime/int): poll's type.
    if (tls_.active()) {
      switch (tls_.Read(buf, size, &n)) {
        case TlsSession::Io::kDone:
          return n;
        case TlsSession::Io::kWantRead:
          break;
        case TlsSession::Io::kWantWrite:
          wait = POLLOUT;
          break;
        case TlsSession::Io::kClosed:
          return Broken("connection closed by Redis");
        case TlsSession::Io::kError:
          return Broken(tls_.error());
      }
    } else {
      const ssize_t r = recv(fd_, buf, size, 0);
      if (r > 0) return static_cast<size_t>(r);
      if (r == 0) return Broken("connection closed by Redis");
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Broken(absl::StrCat("recv: ", std::strerror(errno)));
      }
    }
    if (!AwaitFd(fd_, wait, deadline)) {
      return Broken("the store did not answer in time");
    }
  }
}

absl::StatusOr<std::vector<RedisReplyPtr>> RedisConnection::Run(
    const std::vector<std::vector<std::string_view>>& commands,
    Clock::time_point deadline) {
  if (broken_) return absl::UnavailableError("the connection is broken");
  std::string out;
  for (const std::vector<std::string_view>& command : commands) {
    out += FormatRespCommand(command);
  }
  if (absl::Status s = WriteAll(out, deadline); !s.ok()) return s;
  std::vector<RedisReplyPtr> replies;
  char buf[16384];
  while (replies.size() < commands.size()) {
    void* reply = nullptr;
    if (redisReaderGetReply(reader_, &reply) != REDIS_OK) {
      return Broken("RESP protocol error");
    }
    if (reply != nullptr) {
      replies.emplace_back(static_cast<redisReply*>(reply));
      continue;
    }
    absl::StatusOr<size_t> n = ReadSome(buf, sizeof buf, deadline);
    if (!n.ok()) return n.status();
    if (redisReaderFeed(reader_, buf, *n) != REDIS_OK) {
      return Broken("RESP protocol error");
    }
  }
  return replies;
}

}  // namespace mxlimit::internal
