// -----------------------------------------------------------------------------
// File: replay/timeline.h
// -----------------------------------------------------------------------------
//
// `Timeline` counts a replay's requests per time bin, split by outcome
// (allowed, shadow-denied, denied), overall, per policy (with a fourth
// outcome: denied by another policy) and per limited client (denials, and
// apart from them shadow denials): the data behind `mxlimit replay
// --report`'s charts. Its memory is fixed at construction, whatever the
// length of the log.
//
// Bins: at most `kMaxBins`, each `bin_ms()` wide, aligned to multiples of the
// width since the Unix epoch (so tick labels fall on round times). The span
// of a streamed log is unknown until its end, so the width starts at 1 s and
// widens, through a chain of round widths each a multiple of the previous
// (1 s, 2 s, 10 s, 20 s, 1 min, 2 min, 10 min, 20 min, 1 h, 2 h, 6 h, 12 h,
// 1 d, then doubling), whenever a request falls past the last bin: the old
// bins merge exactly into the new, so no count is ever lost or split.
//
// Policies: the first `kMaxPolicies` policies that count a request get a
// series of their own; any later one counts in a shared "other" series.
//
// Limited clients: a Space-Saving sketch (`TopK`) of `client_counters`
// counters finds the clients with the most denials, and each counter keeps
// the series of the client that holds it. A client that takes over a counter
// starts an empty series, so the series of an entry from `TopClients` sums to
// exactly `count - error` (all of its denials when `error` is 0). A second
// sketch of the same size does the same for shadow denials: the clients a
// shadow-mode policy would have limited.
//
// PERFORMANCE: nothing allocates after construction. `Add` is O(1) except
// when the bins widen (O(rows * bins), at most a few dozen times per log);
// `AddLimitedClient` is the sketch's O(log m).
//
// Thread safety: none.
//
// Example:
//   mxlimit::replay::Timeline timeline(policies.size(), 1024);
//   timeline.Add(time_ms, Outcome::kDenied);
//   timeline.AddPolicy(policy_id, Outcome::kDenied);
//   timeline.AddLimitedClient("198.51.100.23");

#ifndef MXLIMIT_REPLAY_TIMELINE_H_
#define MXLIMIT_REPLAY_TIMELINE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "src/replay/top_k.h"

namespace mxlimit::replay {

// What happened to a request. A shadow-denied request was allowed (a
// shadow-mode policy would have denied it); kAllowed is every other allowed
// request, so the three first never overlap and add up to the requests.
// For one policy, a request has one of all four: the policy's own result
// (PolicyCounters: allowed is charged to it), kDeniedByOther when another
// policy stopped the request.
enum class Outcome : uint8_t {
  kAllowed = 0,
  kShadowDenied = 1,
  kDenied = 2,
  kDeniedByOther = 3
};
// A request's outcomes (the first three), and a policy's (all four).
inline constexpr size_t kOutcomes = 3;
inline constexpr size_t kPolicyOutcomes = 4;

class Timeline {
 public:
  static constexpr size_t kMaxBins = 600;
  static constexpr int64_t kMinBinMs = 1000;
  static constexpr size_t kMaxPolicies = 32;
  // The slot of the shared series of policies past kMaxPolicies.
  static constexpr size_t kOtherPolicies = kMaxPolicies;

  // `policies`: ids passed to AddPolicy are below it. `client_counters`: the
  // size of the limited-clients sketch; `shadow_client_counters` that of the
  // shadow one (0: none; shadow-limited clients are then not counted).
  // REQUIRES: client_counters >= 1.
  Timeline(size_t policies, size_t client_counters,
           size_t shadow_client_counters = 0);
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Counts one request at `time_ms` (Unix milliseconds) as `outcome`
  // (REQUIRES: not kDeniedByOther). Times should not decrease (the replay's
  // clock never does); one earlier than the first bin counts in the first
  // bin.
  void Add(int64_t time_ms, Outcome outcome);
  // The request of the last `Add` counts as `outcome` for policy `id` too.
  // An id out of range is ignored.
  void AddPolicy(uint32_t id, Outcome outcome);
  // The request of the last `Add` was denied to `client` (`outcome`
  // kDenied), or a shadow-mode policy would have denied it (kShadowDenied).
  void AddLimitedClient(std::string_view client,
                        Outcome outcome = Outcome::kDenied);

