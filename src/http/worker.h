// -----------------------------------------------------------------------------
// File: http/worker.h
// -----------------------------------------------------------------------------
//
// HttpServer's insides (server.h says what it bounds): the connection pool
// the workers share, and one worker, an epoll loop over its own connection
// slots. Internal to src/http/: only server.cc and worker.cc include it.

#ifndef MXLIMIT_HTTP_WORKER_H_
#define MXLIMIT_HTTP_WORKER_H_

#include <sys/epoll.h>
#include <sys/socket.h>

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "mxlimit/ip.h"
#include "src/http/request_head.h"
#include "src/http/response.h"
#include "src/http/server.h"

namespace mxlimit::http {

// A slot's input buffer: the longest target, the header fields and slack
// for the request line around them.
size_t InputCapacity(const ServerOptions& options);

// The process-wide connection bound and the input buffers, shared by the
// workers. The kernel hands a new connection to whichever worker epoll wakes
// (often the same one), so a bound split per worker would refuse connections
// at a fraction of `max_connections`; and buffers move between workers so
// that at most `max_connections` of them ever exist.
class HttpServer::ConnectionPool {
 public:
  ConnectionPool(size_t max_connections, size_t buffer_bytes)
      : max_(max_connections), buffer_bytes_(buffer_bytes) {}

  // An input buffer for one more open connection, or null when
  // `max_connections` are open. Allocates only past the previous peak.
  std::unique_ptr<char[]> Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (open_ == max_) return nullptr;
    ++open_;
    if (free_.empty()) {
      // Not zeroed: pages are touched only as far as requests fill them.
      return std::unique_ptr<char[]>(new char[buffer_bytes_]);
    }
    std::unique_ptr<char[]> buffer = std::move(free_.back());
    free_.pop_back();
    return buffer;
  }

  void Release(std::unique_ptr<char[]> buffer) {
    std::lock_guard<std::mutex> lock(mu_);
    assert(open_ > 0);
    --open_;
    free_.push_back(std::move(buffer));
  }

 private:
  const size_t max_;
  const size_t buffer_bytes_;
  std::mutex mu_;
  size_t open_ = 0;
  std::vector<std::unique_ptr<char[]>> free_;
};

// One worker: an epoll loop over its own slots.
class HttpServer::Worker {
 public:
  Worker(const ServerOptions& options, HttpHandler& handler, int listen_fd,
         ConnectionPool& pool)
      : options_(options),
        handler_(handler),
        listen_fd_(listen_fd),
        in_capacity_(InputCapacity(options)),
        pool_(pool) {}
  ~Worker();

  absl::Status Init();

  void Run();

  // Asks Run to drain and return; from any thread.
  void RequestDrain();

  void AddCounters(ServerCounters& c) const {
    // Taken first, open after: see the write order in Open.
    c.accepted += accepted_.load(std::memory_order_acquire);
    c.refused_over_limit += refused_.load(std::memory_order_relaxed);
    c.open += open_.load(std::memory_order_relaxed);
    c.timed_out += timed_out_.load(std::memory_order_relaxed);
    c.malformed += malformed_.load(std::memory_order_relaxed);
    c.held += held_count_.load(std::memory_order_relaxed);
  }

 private:
  using Clock = std::chrono::steady_clock;
  // The end of a deadline list, and a slot on none.
  static constexpr uint32_t kNone = 0xFFFFFFFF;

  // A connection slot. A slot is open exactly while it holds a socket
  // (`fd >= 0`) and its pool buffer; only `Open` and `Close` change that, and
  // `Close` of a closed slot is a no-op, so a slot index can never be on the
  // free list twice. The deadline lists are intrusive, linked by slot index:
  // `reading_` holds connections with a request (or a response) under way,
  // or that have not sent their first byte yet; `idle_` those waiting between
  // requests. Each list has one timeout, so appending keeps it ordered by
  // deadline.
  struct Slot {
    int fd = -1;
    IpAddress peer;
    std::unique_ptr<char[]> in;
    size_t in_len = 0;
    size_t searched = 0;  // bytes FindHeadEnd already looked at
    int64_t discard = 0;  // body bytes still to skip
    std::string out;
    size_t out_sent = 0;
    bool close_after_write = false;
    bool stopped_reading = false;
    bool reading = false;  // which list it is on
    // An answer in `out` waits for its hold to end (HttpResponse::hold);
    // nothing is sent or processed on the connection until then.
    bool held = false;
    // Bumped on every Open, so a hold queued for a slot's earlier
    // connection is recognized as stale.
    uint32_t generation = 0;
    uint32_t interest = EPOLLIN;  // the epoll events registered
    Clock::time_point since;
    uint32_t prev = kNone;
    uint32_t next = kNone;
  };
  struct List {
    uint32_t head = kNone;
    uint32_t tail = kNone;
  };

