#include "src/http/worker.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace mxlimit::http {
namespace {

constexpr uint64_t kListenTag = 0xFFFFFFFFFFFF0001;
constexpr uint64_t kWakeTag = 0xFFFFFFFFFFFF0002;
// Output held for a connection before it stops reading further requests.
constexpr size_t kMaxPendingOutput = size_t{64} * 1024;
// A response body larger than this has its buffer released afterwards.
constexpr size_t kKeptOutputCapacity = size_t{64} * 1024;

void ErrorResponse(int status, std::string_view reason, HttpResponse& r) {
  r.Reset();
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.owned.assign(reason);
  r.owned.push_back('\n');
  r.body = r.owned;
}

IpAddress PeerAddress(const sockaddr_storage& ss) {
  IpAddress ip;
  if (ss.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
    ip.bytes[10] = 0xFF;
    ip.bytes[11] = 0xFF;
    std::memcpy(ip.bytes.data() + 12, &in.sin_addr, 4);
  } else if (ss.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
    std::memcpy(ip.bytes.data(), &in6.sin6_addr, 16);
  }
  return ip;
}

}  // namespace

size_t InputCapacity(const ServerOptions& options) {
  return kMaxTargetBytes + options.max_header_bytes + 1024;
}

HttpServer::Worker::~Worker() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

absl::Status HttpServer::Worker::Init() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    return absl::InternalError(absl::StrCat("epoll: ", strerror(errno)));
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;
  ev.data.u64 = kListenTag;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
    return absl::InternalError(absl::StrCat("epoll_ctl: ", strerror(errno)));
  }
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  held_.reserve(options_.max_held_per_worker);
  return absl::OkStatus();
}

void HttpServer::Worker::RequestDrain() {
  draining_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void HttpServer::Worker::Run() {
  std::array<epoll_event, 64> events;
  while (true) {
    const Clock::time_point now = Clock::now();
    if (draining_.load(std::memory_order_acquire) && accepting_) {
      StopAccepting(now);
    }
    if (!accepting_) {
      if (reading_.head == kNone) return;
      if (now >= drain_deadline_) {
        while (reading_.head != kNone) Close(reading_.head);
        return;
      }
    }
    const int n =
        epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                   NextTimeoutMs(now));
    for (int e = 0; e < n; ++e) Dispatch(events[e]);
    const Clock::time_point after = Clock::now();
    ReleaseHeld(after);
    ExpireDeadlines(after);
#ifndef NDEBUG
    VerifySlots();
#endif
  }
}

void HttpServer::Worker::StopAccepting(Clock::time_point now) {
  accepting_ = false;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  // Held answers go now: a drain does not wait out their holds.
  ReleaseHeld(now, /*all=*/true);
  drain_deadline_ = now + options_.drain_timeout;
  // Nothing is under way on an idle connection, nor on one that has not
  // sent a byte yet: close them now.
  while (idle_.head != kNone) Close(idle_.head);
  for (uint32_t i = reading_.head; i != kNone;) {
    const uint32_t next = slots_[i].next;
    if (Quiet(i)) Close(i);
    i = next;
  }
}

void HttpServer::Worker::Dispatch(const epoll_event& event) {
  const uint64_t tag = event.data.u64;
  if (tag == kListenTag) {
    AcceptAll();
    return;
  }
  if (tag == kWakeTag) {
    uint64_t v;
    [[maybe_unused]] ssize_t r = read(wake_fd_, &v, sizeof(v));
    return;
  }
  const auto i = static_cast<uint32_t>(tag);
  if (slots_[i].fd < 0) return;  // closed earlier in this batch
  if (event.events & (EPOLLERR | EPOLLHUP)) {
    // Both directions are gone: nothing more can be read or answered.
    Close(i);
    return;
  }
  if (event.events & EPOLLOUT) OnWritable(i);
  if (slots_[i].fd >= 0 && (event.events & EPOLLIN)) OnReadable(i);
}

int HttpServer::Worker::NextTimeoutMs(Clock::time_point now) const {
  Clock::time_point next = now + std::chrono::seconds(1);
  if (reading_.head != kNone) {
    next =
        std::min(next, slots_[reading_.head].since + options_.request_timeout);
  }
  if (idle_.head != kNone) {
    next = std::min(next, slots_[idle_.head].since + options_.idle_timeout);
  }
  if (!accepting_) next = std::min(next, drain_deadline_);
  if (!held_.empty()) next = std::min(next, held_.front().until);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 1000));
}

