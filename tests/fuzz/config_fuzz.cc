// Fuzz target: the YAML config loader (`mxlimit::ParseConfig`, config.h).
//
// The input is the file text. Invariants:
//   * nothing escapes: no yaml-cpp exception, no crash, whatever the bytes
//     (deep nesting, aliases, tags, binary junk);
//   * an accepted file is complete and valid: its policies pass
//     `ValidatePolicies`, its tables `ValidateTableOptions`, its routes
//     `ValidateRouteOptions`, its exempt users
//     are well-formed user IDs, and a `Limiter` can be built from it (when the
//     tables are small enough to build here);
//   * a rejected file gives InvalidArgument and a message of at most
//     kMaxConfigErrorsReported + 1 lines, each "fuzz.yaml:..." (so no
//     unescaped newline from the input can forge a line);
//   * `ParseConfigWithWarnings` (which also compiles the policy set to find
//     outranked policies) accepts exactly the files `ParseConfig` accepts,
//     with the same policies and routes, and each warning is one
//     "fuzz.yaml:..." line.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "mxlimit/config.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy.h"
#include "mxlimit/user_id.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxlimit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<LimiterConfig> config = ParseConfig(text, "fuzz.yaml");
  absl::StatusOr<CheckedConfig> checked =
      ParseConfigWithWarnings(text, "fuzz.yaml");
  MXLIMIT_FUZZ_CHECK(checked.ok() == config.ok());
  if (checked.ok()) {
    MXLIMIT_FUZZ_CHECK(checked->config.policies.size() ==
                       config->policies.size());
    MXLIMIT_FUZZ_CHECK(checked->config.routes == config->routes);
    MXLIMIT_FUZZ_CHECK(checked->warnings.size() <=
                       kMaxConfigErrorsReported + 1);
    for (const std::string& warning : checked->warnings) {
      MXLIMIT_FUZZ_CHECK(absl::StartsWith(warning, "fuzz.yaml:"));
      MXLIMIT_FUZZ_CHECK(warning.find('\n') == std::string::npos);
    }
  }
  if (!config.ok()) {
    MXLIMIT_FUZZ_CHECK(config.status().code() ==
                       absl::StatusCode::kInvalidArgument);
    size_t lines = 0;
    for (absl::string_view line :
         absl::StrSplit(config.status().message(), '\n')) {
      MXLIMIT_FUZZ_CHECK(absl::StartsWith(line, "fuzz.yaml:"));
      ++lines;
    }
    MXLIMIT_FUZZ_CHECK(lines >= 1 && lines <= kMaxConfigErrorsReported + 1);
    return 0;
  }
  MXLIMIT_FUZZ_CHECK(ValidatePolicies(config->policies).empty());
  MXLIMIT_FUZZ_CHECK(ValidateTableOptions(config->tables).ok());
  MXLIMIT_FUZZ_CHECK(ValidateRouteOptions(config->routes).ok());
  for (const std::string& user : config->exempt.users) {
    MXLIMIT_FUZZ_CHECK(IsWellFormedUserId(user));
  }
  for (const Cidr& net : config->exempt.ips) {
    MXLIMIT_FUZZ_CHECK(net.prefix_len >= 0 &&
                       net.prefix_len <= (net.v4 ? 32 : 128));
  }
  // Tables are allocated up front; keep the fuzzer's memory small.
  if (config->tables.ip_capacity <= 4096 &&
      config->tables.user_capacity <= 4096) {
    absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(*config);
    MXLIMIT_FUZZ_CHECK(limiter.ok());
  }
  return 0;
}
