#include "src/daemon/tier_sync.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <charconv>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/tiers.h"
#include "src/daemon/log.h"
#include "src/daemon/wall_clock.h"
#include "src/options/store_url.h"
#include "src/shared/store_keys.h"

namespace mxlimit::daemon {
namespace {

using internal::FromAbsl;
using internal::ToAbsl;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// "TIER EXPIRES_AT_MS" back into its parts; false when malformed.
bool ParseValue(std::string_view value, std::string& tier, int64_t& expires) {
  const size_t space = value.find(' ');
  if (space == std::string_view::npos || space == 0) return false;
  tier.assign(value.substr(0, space));
  const std::string_view ms = value.substr(space + 1);
  auto [end, ec] = std::from_chars(ms.data(), ms.data() + ms.size(), expires);
  return ec == std::errc() && end == ms.data() + ms.size() && expires >= 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TierSync>> TierSync::Create(
    const StoreOptions& store, std::chrono::milliseconds timeout) {
  absl::StatusOr<internal::StoreEndpoint> endpoint =
      internal::ParseStoreUrl(store.url);
  if (!endpoint.ok()) return endpoint.status();
  std::unique_ptr<TierSync> s(new TierSync());
  s->key_ = internal::StoreKeyer(store.key_secret).TiersKey();
  s->version_key_ = s->key_ + ":v";
  s->host_ = endpoint->host;
  s->port_ = endpoint->port;
  s->unix_path_ = endpoint->unix_path;
  s->user_ = endpoint->user;
  s->password_ = endpoint->password;
  s->db_ = endpoint->db;
  s->timeout_ = timeout;
  return s;
}

TierSync::~TierSync() {
  internal::MutexLock lock(mu_);
  Drop();
}

void TierSync::Drop() {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
}

redisContext* TierSync::Connection() {
  if (context_ != nullptr && context_->err == 0) return context_;
  Drop();
  const timeval tv = ToTimeval(timeout_);
  redisContext* c = unix_path_.empty()
                        ? redisConnectWithTimeout(host_.c_str(), port_, tv)
                        : redisConnectUnixWithTimeout(unix_path_.c_str(), tv);
  if (c == nullptr) return nullptr;
  if (c->err != 0 || redisSetTimeout(c, tv) != REDIS_OK) {
    redisFree(c);
    return nullptr;
  }
  context_ = c;
  auto ok = [](redisReply* r) {
    const bool good = r != nullptr && r->type != REDIS_REPLY_ERROR;
    if (r != nullptr) freeReplyObject(r);
    return good;
  };
  if (!password_.empty()) {
    void* r =
        user_.empty()
            ? redisCommand(c, "AUTH %b", password_.data(), password_.size())
            : redisCommand(c, "AUTH %b %b", user_.data(), user_.size(),
                           password_.data(), password_.size());
    if (!ok(static_cast<redisReply*>(r))) {
      Drop();
      return nullptr;
    }
  }
  if (db_ != 0 &&
      !ok(static_cast<redisReply*>(redisCommand(c, "SELECT %d", db_)))) {
    Drop();
    return nullptr;
  }
  return context_;
}

absl::Status TierSync::Publish(std::string_view subject, std::string_view tier,
                               std::optional<int64_t> expires_at_ms) {
  const std::string value =
      absl::StrCat(ToAbsl(tier), " ", expires_at_ms.value_or(0));
  return Change(subject, &value);
}

absl::Status TierSync::Unpublish(std::string_view subject) {
  return Change(subject, nullptr);
}

absl::Status TierSync::Change(std::string_view subject,
                              const std::string* value) {
  internal::MutexLock lock(mu_);
  redisContext* c = Connection();
  if (c == nullptr) {
    return absl::UnavailableError("the store cannot be reached");
  }
  // MULTI/EXEC: the hash and its version change together.
  redisAppendCommand(c, "MULTI");
  if (value != nullptr) {
    redisAppendCommand(c, "HSET %b %b %b", key_.data(), key_.size(),
                       subject.data(), subject.size(), value->data(),
                       value->size());
  } else {
    redisAppendCommand(c, "HDEL %b %b", key_.data(), key_.size(),
                       subject.data(), subject.size());
  }
  redisAppendCommand(c, "INCR %b", version_key_.data(), version_key_.size());
  redisAppendCommand(c, "EXEC");
  bool good = true;
  for (int i = 0; i < 4; ++i) {
    void* raw = nullptr;
    if (redisGetReply(c, &raw) != REDIS_OK) {
      Drop();
      return absl::UnavailableError("the store did not answer in time");
    }
    Reply r(static_cast<redisReply*>(raw));
    if (r->type == REDIS_REPLY_ERROR) good = false;
  }
  if (!good) return absl::UnavailableError("the store refused the change");
  return absl::OkStatus();
}

bool TierSync::Warn(std::string_view why) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_warning_ < std::chrono::minutes(1)) return false;
  last_warning_ = now;
  Log("warn", "cannot read the shared tier assignments; keeping ours",
      {{"key", key_}, {"error", why}});
  return false;
}

bool TierSync::ReadWanted(bool force, WantedMap& wanted) {
  internal::MutexLock lock(mu_);
  auto warn = [this](std::string_view why)
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return Warn(why); };
  redisContext* c = Connection();
  if (c == nullptr) return warn("the store cannot be reached");
  Reply v(static_cast<redisReply*>(
      redisCommand(c, "GET %b", version_key_.data(), version_key_.size())));
  if (v == nullptr) {
    Drop();
    return warn("the store did not answer in time");
  }
  int64_t version = 0;
  if (v->type == REDIS_REPLY_STRING) {
    std::from_chars(v->str, v->str + v->len, version);
  }
  if (!force && version == seen_version_) return false;
  Reply all(static_cast<redisReply*>(
      redisCommand(c, "HGETALL %b", key_.data(), key_.size())));
  if (all == nullptr || all->type != REDIS_REPLY_ARRAY) {
    if (all == nullptr) Drop();
    return warn("HGETALL failed");
  }
  for (size_t i = 0; i + 1 < all->elements && wanted.size() < kMaxTierOverrides;
       i += 2) {
    const redisReply* f = all->element[i];
    const redisReply* val = all->element[i + 1];
    if (f->type != REDIS_REPLY_STRING || val->type != REDIS_REPLY_STRING) {
      continue;
    }
    Wanted w;
    if (!ParseValue({val->str, val->len}, w.tier, w.expires_at_ms)) continue;
    wanted.emplace(std::string(f->str, f->len), std::move(w));
  }
  seen_version_ = version;
  return true;
}

