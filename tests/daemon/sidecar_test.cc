// mxlimitd's decisions over real HTTP, with the built-in policies on.
#include "src/daemon/sidecar.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "src/shared/fake_store.h"
#include "tests/testing/raw_http.h"
#include "tests/testing/temp_dir.h"

namespace mxlimit::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RawConnection;
using testing::RawResponse;

// Built-ins on; one small operator budget for message sends, and a route
// that is blocked outright (a `never` decision).
constexpr char kConfig[] = R"(
policies:
  - name: test.send
    match: "/_matrix/client/v3/rooms/{roomId}/send/*"
    scope: user
    rate_limit: {requests_per_unit: 1, unit: minute, burst: 2}
  - name: test.blocked
    match: "/_matrix/client/v3/register"
    scope: ip
    rate_limit: {requests_per_unit: 0, unit: minute}
  - name: test.upload-quota
    match: "/_matrix/media/v3/upload"
    scope: user
    layer: quota
    rate_limit: {requests_per_unit: 1000, unit: hour, burst: 1000}
    cost: request_bytes
    errcode: M_USER_LIMIT_EXCEEDED
    info_uri: https://example.org/quota
exempt:
  users: ["@ops:example.org"]
)";

class SidecarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<LimiterConfig> config = ParseConfig(kConfig, "test.yaml");
    ASSERT_TRUE(config.ok()) << config.status();
    ASSERT_TRUE(config->builtin_policies);
    if (store_ != nullptr) {
      config->store.key_secret = "sidecar-test-key-secret";
      limiter_ = *SharedLimiter::CreateWithStore(*config, std::move(store_),
                                                 /*shards=*/2);
    } else {
      limiter_ = *SharedLimiter::Create(*config);
    }
    dir_ = testing::MakeTempDir("mxlimitd_sidecar_");
    std::ofstream(dir_ + "/bridge.yaml")
        << "id: bridge\nas_token: as_bridge\nrate_limited: true\n";
    std::ofstream(dir_ + "/free.yaml")
        << "id: free\nas_token: as_free\nrate_limited: false\n";
    registry_ = *AppserviceRegistry::Load(
        {dir_ + "/bridge.yaml", dir_ + "/free.yaml"}, secret_);
    SidecarOptions options;
    options.trusted_proxies = {*ParseCidr("127.0.0.1/32"),
                               *ParseCidr("127.0.0.9/32")};
    sidecar_ = std::make_unique<Sidecar>(*limiter_, options, secret_, registry_,
                                         nullptr, metrics_);
    http::ServerOptions server_options;
    server_options.threads = 2;
    server_ = *http::HttpServer::Start(server_options, *sidecar_);
    sidecar_->set_server(server_.get());
  }

  // One subrequest as nginx sends it, from `source`.
  RawResponse Nginx(const std::string& method, const std::string& uri,
                    const std::vector<std::string>& extra = {},
                    const char* source = nullptr) {
    return Ask("/_mxlimit/auth_request", "X-Original-Method: " + method,
               "X-Original-URI: " + uri, extra, source);
  }
  RawResponse Caddy(const std::string& method, const std::string& uri,
                    const std::vector<std::string>& extra = {}) {
    return Ask("/_mxlimit/forward_auth", "X-Forwarded-Method: " + method,
               "X-Forwarded-Uri: " + uri, extra, nullptr);
  }
  RawResponse Ask(const std::string& endpoint, const std::string& method,
                  const std::string& uri, const std::vector<std::string>& extra,
                  const char* source) {
    RawConnection c(server_->port(), source);
    std::string request = "GET " + endpoint +
                          " HTTP/1.1\r\nHost: mxlimitd\r\n" + method + "\r\n" +
                          uri + "\r\n";
    for (const std::string& e : extra) request += e + "\r\n";
    c.Send(request + "\r\n");
    return c.ReadResponse();
  }
  std::string Metrics() {
    RawConnection c(server_->port());
    c.Send("GET /_mxlimit/metrics HTTP/1.1\r\n\r\n");
    return c.ReadResponse().body;
  }

  static std::string Send(int txn) {
    return "/_matrix/client/v3/rooms/!room" + std::to_string(txn) +
           ":example.org/send/m.room.message/" + std::to_string(txn);
  }

  internal::SipKey secret_{11, 12};
  std::string dir_;
  // Set by a fixture that wants one, before SetUp.
  std::unique_ptr<internal::Store> store_;
  std::unique_ptr<SharedLimiter> limiter_;
  AppserviceRegistry registry_;
  DaemonMetrics metrics_;
  std::unique_ptr<Sidecar> sidecar_;
  std::unique_ptr<http::HttpServer> server_;
};

