#include "src/shared/redis/cluster_store.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "src/shared/store_ops.h"

namespace mxlimit::internal {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterStore>> ClusterStore::Create(
    const StoreOptions& options) {
  absl::StatusOr<StoreEndpoint> endpoint = ParseStoreUrl(options.url);
  if (!endpoint.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("store.url: ", endpoint.status().message()));
  }
  if (endpoint->cluster_nodes.empty()) {
    return absl::InvalidArgumentError("store.url: not a redis-cluster:// URL");
  }
  if (absl::Status s = RedisStore::CheckLimits(options); !s.ok()) return s;
  std::unique_ptr<ClusterStore> store(
      new ClusterStore(*std::move(endpoint), options));
  store->map_thread_ = std::thread([s = store.get()] { s->RunMap(); });
  return store;
}

ClusterStore::ClusterStore(StoreEndpoint endpoint, const StoreOptions& options)
    : endpoint_(std::move(endpoint)), options_(options) {
  for (std::atomic<uint8_t>& n : slot_node_) {
    n.store(kNoNode, std::memory_order_relaxed);
  }
}

ClusterStore::~ClusterStore() {
  {
    std::lock_guard<std::mutex> lock(map_mu_);
    stop_ = true;
  }
  map_wake_.notify_all();
  if (map_thread_.joinable()) map_thread_.join();
  // The nodes' stores (and their I/O threads) go with nodes_; none reports
  // a late reply to this object once it is being destroyed.
  for (size_t i = 0; i < node_count_.load(std::memory_order_acquire); ++i) {
    nodes_[i].store->SetLateReplyHandler(nullptr);
  }
}

// --- Ops --------------------------------------------------------------------

RedisStore* ClusterStore::NodeStore(uint8_t node) const {
  if (node == kNoNode || node >= node_count_.load(std::memory_order_acquire)) {
    return nullptr;
  }
  return nodes_[node].store.get();
}

uint8_t ClusterStore::FindNode(std::string_view host, int port) const {
  const size_t count = node_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    if (nodes_[i].port == port && nodes_[i].host == host) {
      return static_cast<uint8_t>(i);
    }
  }
  return kNoNode;
}

void ClusterStore::GroupOp(const StoreOp& op, const Group& g, StoreOp& out) {
  out.kind = op.kind;
  out.cost = op.cost;
  out.caller_clock = op.caller_clock;
  out.now_ns = op.now_ns;
  out.at_ns = op.at_ns;
  out.count = g.count;
  for (uint8_t j = 0; j < g.count; ++j) out.buckets[j] = op.buckets[g.index[j]];
}

bool ClusterStore::Send(const StoreOp& op, Group& g, uint8_t node,
                        bool asking) {
  g.node = node;
  g.asking = asking;
  g.ticket = RedisStore::kNoTicket;
  RedisStore* store = NodeStore(node);
  if (store == nullptr) return false;
  StoreOp sub;
  GroupOp(op, g, sub);
  g.ticket = store->Start(sub, asking);
  groups_.fetch_add(1, std::memory_order_relaxed);
  return g.ticket != RedisStore::kNoTicket;
}

void ClusterStore::Split(const StoreOp& op, Pending& p) {
  p.groups = 0;
  for (uint8_t i = 0; i < op.count; ++i) {
    const uint16_t slot = KeySlot(op.buckets[i].key.view());
    uint8_t k = 0;
    while (k < p.groups && p.group[k].slot != slot) ++k;
    Group& g = p.group[k];
    if (k == p.groups) {
      ++p.groups;
      g.slot = slot;
      g.count = 0;
    }
    g.index[g.count++] = i;
  }
}

void ClusterStore::SendAll(const StoreOp& op, Pending& p) {
  bool missing = false;
  for (uint8_t k = 0; k < p.groups; ++k) {
    Group& g = p.group[k];
    g.result = StoreResult{};
    const uint8_t node = slot_node_[g.slot].load(std::memory_order_relaxed);
    if (!Send(op, g, node, /*asking=*/false)) missing = true;
  }
  if (missing) RefreshSoon();
}