  void Unlink(uint32_t i) {
    Slot& s = slots_[i];
    List& l = s.reading ? reading_ : idle_;
    (s.prev == kNone ? l.head : slots_[s.prev].next) = s.next;
    (s.next == kNone ? l.tail : slots_[s.next].prev) = s.prev;
    s.prev = s.next = kNone;
  }
  void Append(uint32_t i, bool reading, Clock::time_point now) {
    Slot& s = slots_[i];
    s.reading = reading;
    s.since = now;
    List& l = reading ? reading_ : idle_;
    s.prev = l.tail;
    s.next = kNone;
    (l.tail == kNone ? l.head : slots_[l.tail].next) = i;
    l.tail = i;
  }
  void MoveTo(uint32_t i, bool reading, Clock::time_point now) {
    Unlink(i);
    Append(i, reading, now);
  }

  void StopAccepting(Clock::time_point now);
  void Dispatch(const epoll_event& event);
  void AcceptAll();
  void OnReadable(uint32_t i);
  void OnWritable(uint32_t i);
  // Parses and answers every complete request in the slot's buffer.
  void Process(uint32_t i);
  // Queues an error answer and marks the connection to close once it is
  // sent; the caller flushes.
  void Fail(uint32_t i, int status, std::string_view reason);
  // Sends pending output; closes the slot when done and asked to.
  void Flush(uint32_t i);
  void SetInterest(uint32_t i, uint32_t events);
  // Takes a free slot (made on first need) for `fd`.
  void Open(int fd, const sockaddr_storage& peer, std::unique_ptr<char[]> in);
  void Close(uint32_t i);
  // Whether slot `i` has nothing under way: no input, output or body.
  bool Quiet(uint32_t i) const {
    const Slot& s = slots_[i];
    return s.in_len == 0 && s.discard == 0 && s.out.size() == s.out_sent;
  }
  // Aborts when the slot bookkeeping is inconsistent (debug builds only):
  // every slot is either open or on the free list, once, and the open ones
  // are each on one deadline list and counted.
  void VerifySlots();
  void ExpireDeadlines(Clock::time_point now);
  // Queues slot `i`'s answer (already in `out`) until `until`; false when
  // the queue is full (the answer then goes at once).
  bool Hold(uint32_t i, Clock::time_point until);
  // Process's step for an answer the handler asked to hold: held, or (full
  // queue, draining) sent at once.
  void HoldAnswer(uint32_t i, bool draining);
  // Sends every held answer due by `now` (every one with `all`).
  void ReleaseHeld(Clock::time_point now, bool all = false);
  // Ends slot `i`'s hold (sent or closed): counted, and the handler told.
  void EndHold(uint32_t i);
  int NextTimeoutMs(Clock::time_point now) const;

  const ServerOptions options_;
  HttpHandler& handler_;
  const int listen_fd_;
  const size_t in_capacity_;
  ConnectionPool& pool_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  // VerifySlots' marks, kept so that the check allocates only as the slots
  // grow: the allocation tests run debug builds too.
  std::vector<char> verify_seen_;
  List reading_;
  List idle_;
  // Held answers by release time, earliest on top; entries of closed slots
  // are skipped by generation. Its storage is reserved at Init.
  struct HeldAnswer {
    Clock::time_point until;
    uint32_t slot;
    uint32_t generation;
    bool operator>(const HeldAnswer& o) const { return until > o.until; }
  };
  std::vector<HeldAnswer> held_;
  bool accepting_ = true;
  std::atomic<bool> draining_{false};
  Clock::time_point drain_deadline_{};
  HttpRequestHead head_;
  HttpResponse response_;

  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> open_{0};
  std::atomic<uint64_t> timed_out_{0};
  std::atomic<uint64_t> malformed_{0};
  std::atomic<uint64_t> held_count_{0};
};

}  // namespace mxlimit::http

#endif  // MXLIMIT_HTTP_WORKER_H_
