// The smallest real embedding: a Limiter built from one operator policy (plus
// the built-ins), requests checked against a caller-supplied clock, and a
// denial turned into the pieces of a 429 answer. Exits non-zero if the
// limiter does not decide as expected (CI runs it).
#include <cstdio>

#include "mxlimit/limiter.h"
#include "mxlimit/matrix_response.h"

int main() {
  mxlimit::LimiterConfig config;  // the built-in policies stay on
  mxlimit::Policy login;
  login.name = "login";
  login.match = {"/_matrix/client/v3/login"};
  login.scope = mxlimit::Scope::kIp;
  login.rate =
      *mxlimit::Rate::Create(3, mxlimit::TimeUnit::kMinute, /*burst=*/2);
  config.policies.push_back(login);
  absl::StatusOr<std::unique_ptr<mxlimit::Limiter>> limiter =
      mxlimit::Limiter::Create(config);
  if (!limiter.ok()) return 1;

  mxlimit::Request request;  // views into the HTTP layer's own buffers
  request.method = "POST";
  request.target = "/_matrix/client/v3/login";
  request.client = *mxlimit::ParseIpAddress("203.0.113.7");
  const mxlimit::MonotonicTime now = mxlimit::MonotonicTime::FromSteadyClock();
  int allowed = 0;
  mxlimit::Decision d;
  for (int i = 0; i < 3; ++i) {
    d = (*limiter)->Check(request, now);
    if (d.allowed) {
      ++allowed;
      std::printf("request %d: allowed, %lld left\n", i,
                  static_cast<long long>(d.remaining));
      continue;
    }
    // 429 M_LIMIT_EXCEEDED; omit Retry-After when it is empty (d.never).
    std::printf("request %d: 429, Retry-After: %s, policy %.*s\n%s\n", i,
                mxlimit::RetryAfterValue(d.retry_after, d.never).c_str(),
                static_cast<int>(d.policy.size()), d.policy.data(),
                mxlimit::LimitExceededBody(d.retry_after, d.never).c_str());
  }
  // Burst 2, then one request per 20 s: the third waits exactly 20 s.
  return allowed == 2 && d.policy == "login" &&
                 d.retry_after == std::chrono::seconds(20)
             ? 0
             : 1;
}
