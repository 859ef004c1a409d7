#include "src/daemon/appservice.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace mxlimit::daemon {
namespace {

class AppserviceTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_ = [] {
    char d[] = "/tmp/mxlimitd_as_XXXXXX";
    return std::string(mkdtemp(d));
  }();
  internal::SipKey secret_{7, 9};
};

TEST_F(AppserviceTest, FindsRegisteredTokensAndTheirFlag) {
  const std::string bridge = Write("bridge.yaml",
                                   "id: bridge\n"
                                   "url: http://127.0.0.1:9000\n"
                                   "as_token: as_secret_1\n"
                                   "hs_token: hs_1\n"
                                   "sender_localpart: bridgebot\n"
                                   "rate_limited: false\n"
                                   "namespaces: {users: []}\n");
  const std::string bot = Write("bot.yaml",
                                "id: bot\nas_token: as_secret_2\n"
                                "hs_token: hs_2\nsender_localpart: bot\n");
  absl::StatusOr<AppserviceRegistry> r =
      AppserviceRegistry::Load({bridge, bot}, secret_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->size(), 2u);
  const Appservice* a = r->Find("as_secret_1");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->id, "bridge");
  EXPECT_FALSE(a->rate_limited);
  const Appservice* b = r->Find("as_secret_2");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->rate_limited);  // the spec's default
  EXPECT_EQ(r->Find("hs_1"), nullptr);
  EXPECT_EQ(r->Find("as_secret_"), nullptr);
  EXPECT_EQ(r->Find(""), nullptr);
}

TEST_F(AppserviceTest, BadRegistrationsAreRefusedWithTheirFile) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"id: x\n", "as_token"},
      {"as_token: \"\"\n", "as_token"},
      {"as_token: [a]\n", "as_token"},
      {"as_token: t\nrate_limited: maybe\n", "bad.yaml"},
      {"as_token: t\nrate_limited: {a: 1}\n", "rate_limited"},
      {"as_token: [unclosed\n", "bad.yaml:"},
      {"- a list\n", "mapping"},
  };
  for (const Case& c : cases) {
    const std::string path = Write("bad.yaml", c.text);
    absl::StatusOr<AppserviceRegistry> r =
        AppserviceRegistry::Load({path}, secret_);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << c.text << " -> " << r.status().message();
    EXPECT_NE(r.status().message().find(path), std::string::npos);
  }
  absl::StatusOr<AppserviceRegistry> missing =
      AppserviceRegistry::Load({dir_ + "/nope.yaml"}, secret_);
  EXPECT_FALSE(missing.ok());
}

TEST_F(AppserviceTest, TwoRegistrationsMayNotShareAToken) {
  const std::string a = Write("a.yaml", "as_token: same\n");
  const std::string b = Write("b.yaml", "as_token: same\n");
  absl::StatusOr<AppserviceRegistry> r =
      AppserviceRegistry::Load({a, b}, secret_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("b.yaml"), std::string::npos);
}

}  // namespace
}  // namespace mxlimit::daemon
