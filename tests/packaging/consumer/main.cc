// Built against an installed mxlimit: proves the headers, both libraries and
// the package config file work together outside the source tree.
#include <cstdio>
#include <memory>

#include "mxlimit/config.h"
#include "mxlimit/limiter.h"
#include "mxlimit/version.h"

int main() {
  absl::StatusOr<mxlimit::LimiterConfig> config = mxlimit::ParseConfig(
      "policies:\n"
      "  - name: login\n"
      "    match: /_matrix/client/v3/login\n"
      "    rate_limit: { unit: minute, requests_per_unit: 2 }\n",
      "consumer.yaml");
  if (!config.ok()) return 1;
  auto limiter = mxlimit::Limiter::Create(*config);
  if (!limiter.ok()) return 1;
  mxlimit::Request request;
  request.method = "POST";
  request.target = "/_matrix/client/r0/login";
  request.client = *mxlimit::ParseIpAddress("192.0.2.1");
  const auto now = mxlimit::MonotonicTime::FromNanoseconds(0);
  const bool first = (*limiter)->Check(request, now).allowed;
  const bool second = (*limiter)->Check(request, now).allowed;
  const mxlimit::Decision third = (*limiter)->Check(request, now);
  if (!first || !second || third.allowed || third.policy != "login") return 1;
  if (mxlimit::LinkedVersion() != mxlimit::kVersion) return 1;
  std::printf("consumer OK, mxlimit %s\n", mxlimit::kVersion.data());
  return 0;
}