TEST_F(SidecarTest, NginxAllowsThenDeniesWithTheMatrixBodyInAHeader) {
  const std::vector<std::string> alice = {"Authorization: Bearer alice_token"};
  EXPECT_EQ(Nginx("PUT", Send(1), alice).status, 204);
  EXPECT_EQ(Nginx("PUT", Send(2), alice).status, 204);
  const RawResponse denied = Nginx("PUT", Send(3), alice);
  ASSERT_EQ(denied.status, 403);
  const int retry = std::atoi(denied.Header("Retry-After").c_str());
  // One a minute, two at once: the third waits a minute.
  EXPECT_GE(retry, 59);
  EXPECT_LE(retry, 60);
  EXPECT_EQ(denied.Header("X-Mxlimit-Policy"), "test.send");
  const std::string body = denied.Header("X-Mxlimit-Body");
  EXPECT_THAT(body, HasSubstr(R"("errcode":"M_LIMIT_EXCEEDED")"));
  EXPECT_THAT(body, HasSubstr(R"("retry_after_ms":)"));
  EXPECT_EQ(denied.body, body);
  // Another token is another user, with its own budget.
  EXPECT_EQ(Nginx("PUT", Send(4), {"Authorization: Bearer bob_token"}).status,
            204);
  // The query-string token is the same user as the header one.
  EXPECT_EQ(Nginx("PUT", Send(5) + "?access_token=alice_token").status, 403);
}