void HttpServer::Worker::ExpireDeadlines(Clock::time_point now) {
  while (reading_.head != kNone &&
         slots_[reading_.head].since + options_.request_timeout <= now) {
    const uint32_t i = reading_.head;
    if (slots_[i].held) {
      // Its answer is due, not late: the hold owns the clock. Back of the
      // list (a hold is far shorter than the request timeout's multiple).
      MoveTo(i, /*reading=*/true, now);
      if (reading_.head == i) break;  // the only slot: nothing else to do
      continue;
    }
    timed_out_.fetch_add(1, std::memory_order_relaxed);
    if (slots_[i].out.size() == slots_[i].out_sent && slots_[i].in_len > 0) {
      Fail(i, 408, "request head not received in time");
      Flush(i);
    }
    // A peer that sent nothing, stopped reading, or could not take the 408
    // at once is given up on.
    if (slots_[i].fd >= 0) Close(i);
  }
  while (idle_.head != kNone &&
         slots_[idle_.head].since + options_.idle_timeout <= now) {
    Close(idle_.head);
  }
}

void HttpServer::Worker::AcceptAll() {
  while (accepting_) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a connection that went away
    std::unique_ptr<char[]> in = pool_.Acquire();
    if (in == nullptr) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      static constexpr std::string_view kBusy =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 25\r\n"
          "Connection: close\r\n\r\ntoo many open connections";
      [[maybe_unused]] ssize_t n =
          send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    Open(fd, ss, std::move(in));
  }
}

void HttpServer::Worker::Open(int fd, const sockaddr_storage& peer,
                              std::unique_ptr<char[]> in) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (free_.empty()) {
    // Slots grow to the worker's peak of open connections, which the pool
    // bounds; links are indices, so moving slots breaks nothing.
    slots_.emplace_back();
    free_.push_back(static_cast<uint32_t>(slots_.size() - 1));
  }
  const uint32_t i = free_.back();
  free_.pop_back();
  Slot& s = slots_[i];
  assert(s.fd < 0);
  s.fd = fd;
  s.peer = PeerAddress(peer);
  s.in = std::move(in);
  s.in_len = s.searched = 0;
  s.discard = 0;
  s.out.clear();
  if (s.out.capacity() < 4096) s.out.reserve(4096);
  s.out_sent = 0;
  s.close_after_write = s.stopped_reading = false;
  s.held = false;
  ++s.generation;
  s.interest = EPOLLIN;
  // A new connection must send its head within the request timeout, like
  // any request under way: a peer that never sends a byte would otherwise
  // hold its slot for the (much longer) idle timeout.
  Append(i, /*reading=*/true, Clock::now());
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = i;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  // Open before accepted, paired with AddCounters' reads: a snapshot that
  // counts this connection as taken also counts it as open, so "every
  // connection taken, none open" is never seen while one still holds a slot.
  open_.fetch_add(1, std::memory_order_relaxed);
  accepted_.fetch_add(1, std::memory_order_release);
}