void TierSync::Reconcile(SharedLimiter& limiter, bool force) {
  internal::MutexLock change(change_mu_);
  WantedMap wanted;
  if (!ReadWanted(force, wanted)) return;
  const Clocks clocks = Clocks::Now();
  size_t set = 0;
  size_t cleared = 0;
  for (const TierAssignment& a : limiter.ListTiers(clocks.now)) {
    if (!a.runtime) continue;
    auto it = wanted.find(a.subject);
    if (it == wanted.end()) {
      if (limiter.ClearTier(a.subject).ok()) ++cleared;
      continue;
    }
    // The same tier and (to the second) the same end: nothing to do.
    const int64_t ends = a.expires ? clocks.WallMs(*a.expires) : 0;
    const int64_t diff = ends - it->second.expires_at_ms;
    if (it->second.tier == a.tier &&
        (ends == 0) == (it->second.expires_at_ms == 0) && diff > -1000 &&
        diff < 1000) {
      wanted.erase(it);
    }
  }
  for (const auto& [subject, w] : wanted) {
    std::optional<MonotonicTime> until;
    if (w.expires_at_ms != 0) {
      until = clocks.Monotonic(w.expires_at_ms);
      if (!until.has_value()) continue;  // ended already
    }
    absl::Status s = limiter.SetTier(subject, w.tier, until, clocks.now);
    if (s.ok()) {
      ++set;
    } else {
      Log("warn", "shared tier assignment not applied",
          {{"subject", subject},
           {"tier", w.tier},
           {"error", FromAbsl(s.message())}});
    }
  }
  if (set > 0 || cleared > 0) {
    Log("info", "shared tier assignments applied",
        {{"set", std::to_string(set)}, {"cleared", std::to_string(cleared)}});
  }
}

}  // namespace mxlimit::daemon