TEST_F(SidecarTest, UploadQuotaWeighsTheContentLengthAndNamesItsErrcode) {
  const std::vector<std::string> dave = {"Authorization: Bearer dave",
                                         "X-Original-Content-Length: 600"};
  EXPECT_EQ(Nginx("POST", "/_matrix/media/v3/upload", dave).status, 204);
  const RawResponse denied = Nginx("POST", "/_matrix/media/v3/upload", dave);
  ASSERT_EQ(denied.status, 403);
  EXPECT_EQ(denied.Header("X-Mxlimit-Policy"), "test.upload-quota");
  const std::string body = denied.Header("X-Mxlimit-Body");
  EXPECT_THAT(body, HasSubstr(R"({"errcode":"M_USER_LIMIT_EXCEEDED",)"));
  EXPECT_THAT(body, HasSubstr(R"("info_uri":"https://example.org/quota")"));
  // What is left still fits; a length that is not a number is unknown and
  // charged nothing, but needs a byte of room.
  EXPECT_EQ(
      Nginx("POST", "/_matrix/media/v3/upload",
            {"Authorization: Bearer dave", "X-Original-Content-Length: 400"})
          .status,
      204);
  for (const char* bad :
       {"X-Original-Content-Length: 12abc", "X-Original-Content-Length: -5",
        "X-Original-Content-Length: 99999999999999999999"}) {
    EXPECT_EQ(Nginx("POST", "/_matrix/media/v3/upload",
                    {"Authorization: Bearer dave", bad})
                  .status,
              403)
        << bad;
  }
  // Caddy answers the 429 itself, with the same body.
  const RawResponse caddy =
      Caddy("POST", "/_matrix/media/v3/upload",
            {"Authorization: Bearer dave", "X-Original-Content-Length: 1"});
  EXPECT_EQ(caddy.status, 429);
  EXPECT_THAT(caddy.body, HasSubstr("M_USER_LIMIT_EXCEEDED"));
  // Another user has their own quota.
  EXPECT_EQ(
      Nginx("POST", "/_matrix/media/v3/upload",
            {"Authorization: Bearer erin", "X-Original-Content-Length: 1000"})
          .status,
      204);
}

TEST_F(SidecarTest, ForwardAuthAnswers429Itself) {
  const std::vector<std::string> carol = {"Authorization: Bearer carol"};
  EXPECT_EQ(Caddy("PUT", Send(1), carol).status, 200);
  EXPECT_EQ(Caddy("PUT", Send(2), carol).status, 200);
  const RawResponse denied = Caddy("PUT", Send(3), carol);
  ASSERT_EQ(denied.status, 429);
  EXPECT_FALSE(denied.Header("Retry-After").empty());
  EXPECT_EQ(denied.Header("Content-Type"), "application/json");
  EXPECT_THAT(denied.body, HasSubstr(R"("errcode":"M_LIMIT_EXCEEDED")"));
  EXPECT_THAT(denied.body, HasSubstr(R"("retry_after_ms":)"));
  EXPECT_FALSE(denied.Has("X-Mxlimit-Policy"));  // not the client's business
}

TEST_F(SidecarTest, NeverHasNoRetryAfterAnywhere) {
  const RawResponse nginx = Nginx("POST", "/_matrix/client/v3/register");
  ASSERT_EQ(nginx.status, 403);
  EXPECT_FALSE(nginx.Has("Retry-After"));
  EXPECT_THAT(nginx.Header("X-Mxlimit-Body"), Not(HasSubstr("retry_after_ms")));
  const RawResponse caddy = Caddy("POST", "/_matrix/client/r0/register");
  ASSERT_EQ(caddy.status, 429);
  EXPECT_FALSE(caddy.Has("Retry-After"));
  EXPECT_THAT(caddy.body, Not(HasSubstr("retry_after_ms")));
  EXPECT_THAT(Metrics(),
              HasSubstr("mxlimitd_decisions_total{result=\"never\"} 2"));
}

TEST_F(SidecarTest, BuiltInLoginLimitAppliesPerClient) {
  // login-per-ip (built-in) has a burst of 5 per client address.
  int allowed = 0;
  for (int i = 0; i < 10; ++i) {
    allowed += Nginx("POST", "/_matrix/client/v3/login",
                     {"X-Forwarded-For: 203.0.113.5"})
                   .status == 204;
  }
  EXPECT_EQ(allowed, 5);
  EXPECT_EQ(Nginx("POST", "/_matrix/client/v3/login",
                  {"X-Forwarded-For: 203.0.113.6"})
                .status,
            204);
}

// Caddy's forward_auth copies the client's headers: a client that adds
// nginx's X-Original-* (or a Forwarded, an X-Real-IP) must still be judged
// on what Caddy set. Built-in login-per-ip: 5 at once.
TEST_F(SidecarTest, ForwardAuthIgnoresTheClientsCopiesOfOtherHeaders) {
  int allowed = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string n = std::to_string(i);
    allowed +=
        Caddy(
            "POST", "/_matrix/client/v3/login",
            {"X-Original-URI: /_matrix/client/versions",
             "X-Original-Method: OPTIONS", "X-Real-IP: 198.51.100." + n,
             "Forwarded: for=198.51.100." + n, "X-Forwarded-For: 203.0.113.40"})
            .status == 200;
  }
  EXPECT_EQ(allowed, 5);
  // requests_per_unit: 0 holds whatever the client claims the target is.
  EXPECT_EQ(Caddy("POST", "/_matrix/client/v3/register",
                  {"X-Original-URI: /_matrix/client/versions"})
                .status,
            429);
}

// A trusted proxy that hands over a hop naming no client is not charged
// itself: its own requests keep their budget.
TEST_F(SidecarTest, AnUnreadableHopIsNotChargedToTheProxy) {
  for (int i = 0; i < 10; ++i) {
    Nginx("POST", "/_matrix/client/v3/login", {"X-Forwarded-For: unknown"});
  }
  EXPECT_EQ(Nginx("POST", "/_matrix/client/v3/login").status, 204);
  EXPECT_EQ(
      Nginx("POST", "/_matrix/client/v3/login", {"X-Forwarded-For: _hidden"})
          .status,
      403);
}

TEST_F(SidecarTest, AbsoluteFormRequestLinesReachTheEndpoints) {
  RawConnection c(server_->port());
  c.Send("GET http://127.0.0.1/_mxlimit/health HTTP/1.1\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().status, 200);
  c.Send(
      "GET http://mxlimitd/_mxlimit/auth_request HTTP/1.1\r\n"
      "X-Original-Method: GET\r\nX-Original-URI: "
      "http://matrix.example.org/_matrix/client/versions\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().status, 204);
}

TEST_F(SidecarTest, SpoofedForwardedForFromAnUntrustedPeerGainsNothing) {
  int allowed = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string spoof =
        "X-Forwarded-For: 198.51.100." + std::to_string(i);
    allowed += Nginx("POST", "/_matrix/client/v3/login", {spoof}, "127.0.0.2")
                   .status == 204;
  }
  EXPECT_EQ(allowed, 5);
}

TEST_F(SidecarTest, RotatingInsideAnIpv6SlashSixtyFourGainsNothing) {
  int allowed = 0;
  for (int i = 1; i <= 10; ++i) {
    const std::string hop =
        "X-Forwarded-For: 2001:db8:aa:bb::" + std::to_string(i);
    allowed +=
        Nginx("POST", "/_matrix/client/v3/login", {hop}, "127.0.0.9").status ==
        204;
  }
  EXPECT_EQ(allowed, 5);
}

TEST_F(SidecarTest, AppserviceSenderAndItsUsers) {
  const std::vector<std::string> bridge = {"Authorization: Bearer as_bridge"};
  // The sender itself: exempt, however many.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Nginx("PUT", Send(i), bridge).status, 204);
  }
  // Masquerading with rate_limited: true: limited as that user.
  int allowed = 0;
  for (int i = 0; i < 5; ++i) {
    allowed +=
        Nginx("PUT", Send(i) + "?user_id=%40bridged_dave%3Aexample.org", bridge)
            .status == 204;
  }
  EXPECT_EQ(allowed, 2);
  // rate_limited: false: its users are exempt too.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Nginx("PUT", Send(i) + "?user_id=%40x%3Aexample.org",
                    {"Authorization: Bearer as_free"})
                  .status,
              204);
  }
  EXPECT_THAT(Metrics(),
              HasSubstr("mxlimitd_decisions_total{result=\"exempt\"} 20"));
}

