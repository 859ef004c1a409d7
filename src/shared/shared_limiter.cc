#include "mxlimit/shared_limiter.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/shared/shared_core.h"
#include "src/shared/store_factory.h"
#include "src/shared/store_ops.h"

namespace mxlimit {

namespace {

// The store runs the GCRA in Lua numbers, exact below 2^53 nanoseconds of
// lead (store_ops.h): a policy whose buckets could lead further cannot be
// shared.
absl::Status CheckShareable(const LimiterConfig& config) {
  std::vector<Policy> all = config.policies;
  if (config.builtin_policies) {
    for (Policy& p : BuiltinPolicies()) all.push_back(std::move(p));
  }
  for (const Policy& p : all) {
    // Byte costs and charges on the response stay in process.
    if (p.sharing == Sharing::kLocal || p.cost != CostKind::kRequests ||
        ChargedOnResponse(p)) {
      continue;
    }

    if (p.rate.kind() != Rate::Kind::kLimited) continue;
    if (internal::MaxStoreLead(p.rate, p.sharing) >
        internal::kMaxSharedLeadNs) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy \"", p.name,
          "\": sharing: ", internal::ToAbsl(SharingName(p.sharing)),
          p.sharing == Sharing::kApproximate
              ? " needs 17 * burst * (unit / requests_per_unit) under 104 "
                "days (the store keeps up to 16 bursts of debt, in exact "
                "53-bit numbers); got "
              : " needs burst * (unit / requests_per_unit) under 104 days "
                "(the store computes in exact 53-bit numbers); got ",
          p.rate.ToString(), ". Set sharing: local, or a smaller burst"));
    }
  }
  return absl::OkStatus();
}

// A duration as the config file spells it: "5ms", "250us", "1s".
std::string DurationText(std::chrono::microseconds d) {
  const int64_t us = d.count();
  if (us != 0 && us % 1'000'000 == 0) return absl::StrCat(us / 1'000'000, "s");
  if (us != 0 && us % 1000 == 0) return absl::StrCat(us / 1000, "ms");
  return absl::StrCat(us, "us");
}

// Stands in for the store where only keys are wanted (DescribeStoreKeys on
// a config): never asked, so it never connects anywhere.
class KeysOnlyStore final : public internal::Store {
 public:
  internal::StoreResult Execute(
      const internal::StoreOp&,
      std::chrono::steady_clock::time_point) override {
    return internal::StoreResult{};  // kUnavailable
  }
  bool Post(const internal::StoreOp&) override { return false; }
  uint64_t generation() const override { return 0; }
  internal::StoreCounters counters() const override { return {}; }
  void SetLateReplyHandler(internal::LateReplyHandler*) override {}
};

}  // namespace

absl::StatusOr<std::vector<std::string>> SharedLimiter::DescribeStoreKeys(
    const LimiterConfig& config, const Request& request) {
  if (config.store.url.empty()) return std::vector<std::string>();
  // One shard: the keys do not depend on the shard count.
  absl::StatusOr<std::unique_ptr<SharedLimiter>> limiter =
      CreateWithStore(config, std::make_unique<KeysOnlyStore>(), 1);
  if (!limiter.ok()) return limiter.status();
  return (*limiter)->DescribeStoreKeys(request);
}

absl::Status SharedLimiter::ValidateSharing(const LimiterConfig& config) {
  if (config.store.url.empty()) return absl::OkStatus();
  absl::Status valid = ValidateStoreOptions(config.store);
  if (!valid.ok()) return valid;
  return CheckShareable(config);
}

SharedLimiter::SharedLimiter(std::unique_ptr<ShardedLimiter> mirror,
                             std::unique_ptr<internal::SharedCore> core)
    : mirror_(std::move(mirror)), core_(std::move(core)) {}

SharedLimiter::~SharedLimiter() = default;

absl::StatusOr<std::unique_ptr<SharedLimiter>> SharedLimiter::Create(
    const LimiterConfig& config, size_t shards) {
  if (config.store.url.empty()) {
    return CreateWithStore(config, nullptr, shards);
  }
  absl::Status valid = ValidateStoreOptions(config.store);
  if (!valid.ok()) return valid;
  absl::StatusOr<std::unique_ptr<internal::Store>> store =
      internal::MakeStore(config.store);
  if (!store.ok()) return store.status();
  return CreateWithStore(config, *std::move(store), shards);
}

absl::StatusOr<std::unique_ptr<SharedLimiter>> SharedLimiter::CreateWithStore(
    const LimiterConfig& config, std::unique_ptr<internal::Store> store,
    size_t shards) {
  if (store != nullptr) {
    absl::Status valid = ValidateStoreOptions(config.store);
    if (!valid.ok()) return valid;
    absl::Status shareable = CheckShareable(config);
    if (!shareable.ok()) return shareable;
  }
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> mirror =
      ShardedLimiter::Create(config, shards);
  if (!mirror.ok()) return mirror.status();
  std::unique_ptr<internal::SharedCore> core;
  if (store != nullptr) {
    core = std::make_unique<internal::SharedCore>(
        *(*mirror)->set_, std::move(store), config.store);
  }
  return std::unique_ptr<SharedLimiter>(
      new SharedLimiter(*std::move(mirror), std::move(core)));
}

