// ClusterStore's slot map (cluster_store.h): the map thread, which reads
// CLUSTER SLOTS and keeps a store per primary, and the one-off question
// mxlimitd's tier connection asks.

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/shared/redis/cluster_slots.h"
#include "src/shared/redis/cluster_store.h"
#include "src/shared/redis/redis_connection.h"

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

// Adds "HOST:PORT: why" to `errors`, the nodes' failures joined by "; ".
void AppendNodeError(const StoreEndpoint::HostPort& node, absl::string_view why,
                     std::string& errors) {
  absl::StrAppend(&errors, errors.empty() ? "" : "; ", node.host, ":",
                  node.port, ": ", why);
}

}  // namespace

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
    AppendNodeError(seed, ranges.status().message(), errors);
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
        AppendNodeError(node, c.status().message(), errors);
        continue;
      }
      map_connection_ = *std::move(c);
    }
    absl::StatusOr<std::vector<SlotRange>> ranges =
        ReadSlots(*map_connection_, node.host, deadline);
    if (!ranges.ok()) {
      AppendNodeError(node, ranges.status().message(), errors);
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
  bool covered = true;
  for (size_t s = 0; s < kClusterSlots; ++s) {
    if (next[s] == kNoNode) covered = false;
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
  covered_.store(covered, std::memory_order_release);
  if (failover) failovers_.fetch_add(1, std::memory_order_acq_rel);
  map_refreshes_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace mxlimit::internal
