// Links mxlimit::redis from the installed package: a SharedLimiter with no
// store is a ShardedLimiter, and one over an unreachable store still
// decides (falling back), without waiting.
#include <cstdio>

#include "mxlimit/shared_limiter.h"

int main() {
  mxlimit::LimiterConfig config;
  config.store.url = "redis://127.0.0.1:1/0";
  config.store.key_secret = "packaging-test-secret";
  auto limiter = mxlimit::SharedLimiter::Create(config, 1);
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(limiter.status().message()).c_str());
    return 1;
  }
  mxlimit::Request r;
  r.method = "POST";
  r.target = "/_matrix/client/v3/login";
  const mxlimit::Decision d =
      (*limiter)->Check(r, mxlimit::MonotonicTime::FromNanoseconds(1));
  std::printf("shared_consumer: allowed=%d store=%d\n", d.allowed ? 1 : 0,
              (*limiter)->has_store() ? 1 : 0);
  return d.allowed ? 0 : 1;
}