void HttpServer::Worker::OnReadable(uint32_t i) {
  Slot& s = slots_[i];
  if (s.stopped_reading) return;
  bool peer_closed = false;
  while (s.in_len < in_capacity_) {
    const ssize_t n =
        recv(s.fd, s.in.get() + s.in_len, in_capacity_ - s.in_len, 0);
    if (n > 0) {
      if (!s.reading) MoveTo(i, /*reading=*/true, Clock::now());
      const size_t asked = in_capacity_ - s.in_len;
      s.in_len += static_cast<size_t>(n);
      // A short read drained the socket: skip the recv that would only say
      // EAGAIN (epoll reports anything that arrives later).
      if (static_cast<size_t>(n) < asked) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // 0: the peer closed; EAGAIN: all read; anything else: a dead socket.
    peer_closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  Process(i);
  if (s.fd >= 0 && peer_closed) {
    // Whatever is answered has been queued; a half-received head never
    // completes.
    s.stopped_reading = true;
    s.close_after_write = true;
    Flush(i);
  }
}

void HttpServer::Worker::HoldAnswer(uint32_t i, bool draining) {
  // Earlier answers pipelined on the connection and not yet sent wait with
  // it; proxies do not pipeline their checks.
  const Clock::time_point until =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(response_.hold);
  if (draining || !Hold(i, until)) {
    // Sent at once: the hold ends here.
    handler_.OnHeldAnswerDone();
  }
}

bool HttpServer::Worker::Hold(uint32_t i, Clock::time_point until) {
  if (held_.size() == held_.capacity()) {
    // Drop the entries of closed slots before refusing.
    std::erase_if(held_, [&](const HeldAnswer& h) {
      const Slot& s = slots_[h.slot];
      return s.fd < 0 || !s.held || s.generation != h.generation;
    });
    std::make_heap(held_.begin(), held_.end(), std::greater<>());
    if (held_.size() == held_.capacity()) return false;
  }
  Slot& s = slots_[i];
  s.held = true;
  held_.push_back(HeldAnswer{until, i, s.generation});
  std::push_heap(held_.begin(), held_.end(), std::greater<>());
  // Nothing is read while held: a client pipelining past the buffer would
  // otherwise keep a level-triggered EPOLLIN firing. Errors and hangups are
  // still reported; ReleaseHeld's Flush restores the interest.
  SetInterest(i, 0);
  held_count_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void HttpServer::Worker::EndHold(uint32_t i) {
  slots_[i].held = false;
  held_count_.fetch_sub(1, std::memory_order_relaxed);
  handler_.OnHeldAnswerDone();
}

void HttpServer::Worker::ReleaseHeld(Clock::time_point now, bool all) {
  while (!held_.empty() && (all || held_.front().until <= now)) {
    std::pop_heap(held_.begin(), held_.end(), std::greater<>());
    const HeldAnswer h = held_.back();
    held_.pop_back();
    Slot& s = slots_[h.slot];
    if (s.fd < 0 || !s.held || s.generation != h.generation) continue;
    EndHold(h.slot);
    Flush(h.slot);
    // Requests pipelined behind the held one.
    if (s.fd >= 0 && s.out.size() == s.out_sent && !s.stopped_reading &&
        s.in_len > 0) {
      Process(h.slot);
    }
  }
}

void HttpServer::Worker::OnWritable(uint32_t i) {
  Flush(i);
  Slot& s = slots_[i];
  if (s.fd >= 0 && s.out.size() == s.out_sent && !s.stopped_reading &&
      s.in_len > 0) {
    Process(i);  // requests that waited for the output to drain
  }
}

void HttpServer::Worker::Process(uint32_t i) {
  Slot& s = slots_[i];
  const bool draining = !accepting_;
  while (!s.stopped_reading && !s.held &&
         s.out.size() - s.out_sent < kMaxPendingOutput) {
    if (s.discard > 0) {
      const size_t skip = static_cast<size_t>(
          std::min<int64_t>(s.discard, static_cast<int64_t>(s.in_len)));
      std::memmove(s.in.get(), s.in.get() + skip, s.in_len - skip);
      s.in_len -= skip;
      s.discard -= static_cast<int64_t>(skip);
      if (s.discard > 0) break;
    }
    // Blank lines between requests are ignored (RFC 9112 §2.2).
    size_t blank = 0;
    while (blank < s.in_len && (s.in[blank] == '\r' || s.in[blank] == '\n')) {
      ++blank;
    }
    if (blank > 0) {
      std::memmove(s.in.get(), s.in.get() + blank, s.in_len - blank);
      s.in_len -= blank;
      s.searched = 0;
    }
    if (s.in_len == 0) break;
    const std::string_view buffer(s.in.get(), s.in_len);
    // Only the new bytes are searched, so a head trickled in byte by byte
    // costs linear time, not quadratic.
    const size_t end = FindHeadEnd(buffer, s.searched);
    s.searched = s.in_len;
    const HeadParse parsed =
        end == 0 ? HeadParse{} : ParseRequestHead(buffer.substr(0, end), head_);
    if (parsed.state == HeadParse::kIncomplete) {
      // A request line longer than any accepted one is refused as soon as
      // it is seen, not when the buffer is full.
      constexpr size_t kMaxRequestLine = kMaxTargetBytes + 64;
      const bool line_open =
          std::memchr(s.in.get(), '\n', std::min(s.in_len, kMaxRequestLine)) ==
          nullptr;
      if (line_open && s.in_len > kMaxRequestLine) {
        Fail(i, 414, "request target over 64 KiB");
      } else if (s.in_len == in_capacity_) {
        Fail(i, 431, "request header fields too large");
      }
      break;
    }
    if (parsed.state == HeadParse::kError) {
      Fail(i, parsed.status, parsed.reason);
      break;
    }
    if (parsed.head_bytes - head_.target.size() > options_.max_header_bytes) {
      Fail(i, 431, "request header fields too large");
      break;
    }
    if (head_.content_length > kMaxBodyBytes) {
      Fail(i, 413, "request body over 64 KiB");
      break;
    }
    response_.Reset();
    handler_.Handle(head_, s.peer, response_);
    const bool close = !head_.keep_alive || draining;
    SerializeResponse(response_, close, s.out);
    if (response_.hold.count() > 0) HoldAnswer(i, draining);
    if (response_.owned.capacity() > kKeptOutputCapacity) {
      std::string().swap(response_.owned);
    }
    const size_t rest = s.in_len - parsed.head_bytes;
    std::memmove(s.in.get(), s.in.get() + parsed.head_bytes, rest);
    s.in_len = rest;
    s.searched = 0;
    s.discard = std::max<int64_t>(head_.content_length, 0);
    if (close) {
      s.stopped_reading = true;
      s.close_after_write = true;
    } else if (s.in_len > 0 || s.discard > 0) {
      // The next request's clock starts when this one is answered.
      MoveTo(i, /*reading=*/true, Clock::now());
    }
  }
  Flush(i);
}

void HttpServer::Worker::Fail(uint32_t i, int status, std::string_view reason) {
  Slot& s = slots_[i];
  if (status != 408) malformed_.fetch_add(1, std::memory_order_relaxed);
  ErrorResponse(status, reason, response_);
  SerializeResponse(response_, /*close=*/true, s.out);
  s.stopped_reading = true;
  s.close_after_write = true;
}

void HttpServer::Worker::Flush(uint32_t i) {
  Slot& s = slots_[i];
  if (s.held) return;  // ReleaseHeld sends it
  while (s.out_sent < s.out.size()) {
    const ssize_t n = send(s.fd, s.out.data() + s.out_sent,
                           s.out.size() - s.out_sent, MSG_NOSIGNAL);
    if (n > 0) {
      s.out_sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Wait for room; a peer that never reads is dropped by the deadline.
      if (!s.reading) MoveTo(i, /*reading=*/true, Clock::now());
      SetInterest(i, EPOLLOUT);
      return;
    }
    Close(i);
    return;
  }
  s.out.clear();
  s.out_sent = 0;
  if (s.out.capacity() > kKeptOutputCapacity) {
    std::string().swap(s.out);
    s.out.reserve(4096);
  }
  if (s.close_after_write) {
    Close(i);
    return;
  }
  SetInterest(i, EPOLLIN);
  const bool mid_request = s.in_len > 0 || s.discard > 0;
  if (s.reading != mid_request) MoveTo(i, mid_request, Clock::now());
}

void HttpServer::Worker::SetInterest(uint32_t i, uint32_t events) {
  if (slots_[i].interest == events) return;  // one syscall saved per request
  slots_[i].interest = events;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = i;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, slots_[i].fd, &ev);
}

void HttpServer::Worker::Close(uint32_t i) {
  Slot& s = slots_[i];
  assert(s.fd >= 0 && "slot closed twice");
  if (s.fd < 0) return;
  if (s.held) EndHold(i);
  Unlink(i);
  close(s.fd);  // also removes it from the epoll set
  s.fd = -1;
  s.in_len = 0;
  s.discard = 0;
  s.out.clear();
  s.out_sent = 0;
  pool_.Release(std::move(s.in));
  free_.push_back(i);
  open_.fetch_sub(1, std::memory_order_relaxed);
}

void HttpServer::Worker::VerifySlots() {
  auto fail = [](const char* what) {
    std::fprintf(stderr, "http_server: slot bookkeeping broken: %s\n", what);
    std::abort();
  };
  std::vector<char>& seen = verify_seen_;
  seen.assign(slots_.size(), 0);
  for (uint32_t i : free_) {
    if (i >= slots_.size() || seen[i] != 0) fail("free list index repeated");
    if (slots_[i].fd >= 0) fail("an open slot is on the free list");
    seen[i] = 1;
  }
  size_t open = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].fd >= 0) ++open;
    if (slots_[i].fd < 0 && seen[i] == 0) fail("a closed slot is lost");
  }
  size_t listed = 0;
  for (const List* l : {&reading_, &idle_}) {
    for (uint32_t i = l->head; i != kNone; i = slots_[i].next) {
      if (slots_[i].fd < 0) fail("a closed slot is on a deadline list");
      if (slots_[i].reading != (l == &reading_)) fail("list flag is wrong");
      if (++listed > slots_.size()) fail("a deadline list has a cycle");
    }
  }
  if (listed != open) fail("an open slot is on no deadline list");
  if (open != open_.load(std::memory_order_relaxed)) {
    fail("the open count differs from the open slots");
  }
}

}  // namespace mxlimit::http
