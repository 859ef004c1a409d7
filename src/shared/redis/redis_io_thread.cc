#include "src/shared/redis/redis_io_thread.h"

#include <errno.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "src/shared/redis/mxl1_script.h"
#include "src/shared/redis/redis_socket.h"
#include "src/shared/redis/resp_reader.h"

namespace mxlimit::internal {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A connection's request FIFO holds slot indices and, above these, the
// commands the connection sends for itself.
enum Control : uint32_t {
  kAuth = 0xFFFF'FF00,
  kSelect,
  kScriptLoad,  // On connect.
  kInfo,        // On connect; its reply makes the connection ready.
  kReload,      // SCRIPT LOAD again after NOSCRIPT.
  kRole,        // Sentinel, on connect: ready only as the primary.
};
constexpr uint32_t kFirstControl = kAuth;
constexpr size_t kMaxControlsInFlight = 8;

// Silence from Redis for this long with replies outstanding (or a connect
// taking this long) drops the connection.
constexpr Clock::duration kStallLimit = std::chrono::seconds(1);
constexpr Clock::duration kMinBackoff = milliseconds(10);
constexpr Clock::duration kMaxBackoff = std::chrono::seconds(1);

constexpr uint64_t kWakeTag = UINT64_MAX;

}  // namespace

std::string RedisStoreShared::last_error() const {
  MutexLock lock(mu_);
  return last_error_;
}

void RedisStoreShared::set_last_error(std::string error) {
  MutexLock lock(mu_);
  last_error_ = std::move(error);
}

struct RedisIoThread::Connection {
  // kTls: the TLS handshake of a rediss:// connection; kHandshake: the
  // Redis setup commands.
  enum class Phase : uint8_t { kDown, kConnecting, kTls, kHandshake, kReady };

  explicit Connection(size_t index, size_t fifo_capacity)
      : index(index), fifo(fifo_capacity) {}

  const size_t index;
  Phase phase = Phase::kDown;
  int fd = -1;
  bool watching_writable = false;
  RespReader reader;
  // Requests in order: [head, sent) are written and await their replies,
  // [sent, tail) are not written yet; `partial` bytes of fifo[sent] are.
  // Monotonic counters, taken modulo the capacity.
  std::vector<uint32_t> fifo;
  uint64_t head = 0, sent = 0, tail = 0;
  size_t partial = 0;
  // A SCRIPT LOAD after NOSCRIPT is queued and not answered yet.
  bool reload_queued = false;
  // When the oldest outstanding request was queued, or the last reply came.
  Clock::time_point waiting_since{};
  Clock::time_point connect_started{};
  // When to try again while down.
  Clock::time_point retry_at{};
  Clock::duration backoff = kMinBackoff;
  size_t attempts = 0;
  bool ever_ready = false;
  // rediss:// only. A write the session could not finish must be offered
  // again with the same first `tls_retry` bytes: requests up to
  // `tls_staged` may be on the wire already.
  TlsSession tls;
  std::vector<char> tls_out;
  size_t tls_retry = 0;
  uint64_t tls_staged = 0;
  // The session needs the socket writable to go on reading.
  bool tls_read_wants_write = false;

  uint32_t at(uint64_t i) const { return fifo[i % fifo.size()]; }
};

RedisIoThread::RedisIoThread(StoreEndpoint endpoint, int connections,
                             SlotQueue& slots, RedisStoreShared& shared,
                             std::shared_ptr<const TlsContext> tls)
    : endpoint_(std::move(endpoint)),
      tls_(std::move(tls)),
      slots_(slots),
      shared_(shared),
      random_state_(
          static_cast<uint64_t>(Clock::now().time_since_epoch().count()) | 1) {
  for (int i = 0; i < connections; ++i) {
    connections_.push_back(std::make_unique<Connection>(
        static_cast<size_t>(i), slots.capacity() + kMaxControlsInFlight));
    // One TLS record's worth: a batch is written a record at a time.
    if (tls_ != nullptr) connections_.back()->tls_out.resize(16384);
  }
  if (!endpoint_.password.empty()) {
    auth_command_ =
        endpoint_.user.empty()
            ? FormatRespCommand({"AUTH", endpoint_.password})
            : FormatRespCommand({"AUTH", endpoint_.user, endpoint_.password});
  }
  if (endpoint_.db != 0) {
    select_command_ =
        FormatRespCommand({"SELECT", std::to_string(endpoint_.db)});
  }
  script_load_command_ = FormatRespCommand({"SCRIPT", "LOAD", kMxl1Script});
  info_command_ = FormatRespCommand({"INFO", "server"});
  if (!endpoint_.sentinels.empty()) {
    role_command_ = FormatRespCommand({"INFO", "replication"});
    resolver_ =
        std::make_unique<SentinelResolver>(endpoint_, [this] { Wake(); });
  }
}

