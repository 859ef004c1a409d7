// `ClusterStore`: the `Store` over a Redis Cluster (`redis-cluster://`).
// One `RedisStore` (its own I/O thread and connections) per primary, and a
// slot map that says which primary serves each of the 16384 hash slots.
//
// An op's buckets are grouped by slot: bucket keys carry a hash tag of
// their subject (store_keys.h), so one address's buckets share a slot, one
// user's another. Each group is one mxl:1 script call on the primary that
// serves its slot; every group is sent before any is awaited, so the
// primaries work in parallel and one primary's groups share a pipelined
// write. A kCheck is all or nothing across groups: it is allowed when
// every group allowed, and a group that charged while another denied (or
// failed, or timed out) gets its charge back at once, a kCharge of -cost
// on the buckets it charged (the refund of a fallback). Between that
// group's charge and its refund, another check of those buckets sees them
// charged: the transient window docs/shared-state.md measures. To keep it
// rare, a check that names a bucket denied in the last second is peeked on
// every group first (one more round trip) and charged only when all have
// room: the checks likely to split are decided without charging anything.
//
// The slot map comes from CLUSTER SLOTS, asked of the primaries it knows
// (the seeds of the URL first) by a thread of its own every second, and at
// once after a MOVED reply or a primary that cannot be reached. A MOVED
// reply also points that slot at the named primary straight away, and the
// group is sent there once more; an ASK reply (a slot being migrated)
// sends it once to the named node behind ASKING. A primary that fails is
// unavailable to its groups (their checks fall back) until the cluster
// promotes its replica and the map names it.
//
// A slot newly served by a primary that served none before (a promoted
// replica, which may lack the last writes) raises the generation, as a
// restarted Redis does.
//
// Thread safety: as `Store`. Nothing allocates per op; the map thread
// allocates when the topology changes.
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_CLUSTER_STORE_H_
#define MXLIMIT_SHARED_REDIS_CLUSTER_STORE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "mxlimit/options.h"
#include "src/options/store_url.h"
#include "src/shared/redis/cluster_slots.h"
#include "src/shared/redis/redis_connection.h"
#include "src/shared/redis/redis_store.h"
#include "src/shared/store.h"

namespace mxlimit::internal {

class ClusterStore final : public Store, private LateReplyHandler {
 public:
  // Parses `options.url` (redis-cluster://) and starts asking the seeds
  // for the slot map; reads `connections` and `max_in_flight` too, per
  // primary. InvalidArgument naming the field for a bad value; the cluster
  // being unreachable is not an error.
  static absl::StatusOr<std::unique_ptr<ClusterStore>> Create(
      const StoreOptions& options);

  // Stops the map thread and every primary's store. REQUIRES: no Execute
  // or Post running.
  ~ClusterStore() override;
  ClusterStore(const ClusterStore&) = delete;
  ClusterStore& operator=(const ClusterStore&) = delete;

  StoreResult Execute(const StoreOp& op,
                      std::chrono::steady_clock::time_point deadline) override;
  void ExecuteBatch(std::span<const StoreOp> ops,
                    std::chrono::steady_clock::time_point deadline,
                    std::span<StoreResult> results) override;
  bool Post(const StoreOp& op) override;
  uint64_t generation() const override;
  StoreCounters counters() const override;
  void SetLateReplyHandler(LateReplyHandler* handler) override {
    late_handler_.store(handler, std::memory_order_release);
  }

  // What the cluster path did, beyond StoreCounters.
  struct ClusterCounters {
    // Slot groups sent (an op sends one per slot it touches).
    uint64_t groups = 0;
    // MOVED and ASK replies followed.
    uint64_t moved = 0;
    uint64_t asked = 0;
    // Checks that charged some groups and gave the charge back because
    // another group denied or failed.
    uint64_t partial_refunds = 0;
    // Checks on a hot bucket that were peeked first, and of those the ones
    // the peek denied (nothing charged anywhere).
    uint64_t peeked = 0;
    uint64_t peek_denied = 0;
    // Slot maps installed, and primaries known.
    uint64_t map_refreshes = 0;
    size_t primaries = 0;
  };
  ClusterCounters cluster_counters() const;

  // Why the last map refresh or connection failed ("" if none did).
  std::string last_error() const;

  // Whether every slot has a primary: a map has been read and covers the
  // whole key space.
  bool covered() const { return covered_.load(std::memory_order_acquire); }

  // Which primary serves `slot`, asking each seed of `endpoint` (a
  // redis-cluster:// endpoint) in turn, all by `deadline`: for a caller
  // that connects rarely (mxlimitd's runtime tiers).
  static absl::StatusOr<StoreEndpoint::HostPort> AskOnce(
      const StoreEndpoint& endpoint, uint16_t slot,
      std::chrono::steady_clock::time_point deadline);

