// The smallest useful embedding: one rate, one bucket, a caller-supplied clock.
// (The full Limiter example replaces this as the engine lands.)
#include <cstdio>

#include "mxlimit/rate.h"

int main() {
  absl::StatusOr<mxlimit::Rate> rate =
      mxlimit::Rate::Create(3, mxlimit::TimeUnit::kSecond, /*burst=*/2);
  if (!rate.ok()) return 1;
  mxlimit::GcraState bucket;
  const mxlimit::MonotonicTime start = mxlimit::MonotonicTime::FromNanoseconds(0);
  int allowed = 0;
  for (int i = 0; i < 5; ++i) {
    mxlimit::GcraResult r = mxlimit::GcraCheck(*rate, bucket, start);
    std::printf("request %d: %s (retry after %lld ms)\n", i,
                r.allowed ? "allowed" : "denied",
                static_cast<long long>(r.retry_after.count() / 1'000'000));
    allowed += r.allowed;
  }
  return allowed == 2 ? 0 : 1;
}
