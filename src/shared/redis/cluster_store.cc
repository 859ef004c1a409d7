#include "src/shared/redis/cluster_store.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/shared/store_ops.h"

namespace mxlimit::internal {
namespace {

using Clock = std::chrono::steady_clock;

// The map is read again this often, and at most this often on demand.
constexpr std::chrono::milliseconds kMapPoll(1000);
constexpr std::chrono::milliseconds kMapMinGap(100);
// A node that does not answer CLUSTER SLOTS within this is passed over.
constexpr std::chrono::milliseconds kMapTimeout(300);

// A node of the cluster, with the URL's credentials.
StoreEndpoint NodeEndpoint(const StoreEndpoint& cluster,
                           const StoreEndpoint::HostPort& node) {
  StoreEndpoint e;
  e.host = node.host;
  e.port = node.port;
  e.user = cluster.user;
  e.password = cluster.password;
  return e;
}

// CLUSTER SLOTS on `c`, a connection to `host`.
absl::StatusOr<std::vector<SlotRange>> ReadSlots(RedisConnection& c,
                                                 const std::string& host,
                                                 Clock::time_point deadline) {
  absl::StatusOr<std::vector<RedisReplyPtr>> replies =
      c.Run({{"CLUSTER", "SLOTS"}}, deadline);
  if (!replies.ok()) return replies.status();
  return ParseClusterSlots(*(*replies)[0], host);
}

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
    if (Clock::now() >= deadline || !Send(op, g, target, r.ask)) {
      g.result = StoreResult{};
      g.result.status = Clock::now() >= deadline ? StoreStatus::kTimeout
                                                 : StoreStatus::kError;
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

// 64 bits of a bucket key's digest (the bytes after "mxl:1:s:").
uint64_t KeyBits(const StoreKey& k) {
  uint64_t h = 0;
  const size_t from = k.size > 16 ? 8 : 0;
  std::memcpy(&h, k.bytes.data() + from, std::min<size_t>(8, k.size - from));
  return h * 0x9E3779B97F4A7C15ULL;
}

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
  (result.status == StoreStatus::kOk        ? ok_
   : result.status == StoreStatus::kTimeout ? timeout_
   : result.status == StoreStatus::kError   ? error_
                                            : unavailable_)
      .fetch_add(1, std::memory_order_relaxed);
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
      (r.status == StoreStatus::kOk        ? ok_
       : r.status == StoreStatus::kTimeout ? timeout_
       : r.status == StoreStatus::kError   ? error_
                                           : unavailable_)
          .fetch_add(1, std::memory_order_relaxed);
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

bool ClusterStore::covered() const {
  for (const std::atomic<uint8_t>& n : slot_node_) {
    if (n.load(std::memory_order_relaxed) == kNoNode) return false;
  }
  return true;
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

// --- The slot map -----------------------------------------------------------

absl::StatusOr<StoreEndpoint::HostPort> ClusterStore::AskOnce(
    const StoreEndpoint& endpoint, uint16_t slot, Clock::time_point deadline) {
  std::string errors;
  for (const StoreEndpoint::HostPort& seed : endpoint.cluster_nodes) {
    absl::StatusOr<std::unique_ptr<RedisConnection>> c =
        RedisConnection::Connect(NodeEndpoint(endpoint, seed), nullptr,
                                 deadline);
    absl::StatusOr<std::vector<SlotRange>> ranges =
        c.ok() ? ReadSlots(**c, seed.host, deadline)
               : absl::StatusOr<std::vector<SlotRange>>(c.status());
    if (ranges.ok()) {
      for (const SlotRange& r : *ranges) {
        if (slot >= r.first && slot <= r.last) {
          return StoreEndpoint::HostPort{r.host, r.port};
        }
      }
      return absl::UnavailableError(
          absl::StrCat("no primary serves slot ", slot));
    }
    absl::StrAppend(&errors, errors.empty() ? "" : "; ", seed.host, ":",
                    seed.port, ": ", ranges.status().message());
  }
  return absl::UnavailableError("no cluster node answered CLUSTER SLOTS: " +
                                errors);
}

void ClusterStore::RefreshSoon() {
  {
    std::lock_guard<std::mutex> lock(map_mu_);
    if (refresh_) return;
    refresh_ = true;
  }
  map_wake_.notify_all();
}

void ClusterStore::WantNode(std::string_view host, int port) {
  {
    std::lock_guard<std::mutex> lock(map_mu_);
    if (wanted_.size() < 4) wanted_.push_back({std::string(host), port});
    refresh_ = true;
  }
  map_wake_.notify_all();
}

void ClusterStore::RunMap() {
  for (;;) {
    RefreshMap();
    std::unique_lock<std::mutex> lock(map_mu_);
    // A short gap even when asked at once: a burst of MOVED replies or of
    // checks to a dead primary costs one refresh per gap.
    map_wake_.wait_for(lock, kMapMinGap, [this] { return stop_; });
    if (stop_) return;
    map_wake_.wait_for(lock, kMapPoll - kMapMinGap,
                       [this] { return stop_ || refresh_; });
    if (stop_) return;
    refresh_ = false;
  }
}

bool ClusterStore::RefreshMap() {
  std::vector<StoreEndpoint::HostPort> wanted;
  {
    std::lock_guard<std::mutex> lock(map_mu_);
    wanted.swap(wanted_);
  }
  for (const StoreEndpoint::HostPort& n : wanted) AddNode(n.host, n.port);
  // Whom to ask: the node that answered last, the primaries of the map,
  // then the seeds.
  std::vector<StoreEndpoint::HostPort> ask;
  if (map_connection_ != nullptr) ask.push_back(map_node_);
  const size_t count = node_count_.load(std::memory_order_acquire);
  const uint64_t serving = serving_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    if ((serving >> i & 1) != 0) {
      ask.push_back({nodes_[i].host, nodes_[i].port});
    }
  }
  ask.insert(ask.end(), endpoint_.cluster_nodes.begin(),
             endpoint_.cluster_nodes.end());
  std::string errors;
  for (size_t k = 0; k < ask.size(); ++k) {
    {
      std::lock_guard<std::mutex> lock(map_mu_);
      if (stop_) return false;
    }
    const StoreEndpoint::HostPort& node = ask[k];
    const auto deadline = Clock::now() + kMapTimeout;
    if (map_connection_ == nullptr || map_connection_->broken() || k > 0) {
      map_connection_.reset();
      absl::StatusOr<std::unique_ptr<RedisConnection>> c =
          RedisConnection::Connect(NodeEndpoint(endpoint_, node), nullptr,
                                   deadline);
      if (!c.ok()) {
        absl::StrAppend(&errors, errors.empty() ? "" : "; ", node.host, ":",
                        node.port, ": ", c.status().message());
        continue;
      }
      map_connection_ = *std::move(c);
    }
    absl::StatusOr<std::vector<SlotRange>> ranges =
        ReadSlots(*map_connection_, node.host, deadline);
    if (!ranges.ok()) {
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", node.host, ":",
                      node.port, ": ", ranges.status().message());
      map_connection_.reset();
      continue;
    }
    Install(*ranges);
    map_node_ = node;  // Asked first next time, on this connection.
    std::lock_guard<std::mutex> lock(map_mu_);
    last_error_.clear();
    return true;
  }
  std::lock_guard<std::mutex> lock(map_mu_);
  last_error_ = "no cluster node answered CLUSTER SLOTS: " + errors;
  return false;
}

uint8_t ClusterStore::AddNode(const std::string& host, int port) {
  const uint8_t found = FindNode(host, port);
  if (found != kNoNode) return found;
  const size_t index = node_count_.load(std::memory_order_relaxed);
  if (index == kMaxNodes) {
    // Nodes are never forgotten (callers hold their indices without a
    // lock): a cluster whose addresses churn past this needs a restart.
    std::lock_guard<std::mutex> lock(map_mu_);
    last_error_ = absl::StrCat("more than ", kMaxNodes,
                               " cluster nodes named; not using ", host, ":",
                               port, " (restart to forget old addresses)");
    return kNoNode;
  }
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::CreateAt(
      NodeEndpoint(endpoint_, {host, port}), options_, nullptr);
  if (!store.ok()) {
    std::lock_guard<std::mutex> lock(map_mu_);
    last_error_ = absl::StrCat(host, ":", port, ": ", store.status().message());
    return kNoNode;
  }
  (*store)->SetLateReplyHandler(this);
  nodes_[index].host = host;
  nodes_[index].port = port;
  nodes_[index].store = *std::move(store);
  node_count_.store(index + 1, std::memory_order_release);
  return static_cast<uint8_t>(index);
}

void ClusterStore::Install(const std::vector<SlotRange>& ranges) {
  const uint64_t before = serving_.load(std::memory_order_acquire);
  uint64_t serving = 0;
  std::array<uint8_t, kClusterSlots> next;
  next.fill(kNoNode);
  for (const SlotRange& r : ranges) {
    const uint8_t node = AddNode(r.host, r.port);
    if (node == kNoNode) continue;
    serving |= uint64_t{1} << node;
    for (size_t s = r.first; s <= r.last; ++s) next[s] = node;
  }
  bool failover = false;
  for (size_t s = 0; s < kClusterSlots; ++s) {
    const uint8_t old = slot_node_[s].load(std::memory_order_relaxed);
    // A slot that moves to a node that served nothing before: a promoted
    // replica (or a new primary), which may not hold every write.
    if (old != kNoNode && next[s] != kNoNode && old != next[s] &&
        (before >> next[s] & 1) == 0) {
      failover = true;
    }
    slot_node_[s].store(next[s], std::memory_order_relaxed);
  }
  serving_.store(serving, std::memory_order_release);
  if (failover) failovers_.fetch_add(1, std::memory_order_acq_rel);
  map_refreshes_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace mxlimit::internal