void ClusterStore::Begin(const StoreOp& op, Pending& p) {
  Split(op, p);
  SendAll(op, p);
}

void ClusterStore::Await(const StoreOp& op, Group& g,
                         Clock::time_point deadline) {
  // One redirect is followed; a second one is an error.
  for (int hop = 0; hop < 2; ++hop) {
    RedisStore* store = NodeStore(g.node);
    if (g.ticket == RedisStore::kNoTicket || store == nullptr) {
      g.result = StoreResult{};  // kUnavailable
      return;
    }
    char text[128];
    size_t size = 0;
    g.result = store->Await(g.ticket, deadline, text, &size);
    g.ticket = RedisStore::kNoTicket;
    Redirect r;
    if (size == 0 || !ParseRedirect({text, size}, &r) || hop == 1) return;
    // "MOVED 1 :6380": a node that does not know its own address.
    const std::string_view host =
        r.host.empty() ? std::string_view(nodes_[g.node].host) : r.host;
    const uint8_t target = FindNode(host, r.port);
    if (r.ask) {
      asked_.fetch_add(1, std::memory_order_relaxed);
    } else {
      moved_.fetch_add(1, std::memory_order_relaxed);
      RefreshSoon();
      if (target != kNoNode) {
        slot_node_[r.slot].store(target, std::memory_order_relaxed);
      }
    }
    if (target == kNoNode) {
      WantNode(host, r.port);
      return;  // kError: a node the map does not know yet.
    }
    const bool late = Clock::now() >= deadline;
    if (late || !Send(op, g, target, r.ask)) {
      g.result = StoreResult{};
      g.result.status = late ? StoreStatus::kTimeout : StoreStatus::kError;
      return;
    }
  }
}

StoreResult ClusterStore::Complete(const StoreOp& op, Pending& p,
                                   Clock::time_point deadline) {
  StoreResult merged;
  merged.status = StoreStatus::kOk;
  merged.allowed = true;
  bool timeout = false, error = false, unavailable = false;
  for (uint8_t k = 0; k < p.groups; ++k) {
    Group& g = p.group[k];
    Await(op, g, deadline);
    switch (g.result.status) {
      case StoreStatus::kOk:
        break;
      case StoreStatus::kTimeout:
        timeout = true;
        break;
      case StoreStatus::kError:
        error = true;
        break;
      case StoreStatus::kUnavailable:
        unavailable = true;
        RefreshSoon();
        break;
    }
    if (!g.result.allowed) merged.allowed = false;
    for (uint8_t j = 0; j < g.count; ++j) {
      merged.lead[g.index[j]] = g.result.lead[j];
    }
  }
  if (timeout || error || unavailable) {
    merged.allowed = false;
    merged.status = timeout ? StoreStatus::kTimeout
                    : error ? StoreStatus::kError
                            : StoreStatus::kUnavailable;
  }
  if (op.kind == StoreOpKind::kCheck && p.groups > 1) {
    RefundPartial(op, p, merged);
  }
  return merged;
}

void ClusterStore::RefundPartial(const StoreOp& op, const Pending& p,
                                 const StoreResult& merged) {
  // A group charged what its own buckets allowed; the check as a whole
  // charges a subset of that (every group allowed, every shadow bucket had
  // room). The difference goes back.
  bool refunded = false;
  for (uint8_t k = 0; k < p.groups; ++k) {
    const Group& g = p.group[k];
    if (g.result.status != StoreStatus::kOk || op.cost == 0) continue;
    StoreOp sub;
    GroupOp(op, g, sub);
    StoreOp refund = StoreRefundOf(op);
    for (uint8_t j = 0; j < g.count; ++j) {
      const bool charged = StoreCheckCharged(sub, g.result, j);
      const bool kept = merged.status == StoreStatus::kOk &&
                        StoreCheckCharged(op, merged, g.index[j]);
      if (charged && !kept) refund.buckets[refund.count++] = sub.buckets[j];
    }
    if (refund.count == 0) continue;
    refunded = true;
    if (RedisStore* store = NodeStore(g.node)) store->Post(refund, g.asking);
  }
  if (refunded) partial_refunds_.fetch_add(1, std::memory_order_relaxed);
}

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             Clock::now().time_since_epoch())
      .count();
}

