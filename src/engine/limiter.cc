#include "mxlimit/limiter.h"

#include <utility>

#include "src/engine/engine.h"

namespace mxlimit {

Limiter::Limiter(std::unique_ptr<internal::Engine> engine)
    : engine_(std::move(engine)) {}

Limiter::~Limiter() = default;

absl::StatusOr<std::unique_ptr<Limiter>> Limiter::Create(
    const LimiterConfig& config) {
  absl::StatusOr<std::unique_ptr<internal::Engine>> engine =
      internal::Engine::Create(config);
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<Limiter>(new Limiter(*std::move(engine)));
}

Decision Limiter::Check(const Request& request, MonotonicTime now) {
  return engine_->Check(request, now);
}

Decision Limiter::Peek(const Request& request, MonotonicTime now) const {
  return engine_->Peek(request, now);
}

void Limiter::Release(const Leases& leases, MonotonicTime now) {
  engine_->Release({leases.begin(), leases.end()}, now);
}

void Limiter::Charge(const Request& request, MonotonicTime now) {
  engine_->Charge(request, now);
}

void Limiter::Settle(const Request& request, const Completion& completion,
                     MonotonicTime now) {
  engine_->ChargeScopes(request, now, internal::Engine::kBothScopes,
                        &completion);
}

absl::Status Limiter::Reload(const LimiterConfig& config) {
  return engine_->Reload(config);
}

LimiterStats Limiter::Stats() const { return engine_->Stats(); }

std::span<const PolicyCounters> Limiter::PolicyCounts() const {
  return engine_->policy_counters();
}

const RouteNormalizer& Limiter::normalizer() const {
  return engine_->normalizer();
}

const PolicySet& Limiter::policies() const { return engine_->policies(); }

const TableOptions& Limiter::table_options() const {
  return engine_->table_options();
}

std::vector<std::string> Limiter::DescribeBuckets(
    const Request& request) const {
  return engine_->DescribeBuckets(request);
}

}  // namespace mxlimit