RedisIoThread::~RedisIoThread() {
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_release);
    Wake();
    thread_.join();
  }
  // After the I/O thread, which calls it, and before wake_fd_ closes, which
  // its callback writes to.
  resolver_.reset();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

absl::Status RedisIoThread::Start() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    return absl::InternalError(std::string("epoll_create1: ") +
                               std::strerror(errno));
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    return absl::InternalError(std::string("eventfd: ") + std::strerror(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    return absl::InternalError(std::string("epoll_ctl: ") +
                               std::strerror(errno));
  }
  thread_ = std::thread([this] { Run(); });
  if (resolver_ != nullptr) resolver_->Start();
  return absl::OkStatus();
}

void RedisIoThread::Wake() {
  const uint64_t one = 1;
  // Fails only when the counter would overflow: it is awake anyway.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

namespace {
constexpr std::chrono::microseconds kPollFor{200};
}  // namespace

bool RedisIoThread::AwaitingReplies() const {
  for (const auto& c : connections_) {
    if (c->fd >= 0 && c->head != c->tail) return true;
  }
  return false;
}

void RedisIoThread::HandleEvent(const epoll_event& event,
                                Clock::time_point now) {
  if (event.data.u64 == kWakeTag) {
    uint64_t count;
    [[maybe_unused]] ssize_t r = read(wake_fd_, &count, sizeof count);
    return;
  }
  Connection& c = *connections_[event.data.u64];
  if (c.fd < 0) return;  // Dropped by an earlier event of this turn.
  const uint32_t e = event.events;
  if (c.phase == Connection::Phase::kConnecting) {
    if (e & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
      if (const int err = FinishConnect(c.fd); err != 0) {
        Drop(c, std::string("connect: ") + std::strerror(err), now);
      } else if (tls_ != nullptr) {
        StartTls(c, now);
      } else {
        StartHandshake(c, now);
      }
    }
    return;
  }
  if (c.phase == Connection::Phase::kTls) {
    ContinueTls(c, now);
    return;
  }
  if ((e & (EPOLLIN | EPOLLERR | EPOLLHUP)) ||
      (c.tls_read_wants_write && (e & EPOLLOUT))) {
    OnReadable(c, now);
  }
  // A TLS write that wanted to read goes on once the socket is readable.
  if (c.fd >= 0 && ((e & EPOLLOUT) || (c.tls_retry != 0 && (e & EPOLLIN)))) {
    Flush(c, now);
  }
}

void RedisIoThread::Run() {
  {
    const Clock::time_point now = Clock::now();
    for (auto& c : connections_) Connect(*c, now);
  }
  epoll_event events[16];
  // While replies are due, poll instead of sleeping for a short while: a
  // thread that sleeps in epoll_wait takes tens of microseconds to wake on
  // a virtual machine, as much as the round trip itself.
  Clock::time_point poll_until = Clock::time_point::min();
  while (!stop_.load(std::memory_order_acquire)) {
    const Clock::time_point before = Clock::now();
    const bool poll = before < poll_until && AwaitingReplies();
    const int n =
        epoll_wait(epoll_fd_, events, 16, poll ? 0 : NextTimeoutMs(before));
    if (poll && n == 0) {
      sched_yield();
      continue;
    }
    Clock::time_point now = Clock::now();
    poll_until = now + kPollFor;
    for (int i = 0; i < n; ++i) HandleEvent(events[i], now);
    if (resolver_ != nullptr) FollowPrimary(now);
    TakeSubmissions(now);
    for (auto& c : connections_) {
      if (c->fd >= 0 && c->sent != c->tail) Flush(*c, now);
    }
    RunTimers(now);
  }
  // Shutting down: nothing may be left waiting.
  const Clock::time_point now = Clock::now();
  for (auto& c : connections_) {
    if (c->fd >= 0) Drop(*c, "store shut down", now);
  }
  uint32_t batch[64];
  while (size_t n = slots_.Take(batch, 64)) {
    for (size_t i = 0; i < n; ++i) {
      slots_.body(batch[i]).result.status = StoreStatus::kUnavailable;
      Finish(batch[i]);
    }
  }
}

void RedisIoThread::TakeSubmissions(Clock::time_point now) {
  constexpr size_t kBatch = 256;
  uint32_t batch[kBatch];
  for (;;) {
    const size_t n = slots_.Take(batch, kBatch);
    for (size_t i = 0; i < n; ++i) {
      // Round robin over the ready connections.
      Connection* target = nullptr;
      for (size_t k = 0; k < connections_.size() && target == nullptr; ++k) {
        Connection& c =
            *connections_[(next_connection_ + k) % connections_.size()];
        if (c.phase == Connection::Phase::kReady) target = &c;
      }
      if (target == nullptr) {
        slots_.body(batch[i]).result.status = StoreStatus::kUnavailable;
        Finish(batch[i]);
        continue;
      }
      next_connection_ = (target->index + 1) % connections_.size();
      SlotBody& body = slots_.body(batch[i]);
      body.resent = false;
      Push(*target, batch[i], now);
    }
    if (n < kBatch) return;
  }
}

void RedisIoThread::Push(Connection& c, uint32_t entry, Clock::time_point now) {
  if (entry < kFirstControl) {
    SlotBody& body = slots_.body(entry);
    body.awaiting_asking = body.asking;
  }
  if (c.head == c.tail) c.waiting_since = now;
  c.fifo[c.tail % c.fifo.size()] = entry;
  ++c.tail;
}

void RedisIoThread::FollowPrimary(Clock::time_point now) {
  const uint64_t version = resolver_->version();
  if (version == primary_version_) return;
  primary_version_ = version;
  for (auto& c : connections_) {
    if (c->fd >= 0) Drop(*c, "the Sentinels named another primary", now);
    c->retry_at = now;
    c->backoff = kMinBackoff;
  }
}

void RedisIoThread::Connect(Connection& c, Clock::time_point now) {
  ConnectAttempt a;
  if (resolver_ != nullptr) {
    const std::optional<StoreEndpoint::HostPort> primary = resolver_->Primary();
    if (!primary.has_value()) {
      Drop(c, "no primary yet: " + resolver_->last_error(), now);
      return;
    }
    StoreEndpoint e = endpoint_;
    e.host = primary->host;
    e.port = primary->port;
    a = StartConnect(e, c.attempts++);
  } else {
    a = StartConnect(endpoint_, c.attempts++);
  }
  if (a.fd < 0) {
    Drop(c, a.error, now);
    return;
  }
  c.fd = a.fd;
  c.phase = Connection::Phase::kConnecting;
  c.connect_started = now;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.u64 = c.index;
  c.watching_writable = true;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
    Drop(c, std::string("epoll_ctl: ") + std::strerror(errno), now);
    return;
  }
  if (a.in_progress) return;
  if (tls_ != nullptr) {
    StartTls(c, now);
  } else {
    StartHandshake(c, now);
  }
}