uint64_t KeyBits(const StoreKey& k) { return absl::Hash<StoreKey>{}(k); }

constexpr int64_t kHotMs = 1000;

}  // namespace

bool ClusterStore::AnyHot(const StoreOp& op, int64_t now_ms) const {
  for (uint8_t i = 0; i < op.count; ++i) {
    const uint64_t h = KeyBits(op.buckets[i].key);
    const uint64_t e = hot_[h % kHotEntries].load(std::memory_order_relaxed);
    if ((e >> 40) == (h >> 40) &&
        static_cast<int64_t>(e & ((uint64_t{1} << 40) - 1)) > now_ms) {
      return true;
    }
  }
  return false;
}

void ClusterStore::MarkHot(const StoreOp& op, const StoreResult& r,
                           int64_t now_ms) {
  for (uint8_t i = 0; i < op.count; ++i) {
    if (op.buckets[i].mode != BucketMode::kEnforcing ||
        StoreBucketHasRoom(op, i, r.lead[i])) {
      continue;
    }
    const uint64_t h = KeyBits(op.buckets[i].key);
    const uint64_t until =
        static_cast<uint64_t>(now_ms + kHotMs) & ((uint64_t{1} << 40) - 1);
    hot_[h % kHotEntries].store((h >> 40) << 40 | until,
                                std::memory_order_relaxed);
  }
}

StoreResult ClusterStore::Check(const StoreOp& op, Clock::time_point deadline) {
  const int64_t now_ms = NowMs();
  Pending p;
  Split(op, p);
  // One group is one call, atomic already: only a check over several can
  // split.
  if (p.groups > 1 && AnyHot(op, now_ms)) {
    StoreOp peek = op;
    peek.kind = StoreOpKind::kPeek;
    peeked_.fetch_add(1, std::memory_order_relaxed);
    SendAll(peek, p);
    const StoreResult r = Complete(peek, p, deadline);
    if (r.status != StoreStatus::kOk || !r.allowed) {
      if (r.status == StoreStatus::kOk) {
        peek_denied_.fetch_add(1, std::memory_order_relaxed);
        MarkHot(op, r, now_ms);
      }
      return r;
    }
    // A redirect followed by the peek may have moved a group's node; the
    // slot map has it.
  }
  SendAll(op, p);
  const StoreResult r = Complete(op, p, deadline);
  if (r.status == StoreStatus::kOk && !r.allowed && p.groups > 1) {
    MarkHot(op, r, now_ms);
  }
  return r;
}

void ClusterStore::CountOutcome(StoreStatus status) {
  (status == StoreStatus::kOk        ? ok_
   : status == StoreStatus::kTimeout ? timeout_
   : status == StoreStatus::kError   ? error_
                                     : unavailable_)
      .fetch_add(1, std::memory_order_relaxed);
}

StoreResult ClusterStore::Execute(const StoreOp& op,
                                  Clock::time_point deadline) {
  StoreResult result;
  if (op.count > kMaxStoreBuckets) {
    result.status = StoreStatus::kError;
    error_.fetch_add(1, std::memory_order_relaxed);
    return result;
  }
  if (Clock::now() >= deadline) {
    result.status = StoreStatus::kTimeout;
    timeout_.fetch_add(1, std::memory_order_relaxed);
    return result;
  }
  if (op.kind == StoreOpKind::kCheck) {
    result = Check(op, deadline);
  } else {
    Pending p;
    Begin(op, p);
    result = Complete(op, p, deadline);
  }
  CountOutcome(result.status);
  return result;
}

