// mxlimitd's admin API behind its transport: the token, the routes, input
// rules and what each change does to the limiter, with built-ins on.

#include "src/daemon/admin_api.h"

#include <chrono>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/shared_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit::daemon {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::MakeRequest;
using ::testing::HasSubstr;

constexpr std::string_view kAdminToken = "0123456789abcdef0123";

std::unique_ptr<SharedLimiter> TieredLimiter() {
  LimiterConfig config;  // built-ins on
  config.tiers.tiers = {{.name = "bridge", .scale = 10},
                        {.name = "suspect", .scale = 0.1}};
  absl::StatusOr<std::unique_ptr<SharedLimiter>> l =
      SharedLimiter::Create(config);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? *std::move(l) : nullptr;
}

class AdminApiTest : public ::testing::Test {
 protected:
  AdminApiTest()
      : limiter_(TieredLimiter()),
        api_(*limiter_, *AdminToken::FromText(kAdminToken),
             [this] { ++changes_; }) {}

  AdminReply Call(std::string_view method, std::string_view target,
                  std::string_view body = "",
                  std::string_view auth = "Bearer 0123456789abcdef0123") {
    AdminRequest r;
    r.method = method;
    r.target = target;
    r.body = body;
    r.authorization = auth;
    r.peer = "test";
    return api_.Handle(r, At(100));
  }

  std::unique_ptr<SharedLimiter> limiter_;
  AdminApi api_;
  int changes_ = 0;
};

TEST(AdminTokenTest, TakesOnlyItsOwnBearerToken) {
  absl::StatusOr<AdminToken> t = AdminToken::FromText(kAdminToken);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->Matches("Bearer 0123456789abcdef0123"));
  EXPECT_TRUE(t->Matches("bearer 0123456789abcdef0123"));
  EXPECT_FALSE(t->Matches(""));
  EXPECT_FALSE(t->Matches("Bearer "));
  EXPECT_FALSE(t->Matches("Bearer 0123456789abcdef012"));
  EXPECT_FALSE(t->Matches("Bearer 0123456789abcdef01234"));
  EXPECT_FALSE(t->Matches("Basic 0123456789abcdef0123"));
  EXPECT_FALSE(t->Matches("0123456789abcdef0123"));
  EXPECT_FALSE(t->Matches(std::string(size_t{64} * 1024, 'B')));
}

TEST(AdminTokenTest, RefusesShortOrUnprintableTokens) {
  EXPECT_FALSE(AdminToken::FromText("short").ok());
  EXPECT_FALSE(AdminToken::FromText("0123456789abcdef 0123").ok());
  EXPECT_FALSE(AdminToken::FromText("0123456789abcdef\x01").ok());
  EXPECT_FALSE(AdminToken::FromText("0123456789abcdef\xc3\xa9").ok());
}

TEST_F(AdminApiTest, EveryPathNeedsTheTokenFirst) {
  for (std::string_view path :
       {"/_mxlimit/admin/v1/tiers", "/_mxlimit/admin/v1/nothing", "/x"}) {
    AdminReply r = Call("GET", path, "", "");
    EXPECT_EQ(r.status, 401);
    EXPECT_THAT(r.body, HasSubstr("M_MISSING_TOKEN"));
    r = Call("GET", path, "", "Bearer wrong-token-wrong-token");
    EXPECT_EQ(r.status, 401);
    EXPECT_THAT(r.body, HasSubstr("M_UNKNOWN_TOKEN"));
  }
  EXPECT_EQ(Call("PUT", "/_mxlimit/admin/v1/tiers/users/%40a%3Ab",
                 R"({"tier":"bridge"})", "Bearer nope")
                .status,
            401);
  EXPECT_TRUE(limiter_->ListTiers(At(100)).empty());
  EXPECT_EQ(changes_, 0);
}

TEST_F(AdminApiTest, SetListAndClearAUserAndANetwork) {
  AdminReply r =
      Call("PUT", "/_mxlimit/admin/v1/tiers/users/%40bot%3Aexample.org",
           R"({"tier":"bridge","expires_in_ms":60000})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body,
            R"({"kind":"user","subject":"@bot:example.org","tier":"bridge",)"
            R"("runtime":true,"expires_in_ms":60000})");
  r = Call("PUT", "/_mxlimit/admin/v1/tiers/networks/2001:db8:bad::/48",
           R"({"tier":"suspect"})");
  ASSERT_EQ(r.status, 200) << r.body;
  r = Call("GET", "/_mxlimit/admin/v1/tiers");
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.body,
              HasSubstr(R"("subject":"2001:db8:bad::/48","tier":"suspect")"));
  EXPECT_THAT(r.body, HasSubstr(R"("runtime":2,"max_runtime":100000)"));
  // The limiter judges the network's clients by it now.
  const Request suspect =
      MakeRequest("POST", "/_matrix/client/v3/login", "2001:db8:bad::1");
  EXPECT_EQ(limiter_->Check(suspect, At(100)).tier, "suspect");
  EXPECT_EQ(
      Call("DELETE",
           "/_mxlimit/admin/v1/tiers/networks/2001%3Adb8%3Abad%3A%3A%2F48")
          .status,
      200);
  EXPECT_EQ(limiter_->Check(suspect, At(100)).tier, "");
  r = Call("DELETE", "/_mxlimit/admin/v1/tiers/networks/2001:db8:bad::/48");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("M_NOT_FOUND"));
  EXPECT_EQ(changes_, 3);
}

