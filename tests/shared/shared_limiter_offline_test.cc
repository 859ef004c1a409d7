// What SharedLimiter answers about a config without any store: the store
// keys `mxlimit explain` prints, and the checks `mxlimit check-config` runs.

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/shared_limiter.h"
#include "src/shared/fake_store.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakePolicy;
using testing::MakeRequest;
using ::testing::StartsWith;

LimiterConfig WithStore() {
  LimiterConfig config;  // Built-in policies on.
  config.store.url = "redis://127.0.0.1:6379/0";
  config.store.key_secret = "0123456789abcdef-offline";
  Policy local = MakePolicy("login-local", "/_matrix/client/v3/login",
                            Scope::kIp, 5, TimeUnit::kMinute);
  local.sharing = Sharing::kLocal;
  config.policies.push_back(local);
  return config;
}

TEST(SharedLimiterOfflineTest, KeysAreThoseOfALimiterWithAStore) {
  const LimiterConfig config = WithStore();
  const Request login =
      MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.7");
  absl::StatusOr<std::vector<std::string>> offline =
      SharedLimiter::DescribeStoreKeys(config, login);
  ASSERT_TRUE(offline.ok()) << offline.status();
  auto online = SharedLimiter::CreateWithStore(
      config, std::make_unique<internal::FakeStore>(), 2);
  ASSERT_TRUE(online.ok()) << online.status();
  EXPECT_EQ(*offline, (*online)->DescribeStoreKeys(login));
  ASSERT_EQ(offline->size(), 4u);
  EXPECT_EQ((*offline)[0], "login-local local");
  EXPECT_THAT((*offline)[1], StartsWith("login-per-network exact mxl:1:i:"));
  // Charged on the response: kept in process whatever `sharing` says.
  EXPECT_EQ((*offline)[2], "failed-login-per-ip local");
  EXPECT_THAT((*offline)[3], StartsWith("aggregate-per-ip exact mxl:1:i:"));
}

TEST(SharedLimiterOfflineTest, TheSecretNamesTheKeys) {
  LimiterConfig a = WithStore();
  LimiterConfig b = WithStore();
  b.store.key_secret = "another-secret-0123456789";
  const Request login =
      MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.7");
  EXPECT_NE(*SharedLimiter::DescribeStoreKeys(a, login),
            *SharedLimiter::DescribeStoreKeys(b, login));
}

TEST(SharedLimiterOfflineTest, WithoutAStoreNothingIsShared) {
  LimiterConfig config;
  const Request login =
      MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.7");
  absl::StatusOr<std::vector<std::string>> keys =
      SharedLimiter::DescribeStoreKeys(config, login);
  ASSERT_TRUE(keys.ok());
  EXPECT_THAT(*keys, IsEmpty());
  EXPECT_TRUE(SharedLimiter::ValidateSharing(config).ok());
}

TEST(SharedLimiterOfflineTest, ValidateSharingChecksWhatCreateChecks) {
  LimiterConfig config = WithStore();
  EXPECT_TRUE(SharedLimiter::ValidateSharing(config).ok());
  config.store.key_secret = "short";
  EXPECT_THAT(std::string(SharedLimiter::ValidateSharing(config).message()),
              HasSubstr("store.key_secret: got 5 bytes"));
  config = WithStore();
  Policy yearly = MakePolicy("yearly", "/_matrix/client/v3/createRoom",
                             Scope::kIp, 1, TimeUnit::kDay);
  yearly.rate = *Rate::Create(1, TimeUnit::kDay, 200);
  config.policies.push_back(yearly);
  const absl::Status status = SharedLimiter::ValidateSharing(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("policy \"yearly\""));
  // Local, it needs no store arithmetic.
  config.policies.back().sharing = Sharing::kLocal;
  EXPECT_TRUE(SharedLimiter::ValidateSharing(config).ok());
}

}  // namespace
}  // namespace mxlimit