void RedisIoThread::StartTls(Connection& c, Clock::time_point now) {
  if (absl::Status s = c.tls.Start(*tls_, c.fd, endpoint_.host); !s.ok()) {
    Drop(c, std::string(s.message()), now);
    return;
  }
  c.phase = Connection::Phase::kTls;
  ContinueTls(c, now);
}

void RedisIoThread::ContinueTls(Connection& c, Clock::time_point now) {
  switch (c.tls.Handshake()) {
    case TlsSession::Io::kDone:
      StartHandshake(c, now);
      return;
    case TlsSession::Io::kWantRead:
      WatchWritable(c, false);
      return;
    case TlsSession::Io::kWantWrite:
      WatchWritable(c, true);
      return;
    case TlsSession::Io::kClosed:
      Drop(c, "TLS handshake: connection closed by Redis", now);
      return;
    case TlsSession::Io::kError:
      Drop(c, c.tls.error(), now);
      return;
  }
}

void RedisIoThread::StartHandshake(Connection& c, Clock::time_point now) {
  if (!c.reader.Reset()) {
    Drop(c, "out of memory", now);
    return;
  }
  c.phase = Connection::Phase::kHandshake;
  if (!auth_command_.empty()) Push(c, kAuth, now);
  if (!select_command_.empty()) Push(c, kSelect, now);
  Push(c, kScriptLoad, now);
  // The role before INFO server: a replica's run_id must not count as a
  // new Redis.
  if (resolver_ != nullptr) Push(c, kRole, now);
  Push(c, kInfo, now);
  Flush(c, now);
}

