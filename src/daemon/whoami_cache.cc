#include "src/daemon/whoami_cache.h"

#include <httplib.h>

#include <cstring>
#include <utility>

#include "mxlimit/user_id.h"

namespace mxlimit::daemon {
namespace {

constexpr uint32_t kNone = 0xFFFFFFFF;

std::string_view SkipBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' ||
                        s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  return s;
}

}  // namespace

std::string UserIdFromWhoami(std::string_view json) {
  // Only the top-level "user_id" string matters, and a well-formed user ID
  // holds no quote or backslash, so a scan for the key is enough; anything
  // unexpected is refused rather than guessed at.
  constexpr std::string_view kKey = "\"user_id\"";
  const size_t at = json.find(kKey);
  if (at == std::string_view::npos) return "";
  std::string_view rest = SkipBlanks(json.substr(at + kKey.size()));
  if (rest.empty() || rest.front() != ':') return "";
  rest = SkipBlanks(rest.substr(1));
  if (rest.empty() || rest.front() != '"') return "";
  rest.remove_prefix(1);
  const size_t end = rest.find('"');
  if (end == std::string_view::npos) return "";
  const std::string_view id = rest.substr(0, end);
  if (id.find('\\') != std::string_view::npos || id.size() > kMaxUserIdBytes ||
      !IsWellFormedUserId(id)) {
    return "";
  }
  return std::string(id);
}

WhoamiCache::WhoamiCache(const Options& options, const internal::SipKey& secret)
    : options_(options), secret_(secret) {
  // Twice the bound, so erasing and inserting never grows the tables (abseil
  // rehashes in place while deleted slots are few against the capacity).
  index_.reserve(options_.capacity * 2);
  queued_.reserve(options_.max_pending * 2);
  slots_.reserve(options_.capacity);
  queue_.resize(options_.max_pending);
  for (Pending& p : queue_) p.token.reserve(kMaxTokenBytes);
}

WhoamiCache::~WhoamiCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WhoamiCache::Start() {
  for (int i = 0; i < options_.resolvers; ++i) {
    threads_.emplace_back([this] { Run(); });
  }
}

void WhoamiCache::Unlink(uint32_t i) {
  Entry& e = slots_[i];
  (e.prev == kNone ? head_ : slots_[e.prev].next) = e.next;
  (e.next == kNone ? tail_ : slots_[e.next].prev) = e.prev;
  e.prev = e.next = kNone;
}

void WhoamiCache::PushFront(uint32_t i) {
  Entry& e = slots_[i];
  e.prev = kNone;
  e.next = head_;
  (head_ == kNone ? tail_ : slots_[head_].prev) = i;
  head_ = i;
}

size_t WhoamiCache::Lookup(std::string_view token, MonotonicTime now,
                           char (&out)[kMaxUserIdBytes]) {
  const Key key = DigestOf(secret_, token);
  const int64_t now_ns = now.nanoseconds();
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = index_.find(key);
    if (it != index_.end() && slots_[it->second].expires_ns > now_ns) {
      const uint32_t i = it->second;
      Unlink(i);
      PushFront(i);
      hits_.fetch_add(1, std::memory_order_relaxed);
      std::memcpy(out, slots_[i].user_id, slots_[i].len);
      return slots_[i].len;
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (queued_.contains(key) || token.size() > kMaxTokenBytes) return 0;
    if (queue_size_ == queue_.size()) {
      queue_full_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    Pending& p = queue_[(queue_begin_ + queue_size_) % queue_.size()];
    p.key = key;
    p.token.assign(token);  // within the reserved capacity
    ++queue_size_;
    queued_.insert(key);
    queued = true;
  }
  if (queued) wake_.notify_one();
  return 0;
}

void WhoamiCache::Run() {
  httplib::Client client(options_.homeserver);
  const auto deadline = options_.deadline;
  client.set_connection_timeout(deadline);
  client.set_read_timeout(deadline);
  client.set_write_timeout(deadline);
  client.set_keep_alive(true);
  std::string token;
  token.reserve(kMaxTokenBytes);
  while (true) {
    Key key;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || queue_size_ > 0; });
      if (stopping_) return;
      Pending& p = queue_[queue_begin_];
      key = p.key;
      token.assign(p.token);
      p.token.clear();
      queue_begin_ = (queue_begin_ + 1) % queue_.size();
      --queue_size_;
    }
    Answer answer;
    const httplib::Headers headers = {{"Authorization", "Bearer " + token}};
    if (httplib::Result r =
            client.Get("/_matrix/client/v3/account/whoami", headers)) {
      if (r->status == 200) {
        answer.user_id = UserIdFromWhoami(r->body);
        answer.failed = answer.user_id.empty();
      } else if (r->status == 401 || r->status == 403) {
        answer.failed = false;  // refused: the token hash it stays
      }
    }
    token.clear();
    (answer.failed            ? failures_
     : answer.user_id.empty() ? rejected_
                              : resolved_)
        .fetch_add(1, std::memory_order_relaxed);
    Store(key, answer, MonotonicTime::FromSteadyClock().nanoseconds());
  }
}

void WhoamiCache::Store(const Key& key, const Answer& answer, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_.erase(key);
  if (options_.capacity == 0) return;
  uint32_t i;
  const auto it = index_.find(key);
  if (it != index_.end()) {
    i = it->second;
    Unlink(i);
  } else if (slots_.size() < options_.capacity) {
    i = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
    index_.emplace(key, i);
  } else {
    i = tail_;
    Unlink(i);
    index_.erase(slots_[i].key);
    index_.emplace(key, i);
  }
  Entry& e = slots_[i];
  e.key = key;
  const auto ttl = answer.failed ? options_.failure_ttl : options_.ttl;
  e.expires_ns =
      now_ns +
      std::chrono::duration_cast<std::chrono::nanoseconds>(ttl).count();
  e.len = static_cast<uint16_t>(answer.user_id.size());
  std::memcpy(e.user_id, answer.user_id.data(), e.len);
  PushFront(i);
}

WhoamiCache::Counters WhoamiCache::counters() const {
  Counters c;
  c.hits = hits_.load(std::memory_order_relaxed);
  c.misses = misses_.load(std::memory_order_relaxed);
  c.resolved = resolved_.load(std::memory_order_relaxed);
  c.rejected = rejected_.load(std::memory_order_relaxed);
  c.failures = failures_.load(std::memory_order_relaxed);
  c.queue_full = queue_full_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  c.entries = slots_.size();
  return c;
}

}  // namespace mxlimit::daemon