  // Primaries (and nodes named by redirects) a store is kept for, at most.
  static constexpr size_t kMaxNodes = 64;

 private:
  // A node's index in nodes_, or kNoNode.
  static constexpr uint8_t kNoNode = 0xFF;
  struct Node {
    std::string host;
    int port = 0;
    std::unique_ptr<RedisStore> store;
  };
  // One slot's buckets of an op, and where its script call went.
  struct Group {
    uint16_t slot = 0;
    uint8_t node = kNoNode;
    uint8_t count = 0;
    // Sent behind ASKING (an ASK followed): a refund goes the same way.
    bool asking = false;
    uint32_t ticket = RedisStore::kNoTicket;
    std::array<uint8_t, kMaxStoreBuckets> index{};
    StoreResult result;
  };
  struct Pending {
    uint8_t groups = 0;
    std::array<Group, kMaxStoreBuckets> group;
  };

  ClusterStore(StoreEndpoint endpoint, const StoreOptions& options);

  // Splits `op` into slot groups; sends each group; both.
  static void Split(const StoreOp& op, Pending& p);
  void SendAll(const StoreOp& op, Pending& p);
  void Begin(const StoreOp& op, Pending& p);
  // Awaits every group, follows redirects, and merges the answers (and
  // refunds a check's partial charges).
  StoreResult Complete(const StoreOp& op, Pending& p,
                       std::chrono::steady_clock::time_point deadline);
  // The op of `g`'s buckets, as sent.
  static void GroupOp(const StoreOp& op, const Group& g, StoreOp& out);
  // Sends `g` to node `node`; false when that node cannot take it.
  bool Send(const StoreOp& op, Group& g, uint8_t node, bool asking);
  void Await(const StoreOp& op, Group& g,
             std::chrono::steady_clock::time_point deadline);
  void RefundPartial(const StoreOp& op, const Pending& p,
                     const StoreResult& merged);
  // ops_ok and the like, by the status an op returned.
  void CountOutcome(StoreStatus status);
  // A kCheck of several groups: with a hot bucket, a peek of every group
  // first, and the check only when all allowed.
  StoreResult Check(const StoreOp& op,
                    std::chrono::steady_clock::time_point deadline);
  // Hot buckets: ones a check was denied on in the last second, in a lossy
  // table of kHotEntries (a 24-bit tag and an expiry in milliseconds each).
  bool AnyHot(const StoreOp& op, int64_t now_ms) const;
  void MarkHot(const StoreOp& op, const StoreResult& r, int64_t now_ms);

  // kNoNode when no node at that address is known.
  uint8_t FindNode(std::string_view host, int port) const;
  RedisStore* NodeStore(uint8_t node) const;

  // The map thread (cluster_map.cc).
  void RunMap();
  // One refresh: the first node that answers CLUSTER SLOTS; false when
  // none did.
  bool RefreshMap();
  void Install(const std::vector<SlotRange>& ranges);
  // Under map_mu_ not needed: only the map thread adds nodes.
  uint8_t AddNode(const std::string& host, int port);
  void RefreshSoon();
  // A redirect named a node the map does not know (a primary that is
  // taking its first slots): the map thread adds it.
  void WantNode(std::string_view host, int port);

  void OnLateReply(const StoreOp& op, const StoreResult& result) override;

  const StoreEndpoint endpoint_;
  const StoreOptions options_;

  std::array<std::atomic<uint8_t>, kClusterSlots> slot_node_;
  // Written by the map thread before node_count_ is raised past them, and
  // never changed after: readers take node_count_ with acquire.
  std::array<Node, kMaxNodes> nodes_;
  std::atomic<size_t> node_count_{0};
  // Bit i: node i serves a slot in the current map.
  std::atomic<uint64_t> serving_{0};
  std::atomic<uint64_t> failovers_{0};
  // Set by Install: the map names a primary for every slot.
  std::atomic<bool> covered_{false};

  static constexpr size_t kHotEntries = 4096;
  std::array<std::atomic<uint64_t>, kHotEntries> hot_{};

  std::atomic<LateReplyHandler*> late_handler_{nullptr};
  std::atomic<uint64_t> ok_{0}, timeout_{0}, error_{0}, unavailable_{0};
  std::atomic<uint64_t> groups_{0}, moved_{0}, asked_{0}, partial_refunds_{0},
      map_refreshes_{0}, peeked_{0}, peek_denied_{0};

  // The map thread's own: a connection to the node that answered last.
  std::unique_ptr<RedisConnection> map_connection_;
  StoreEndpoint::HostPort map_node_;

  mutable std::mutex map_mu_;
  std::condition_variable map_wake_;
  bool refresh_ = false;
  std::vector<StoreEndpoint::HostPort> wanted_;
  bool stop_ = false;
  std::string last_error_;
  std::thread map_thread_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_CLUSTER_STORE_H_