  // Bins in use (0 before the first Add), the width and the first's start.
  size_t bins() const { return bins_; }
  int64_t bin_ms() const { return bin_ms_; }
  int64_t origin_ms() const { return origin_ms_; }

  // Requests per bin (bins() values).
  std::span<const uint64_t> Series(Outcome outcome) const {
    return Row(static_cast<size_t>(outcome));
  }

  // Policies with a series of their own, in the order they first counted.
  size_t policy_slots() const { return policy_slots_; }
  uint32_t policy_of_slot(size_t slot) const { return slot_policy_[slot]; }
  // Some policy counted in the shared "other" series.
  bool has_other_policies() const { return has_other_; }
  // REQUIRES: slot < policy_slots(), or slot == kOtherPolicies.
  std::span<const uint64_t> PolicySeries(size_t slot, Outcome outcome) const {
    return Row(kOutcomes + slot * kPolicyOutcomes +
               static_cast<size_t>(outcome));
  }

  // The clients with the most denials (`outcome` kDenied) or shadow denials
  // (kShadowDenied) (as TopK::Top), and the denials per bin of one of them
  // (`entry.counter`) since it took its counter.
  std::vector<TopKEntry> TopClients(size_t n,
                                    Outcome outcome = Outcome::kDenied) const {
    if (outcome == Outcome::kShadowDenied && !shadow_clients_.has_value()) {
      return {};
    }
    return Clients(outcome).sketch.Top(n);
  }
  std::span<const uint64_t> ClientSeries(
      uint32_t counter, Outcome outcome = Outcome::kDenied) const {
    return Row(Clients(outcome).first_row + counter);
  }
  // When the client of `counter` took it (its first counted denial).
  int64_t ClientSinceMs(uint32_t counter,
                        Outcome outcome = Outcome::kDenied) const {
    return Clients(outcome).since_ms[counter];
  }

 private:
  std::span<const uint64_t> Row(size_t row) const {
    return {&counts_[row * kMaxBins], bins_};
  }
  uint64_t* MutableRow(size_t row) { return &counts_[row * kMaxBins]; }
  // Merges the bins into the next wider width.
  void Widen();

  // One sketch of limited clients and the rows of their series.
  struct ClientSketch {
    ClientSketch(size_t counters, size_t first_row)
        : sketch(counters), since_ms(counters), first_row(first_row) {}
    TopK sketch;
    std::vector<int64_t> since_ms;  // by counter
    size_t first_row;
  };
  // REQUIRES: the sketch exists.
  const ClientSketch& Clients(Outcome outcome) const {
    return outcome == Outcome::kShadowDenied ? *shadow_clients_ : clients_;
  }

  size_t rows_;
  std::vector<uint64_t> counts_;  // rows_ * kMaxBins, row-major
  int64_t bin_ms_ = kMinBinMs;
  int64_t origin_ms_ = 0;
  size_t bins_ = 0;
  size_t bin_ = 0;       // the bin of the last Add
  int64_t time_ms_ = 0;  // the time of the last Add

  static constexpr uint8_t kNoSlot = 0xFF;
  static_assert(kMaxPolicies < kNoSlot);
  std::vector<uint8_t> policy_slot_;   // by policy id
  std::vector<uint32_t> slot_policy_;  // by slot
  size_t policy_slots_ = 0;
  bool has_other_ = false;

  ClientSketch clients_;
  std::optional<ClientSketch> shadow_clients_;
};

}  // namespace mxlimit::replay

#endif  // MXLIMIT_REPLAY_TIMELINE_H_
