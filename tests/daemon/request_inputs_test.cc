#include "src/daemon/request_inputs.h"

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/appservice.h"
#include "mxlimit/request.h"
#include "src/replay/appservice.h"
#include "src/replay/log_record.h"

namespace mxlimit::daemon {
namespace {

IpAddress Ip(const char* text) { return *ParseIpAddress(text); }

class RequestInputsTest : public ::testing::Test {
 protected:
  // Parses `fields` (one "Name: value" each) after a fixed request line.
  const http::HttpRequestHead& Head(std::vector<std::string> fields) {
    text_ = "GET /_mxlimit/auth_request HTTP/1.1\r\n";
    for (const std::string& f : fields) text_ += f + "\r\n";
    text_ += "\r\n";
    EXPECT_EQ(http::ParseRequestHead(text_, head_).state,
              http::HeadParse::kComplete);
    return head_;
  }
  bool Read(std::vector<std::string> fields, const char* peer,
            CheckProtocol protocol = CheckProtocol::kAuthRequest) {
    return ReadOriginalRequest(Head(std::move(fields)), protocol, Ip(peer),
                               proxies_, out_, error_);
  }

  std::vector<Cidr> proxies_ = {*ParseCidr("127.0.0.1/32"),
                                *ParseCidr("10.0.0.0/8")};
  std::string text_;
  http::HttpRequestHead head_;
  OriginalRequest out_;
  std::string_view error_;
};

TEST_F(RequestInputsTest, NginxHeaders) {
  ASSERT_TRUE(
      Read({"X-Original-Method: PUT",
            "X-Original-URI: /_matrix/client/v3/rooms/%21a:x/send/m/1",
            "X-Forwarded-For: 203.0.113.9", "Authorization: Bearer syt_abc"},
           "127.0.0.1"))
      << error_;
  EXPECT_EQ(out_.method, "PUT");
  EXPECT_EQ(out_.target, "/_matrix/client/v3/rooms/%21a:x/send/m/1");
  EXPECT_EQ(out_.client, Ip("203.0.113.9"));
  EXPECT_EQ(out_.access_token, "syt_abc");
  EXPECT_EQ(out_.masquerade_user_id, "");
}

TEST_F(RequestInputsTest, FederationOriginFromXMatrix) {
  ASSERT_TRUE(Read({"X-Original-Method: PUT",
                    "X-Original-URI: /_matrix/federation/v1/send/t1",
                    "X-Forwarded-For: 203.0.113.9",
                    "Authorization: X-Matrix origin=\"matrix.org\","
                    "destination=\"example.org\",key=\"ed25519:a\","
                    "sig=\"abc\""},
                   "127.0.0.1"))
      << error_;
  EXPECT_EQ(out_.origin, "matrix.org");
  EXPECT_EQ(out_.access_token, "");
  // A Bearer token names no origin.
  ASSERT_TRUE(Read({"X-Original-Method: GET", "X-Original-URI: /x",
                    "Authorization: Bearer syt_abc"},
                   "127.0.0.1"));
  EXPECT_EQ(out_.origin, "");
}

TEST(ContentLengthTest, DigitsOnlyElseUnknown) {
  EXPECT_EQ(ParseContentLength("0"), 0);
  EXPECT_EQ(ParseContentLength("524288000"), 524288000);
  EXPECT_EQ(ParseContentLength("999999999999999999"), 999999999999999999);
  for (const char* bad :
       {"", "-1", "+5", " 5", "5 ", "1e9", "0x10", "1234567890123456789"}) {
    EXPECT_EQ(ParseContentLength(bad), -1) << bad;
  }
}

TEST(XMatrixOriginTest, ReadsEverySpellingAndNeverFails) {
  EXPECT_EQ(XMatrixOrigin("X-Matrix origin=a.example,key=\"k\",sig=\"s\""),
            "a.example");
  EXPECT_EQ(XMatrixOrigin("x-matrix  key=\"k\", Origin = \"b.example:8448\""),
            "b.example:8448");
  EXPECT_EQ(XMatrixOrigin("X-Matrix origin=\"[::1]:8448\""), "[::1]:8448");
  EXPECT_EQ(XMatrixOrigin("X-Matrix key=k,sig=s"), "");
  EXPECT_EQ(XMatrixOrigin("X-Matrixorigin=a"), "");
  EXPECT_EQ(XMatrixOrigin("Bearer origin=a"), "");
  EXPECT_EQ(XMatrixOrigin("X-Matrix origin=\"unterminated"), "");
  EXPECT_EQ(XMatrixOrigin("X-Matrix =,=,,origin"), "");
  EXPECT_EQ(XMatrixOrigin(""), "");
  // Whatever the bytes, a view into the input or empty.
  std::string junk(4096, ',');
  junk.replace(0, 9, "X-Matrix ");
  EXPECT_EQ(XMatrixOrigin(junk), "");
}

TEST_F(RequestInputsTest, CaddyHeaders) {
  ASSERT_TRUE(
      Read({"X-Forwarded-Method: GET",
            "X-Forwarded-Uri: /_matrix/client/v3/sync?access_token=a%2Bb",
            "X-Forwarded-For: 2001:db8::7"},
           "127.0.0.1", CheckProtocol::kForwardAuth))
      << error_;
  EXPECT_EQ(out_.method, "GET");
  EXPECT_EQ(out_.client, Ip("2001:db8::7"));
  EXPECT_EQ(out_.access_token, "a+b");  // percent-decoded
}

TEST_F(RequestInputsTest, AnUntrustedPeerIsTheClientWhateverItClaims) {
  ASSERT_TRUE(Read({"X-Original-Method: GET", "X-Original-URI: /",
                    "X-Forwarded-For: 198.51.100.1", "X-Real-IP: 198.51.100.2",
                    "Forwarded: for=198.51.100.3"},
                   "192.0.2.50"));
  EXPECT_EQ(out_.client, Ip("192.0.2.50"));
}

TEST_F(RequestInputsTest, RightmostUntrustedHopAcrossSeveralFields) {
  // The client's own guess comes first; our proxies appended after it.
  ASSERT_TRUE(Read(
      {"X-Original-Method: GET", "X-Original-URI: /",
       "X-Forwarded-For: 1.1.1.1, 203.0.113.7", "X-Forwarded-For: 10.1.1.1"},
      "127.0.0.1"));
  EXPECT_EQ(out_.client, Ip("203.0.113.7"));
}

TEST_F(RequestInputsTest, NginxMayNameTheClientInXRealIp) {
  ASSERT_TRUE(Read(
      {"X-Original-Method: GET", "X-Original-URI: /", "X-Real-IP: 203.0.113.8"},
      "127.0.0.1"));
  EXPECT_EQ(out_.client, Ip("203.0.113.8"));
  EXPECT_FALSE(Read({"X-Original-Method: GET", "X-Original-URI: /",
                     "X-Real-IP: not-an-address"},
                    "127.0.0.1"));
  EXPECT_NE(std::string(error_).find("X-Real-IP"), std::string::npos);
  // X-Forwarded-For, which the documented config sets, comes first.
  ASSERT_TRUE(Read({"X-Original-Method: GET", "X-Original-URI: /",
                    "X-Real-IP: 203.0.113.8", "X-Forwarded-For: 203.0.113.9"},
                   "127.0.0.1"));
  EXPECT_EQ(out_.client, Ip("203.0.113.9"));
}

// Caddy's forward_auth copies every header the client sent, and sets only
// X-Forwarded-Method, X-Forwarded-Uri and X-Forwarded-For: a client's copy of
// nginx's headers, a Forwarded or an X-Real-IP is never read there. nginx's
// endpoint likewise never reads Caddy's headers or Forwarded.
TEST_F(RequestInputsTest, EachEndpointBelievesOnlyItsProxysHeaders) {
  const std::vector<std::string> forged = {
      "X-Original-Method: OPTIONS",
      "X-Original-URI: /_matrix/client/versions",
      "Forwarded: for=198.51.100.3",
      "X-Real-IP: 198.51.100.2",
  };
  std::vector<std::string> caddy = forged;
  caddy.insert(caddy.end(), {"X-Forwarded-Method: POST",
                             "X-Forwarded-Uri: /_matrix/client/v3/login",
                             "X-Forwarded-For: 203.0.113.7"});
  ASSERT_TRUE(Read(caddy, "127.0.0.1", CheckProtocol::kForwardAuth)) << error_;
  EXPECT_EQ(out_.method, "POST");
  EXPECT_EQ(out_.target, "/_matrix/client/v3/login");
  EXPECT_EQ(out_.client, Ip("203.0.113.7"));
  // Without Caddy's own headers, the forged ones do not stand in.
  EXPECT_FALSE(Read(forged, "127.0.0.1", CheckProtocol::kForwardAuth));
  ASSERT_TRUE(Read({"X-Forwarded-Method: POST", "X-Forwarded-Uri: /x",
                    "Forwarded: for=198.51.100.3", "X-Real-IP: 198.51.100.2"},
                   "127.0.0.1", CheckProtocol::kForwardAuth));
  EXPECT_EQ(out_.client, Ip("127.0.0.1"));

  EXPECT_FALSE(Read({"X-Forwarded-Method: POST", "X-Forwarded-Uri: /x"},
                    "127.0.0.1", CheckProtocol::kAuthRequest));
  ASSERT_TRUE(Read({"X-Original-Method: POST", "X-Original-URI: /x",
                    "Forwarded: for=198.51.100.3"},
                   "127.0.0.1", CheckProtocol::kAuthRequest));
  EXPECT_EQ(out_.client, Ip("127.0.0.1"));
}

TEST_F(RequestInputsTest, AnUnreadableHopIsTheUnidentifiedClient) {
  for (const char* hop : {"unknown", "_hidden", "garbage"}) {
    ASSERT_TRUE(Read({"X-Original-Method: GET", "X-Original-URI: /",
                      std::string("X-Forwarded-For: ") + hop},
                     "127.0.0.1"));
    EXPECT_EQ(out_.client, UnidentifiedClient()) << hop;
    EXPECT_NE(out_.client, Ip("127.0.0.1"));
  }
}

TEST_F(RequestInputsTest, MissingOrMalformedProxyInputsAreErrors) {
  EXPECT_FALSE(Read({"X-Original-URI: /"}, "127.0.0.1"));
  EXPECT_NE(std::string(error_).find("Method"), std::string::npos);
  EXPECT_FALSE(Read({"X-Original-Method: GET"}, "127.0.0.1"));
  EXPECT_NE(std::string(error_).find("URI"), std::string::npos);
  EXPECT_FALSE(
      Read({"X-Original-Method: G{T", "X-Original-URI: /"}, "127.0.0.1"));
  EXPECT_FALSE(Read({"X-Original-Method: GET", "X-Original-URI: evil/_matrix"},
                    "127.0.0.1"));
  EXPECT_FALSE(Read({"X-Original-Method: GET", "X-Original-URI: ftp://x/y"},
                    "127.0.0.1"));
}

TEST_F(RequestInputsTest, AbsoluteFormTargetsLoseTheirAuthority) {
  ASSERT_TRUE(Read({"X-Original-Method: GET",
                    "X-Original-URI: https://matrix.example.org/_matrix/"
                    "client/v3/sync?since=1"},
                   "127.0.0.1"));
  EXPECT_EQ(out_.target, "/_matrix/client/v3/sync?since=1");
  EXPECT_FALSE(Read({"X-Original-Method: GET", "X-Original-URI: http://h"},
                    "127.0.0.1"));
  EXPECT_FALSE(
      Read({"X-Original-Method: GET", "X-Original-URI: *"}, "127.0.0.1"));
}

// A client's own bytes never make the decision fail: a proxy set to fail
// open would pass such a request unlimited.
TEST_F(RequestInputsTest, ClientControlledValuesNeverFail) {
  ASSERT_TRUE(Read({"X-Original-Method: GET",
                    "X-Original-URI: /x?access_token=%zz&user_id=%4"},
                   "127.0.0.1"));
  EXPECT_EQ(out_.access_token, "%zz");  // as sent: still hashed, still limited
  EXPECT_EQ(out_.masquerade_user_id, "%4");
  const std::string long_token(kMaxTokenBytes + 1, 'a');
  ASSERT_TRUE(Read({"X-Original-Method: GET",
                    "X-Original-URI: /x?access_token=" + long_token},
                   "127.0.0.1"));
  EXPECT_EQ(out_.access_token, long_token);
  const std::string huge(60000, 'b');
  ASSERT_TRUE(Read({"X-Original-Method: GET", "X-Original-URI: /",
                    "Authorization: Bearer " + huge},
                   "127.0.0.1"));
  EXPECT_EQ(out_.access_token, huge);
}

TEST_F(RequestInputsTest, EnvoyPathTarget) {
  // Envoy checks with the original method, the target after the prefix.
  text_ =
      "DELETE /_mxlimit/forward_auth/_matrix/client/v3/devices/D?x=1 "
      "HTTP/1.1\r\nX-Forwarded-For: 203.0.113.4\r\n\r\n";
  ASSERT_EQ(http::ParseRequestHead(text_, head_).state,
            http::HeadParse::kComplete);
  ASSERT_TRUE(ReadOriginalRequest(head_, CheckProtocol::kEnvoy, Ip("127.0.0.1"),
                                  proxies_, out_, error_,
                                  "/_matrix/client/v3/devices/D?x=1"));
  EXPECT_EQ(out_.method, "DELETE");
  EXPECT_EQ(out_.target, "/_matrix/client/v3/devices/D?x=1");
  EXPECT_EQ(out_.client, Ip("203.0.113.4"));
}

TEST_F(RequestInputsTest, FederationAuthorizationIsNotAUser) {
  ASSERT_TRUE(Read({"X-Original-Method: GET",
                    "X-Original-URI: /_matrix/federation/v1/version",
                    "Authorization: X-Matrix origin=\"a.example\",key=\"k\""},
                   "127.0.0.1"));
  EXPECT_EQ(out_.access_token, "");
}

TEST_F(RequestInputsTest, AppserviceUserIdParameter) {
  ASSERT_TRUE(Read({"X-Original-Method: PUT",
                    "X-Original-URI: /_matrix/client/v3/rooms/!a:x/send/m/1"
                    "?user_id=%40bridge_alice%3Aexample.org",
                    "Authorization: Bearer as_token_1"},
                   "127.0.0.1"));
  EXPECT_EQ(out_.access_token, "as_token_1");
  EXPECT_EQ(out_.masquerade_user_id, "@bridge_alice:example.org");
}

// Issue #31: mxlimitd and `mxlimit replay` read `?user_id=` with one rule
// (mxlimit::AppserviceUserId), so they charge one user: `+` is a space, as
// Synapse reads a query, and `%XX` is decoded. Replay used to keep the '+'
// (and then exempt the request, the result not being a well-formed ID).
TEST_F(RequestInputsTest, AppserviceUserIdIsTheSameForReplay) {
  const std::string target =
      "/_matrix/client/v3/rooms/!a:x/send/m/1"
      "?user_id=%40bob+smith%3Aexample.org";
  ASSERT_TRUE(Read({"X-Original-Method: PUT", "X-Original-URI: " + target,
                    "Authorization: Bearer as_token_1"},
                   "127.0.0.1"));
  EXPECT_EQ(out_.masquerade_user_id, "@bob smith:example.org");

  replay::ReplayAppservices appservices({"@bridge:example.org"},
                                        /*rate_limited=*/true);
  replay::LogRecord record;
  record.method = "PUT";
  record.target = target;
  record.user = "@bridge:example.org";
  Request request;
  appservices.Apply(record, &request);
  EXPECT_FALSE(request.exempt);
  EXPECT_EQ(request.user_id, out_.masquerade_user_id);
}

TEST(AppserviceUserIdTest, DecodesLikeSynapseAndKeepsWhatItCannot) {
  std::array<char, 64> buffer;
  EXPECT_EQ(AppserviceUserId("/p?user_id=%40a+b%3ax", buffer), "@a b:x");
  EXPECT_EQ(AppserviceUserId("/p?x=1&user_id=@c:x&user_id=@d:x", buffer),
            "@c:x");
  EXPECT_EQ(AppserviceUserId("/p", buffer), "");
  EXPECT_EQ(AppserviceUserId("/p?user_id=", buffer), "");
  EXPECT_EQ(AppserviceUserId("/p#?user_id=@c:x", buffer), "");
  // Undecodable: returned as sent, so the limiter charges the overflow
  // bucket rather than exempting the request.
  EXPECT_EQ(AppserviceUserId("/p?user_id=%4", buffer), "%4");
  std::array<char, 4> small;
  EXPECT_EQ(AppserviceUserId("/p?user_id=@c:x.org", small), "@c:x.org");
}

}  // namespace
}  // namespace mxlimit::daemon