void RedisIoThread::Drop(Connection& c, std::string_view why,
                         Clock::time_point now) {
  c.tls.Reset();
  if (c.fd >= 0) close(c.fd);  // Also leaves the epoll set.
  c.fd = -1;
  c.watching_writable = false;
  c.phase = Connection::Phase::kDown;
  // Its ops fail: an op already (partly) written may have been applied.
  for (uint64_t i = c.head; i < c.tail; ++i) {
    const uint32_t entry = c.at(i);
    if (entry >= kFirstControl) continue;
    const bool written =
        i < c.sent || (i == c.sent && c.partial > 0) || i < c.tls_staged;
    slots_.body(entry).result.status =
        written ? StoreStatus::kError : StoreStatus::kUnavailable;
    Finish(entry);
  }
  c.head = c.sent = c.tail = 0;
  c.partial = 0;
  c.tls_retry = 0;
  c.tls_staged = 0;
  c.tls_read_wants_write = false;
  c.reload_queued = false;
  c.retry_at = now + Jitter(c.backoff);
  c.backoff = std::min<Clock::duration>(c.backoff * 2, kMaxBackoff);
  shared_.set_last_error(std::string(why));
  UpdateConnected();
  // The primary may have moved: ask the Sentinels now, not at the next poll.
  if (resolver_ != nullptr) resolver_->RefreshSoon();
}

bool RedisIoThread::Consume(Connection& c, const char* data, size_t size,
                            Clock::time_point now) {
  if (!c.reader.Feed(data, size)) {
    Drop(c, "RESP protocol error", now);
    return false;
  }
  for (;;) {
    const RespReader::Next next = c.reader.Read();
    if (next == RespReader::Next::kNeedMore) return true;
    if (next == RespReader::Next::kProtocolError) {
      Drop(c, "RESP protocol error", now);
      return false;
    }
    if (!OnReply(c, now)) return false;
  }
}

void RedisIoThread::ReadTls(Connection& c, Clock::time_point now) {
  char buf[16384];
  const bool was_waiting = c.tls_read_wants_write;
  c.tls_read_wants_write = false;
  // Until the session has nothing left: it may hold bytes that the socket
  // no longer signals.
  for (;;) {
    size_t n = 0;
    switch (c.tls.Read(buf, sizeof buf, &n)) {
      case TlsSession::Io::kDone:
        if (!Consume(c, buf, n, now)) return;
        if (c.tls.pending()) continue;
        break;  // The epoll is level-triggered: more bytes wake us.
      case TlsSession::Io::kWantRead:
        break;
      case TlsSession::Io::kWantWrite:
        c.tls_read_wants_write = true;
        break;
      case TlsSession::Io::kClosed:
        Drop(c, "connection closed by Redis", now);
        return;
      case TlsSession::Io::kError:
        Drop(c, c.tls.error(), now);
        return;
    }
    break;
  }
  if (was_waiting != c.tls_read_wants_write) {
    WatchWritable(c, c.tls_retry != 0 || c.sent != c.tail);
  }
}

void RedisIoThread::OnReadable(Connection& c, Clock::time_point now) {
  if (c.tls.active()) {
    ReadTls(c, now);
    return;
  }
  char buf[16384];
  for (;;) {
    const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n == 0) {
      Drop(c, "connection closed by Redis", now);
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR) continue;
      Drop(c, std::string("recv: ") + std::strerror(errno), now);
      return;
    }
    if (!Consume(c, buf, static_cast<size_t>(n), now)) return;
    if (static_cast<size_t>(n) < sizeof buf) return;  // Drained.
  }
}