void ClusterStore::ExecuteBatch(std::span<const StoreOp> ops,
                                Clock::time_point deadline,
                                std::span<StoreResult> results) {
  // A few ops in flight at once: each may be up to kMaxStoreBuckets groups.
  constexpr size_t kChunk = 4;
  Pending pending[kChunk];
  for (size_t first = 0; first < ops.size(); first += kChunk) {
    const size_t n = std::min(kChunk, ops.size() - first);
    for (size_t i = 0; i < n; ++i) {
      const StoreOp& op = ops[first + i];
      pending[i].groups = 0;
      if (op.count <= kMaxStoreBuckets) Begin(op, pending[i]);
    }
    for (size_t i = 0; i < n; ++i) {
      const StoreOp& op = ops[first + i];
      StoreResult& r = results[first + i];
      if (op.count > kMaxStoreBuckets) {
        r = StoreResult{};
        r.status = StoreStatus::kError;
      } else {
        r = Complete(op, pending[i], deadline);
      }
      CountOutcome(r.status);
    }
  }
}

bool ClusterStore::Post(const StoreOp& op) {
  if (op.count > kMaxStoreBuckets) {
    error_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  Pending p;
  Split(op, p);
  bool all = true;
  for (uint8_t k = 0; k < p.groups; ++k) {
    const Group& g = p.group[k];
    RedisStore* store =
        NodeStore(slot_node_[g.slot].load(std::memory_order_relaxed));
    StoreOp sub;
    GroupOp(op, g, sub);
    if (store == nullptr || !store->Post(sub)) all = false;
  }
  if (!all) unavailable_.fetch_add(1, std::memory_order_relaxed);
  return all;
}

void ClusterStore::OnLateReply(const StoreOp& op, const StoreResult& result) {
  // A group answered after its check gave up: the caller's handler gives
  // back what it charged, as for one Redis.
  if (LateReplyHandler* h = late_handler_.load(std::memory_order_acquire)) {
    h->OnLateReply(op, result);
  }
}

uint64_t ClusterStore::generation() const {
  uint64_t g = failovers_.load(std::memory_order_acquire);
  const size_t count = node_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) g += nodes_[i].store->generation();
  return g;
}

StoreCounters ClusterStore::counters() const {
  StoreCounters c;
  c.ops_ok = ok_.load(std::memory_order_relaxed);
  c.ops_timeout = timeout_.load(std::memory_order_relaxed);
  c.ops_error = error_.load(std::memory_order_relaxed);
  c.ops_unavailable = unavailable_.load(std::memory_order_relaxed);
  const uint64_t serving = serving_.load(std::memory_order_acquire);
  c.connected = serving != 0 && covered();
  const size_t count = node_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    const StoreCounters n = nodes_[i].store->counters();
    c.late_replies += n.late_replies;
    c.script_reloads += n.script_reloads;
    c.reconnects += n.reconnects;
    c.in_flight += n.in_flight;
    if ((serving >> i & 1) != 0 && !n.connected) c.connected = false;
  }
  return c;
}

ClusterStore::ClusterCounters ClusterStore::cluster_counters() const {
  ClusterCounters c;
  c.groups = groups_.load(std::memory_order_relaxed);
  c.moved = moved_.load(std::memory_order_relaxed);
  c.asked = asked_.load(std::memory_order_relaxed);
  c.partial_refunds = partial_refunds_.load(std::memory_order_relaxed);
  c.peeked = peeked_.load(std::memory_order_relaxed);
  c.peek_denied = peek_denied_.load(std::memory_order_relaxed);
  c.map_refreshes = map_refreshes_.load(std::memory_order_relaxed);
  c.primaries = static_cast<size_t>(
      __builtin_popcountll(serving_.load(std::memory_order_acquire)));
  return c;
}

std::string ClusterStore::last_error() const {
  std::lock_guard<std::mutex> lock(map_mu_);
  if (!last_error_.empty()) return last_error_;
  const size_t count = node_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    std::string e = nodes_[i].store->last_error();
    if (!e.empty())
      return nodes_[i].host + ":" + std::to_string(nodes_[i].port) + ": " + e;
  }
  return "";
}

}  // namespace mxlimit::internal