TEST_F(SidecarTest, BadInputsAreA400AndCounted) {
  RawResponse r = Ask("/_mxlimit/auth_request", "X-Original-Method: GET",
                      "X-Unrelated: 1", {}, nullptr);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("X-Original-URI"));
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_THAT(r.Header("X-Mxlimit-Body"),
              HasSubstr(R"("errcode":"M_UNKNOWN")"));
  r = Ask("/_mxlimit/forward_auth", "X-Nothing: 1", "X-Forwarded-Uri: /", {},
          nullptr);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(Metrics(), HasSubstr("mxlimitd_bad_requests_total 2"));
}

TEST_F(SidecarTest, MalformedTokensAreLimitedNotRefused) {
  // A bad escape in the client's own access_token is no 400 (which a
  // fail-open proxy would pass unlimited): the raw token is its user.
  int allowed = 0;
  for (int i = 0; i < 5; ++i) {
    allowed += Nginx("PUT", Send(i) + "?access_token=%zz").status == 204;
  }
  EXPECT_EQ(allowed, 2);
}

TEST_F(SidecarTest, EnvoyCarriesTheTargetInThePath) {
  auto envoy = [&](int txn) {
    RawConnection c(server_->port());
    c.Send("PUT /_mxlimit/forward_auth" + Send(txn) +
           " HTTP/1.1\r\nAuthorization: Bearer erin\r\n\r\n");
    return c.ReadResponse();
  };
  EXPECT_EQ(envoy(1).status, 200);
  EXPECT_EQ(envoy(2).status, 200);
  const RawResponse denied = envoy(3);
  EXPECT_EQ(denied.status, 429);
  EXPECT_THAT(denied.body, HasSubstr("M_LIMIT_EXCEEDED"));
}