bool RedisIoThread::OnReply(Connection& c, Clock::time_point now) {
  if (c.head < c.tail) {
    const uint32_t entry = c.at(c.head);
    // ASKING's +OK: the op's own reply is next. ASKING may be all that is
    // written of the entry yet (a partial write).
    if (entry < kFirstControl && slots_.body(entry).awaiting_asking &&
        (c.head < c.sent || c.partial >= kAskingBytes)) {
      slots_.body(entry).awaiting_asking = false;
      c.waiting_since = now;
      return true;
    }
  }
  if (c.head == c.sent) {
    Drop(c, "a reply to nothing", now);
    return false;
  }
  const uint32_t entry = c.at(c.head);
  c.waiting_since = now;  // Progress: the stall clock starts again.
  ++c.head;
  if (entry >= kFirstControl) return OnSetupReply(c, entry, now);
  return OnOpReply(c, entry, now);
}

void RedisIoThread::MakeReady(Connection& c) {
  c.phase = Connection::Phase::kReady;
  c.backoff = kMinBackoff;
  c.attempts = 0;
  if (c.ever_ready) {
    shared_.reconnects.fetch_add(1, std::memory_order_relaxed);
  }
  c.ever_ready = true;
  UpdateConnected();
}

bool RedisIoThread::OnSetupReply(Connection& c, uint32_t control,
                                 Clock::time_point now) {
  const RespReply& r = c.reader.reply();
  switch (control) {
    case kAuth:
    case kSelect:
      if (r.type != RespReply::Type::kStatus) {
        Drop(c,
             std::string(control == kAuth ? "AUTH" : "SELECT") +
                 " failed: " + std::string(r.text_view()),
             now);
        return false;
      }
      return true;
    case kScriptLoad:
    case kReload:
      if (control == kReload) c.reload_queued = false;
      if (r.type != RespReply::Type::kString ||
          r.text_view() != kMxl1ScriptSha1) {
        // Resends after a failed reload get NOSCRIPT again and fail; at
        // connect time the connection is useless without the script.
        if (control == kScriptLoad) {
          Drop(c, "SCRIPT LOAD failed: " + std::string(r.text_view()), now);
          return false;
        }
      }
      return true;
    case kInfo: {
      const std::string_view run_id = r.run_id_view();
      if (!run_id.empty()) {
        // A different Redis (restart, failover) has none of our buckets.
        if (!run_id_.empty() && run_id != run_id_) {
          shared_.generation.fetch_add(1, std::memory_order_acq_rel);
        }
        run_id_ = std::string(run_id);
      }
      MakeReady(c);
      return true;
    }
    case kRole:
      if (r.role != RespReply::Role::kMaster) {
        Drop(c, "the named primary is a replica: waiting for the Sentinels",
             now);
        return false;
      }
      return true;
  }
  return true;
}

bool RedisIoThread::OnOpReply(Connection& c, uint32_t slot,
                              Clock::time_point now) {
  const RespReply& r = c.reader.reply();
  SlotBody& body = slots_.body(slot);
  // Redis 7 answers READONLY; 5 and 6 wrap it in the script's error.
  if (r.type == RespReply::Type::kError &&
      r.text_view().find("READONLY") != std::string_view::npos) {
    // The primary became a replica under this connection (a failover it
    // took part in): nothing was written; find the new one.
    body.result.status = StoreStatus::kError;
    Finish(slot);
    Drop(c, "the primary became a replica (READONLY)", now);
    return false;
  }
  if (r.type == RespReply::Type::kError &&
      r.text_view().substr(0, 8) == "NOSCRIPT" && !body.resent) {
    // Redis forgot the script (SCRIPT FLUSH, restart with the connection
    // kept by a proxy): load it again, then send this op once more. Ops
    // already in flight behind it get NOSCRIPT too and follow it.
    body.resent = true;
    if (!c.reload_queued) {
      c.reload_queued = true;
      shared_.script_reloads.fetch_add(1, std::memory_order_relaxed);
      Push(c, kReload, now);
    }
    Push(c, slot, now);
    return true;
  }
  StoreResult& result = body.result;
  if (r.type == RespReply::Type::kError) {
    // Redis Cluster: the slot moved (MOVED) or is moving (ASK); the op was
    // not run, and the store that sent it follows the redirect.
    const std::string_view text = r.text_view();
    if (text.substr(0, 6) == "MOVED " || text.substr(0, 4) == "ASK ") {
      body.redirect_size =
          static_cast<uint8_t>(std::min(text.size(), sizeof body.redirect));
      std::copy_n(text.data(), body.redirect_size, body.redirect);
    }
  }
  if (r.type == RespReply::Type::kArray && !r.malformed &&
      r.elements == size_t{1} + body.op.count) {
    result.status = StoreStatus::kOk;
    result.allowed = r.integers[0] != 0;
    std::copy_n(r.integers.begin() + 1, body.op.count, result.lead.begin());
  } else {
    result.status = StoreStatus::kError;
  }
  Finish(slot);
  return true;
}