bool SharedLimiter::has_store() const { return core_ != nullptr; }

void SharedLimiter::SyncNow(MonotonicTime now) {
  if (core_ != nullptr) core_->SyncNow(now);
}

Decision SharedLimiter::Check(const Request& request, MonotonicTime now) {
  if (core_ == nullptr) return mirror_->Check(request, now);
  return core_->Check(request, now);
}

Decision SharedLimiter::Peek(const Request& request, MonotonicTime now) const {
  if (core_ == nullptr) return mirror_->Peek(request, now);
  return core_->Peek(request, now);
}

void SharedLimiter::Release(const Leases& leases, MonotonicTime now) {
  mirror_->Release(leases, now);
}

void SharedLimiter::Charge(const Request& request, MonotonicTime now) {
  if (core_ == nullptr) return mirror_->Charge(request, now);
  core_->Charge(request, now);
}

void SharedLimiter::Settle(const Request& request, const Completion& completion,
                           MonotonicTime now) {
  mirror_->Settle(request, completion, now);
}

absl::Status SharedLimiter::CheckStoreReload(const StoreOptions* running,
                                             const StoreOptions& next) {
  if (running == nullptr) {
    if (next.url.empty()) return absl::OkStatus();
    return absl::FailedPreconditionError(
        "store.url: this process started without a store; restart to use "
        "one (the old policies stay in force)");
  }
  const StoreOptions& was = *running;
  std::string changes;
  auto changed = [&](std::string_view field, std::string_view in_force,
                     std::string_view wanted) {
    absl::StrAppend(&changes, changes.empty() ? "" : "; ",
                    internal::ToAbsl(field), " ", internal::ToAbsl(in_force),
                    " in force, ", internal::ToAbsl(wanted),
                    " in the new config");
  };
  if (was.url != next.url) {
    changed("store.url", RedactStoreUrl(was.url),
            next.url.empty() ? "none" : RedactStoreUrl(next.url));
  }
  auto path = [&](std::string_view field, const std::string& in_force,
                  const std::string& wanted) {
    if (in_force != wanted) {
      changed(field, in_force.empty() ? "none" : in_force,
              wanted.empty() ? "none" : wanted);
    }
  };
  path("store.tls.ca_file", was.tls.ca_file, next.tls.ca_file);
  path("store.tls.cert_file", was.tls.cert_file, next.tls.cert_file);
  path("store.tls.key_file", was.tls.key_file, next.tls.key_file);
  if (was.key_secret != next.key_secret) {
    // Never the secret, nor its length.
    absl::StrAppend(&changes, changes.empty() ? "" : "; ",
                    "store.key_secret differs");
  }
  auto number = [&](std::string_view field, auto in_force, auto wanted,
                    std::string_view unit) {
    if (in_force == wanted) return;
    changed(field, absl::StrCat(in_force, internal::ToAbsl(unit)),
            absl::StrCat(wanted, internal::ToAbsl(unit)));
  };
  auto duration = [&](std::string_view field, std::chrono::microseconds a,
                      std::chrono::microseconds b) {
    if (a != b) changed(field, DurationText(a), DurationText(b));
  };
  duration("store.timeout", was.timeout, next.timeout);
  duration("store.sync_interval", was.sync_interval, next.sync_interval);
  number("store.fallback_share", was.fallback_share, next.fallback_share, "");
  number("store.connections", was.connections, next.connections, "");
  number("store.max_in_flight", was.max_in_flight, next.max_in_flight, "");
  auto clock = [](StoreOptions::Clock c) {
    return c == StoreOptions::Clock::kStore ? "store" : "caller";
  };
  if (was.clock != next.clock) {
    changed("store.clock", clock(was.clock), clock(next.clock));
  }
  if (was.local_denial != next.local_denial) {
    changed("store.local_denial", was.local_denial ? "true" : "false",
            next.local_denial ? "true" : "false");
  }
  if (changes.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "store: the store section is fixed at start-up; restart to change it "
      "(the old policies and store stay in force): ",
      changes));
}

absl::Status SharedLimiter::Reload(const LimiterConfig& config) {
  absl::Status store = CheckStoreReload(
      core_ != nullptr ? &core_->options() : nullptr, config.store);
  if (!store.ok()) return store;
  if (core_ != nullptr) {
    absl::Status shareable = CheckShareable(config);
    if (!shareable.ok()) return shareable;
  }
  absl::Status reloaded = mirror_->Reload(config);
  if (reloaded.ok() && core_ != nullptr) core_->DropPending();
  return reloaded;
}

LimiterStats SharedLimiter::Stats() const { return mirror_->Stats(); }

SharedStoreStats SharedLimiter::StoreStats() const {
  if (core_ == nullptr) return SharedStoreStats{};
  return core_->Stats();
}

std::vector<std::string> SharedLimiter::DescribeStoreKeys(
    const Request& request) const {
  if (core_ == nullptr) return {};
  return core_->DescribeStoreKeys(request);
}

}  // namespace mxlimit
