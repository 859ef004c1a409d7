#include "src/daemon/tier_sync.h"

#include <hiredis/hiredis.h>

#include <charconv>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/tiers.h"
#include "src/daemon/log.h"
#include "src/daemon/wall_clock.h"
#include "src/options/store_url.h"
#include "src/shared/redis/cluster_slots.h"
#include "src/shared/redis/cluster_store.h"
#include "src/shared/redis/sentinel_resolver.h"
#include "src/shared/store_keys.h"

namespace mxlimit::daemon {
namespace {

using internal::FromAbsl;
using internal::ToAbsl;

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
  if (endpoint->tls) {
    absl::StatusOr<std::shared_ptr<const internal::TlsContext>> tls =
        internal::TlsContext::Create(store.tls);
    if (!tls.ok()) return tls.status();
    s->tls_ = *std::move(tls);
  }
  s->key_ =
      internal::StoreKeyer(store.key_secret, !endpoint->cluster_nodes.empty())
          .TiersKey();
  s->version_key_ = s->key_ + ":v";
  s->endpoint_ = *std::move(endpoint);
  s->timeout_ = timeout;
  return s;
}

TierSync::~TierSync() = default;

internal::RedisConnection* TierSync::Connection(
    std::string& why, std::chrono::steady_clock::time_point deadline) {
  if (connection_ != nullptr && !connection_->broken()) {
    return connection_.get();
  }
  connection_.reset();
  internal::StoreEndpoint endpoint = endpoint_;
  if (!endpoint.sentinels.empty() || !endpoint.cluster_nodes.empty()) {
    // Asked at each new connection: the primary the Sentinels name, or the
    // cluster's primary of the tiers' slot. A connection that fails, meets
    // a demoted primary or a MOVED reply is dropped, and the next finds
    // the new one.
    absl::StatusOr<internal::StoreEndpoint::HostPort> primary =
        !endpoint.sentinels.empty()
            ? internal::SentinelResolver::AskOnce(endpoint_, deadline)
            : internal::ClusterStore::AskOnce(
                  endpoint_, internal::KeySlot(key_), deadline);
    if (!primary.ok()) {
      why = FromAbsl(primary.status().message());
      return nullptr;
    }
    endpoint.host = primary->host;
    endpoint.port = primary->port;
  }
  absl::StatusOr<std::unique_ptr<internal::RedisConnection>> c =
      internal::RedisConnection::Connect(endpoint, tls_.get(), deadline);
  if (!c.ok()) {
    why = FromAbsl(c.status().message());
    return nullptr;
  }
  connection_ = *std::move(c);
  return connection_.get();
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
  // One deadline for the whole call, connecting included.
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::string why;
  internal::RedisConnection* c = Connection(why, deadline);
  if (c == nullptr) {
    return absl::UnavailableError("the store cannot be reached: " + why);
  }
  // MULTI/EXEC: the hash and its version change together.
  std::vector<std::vector<std::string_view>> commands = {{"MULTI"}};
  if (value != nullptr) {
    commands.push_back({"HSET", key_, subject, *value});
  } else {
    commands.push_back({"HDEL", key_, subject});
  }
  commands.push_back({"INCR", version_key_});
  commands.push_back({"EXEC"});
  absl::StatusOr<std::vector<internal::RedisReplyPtr>> replies =
      c->Run(commands, deadline);
  if (!replies.ok()) {
    return absl::UnavailableError("the store did not answer in time");
  }
  for (const internal::RedisReplyPtr& r : *replies) {
    if (r->type == REDIS_REPLY_ERROR) {
      // READONLY (a demoted primary) or EXECABORT: the next call connects
      // afresh.
      connection_.reset();
      return absl::UnavailableError("the store refused the change");
    }
  }
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
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::string why;
  internal::RedisConnection* c = Connection(why, deadline);
  if (c == nullptr) return warn("the store cannot be reached: " + why);
  absl::StatusOr<std::vector<internal::RedisReplyPtr>> v =
      c->Run({{"GET", version_key_}}, deadline);
  if (!v.ok()) return warn(FromAbsl(v.status().message()));
  const redisReply& version_reply = *(*v)[0];
  if (version_reply.type == REDIS_REPLY_ERROR) {
    // MOVED (a cluster slot moved) or the like: connect afresh next time.
    connection_.reset();
    return warn(std::string(version_reply.str, version_reply.len));
  }
  int64_t version = 0;
  if (version_reply.type == REDIS_REPLY_STRING) {
    std::from_chars(version_reply.str, version_reply.str + version_reply.len,
                    version);
  }
  if (!force && version == seen_version_) return false;
  absl::StatusOr<std::vector<internal::RedisReplyPtr>> got =
      c->Run({{"HGETALL", key_}}, deadline);
  if (!got.ok()) return warn(FromAbsl(got.status().message()));
  const redisReply& all = *(*got)[0];
  if (all.type != REDIS_REPLY_ARRAY) return warn("HGETALL failed");
  for (size_t i = 0; i + 1 < all.elements && wanted.size() < kMaxTierOverrides;
       i += 2) {
    const redisReply* f = all.element[i];
    const redisReply* val = all.element[i + 1];
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
