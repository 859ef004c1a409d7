// Shared by the config loader tests: parse text that must load, or must fail.

#ifndef MXLIMIT_TESTS_TESTING_CONFIG_HELPERS_H_
#define MXLIMIT_TESTS_TESTING_CONFIG_HELPERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/ip.h"
#include "mxlimit/rate.h"
#include "tests/testing/rate_helpers.h"

namespace mxlimit::testing_config {

// The config in `yaml`, which must load.
inline LimiterConfig Parse(std::string_view yaml) {
  absl::StatusOr<LimiterConfig> config = ParseConfig(yaml, "test.yaml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  return config.ok() ? *std::move(config) : LimiterConfig{};
}

// The error lines for `yaml`, which must fail to load.
inline std::vector<std::string> Errors(std::string_view yaml) {
  absl::StatusOr<LimiterConfig> config = ParseConfig(yaml, "test.yaml");
  EXPECT_FALSE(config.ok()) << "parsed:\n" << yaml;
  if (config.ok()) return {};
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return absl::StrSplit(config.status().message(), '\n');
}

inline Cidr Net(std::string_view text) {
  absl::StatusOr<Cidr> net = ParseCidr(text);
  EXPECT_TRUE(net.ok()) << net.status();
  return net.ok() ? *net : Cidr{};
}

using ::mxlimit::testing_rate::MakeRate;

}  // namespace mxlimit::testing_config

#endif  // MXLIMIT_TESTS_TESTING_CONFIG_HELPERS_H_