void RedisIoThread::Finish(uint32_t slot) {
  SlotBody& body = slots_.body(slot);
  const StoreStatus status = body.result.status;
  switch (slots_.Complete(slot)) {
    case SlotQueue::Completion::kDelivered:
      return;  // The caller counts its own outcome.
    case SlotQueue::Completion::kPostedDone:
      (status == StoreStatus::kOk            ? shared_.ok
       : status == StoreStatus::kUnavailable ? shared_.unavailable
                                             : shared_.error)
          .fetch_add(1, std::memory_order_relaxed);
      return;
    case SlotQueue::Completion::kAbandoned:
      if (status == StoreStatus::kOk) {
        shared_.late_replies.fetch_add(1, std::memory_order_relaxed);
        if (LateReplyHandler* h =
                shared_.late_handler.load(std::memory_order_acquire)) {
          h->OnLateReply(body.op, body.result);
        }
      }
      slots_.Release(slot);
      return;
  }
}

size_t RedisIoThread::GatherUnsent(const Connection& c, iovec* iov,
                                   size_t max) const {
  size_t count = 0;
  for (uint64_t i = c.sent; i < c.tail && count < max; ++i, ++count) {
    const uint32_t entry = c.at(i);
    const char* data;
    size_t size;
    if (entry < kFirstControl) {
      const SlotBody& body = slots_.body(entry);
      data = body.command;
      size = body.command_size;
    } else {
      const std::string& command = entry == kAuth     ? auth_command_
                                   : entry == kSelect ? select_command_
                                   : entry == kInfo   ? info_command_
                                   : entry == kRole   ? role_command_
                                                      : script_load_command_;
      data = command.data();
      size = command.size();
    }
    if (i == c.sent) {
      data += c.partial;
      size -= c.partial;
    }
    iov[count] = {const_cast<char*>(data), size};
  }
  return count;
}

void RedisIoThread::Advance(Connection& c, const iovec* iov, size_t count,
                            size_t n) {
  // Whole requests, then a part.
  for (size_t k = 0; k < count && n > 0; ++k) {
    const size_t left = iov[k].iov_len;
    if (n >= left) {
      n -= left;
      ++c.sent;
      c.partial = 0;
    } else {
      c.partial += n;
      n = 0;
    }
  }
}

void RedisIoThread::FlushTls(Connection& c, Clock::time_point now) {
  while (c.sent != c.tail) {
    constexpr size_t kMaxIov = 64;
    iovec iov[kMaxIov];
    const size_t count = GatherUnsent(c, iov, kMaxIov);
    // Copied into one buffer, so that a batch of small requests goes out
    // as one record; a retry copies the same bytes again.
    const size_t limit = c.tls_retry != 0 ? c.tls_retry : c.tls_out.size();
    size_t staged = 0;
    size_t touched = 0;
    for (; touched < count && staged < limit; ++touched) {
      const size_t take = std::min(iov[touched].iov_len, limit - staged);
      std::memcpy(c.tls_out.data() + staged, iov[touched].iov_base, take);
      staged += take;
    }
    size_t n = 0;
    const TlsSession::Io io = c.tls.Write(c.tls_out.data(), staged, &n);
    switch (io) {
      case TlsSession::Io::kDone:
        c.tls_retry = 0;
        c.tls_staged = 0;
        Advance(c, iov, count, n);
        continue;
      case TlsSession::Io::kWantWrite:
      case TlsSession::Io::kWantRead: {
        // kWantRead: the next readable event flushes again (HandleEvent),
        // so writability would only spin the loop.
        const bool wants_write = io == TlsSession::Io::kWantWrite;
        c.tls_retry = staged;
        c.tls_staged = c.sent + touched;
        WatchWritable(c, wants_write);
        return;
      }
      case TlsSession::Io::kClosed:
        Drop(c, "connection closed by Redis", now);
        return;
      case TlsSession::Io::kError:
        Drop(c, c.tls.error(), now);
        return;
    }
  }
  WatchWritable(c, false);
}

