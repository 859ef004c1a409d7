#include "src/shared/redis/sentinel_resolver.h"

#include <charconv>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::internal {
namespace {

// A Sentinel that does not answer within this is passed over for the next.
constexpr std::chrono::milliseconds kSentinelTimeout(300);

}  // namespace

absl::StatusOr<StoreEndpoint::HostPort> SentinelResolver::QueryPrimary(
    RedisConnection& sentinel, const std::string& name,
    std::chrono::steady_clock::time_point deadline) {
  absl::StatusOr<std::vector<RedisReplyPtr>> replies =
      sentinel.Run({{"SENTINEL", "get-master-addr-by-name", name}}, deadline);
  if (!replies.ok()) return replies.status();
  const redisReply& r = *(*replies)[0];
  if (r.type == REDIS_REPLY_ERROR) {
    return absl::UnavailableError(std::string(r.str, r.len));
  }
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 ||
      r.element[0]->type != REDIS_REPLY_STRING ||
      r.element[1]->type != REDIS_REPLY_STRING) {
    return absl::NotFoundError("does not know the primary " + name);
  }
  StoreEndpoint::HostPort p;
  p.host.assign(r.element[0]->str, r.element[0]->len);
  const char* digits = r.element[1]->str;
  const char* end = digits + r.element[1]->len;
  auto [ptr, ec] = std::from_chars(digits, end, p.port);
  if (ec != std::errc() || ptr != end || p.port < 1 || p.port > 65535 ||
      p.host.empty()) {
    return absl::UnavailableError("a malformed address for " + name);
  }
  return p;
}

absl::StatusOr<StoreEndpoint::HostPort> SentinelResolver::AskOnce(
    const StoreEndpoint& endpoint,
    std::chrono::steady_clock::time_point deadline) {
  std::string errors;
  for (const StoreEndpoint::HostPort& sentinel : endpoint.sentinels) {
    StoreEndpoint e;
    e.host = sentinel.host;
    e.port = sentinel.port;
    absl::StatusOr<std::unique_ptr<RedisConnection>> c =
        RedisConnection::Connect(e, nullptr, deadline);
    absl::StatusOr<StoreEndpoint::HostPort> p =
        c.ok() ? QueryPrimary(**c, endpoint.master_name, deadline)
               : absl::StatusOr<StoreEndpoint::HostPort>(c.status());
    if (p.ok()) return p;
    absl::StrAppend(&errors, errors.empty() ? "" : "; ", sentinel.host, ":",
                    sentinel.port, ": ", p.status().message());
  }
  return absl::UnavailableError("no Sentinel named the primary: " + errors);
}

SentinelResolver::SentinelResolver(StoreEndpoint endpoint,
                                   std::function<void()> on_change,
                                   std::chrono::milliseconds poll)
    : endpoint_(std::move(endpoint)),
      on_change_(std::move(on_change)),
      poll_(poll) {}

SentinelResolver::~SentinelResolver() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SentinelResolver::Start() {
  thread_ = std::thread([this] { Run(); });
}

std::optional<StoreEndpoint::HostPort> SentinelResolver::Primary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return primary_;
}

std::string SentinelResolver::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void SentinelResolver::RefreshSoon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    refresh_ = true;
  }
  wake_.notify_all();
}

bool SentinelResolver::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

void SentinelResolver::Run() {
  for (;;) {
    Ask();
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, poll_, [this] { return stop_ || refresh_; });
    if (stop_) return;
    refresh_ = false;
  }
}

bool SentinelResolver::Ask() {
  const size_t count = endpoint_.sentinels.size();
  std::string errors;
  for (size_t k = 0; k < count && !stopping(); ++k) {
    const size_t index = (next_ + k) % count;
    const auto deadline = std::chrono::steady_clock::now() + kSentinelTimeout;
    const StoreEndpoint::HostPort& sentinel = endpoint_.sentinels[index];
    if (connection_ == nullptr || connection_->broken() || index != next_) {
      connection_.reset();
      StoreEndpoint e;
      e.host = sentinel.host;
      e.port = sentinel.port;
      absl::StatusOr<std::unique_ptr<RedisConnection>> c =
          RedisConnection::Connect(e, nullptr, deadline);
      if (!c.ok()) {
        absl::StrAppend(&errors, errors.empty() ? "" : "; ", sentinel.host, ":",
                        sentinel.port, ": ", c.status().message());
        continue;
      }
      connection_ = *std::move(c);
      next_ = index;
    }
    absl::StatusOr<StoreEndpoint::HostPort> answer =
        QueryPrimary(*connection_, endpoint_.master_name, deadline);
    std::optional<StoreEndpoint::HostPort> found;
    std::string why;
    if (answer.ok()) {
      found = *std::move(answer);
    } else {
      why = FromAbsl(answer.status().message());
    }
    if (!found.has_value()) {
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", sentinel.host, ":",
                      sentinel.port, ": ", why);
      connection_.reset();
      continue;
    }
    bool changed = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      changed = !primary_.has_value() || primary_->host != found->host ||
                primary_->port != found->port;
      if (changed) {
        primary_ = std::move(found);
        version_.fetch_add(1, std::memory_order_acq_rel);
      }
      last_error_.clear();
    }
    if (changed && on_change_) on_change_();
    return true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  last_error_ = "no Sentinel named the primary: " + errors;
  return false;
}

}  // namespace mxlimit::internal
