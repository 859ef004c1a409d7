#include "src/shared/redis/redis_store.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/options/store_url.h"
#include "src/shared/redis/mxl1_call.h"
#include "src/shared/redis/mxl1_script.h"

namespace mxlimit::internal {

absl::Status RedisStore::CheckLimits(const StoreOptions& options) {
  if (options.connections < 1 ||
      options.connections > StoreOptions::kMaxConnections) {
    return absl::InvalidArgumentError(
        "store.connections: " + std::to_string(options.connections) +
        "; expected 1 to " + std::to_string(StoreOptions::kMaxConnections));
  }
  if (options.max_in_flight < 1 || options.max_in_flight > kMaxInFlightLimit) {
    return absl::InvalidArgumentError(
        "store.max_in_flight: " + std::to_string(options.max_in_flight) +
        "; expected 1 to " + std::to_string(kMaxInFlightLimit));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RedisStore>> RedisStore::Create(
    const StoreOptions& options) {
  absl::StatusOr<StoreEndpoint> endpoint = ParseStoreUrl(options.url);
  if (!endpoint.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("store.url: ", endpoint.status().message()));
  }
  if (!endpoint->cluster_nodes.empty()) {
    return absl::InvalidArgumentError(
        "store.url: a redis-cluster:// URL needs a ClusterStore");
  }
  if (absl::Status s = CheckLimits(options); !s.ok()) return s;
  std::shared_ptr<const TlsContext> tls;
  if (endpoint->tls) {
    absl::StatusOr<std::shared_ptr<const TlsContext>> made =
        TlsContext::Create(options.tls);
    if (!made.ok()) return made.status();
    tls = *std::move(made);
  }
  return CreateAt(*std::move(endpoint), options, std::move(tls));
}

absl::StatusOr<std::unique_ptr<RedisStore>> RedisStore::CreateAt(
    StoreEndpoint endpoint, const StoreOptions& options,
    std::shared_ptr<const TlsContext> tls) {
  std::unique_ptr<RedisStore> store(
      new RedisStore(std::move(endpoint), options, std::move(tls)));
  if (absl::Status s = store->io_.Start(); !s.ok()) return s;
  return store;
}

RedisStore::RedisStore(StoreEndpoint endpoint, const StoreOptions& options,
                       std::shared_ptr<const TlsContext> tls)
    : slots_(options.max_in_flight),
      io_(std::move(endpoint), options.connections, slots_, shared_,
          std::move(tls)) {}

std::string_view RedisStore::Script() { return kMxl1Script; }
std::string_view RedisStore::ScriptSha1() { return kMxl1ScriptSha1; }

uint32_t RedisStore::Submit(const StoreOp& op, bool posted, bool asking) {
  if (!shared_.connected.load(std::memory_order_acquire)) {
    return SlotQueue::kNone;
  }
  const uint32_t slot = slots_.Acquire();
  if (slot == SlotQueue::kNone) return slot;
  SlotBody& body = slots_.body(slot);
  body.op = op;
  body.asking = asking;
  body.redirect_size = 0;
  size_t prefix = 0;
  if (asking) {
    std::copy(kAskingCommand.begin(), kAskingCommand.end(), body.command);
    prefix = kAskingBytes;
  }
  body.command_size = static_cast<uint32_t>(
      prefix + FormatMxl1Call(op, kMxl1ScriptSha1, body.command + prefix));
  if (slots_.Submit(slot, posted)) io_.Wake();
  return slot;
}

uint32_t RedisStore::Start(const StoreOp& op, bool asking) {
  if (op.count > kMaxStoreBuckets) return kNoTicket;
  return Submit(op, /*posted=*/false, asking);
}

StoreResult RedisStore::Await(uint32_t ticket,
                              std::chrono::steady_clock::time_point deadline,
                              char* redirect, size_t* redirect_size) {
  *redirect_size = 0;
  StoreResult result;
  if (!slots_.Wait(ticket, deadline)) {
    result.status = StoreStatus::kTimeout;
    return result;
  }
  const SlotBody& body = slots_.body(ticket);
  result = body.result;
  *redirect_size = body.redirect_size;
  std::copy_n(body.redirect, body.redirect_size, redirect);
  slots_.Release(ticket);
  return result;
}

StoreResult RedisStore::Execute(
    const StoreOp& op, std::chrono::steady_clock::time_point deadline) {
  StoreResult result;
  if (op.count > kMaxStoreBuckets) {
    result.status = StoreStatus::kError;
    shared_.error.fetch_add(1, std::memory_order_relaxed);
    return result;
  }
  if (std::chrono::steady_clock::now() >= deadline) {
    result.status = StoreStatus::kTimeout;
    shared_.timeout.fetch_add(1, std::memory_order_relaxed);
    return result;
  }
  const uint32_t slot = Submit(op, /*posted=*/false);
  if (slot == SlotQueue::kNone) {
    shared_.unavailable.fetch_add(1, std::memory_order_relaxed);
    return result;  // kUnavailable
  }
  if (!slots_.Wait(slot, deadline)) {
    // The slot now belongs to the I/O thread, which reports the reply as a
    // late one when it comes.
    result.status = StoreStatus::kTimeout;
    shared_.timeout.fetch_add(1, std::memory_order_relaxed);
    return result;
  }
  result = slots_.body(slot).result;
  slots_.Release(slot);
  switch (result.status) {
    case StoreStatus::kOk:
      shared_.ok.fetch_add(1, std::memory_order_relaxed);
      break;
    case StoreStatus::kUnavailable:
      shared_.unavailable.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      shared_.error.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  return result;
}

void RedisStore::ExecuteBatch(std::span<const StoreOp> ops,
                              std::chrono::steady_clock::time_point deadline,
                              std::span<StoreResult> results) {
  // Every op queued before waiting for any: the I/O thread then writes them
  // in one go (flush when drained), one round trip for the batch.
  constexpr uint32_t kNotQueued = SlotQueue::kNone;
  uint32_t slots[64];
  for (size_t first = 0; first < ops.size(); first += 64) {
    const size_t n = std::min<size_t>(64, ops.size() - first);
    for (size_t i = 0; i < n; ++i) {
      const StoreOp& op = ops[first + i];
      slots[i] = op.count > kMaxStoreBuckets ? kNotQueued
                                             : Submit(op, /*posted=*/false);
    }
    for (size_t i = 0; i < n; ++i) {
      StoreResult& result = results[first + i];
      result = StoreResult{};
      if (slots[i] == kNotQueued) {
        shared_.unavailable.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (!slots_.Wait(slots[i], deadline)) {
        result.status = StoreStatus::kTimeout;
        shared_.timeout.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      result = slots_.body(slots[i]).result;
      slots_.Release(slots[i]);
      if (result.status == StoreStatus::kOk) {
        shared_.ok.fetch_add(1, std::memory_order_relaxed);
      } else if (result.status == StoreStatus::kUnavailable) {
        shared_.unavailable.fetch_add(1, std::memory_order_relaxed);
      } else {
        shared_.error.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
}

bool RedisStore::Post(const StoreOp& op, bool asking) {
  if (op.count > kMaxStoreBuckets) {
    shared_.error.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (Submit(op, /*posted=*/true, asking) == SlotQueue::kNone) {
    shared_.unavailable.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

StoreCounters RedisStore::counters() const {
  StoreCounters c;
  c.ops_ok = shared_.ok.load(std::memory_order_relaxed);
  c.ops_timeout = shared_.timeout.load(std::memory_order_relaxed);
  c.ops_error = shared_.error.load(std::memory_order_relaxed);
  c.ops_unavailable = shared_.unavailable.load(std::memory_order_relaxed);
  c.late_replies = shared_.late_replies.load(std::memory_order_relaxed);
  c.script_reloads = shared_.script_reloads.load(std::memory_order_relaxed);
  c.reconnects = shared_.reconnects.load(std::memory_order_relaxed);
  c.connected = shared_.connected.load(std::memory_order_relaxed);
  c.in_flight = slots_.in_use();
  return c;
}

}  // namespace mxlimit::internal
