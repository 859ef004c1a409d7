#include "src/replay/timeline.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>

namespace mxlimit::replay {
namespace {

// The widths bins go through, each a multiple of the one before so that
// widening merges whole bins; round numbers so that a bin starts on a round
// time. Past the last, the width doubles (it cannot overflow: 2^64 ms over
// kMaxBins bins needs under 2^55 ms per bin).
constexpr std::array<int64_t, 13> kWidthsMs = {
    1'000,      2'000,      10'000,     20'000,    60'000,
    120'000,    600'000,    1'200'000,  3'600'000, 7'200'000,
    21'600'000, 43'200'000, 86'400'000,
};

int64_t NextWidth(int64_t width) {
  for (int64_t w : kWidthsMs) {
    if (w > width) return w;
  }
  return width * 2;
}

// Rounds toward minus infinity (logs before 1970 are unlikely, but a tsv
// log's TIME_MS is any integer).
int64_t FloorTo(int64_t t, int64_t width) {
  int64_t q = t / width;
  if (t % width != 0 && t < 0) --q;
  return q * width;
}

// Distance from `from` to `to`, REQUIRES: from <= to. Unsigned, because the
// difference of two int64 may not fit in one.
uint64_t Distance(int64_t from, int64_t to) {
  return static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
}

}  // namespace

// Rows: the kOutcomes of all requests, kPolicyOutcomes per policy slot (the
// "other" slot included), then each sketch's clients.
constexpr size_t kClientRows =
    kOutcomes + (Timeline::kMaxPolicies + 1) * kPolicyOutcomes;

Timeline::Timeline(size_t policies, size_t client_counters,
                   size_t shadow_client_counters)
    : rows_(kClientRows + client_counters + shadow_client_counters),
      counts_(rows_ * kMaxBins),
      policy_slot_(policies, kNoSlot),
      slot_policy_(kMaxPolicies),
      clients_(client_counters, kClientRows) {
  assert(client_counters >= 1);
  if (shadow_client_counters > 0) {
    shadow_clients_.emplace(shadow_client_counters,
                            kClientRows + client_counters);
  }
}

void Timeline::Add(int64_t time_ms, Outcome outcome) {
  assert(static_cast<size_t>(outcome) < kOutcomes);
  if (bins_ == 0) origin_ms_ = FloorTo(time_ms, bin_ms_);
  time_ms = std::max(time_ms, origin_ms_);
  while (Distance(origin_ms_, time_ms) / static_cast<uint64_t>(bin_ms_) >=
         kMaxBins) {
    Widen();
  }
  time_ms_ = time_ms;
  bin_ = Distance(origin_ms_, time_ms) / static_cast<uint64_t>(bin_ms_);
  bins_ = std::max(bins_, bin_ + 1);
  ++MutableRow(static_cast<size_t>(outcome))[bin_];
}

void Timeline::AddPolicy(uint32_t id, Outcome outcome) {
  if (id >= policy_slot_.size()) return;
  uint8_t& slot = policy_slot_[id];
  if (slot == kNoSlot) {
    if (policy_slots_ < kMaxPolicies) {
      slot_policy_[policy_slots_] = id;
      slot = static_cast<uint8_t>(policy_slots_++);
    } else {
      slot = static_cast<uint8_t>(kOtherPolicies);
      has_other_ = true;
    }
  }
  const size_t row =
      kOutcomes + slot * kPolicyOutcomes + static_cast<size_t>(outcome);
  ++MutableRow(row)[bin_];
}

void Timeline::AddLimitedClient(std::string_view client, Outcome outcome) {
  const bool shadow = outcome == Outcome::kShadowDenied;
  if (shadow && !shadow_clients_.has_value()) return;
  ClientSketch& clients = shadow ? *shadow_clients_ : clients_;
  const TopK::Slot slot = clients.sketch.Add(client);
  uint64_t* row = MutableRow(clients.first_row + slot.counter);
  if (slot.new_item) {
    // The counter's previous client is gone: its series with it.
    std::memset(row, 0, sizeof(uint64_t) * bins_);
    clients.since_ms[slot.counter] = time_ms_;
  }
  ++row[bin_];
}

void Timeline::Widen() {
  const int64_t width = NextWidth(bin_ms_);
  const int64_t origin = FloorTo(origin_ms_, width);
  const uint64_t shift = Distance(origin, origin_ms_);
  const auto old_width = static_cast<uint64_t>(bin_ms_);
  const auto new_width = static_cast<uint64_t>(width);
  // Old bin i lands in new bin j <= i (the new origin is at most one new bin
  // earlier), so one pass from the left merges in place.
  for (size_t r = 0; r < rows_; ++r) {
    uint64_t* row = MutableRow(r);
    for (size_t i = 1; i < bins_; ++i) {
      const size_t j = (shift + i * old_width) / new_width;
      if (j == i) continue;
      row[j] += row[i];
      row[i] = 0;
    }
  }
  if (bins_ > 0) bins_ = (shift + (bins_ - 1) * old_width) / new_width + 1;
  bin_ = (shift + bin_ * old_width) / new_width;
  origin_ms_ = origin;
  bin_ms_ = width;
}

}  // namespace mxlimit::replay