TEST_F(SidecarTest, HealthMetricsAndUnknownEndpoints) {
  RawConnection c(server_->port());
  c.Send(
      "GET /_mxlimit/health HTTP/1.1\r\n\r\n"
      "POST /_mxlimit/metrics HTTP/1.1\r\n\r\n"
      "GET /_matrix/client/v3/sync HTTP/1.1\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().status, 200);
  EXPECT_EQ(c.ReadResponse().status, 405);
  EXPECT_EQ(c.ReadResponse().status, 404);
  Nginx("GET", "/_matrix/client/v3/sync");
  const std::string m = Metrics();
  // The limiter's families and the daemon's, each announced before use.
  for (const char* family :
       {"mxlimit_policy_requests_total", "mxlimitd_requests_total",
        "mxlimitd_decision_duration_seconds", "mxlimitd_open_connections",
        "mxlimitd_token_cache_hits_total", "mxlimitd_reloads_total"}) {
    const size_t type = m.find(std::string("# TYPE ") + family + " ");
    EXPECT_NE(type, std::string::npos) << family;
    EXPECT_LT(type, m.find(std::string("\n") + family));
  }
  EXPECT_THAT(m, HasSubstr("mxlimitd_decision_duration_seconds_count 1\n"));
  EXPECT_THAT(m, HasSubstr("mxlimitd_requests_total{endpoint=\"health\"} 1\n"));
}

TEST_F(SidecarTest, ExemptUsersNeedRealUserIdsTokenHashesAreNeverExempt) {
  // With token-hash user keys no token maps to @ops:example.org: the
  // operator's exemption cannot be reached by guessing a token.
  int allowed = 0;
  for (int i = 0; i < 5; ++i) {
    allowed +=
        Nginx("PUT", Send(i), {"Authorization: Bearer ops"}).status == 204;
  }
  EXPECT_EQ(allowed, 2);
}

TEST_F(SidecarTest, NoStoreFamiliesWithoutAStore) {
  EXPECT_FALSE(limiter_->has_store());
  EXPECT_THAT(Metrics(), Not(HasSubstr("mxlimit_store_")));
}

// mxlimitd with a store: decisions come from it, and the metrics carry the
// store's families, each announced once, before the daemon's own.
class SidecarStoreTest : public SidecarTest {
 protected:
  void SetUp() override {
    store_ = std::make_unique<internal::FakeStore>();
    SidecarTest::SetUp();
  }
};

TEST_F(SidecarStoreTest, DecidesThroughTheStoreAndReportsIt) {
  ASSERT_TRUE(limiter_->has_store());
  const std::vector<std::string> bob = {"Authorization: Bearer bob_token"};
  EXPECT_EQ(Nginx("PUT", Send(1), bob).status, 204);
  EXPECT_EQ(Nginx("PUT", Send(2), bob).status, 204);
  EXPECT_EQ(Nginx("PUT", Send(3), bob).status, 403);
  const std::string m = Metrics();
  EXPECT_THAT(m, HasSubstr("mxlimit_store_decisions_total{result=\"store\"} "));
  for (const char* family :
       {"mxlimit_store_decisions_total", "mxlimit_store_connected",
        "mxlimit_store_in_flight", "mxlimitd_requests_total"}) {
    const std::string type = std::string("# TYPE ") + family + " ";
    const size_t first = m.find(type);
    ASSERT_NE(first, std::string::npos) << family;
    EXPECT_EQ(m.find(type, first + 1), std::string::npos) << family;
  }
  EXPECT_LT(m.find("# TYPE mxlimit_store_decisions_total"),
            m.find("# TYPE mxlimitd_requests_total"));
}

}  // namespace
}  // namespace mxlimit::daemon