TEST_F(AdminApiTest, ResetUnblocksAnAddress) {
  const Request login =
      MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.7");
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(limiter_->Check(login, At(100)).allowed);
  ASSERT_FALSE(limiter_->Check(login, At(100)).allowed);
  AdminReply r =
      Call("POST", "/_mxlimit/admin/v1/reset", R"({"address":"192.0.2.7"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr(R"({"reset":)"));
  EXPECT_TRUE(limiter_->Check(login, At(100)).allowed);
}

TEST_F(AdminApiTest, BadInputIsAClearErrorAndTheNextCallWorks) {
  struct Case {
    std::string_view method, target, body;
    int status;
    std::string_view errcode;
  };
  const Case cases[] = {
      {"PUT", "/_mxlimit/admin/v1/tiers/users/alice", R"({"tier":"bridge"})",
       400, "M_INVALID_PARAM"},
      {"PUT", "/_mxlimit/admin/v1/tiers/users/%40a%3Ab", R"({"tier":"gold"})",
       400, "M_INVALID_PARAM"},
      {"PUT", "/_mxlimit/admin/v1/tiers/users/%40a%3Ab", R"({"tier":1})", 400,
       "M_INVALID_PARAM"},
      {"PUT", "/_mxlimit/admin/v1/tiers/users/%40a%3Ab",
       R"({"tier":"bridge","expires_in_ms":-1})", 400, "M_INVALID_PARAM"},
      {"PUT", "/_mxlimit/admin/v1/tiers/users/%40a%3Ab",
       R"({"tier":"bridge","expires_in_ms":"60000"})", 400, "M_INVALID_PARAM"},
      {"PUT", "/_mxlimit/admin/v1/tiers/users/%40a%3Ab", "not json", 400,
       "M_NOT_JSON"},
      {"PUT", "/_mxlimit/admin/v1/tiers/networks/%40a%3Ab",
       R"({"tier":"bridge"})", 400, "M_INVALID_PARAM"},
      {"PUT", "/_mxlimit/admin/v1/tiers/users/%4", R"({"tier":"bridge"})", 400,
       "M_INVALID_PARAM"},
      {"PUT", "/_mxlimit/admin/v1/tiers/users/", R"({"tier":"bridge"})", 404,
       "M_UNRECOGNIZED"},
      {"POST", "/_mxlimit/admin/v1/tiers", "", 405, "M_UNRECOGNIZED"},
      {"POST", "/_mxlimit/admin/v1/reset", "{}", 400, "M_INVALID_PARAM"},
      {"POST", "/_mxlimit/admin/v1/reset", R"({"address":"@a:b"})", 400,
       "M_INVALID_PARAM"},
  };
  for (const Case& c : cases) {
    AdminReply r = Call(c.method, c.target, c.body);
    EXPECT_EQ(r.status, c.status)
        << c.target << " " << c.body << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr(c.errcode)) << c.target << " " << c.body;
  }
  const std::string huge = "/_mxlimit/admin/v1/tiers/users/%40" +
                           std::string(size_t{64} * 1024, 'a') +
                           "%3Aexample.org";
  EXPECT_EQ(Call("PUT", huge, R"({"tier":"bridge"})").status, 400);
  EXPECT_EQ(changes_, 0);
  EXPECT_EQ(Call("PUT", "/_mxlimit/admin/v1/tiers/users/%40a%3Ab",
                 R"({"tier":"bridge"})")
                .status,
            200);
}

TEST(AdminApiSharedTest, AChangeTheStoreDoesNotTakeIsUndone) {
  std::unique_ptr<SharedLimiter> limiter = TieredLimiter();
  StoreOptions store;
  store.url = "redis://127.0.0.1:1";  // nothing listens there
  store.key_secret = "admin-api-test-secret-0123456789";
  absl::StatusOr<std::unique_ptr<TierSync>> sync =
      TierSync::Create(store, std::chrono::milliseconds(200));
  ASSERT_TRUE(sync.ok()) << sync.status();
  EXPECT_THAT((*sync)->key(), ::testing::StartsWith("mxl:1:tiers:"));
  AdminApi api(*limiter, *AdminToken::FromText(kAdminToken), nullptr,
               sync->get());
  AdminRequest r;
  r.method = "PUT";
  r.target = "/_mxlimit/admin/v1/tiers/users/%40bot%3Aexample.org";
  r.body = R"({"tier":"bridge"})";
  r.authorization = "Bearer 0123456789abcdef0123";
  AdminReply reply = api.Handle(r, At(100));
  EXPECT_EQ(reply.status, 503) << reply.body;
  EXPECT_THAT(reply.body, HasSubstr("M_UNAVAILABLE"));
  EXPECT_TRUE(limiter->ListTiers(At(100)).empty());
  // A tier the file lacks is refused before the store is asked.
  r.body = R"({"tier":"gold"})";
  EXPECT_EQ(api.Handle(r, At(100)).status, 400);
}

}  // namespace
}  // namespace mxlimit::daemon
