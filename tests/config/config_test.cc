// The YAML config loader, success side: a valid file becomes exactly the
// expected LimiterConfig, defaults fill what a file leaves out, and files are
// read (or refused) as documented. Error reporting is in config_errors_test.cc.

#include "mxlimit/config.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/ip.h"
#include "tests/testing/config_helpers.h"

namespace mxlimit {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;
using testing_config::MakeRate;
using testing_config::Net;
using testing_config::Parse;

TEST(ConfigTest, FullFileBecomesTheConfig) {
  LimiterConfig config = Parse(R"(builtin_policies: false
tables:
  ip:   { capacity: 5000, ipv4_prefix: 24, ipv6_prefix: 56 }
  user: { capacity: 7000 }
exempt:
  ips: ["127.0.0.0/8", "::1/128", 10.1.2.3/8]
  users: ["@bridge:example.org", "@bot:[::1]:8448"]
policies:
  - name: media-download
    match: "/_matrix/client/v1/media/download/*"
    scope: ip
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 60 }
    burst: 20
  - name: send
    match: /_matrix/client/v3/rooms/{roomId}/send/*
    methods: [put, Post, PUT]
    scope: user
    shadow_mode: true
    rate_limit:
      unit: second
      requests_per_unit: 5
      burst: 10
  - name: versions
    match: "*"
    unlimited: true
  - name: blocked
    match: /_matrix/client/v3/register
    rate_limit: { unit: day, requests_per_unit: 0 }
)");
  EXPECT_FALSE(config.builtin_policies);
  EXPECT_EQ(config.tables.ip_capacity, 5000u);
  EXPECT_EQ(config.tables.ipv4_prefix, 24);
  EXPECT_EQ(config.tables.ipv6_prefix, 56);
  EXPECT_EQ(config.tables.user_capacity, 7000u);
  EXPECT_THAT(config.exempt.ips,
              ElementsAre(Net("127.0.0.0/8"), Net("::1"), Net("10.0.0.0/8")));
  EXPECT_THAT(config.exempt.users,
              ElementsAre("@bridge:example.org", "@bot:[::1]:8448"));
  ASSERT_THAT(config.policies, SizeIs(4));

  const Policy& media = config.policies[0];
  EXPECT_EQ(media.name, "media-download");
  EXPECT_THAT(media.match,
              ::testing::ElementsAre("/_matrix/client/v1/media/download/*"));
  EXPECT_TRUE(media.methods.empty());
  EXPECT_EQ(media.scope, Scope::kIp);
  EXPECT_TRUE(media.share_threshold);
  EXPECT_FALSE(media.shadow_mode);
  EXPECT_FALSE(media.builtin);
  EXPECT_EQ(media.rate, MakeRate(60, TimeUnit::kMinute, 20));
  EXPECT_EQ(media.source_line, 9);

  const Policy& send = config.policies[1];
  EXPECT_THAT(send.match, ::testing::ElementsAre(
                              "/_matrix/client/v3/rooms/{roomId}/send/*"));
  EXPECT_THAT(send.methods, ElementsAre("PUT", "POST"));
  EXPECT_EQ(send.scope, Scope::kUser);
  EXPECT_TRUE(send.shadow_mode);
  EXPECT_FALSE(send.share_threshold);
  EXPECT_EQ(send.rate, MakeRate(5, TimeUnit::kSecond, 10));
  EXPECT_EQ(send.source_line, 15);

  EXPECT_TRUE(config.policies[2].rate.unlimited());
  EXPECT_TRUE(config.policies[3].rate.blocked());
}

TEST(ConfigTest, OmittedKeysKeepTheirDefaults) {
  LimiterConfig config = Parse(R"(policies:
  - name: p
    match: /x
    rate_limit: { unit: hour, requests_per_unit: 7 }
)");
  LimiterConfig defaults;
  EXPECT_TRUE(config.builtin_policies);
  EXPECT_EQ(config.tables.ip_capacity, defaults.tables.ip_capacity);
  EXPECT_EQ(config.tables.ipv6_prefix, 64);
  EXPECT_TRUE(config.exempt.ips.empty());
  ASSERT_THAT(config.policies, SizeIs(1));
  EXPECT_EQ(config.policies[0].scope, Scope::kIp);
  EXPECT_EQ(config.policies[0].rate.burst(), 7);
}

TEST(ConfigTest, EmptyFilesGiveTheDefaults) {
  for (std::string_view text : {"", "\n\n", "# only a comment\n", "~\n",
                                "---\n", "tables:\nexempt:\npolicies:\n"}) {
    LimiterConfig config = Parse(text);
    EXPECT_TRUE(config.builtin_policies) << text;
    EXPECT_EQ(config.tables.user_capacity, 100'000u) << text;
    EXPECT_TRUE(config.policies.empty()) << text;
  }
}

TEST(ConfigTest, ExampleFileLoads) {
  absl::StatusOr<LimiterConfig> config =
      LoadConfigFile(MXLIMIT_SOURCE_DIR "/examples/mxlimit.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(config->builtin_policies);
  EXPECT_EQ(config->tables.ip_capacity, 200'000u);
  EXPECT_EQ(config->exempt.ips.size(), 3u);
  EXPECT_EQ(config->exempt.users.size(), 2u);
  ASSERT_GE(config->policies.size(), 5u);
  EXPECT_EQ(config->policies[0].name, "media-download");
  EXPECT_EQ(config->policies[0].rate, MakeRate(60, TimeUnit::kMinute, 20));
}

TEST(ConfigTest, AnchorsAndAliasesShareARate) {
  LimiterConfig config = Parse(R"(policies:
  - name: a
    match: /a
    rate_limit: &standard { unit: minute, requests_per_unit: 10 }
  - name: b
    match: /b
    rate_limit: *standard
)");
  ASSERT_THAT(config.policies, SizeIs(2));
  EXPECT_EQ(config.policies[1].rate, MakeRate(10, TimeUnit::kMinute));
}

class ConfigFileTest : public ::testing::Test {
 protected:
  std::string WriteFile(std::string_view name, std::string_view contents) {
    std::filesystem::path path = dir_ / std::string(name);
    std::ofstream(path, std::ios::binary) << contents;
    return path.string();
  }
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) /
        ("mxlimit_config_test_" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(ConfigFileTest, ErrorsNameThePath) {
  std::string path = WriteFile("bad.yaml", "tables:\n  ip: { capacity: 0 }\n");
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            path +
                ":2:19: tables.ip.capacity: got 0, expected an integer "
                "from 1 to 100000000");
}

TEST_F(ConfigFileTest, MissingFile) {
  std::string path = (dir_ / "absent.yaml").string();
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(config.status().message(),
            path + ": cannot open: No such file or directory");
}

TEST_F(ConfigFileTest, DirectoryIsNotAFile) {
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(dir_.string());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(std::string(config.status().message()),
            dir_.string() + ": cannot read: Is a directory");
}

TEST_F(ConfigFileTest, OversizedFileIsRefused) {
  std::string path = WriteFile("huge.yaml", std::string(3 << 20, '#'));
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(),
            path +
                ": the file is over the limit of 1048576 bytes (1 MiB); is "
                "this the right file?");
}

TEST_F(ConfigFileTest, ValidFileLoads) {
  std::string path = WriteFile(
      "ok.yaml", "policies:\n  - {name: a, match: /a, unlimited: true}\n");
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(path);
  ASSERT_TRUE(config.ok()) << config.status().message();
  ASSERT_THAT(config->policies, SizeIs(1));
  EXPECT_EQ(config->policies[0].name, "a");
}

}  // namespace
}  // namespace mxlimit