void RedisIoThread::Flush(Connection& c, Clock::time_point now) {
  if (c.tls.active()) {
    FlushTls(c, now);
    return;
  }
  while (c.sent != c.tail) {
    constexpr size_t kMaxIov = 64;
    iovec iov[kMaxIov];
    const size_t count = GatherUnsent(c, iov, kMaxIov);
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    // MSG_NOSIGNAL: a peer that went away is an error here, not SIGPIPE.
    ssize_t n = sendmsg(c.fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        WatchWritable(c, true);
        return;
      }
      Drop(c, std::string("send: ") + std::strerror(errno), now);
      return;
    }
    Advance(c, iov, count, static_cast<size_t>(n));
  }
  WatchWritable(c, false);
}

void RedisIoThread::WatchWritable(Connection& c, bool writable) {
  writable = writable || c.tls_read_wants_write;
  if (c.watching_writable == writable || c.fd < 0) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (writable ? EPOLLOUT : 0u);
  ev.data.u64 = c.index;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.watching_writable = writable;
}

void RedisIoThread::RunTimers(Clock::time_point now) {
  for (auto& cp : connections_) {
    Connection& c = *cp;
    switch (c.phase) {
      case Connection::Phase::kDown:
        if (now >= c.retry_at) Connect(c, now);
        break;
      case Connection::Phase::kConnecting:
      case Connection::Phase::kTls:
        if (now - c.connect_started > kStallLimit) {
          Drop(c,
               c.phase == Connection::Phase::kTls ? "TLS handshake timed out"
                                                  : "connect timed out",
               now);
        }
        break;
      case Connection::Phase::kHandshake:
      case Connection::Phase::kReady:
        if (c.head != c.tail && now - c.waiting_since > kStallLimit) {
          Drop(c, "no reply from Redis for 1 s", now);
        }
        break;
    }
  }
}

int RedisIoThread::NextTimeoutMs(Clock::time_point now) const {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& cp : connections_) {
    const Connection& c = *cp;
    switch (c.phase) {
      case Connection::Phase::kDown:
        next = std::min(next, c.retry_at);
        break;
      case Connection::Phase::kConnecting:
      case Connection::Phase::kTls:
        next = std::min(next, c.connect_started + kStallLimit);
        break;
      default:
        if (c.head != c.tail) {
          next = std::min(next, c.waiting_since + kStallLimit);
        }
        break;
    }
  }
  if (next == Clock::time_point::max()) return -1;
  if (next <= now) return 0;
  // Rounded up: waking a little late is fine, waking early spins.
  const auto ms = std::chrono::ceil<milliseconds>(next - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 1000)) + 1;
}

void RedisIoThread::UpdateConnected() {
  bool any = false;
  for (const auto& c : connections_) {
    any = any || c->phase == Connection::Phase::kReady;
  }
  shared_.connected.store(any, std::memory_order_release);
}

std::chrono::nanoseconds RedisIoThread::Jitter(std::chrono::nanoseconds d) {
  // xorshift64: uniform in [d/2, d], so processes that lost Redis together
  // do not all come back in the same millisecond.
  random_state_ ^= random_state_ << 13;
  random_state_ ^= random_state_ >> 7;
  random_state_ ^= random_state_ << 17;
  const int64_t half = d.count() / 2;
  return std::chrono::nanoseconds(
      half +
      static_cast<int64_t>(random_state_ % static_cast<uint64_t>(half + 1)));
}

}  // namespace mxlimit::internal
