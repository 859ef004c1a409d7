#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "src/replay/log_parsers.h"
#include "src/replay/log_record.h"

namespace mxlimit::replay {
namespace {

// 2026-11-30 00:00:00 UTC in ms since the epoch (date -u -d ... +%s).
constexpr int64_t kNov30 = 1795996800000;
constexpr int64_t kNov30TenAm = kNov30 + 10 * 3600 * 1000;

constexpr std::string_view kSynapseDocLine =
    "2026-11-30 10:00:00,250 - synapse.access.http.8008 - 473 - INFO - "
    "PUT-1042 - 203.0.113.9 - 8008 - {@alice:example.org} Processed request: "
    "0.250sec/0.000sec (0.010sec, 0.000sec) (0.001sec/0.004sec/2) 62B 200 "
    "\"PUT /_matrix/client/v3/rooms/!abc%3Aexample.org/send/m.room.message/m1 "
    "HTTP/1.1\" \"Element/1.11.80\" [0 dbevts]";

// A Synapse line with the requester, status and request line swapped in.
std::string SynapseLine(
    std::string_view requester,
    std::string_view request =
        "GET /_matrix/client/v3/sync?timeout=30000 HTTP/1.1",
    std::string_view status = "200",
    std::string_view timing =
        "0.250sec/0.000sec (0.010sec, 0.000sec) "
        "(0.001sec/0.004sec/2)",
    std::string_view id_and_ip = "GET-7 - 203.0.113.9") {
  std::string s = "2026-11-30 10:00:00,250 - synapse.access.http.8008 - 473 - ";
  s += "INFO - ";
  s += id_and_ip;
  s += " - 8008 - {";
  s += requester;
  s += "} Processed request: ";
  s += timing;
  s += " 62B ";
  s += status;
  s += " \"";
  s += request;
  s += "\" \"Element/1.11.80\" [0 dbevts]";
  return s;
}

// Parses a copy that outlives the call, so the record's views stay valid
// while the test inspects them (the parsers point into the caller's line).
ParseResult Synapse(std::string_view line, LogRecord* r) {
  static std::deque<std::string> kept;
  kept.emplace_back(line);
  return ParseSynapseLine(kept.back(), r);
}

// ---------------------------------------------------------------------------
// tsv
// ---------------------------------------------------------------------------

TEST(TsvParserTest, ReadsAllFiveFieldsWithTabs) {
  LogRecord r;
  ASSERT_EQ(
      ParseTsvLine("1500\tPOST\t/_matrix/client/v3/login\t2001:db8::1\t-", &r),
      ParseResult::kOk);
  EXPECT_EQ(r.time_ms, 1500);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/_matrix/client/v3/login");
  EXPECT_EQ(r.client_ip, "2001:db8::1");
  EXPECT_TRUE(r.user.empty());
}

TEST(TsvParserTest, AServerNameInBracesIsAFederationOrigin) {
  LogRecord r;
  ASSERT_EQ(ParseTsvLine("1500\tPUT\t/_matrix/federation/v1/send/1\t"
                         "203.0.113.5\t{matrix.org}",
                         &r),
            ParseResult::kOk);
  EXPECT_EQ(r.origin_server, "matrix.org");
  EXPECT_TRUE(r.user.empty());
  EXPECT_EQ(ParseTsvLine("1\tGET\t/x\t203.0.113.5\t{not_a_server!}", &r),
            ParseResult::kBadUser);
  EXPECT_EQ(ParseTsvLine("1\tGET\t/x\t203.0.113.5\t{}", &r),
            ParseResult::kBadUser);
}

TEST(TsvParserTest, AcceptsRunsOfSpacesAndTabsAndCrlf) {
  LogRecord r;
  ASSERT_EQ(ParseTsvLine("  0  GET \t /_matrix/client/v3/sync?since=s1_2  "
                         "203.0.113.9\t\t@bob:example.org \r",
                         &r),
            ParseResult::kOk);
  EXPECT_EQ(r.time_ms, 0);
  EXPECT_EQ(r.target, "/_matrix/client/v3/sync?since=s1_2");
  EXPECT_EQ(r.user, "@bob:example.org");
}

TEST(TsvParserTest, ReadsTheOptionalStatusAndBytes) {
  LogRecord r;
  ASSERT_EQ(ParseTsvLine("1 POST /login 203.0.113.9 - 403 71", &r),
            ParseResult::kOk);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body_bytes, 71);
  ASSERT_EQ(ParseTsvLine("1 POST /login 203.0.113.9 - 200", &r),
            ParseResult::kOk);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body_bytes, -1);
  ASSERT_EQ(ParseTsvLine("1 POST /login 203.0.113.9 -", &r), ParseResult::kOk);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.body_bytes, -1);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 - 40x 1", &r),
            ParseResult::kMalformed);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 - 4000 1", &r),
            ParseResult::kMalformed);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 - 200 -1", &r),
            ParseResult::kMalformed);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 - 200 1 extra", &r),
            ParseResult::kMalformed);
}

TEST(TsvParserTest, RejectsWrongFieldCountsAndValues) {
  LogRecord r;
  EXPECT_EQ(ParseTsvLine("", &r), ParseResult::kEmpty);
  EXPECT_EQ(ParseTsvLine(" \t ", &r), ParseResult::kEmpty);
  EXPECT_EQ(ParseTsvLine("hello", &r), ParseResult::kNotRequest);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9", &r), ParseResult::kMalformed);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 - extra", &r),
            ParseResult::kMalformed);
  EXPECT_EQ(ParseTsvLine("1.5 GET / 203.0.113.9 -", &r),
            ParseResult::kBadTimestamp);
  EXPECT_EQ(ParseTsvLine("-1 GET / 203.0.113.9 -", &r),
            ParseResult::kBadTimestamp);
  EXPECT_EQ(ParseTsvLine("1234567890123456789 GET / 203.0.113.9 -", &r),
            ParseResult::kBadTimestamp);  // 19 digits could overflow
  EXPECT_EQ(ParseTsvLine("1 G(T / 203.0.113.9 -", &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseTsvLine("1 GET nopath 203.0.113.9 -", &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseTsvLine("1 GET / not-an-ip -", &r),
            ParseResult::kBadClientAddress);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 bob", &r), ParseResult::kBadUser);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 @bob", &r),
            ParseResult::kBadUser);
}

TEST(TsvParserTest, LeavesOutputUntouchedOnFailure) {
  LogRecord r;
  r.time_ms = 77;
  r.method = "KEEP";
  EXPECT_NE(ParseTsvLine("1 GET / 203.0.113.9 bob", &r), ParseResult::kOk);
  EXPECT_EQ(r.time_ms, 77);
  EXPECT_EQ(r.method, "KEEP");
}

TEST(TsvParserTest, AcceptsAbsoluteAndAsteriskTargets) {
  LogRecord r;
  EXPECT_EQ(ParseTsvLine("1 GET http://evil.example/ 203.0.113.9 -", &r),
            ParseResult::kOk);
  EXPECT_EQ(ParseTsvLine("1 OPTIONS * 203.0.113.9 -", &r), ParseResult::kOk);
  EXPECT_EQ(ParseTsvLine("1 GET http:// 203.0.113.9 -", &r),
            ParseResult::kBadRequestLine);
}

TEST(TsvParserTest, RejectsUserIdOverSpecLimit) {
  LogRecord r;
  std::string user = "@" + std::string(64 * 1024, 'a') + ":example.org";
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 " + user, &r),
            ParseResult::kBadUser);
  std::string ok_user = "@" + std::string(242, 'a') + ":example.org";
  ASSERT_EQ(ok_user.size(), 255u);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 " + ok_user, &r),
            ParseResult::kOk);
  EXPECT_EQ(ParseTsvLine("1 GET / 203.0.113.9 " + ok_user.substr(0, 1) + "b" +
                             ok_user.substr(1),
                         &r),
            ParseResult::kBadUser);  // 256 bytes
}

// ---------------------------------------------------------------------------
// Synapse
// ---------------------------------------------------------------------------

TEST(SynapseParserTest, ParsesTheDocumentedLine) {
  LogRecord r;
  ASSERT_EQ(Synapse(kSynapseDocLine, &r), ParseResult::kOk);
  // Finished at 10:00:00.250 after 0.250 s of processing: arrived at 10:00.
  EXPECT_EQ(r.time_ms, kNov30TenAm);
  EXPECT_EQ(r.method, "PUT");
  EXPECT_EQ(
      r.target,
      "/_matrix/client/v3/rooms/!abc%3Aexample.org/send/m.room.message/m1");
  EXPECT_EQ(r.client_ip, "203.0.113.9");
  EXPECT_EQ(r.user, "@alice:example.org");
  EXPECT_TRUE(r.acting_user.empty());
  EXPECT_TRUE(r.origin_server.empty());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body_bytes, 62);
}

TEST(SynapseParserTest, ArrivalIsFinishMinusProcessingTime) {
  LogRecord r;
  ASSERT_EQ(
      Synapse(SynapseLine("None", "GET /_matrix/client/v3/sync HTTP/1.1", "200",
                          "30.0016sec/0.001sec (0.010sec, 0.000sec) "
                          "(0.001sec/0.004sec/2)"),
              &r),
      ParseResult::kOk);
  // 10:00:00.250 - 30.002 s (30.0016 rounds to 30.002).
  EXPECT_EQ(r.time_ms, kNov30TenAm + 250 - 30002);
  ASSERT_EQ(Synapse(SynapseLine("None", "GET / HTTP/1.1", "200",
                                "2sec/0.001sec (0.010sec, 0.000sec) "
                                "(0.001sec/0.004sec/2)"),
                    &r),
            ParseResult::kOk);
  EXPECT_EQ(r.time_ms, kNov30TenAm + 250 - 2000);
}

TEST(SynapseParserTest, AcceptsBothRequestIdSpacings) {
  LogRecord r;
  ASSERT_EQ(Synapse(SynapseLine("None", "GET / HTTP/1.1", "200",
                                "0.001sec/0.000sec (0.0sec, 0.0sec) "
                                "(0.0sec/0.0sec/0)",
                                "GET-9- 198.51.100.4"),
                    &r),
            ParseResult::kOk);
  EXPECT_EQ(r.client_ip, "198.51.100.4");
  ASSERT_EQ(Synapse(SynapseLine("None", "GET / HTTP/1.1", "200",
                                "0.001sec/0.000sec (0.0sec, 0.0sec) "
                                "(0.0sec/0.0sec/0)",
                                "GET-9 - 2001:db8::7"),
                    &r),
            ParseResult::kOk);
  EXPECT_EQ(r.client_ip, "2001:db8::7");
}

TEST(SynapseParserTest, AcceptsBothTimingLayouts) {
  LogRecord r;
  ASSERT_EQ(Synapse(SynapseLine("@a:s", "GET / HTTP/1.1", "200",
                                "0.100sec/0.000sec ru=(0.010sec, 0.000sec) "
                                "db=(0.001sec/0.004sec/2)"),
                    &r),
            ParseResult::kOk);
  EXPECT_EQ(r.time_ms, kNov30TenAm + 150);
  // A mixed layout is not one Synapse ever wrote.
  EXPECT_EQ(Synapse(SynapseLine("@a:s", "GET / HTTP/1.1", "200",
                                "0.100sec/0.000sec ru=(0.010sec, 0.000sec) "
                                "(0.001sec/0.004sec/2)"),
                    &r),
            ParseResult::kMalformed);
}

TEST(SynapseParserTest, RequesterVariants) {
  LogRecord r;
  ASSERT_EQ(Synapse(SynapseLine("None"), &r), ParseResult::kOk);
  EXPECT_TRUE(r.user.empty());
  EXPECT_TRUE(r.origin_server.empty());

  ASSERT_EQ(Synapse(SynapseLine("@admin:example.org|@bob:example.org"), &r),
            ParseResult::kOk);
  EXPECT_EQ(r.user, "@bob:example.org");  // the acted-for user is charged
  EXPECT_EQ(r.acting_user, "@admin:example.org");

  ASSERT_EQ(Synapse(SynapseLine("matrix.example.com:8448"), &r),
            ParseResult::kOk);
  EXPECT_TRUE(r.user.empty());  // federation: no user to charge
  EXPECT_EQ(r.origin_server, "matrix.example.com:8448");

  EXPECT_EQ(Synapse(SynapseLine(""), &r), ParseResult::kBadUser);
  EXPECT_EQ(Synapse(SynapseLine("@nocolon"), &r), ParseResult::kBadUser);
  EXPECT_EQ(Synapse(SynapseLine("@a:s|bob"), &r), ParseResult::kBadUser);
  EXPECT_EQ(Synapse(SynapseLine("not a server"), &r), ParseResult::kBadUser);
  EXPECT_EQ(Synapse(SynapseLine("@" + std::string(64 * 1024, 'u') + ":s"), &r),
            ParseResult::kBadUser);
}

TEST(SynapseParserTest, AcceptsClientWentAwayStatus) {
  LogRecord r;
  EXPECT_EQ(Synapse(SynapseLine("@a:s", "GET / HTTP/1.1", "200!"), &r),
            ParseResult::kOk);
  EXPECT_EQ(Synapse(SynapseLine("@a:s", "GET / HTTP/1.1", "499!"), &r),
            ParseResult::kOk);
  EXPECT_EQ(r.status, 499);
  EXPECT_EQ(Synapse(SynapseLine("@a:s", "GET / HTTP/1.1", "20x"), &r),
            ParseResult::kMalformed);
}

TEST(SynapseParserTest, KeepsRedactedAccessTokenInTarget) {
  LogRecord r;
  ASSERT_EQ(Synapse(SynapseLine("@a:example.org",
                                "GET /_matrix/media/v3/download/example.org/"
                                "abc?access_token=<redacted> HTTP/1.1"),
                    &r),
            ParseResult::kOk);
  EXPECT_EQ(
      r.target,
      "/_matrix/media/v3/download/example.org/abc?access_token=<redacted>");
}

TEST(SynapseParserTest, HttpsLoggerAndOtherSiteTags) {
  LogRecord r;
  std::string line(kSynapseDocLine);
  line.replace(line.find("http.8008"), 9, "https.client");
  EXPECT_EQ(Synapse(line, &r), ParseResult::kOk);
}

TEST(SynapseParserTest, RejectsNonRequestLines) {
  LogRecord r;
  EXPECT_EQ(Synapse("", &r), ParseResult::kEmpty);
  EXPECT_EQ(Synapse("Traceback (most recent call last):", &r),
            ParseResult::kNotRequest);
  EXPECT_EQ(Synapse("  File \"/usr/lib/python3/dist-packages/synapse/http/"
                    "server.py\", line 332, in _async_render_wrapper",
                    &r),
            ParseResult::kNotRequest);
  EXPECT_EQ(
      Synapse("2026-11-30 10:00:01,001 - synapse.http.server - 130 - "
              "ERROR - GET-12 - Failed handle request via 'SyncRestServlet'",
              &r),
      ParseResult::kNotRequest);
  EXPECT_EQ(Synapse("2026-11-30 10:00:01,001 - synapse.access.http.8008 - 455 "
                    "- DEBUG - GET-12 - 203.0.113.9 - 8008 - Received request: "
                    "GET /_matrix/client/v3/sync",
                    &r),
            ParseResult::kNotRequest);
  // nginx and tsv lines are not Synapse lines.
  EXPECT_EQ(Synapse("203.0.113.9 - - [30/Nov/2026:10:00:00 +0000] \"GET / "
                    "HTTP/1.1\" 200 5 \"-\" \"x\"",
                    &r),
            ParseResult::kNotRequest);
  EXPECT_EQ(Synapse("1 GET / 203.0.113.9 -", &r), ParseResult::kNotRequest);
}

TEST(SynapseParserTest, RejectsDamagedRequestLines) {
  LogRecord r;
  std::string line(kSynapseDocLine);
  EXPECT_EQ(Synapse(line.substr(0, line.find(" HTTP/1.1")), &r),
            ParseResult::kBadRequestLine);  // cut off in the request line
  EXPECT_EQ(Synapse(SynapseLine("None", "GET /a HTTPS/1.1"), &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(Synapse(SynapseLine("None", "GET relative HTTP/1.1"), &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(Synapse(SynapseLine("None", "G\x01T / HTTP/1.1"), &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(Synapse(SynapseLine("None", "GET /\xff\xfe HTTP/1.1"), &r),
            ParseResult::kBadRequestLine);
}

TEST(SynapseParserTest, RejectsBadTimestampsAndAddresses) {
  LogRecord r;
  std::string line(kSynapseDocLine);
  std::string bad_day = line;
  bad_day.replace(0, 10, "2026-02-30");
  EXPECT_EQ(Synapse(bad_day, &r), ParseResult::kBadTimestamp);
  std::string bad_hour = line;
  bad_hour.replace(11, 2, "24");
  EXPECT_EQ(Synapse(bad_hour, &r), ParseResult::kBadTimestamp);
  std::string leap = line;
  leap.replace(0, 10, "2028-02-29");
  EXPECT_EQ(Synapse(leap, &r), ParseResult::kOk);
  EXPECT_EQ(Synapse(SynapseLine("None", "GET / HTTP/1.1", "200",
                                "0.001sec/0.000sec (0.0sec, 0.0sec) "
                                "(0.0sec/0.0sec/0)",
                                "GET-1 - -"),
                    &r),
            ParseResult::kBadClientAddress);  // UNIX-socket listener
}

TEST(SynapseParserTest, EveryPrefixOfAGoodLineIsRejectedSafely) {
  // Truncated lines (a crash mid-write, a cut-off tail -c) never parse as a
  // request with missing fields.
  std::string line(kSynapseDocLine);
  size_t end_of_request = line.find("\" \"Element");
  for (size_t n = 0; n <= end_of_request; ++n) {
    LogRecord r;
    EXPECT_NE(Synapse(std::string_view(line).substr(0, n), &r),
              ParseResult::kOk)
        << n;
  }
}

// ---------------------------------------------------------------------------
// nginx
// ---------------------------------------------------------------------------

TEST(NginxParserTest, ParsesCombinedLine) {
  LogRecord r;
  ASSERT_EQ(ParseNginxLine("203.0.113.9 - - [30/Nov/2026:10:00:00 +0000] \"GET "
                           "/_matrix/client/v3/sync?timeout=30000 HTTP/1.1\" "
                           "200 512 \"-\" \"Element/1.11.80\"",
                           &r),
            ParseResult::kOk);
  EXPECT_EQ(r.time_ms, kNov30TenAm);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/_matrix/client/v3/sync?timeout=30000");
  EXPECT_EQ(r.client_ip, "203.0.113.9");
  EXPECT_TRUE(r.user.empty());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body_bytes, 512);
}

TEST(NginxParserTest, HonoursZoneOffset) {
  LogRecord r;
  ASSERT_EQ(
      ParseNginxLine("2001:db8::5 - - [30/Nov/2026:11:30:00 +0130] \"POST "
                     "/_matrix/client/v3/login HTTP/2.0\" 403 70 \"-\" "
                     "\"x\"",
                     &r),
      ParseResult::kOk);
  EXPECT_EQ(r.time_ms, kNov30TenAm);
  ASSERT_EQ(ParseNginxLine("2001:db8::5 - - [30/Nov/2026:05:00:00 -0500] \"GET "
                           "/ HTTP/1.0\" 200 0 \"-\" \"x\"",
                           &r),
            ParseResult::kOk);
  EXPECT_EQ(r.time_ms, kNov30TenAm);
  // Crossing midnight backwards into the previous month.
  ASSERT_EQ(
      ParseNginxLine("198.51.100.1 - - [01/Dec/2026:01:00:00 +0200] \"GET "
                     "/ HTTP/1.1\" 200 0 \"-\" \"x\"",
                     &r),
      ParseResult::kOk);
  EXPECT_EQ(r.time_ms, kNov30 + 23 * 3600 * 1000);
}

TEST(NginxParserTest, IgnoresBasicAuthUserAndExtraFields) {
  LogRecord r;
  ASSERT_EQ(ParseNginxLine("203.0.113.9 - carol [30/Nov/2026:10:00:00 +0000] "
                           "\"GET / HTTP/1.1\" 200 512 \"-\" \"ua\" 0.012 "
                           "\"10.0.0.1\"",
                           &r),
            ParseResult::kOk);
  EXPECT_TRUE(r.user.empty());
}

TEST(NginxParserTest, RejectsMalformedRequests) {
  LogRecord r;
  auto line = [](std::string_view request) {
    return "203.0.113.9 - - [30/Nov/2026:10:00:00 +0000] \"" +
           std::string(request) + "\" 400 150 \"-\" \"-\"";
  };
  EXPECT_EQ(ParseNginxLine(line("-"), &r), ParseResult::kBadRequestLine);
  EXPECT_EQ(
      ParseNginxLine(line("\\x16\\x03\\x01\\x02\\x00\\x01\\x00\\x01\\xFC"), &r),
      ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseNginxLine(line("GET /"), &r), ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseNginxLine(line("GET / foo HTTP/1.1"), &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseNginxLine(line("GET / HTTP/1.1 extra"), &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseNginxLine(line(""), &r), ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseNginxLine(line("GET / HTTP/1.1"), &r), ParseResult::kOk);
}

TEST(NginxParserTest, RejectsBadTimesAndOtherFormats) {
  LogRecord r;
  EXPECT_EQ(ParseNginxLine("203.0.113.9 - - [31/Nov/2026:10:00:00 +0000] \"GET "
                           "/ HTTP/1.1\" 200 0 \"-\" \"-\"",
                           &r),
            ParseResult::kBadTimestamp);
  EXPECT_EQ(ParseNginxLine("203.0.113.9 - - [30/Foo/2026:10:00:00 +0000] \"GET "
                           "/ HTTP/1.1\" 200 0 \"-\" \"-\"",
                           &r),
            ParseResult::kBadTimestamp);
  EXPECT_EQ(ParseNginxLine("203.0.113.9 - - [30/Nov/2026:10:00:00] \"GET / "
                           "HTTP/1.1\" 200 0 \"-\" \"-\"",
                           &r),
            ParseResult::kBadTimestamp);
  EXPECT_EQ(ParseNginxLine("203.0.113.9 - - [30/Nov/2026:10:00:00 +0000] \"GET "
                           "/ HTTP/1.1\" OK 0 \"-\" \"-\"",
                           &r),
            ParseResult::kMalformed);
  EXPECT_EQ(ParseNginxLine(kSynapseDocLine, &r), ParseResult::kNotRequest);
  EXPECT_EQ(ParseNginxLine("1 GET / 203.0.113.9 -", &r),
            ParseResult::kNotRequest);
  EXPECT_EQ(ParseNginxLine("", &r), ParseResult::kEmpty);
}

// ---------------------------------------------------------------------------
// Hostile input, every parser
// ---------------------------------------------------------------------------

TEST(AllParsersTest, BinaryAndHugeLinesAreRejectedWithoutCrashing) {
  std::vector<std::string> junk;
  junk.push_back(std::string("\0\0\0\0", 4));
  junk.push_back("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03");
  junk.push_back(std::string(1 << 20, 'A'));
  junk.push_back(std::string(100000, ' ') + "x");
  junk.push_back(std::string(70000, '"'));
  junk.push_back("\xef\xbb\xbf" + std::string(kSynapseDocLine));  // BOM
  std::string pseudo;
  uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1103515245 + 12345;
    pseudo.push_back(static_cast<char>(x >> 16));
  }
  junk.push_back(pseudo);
  for (int i = 0; i < kLogFormatCount; ++i) {
    const auto f = static_cast<LogFormat>(i);
    for (const std::string& line : junk) {
      LogRecord r;
      EXPECT_NE(ParseLogLine(f, line, &r), ParseResult::kOk)
          << LogFormatName(f) << " accepted junk of size " << line.size();
    }
  }
}

TEST(AllParsersTest, ParseLogLineDispatchesByFormat) {
  LogRecord r;
  EXPECT_EQ(ParseLogLine(LogFormat::kSynapse, kSynapseDocLine, &r),
            ParseResult::kOk);
  EXPECT_EQ(ParseLogLine(LogFormat::kTsv, kSynapseDocLine, &r),
            ParseResult::kMalformed);
}

// ---------------------------------------------------------------------------
// Names and detection
// ---------------------------------------------------------------------------

TEST(LogFormatTest, NamesRoundTrip) {
  for (LogFormat f :
       {LogFormat::kTsv, LogFormat::kSynapse, LogFormat::kNginx}) {
    EXPECT_EQ(ParseLogFormatName(LogFormatName(f)), f);
  }
  EXPECT_FALSE(ParseLogFormatName("auto").has_value());
  EXPECT_FALSE(ParseLogFormatName("Synapse").has_value());
  EXPECT_EQ(ParseResultName(ParseResult::kBadRequestLine), "bad request line");
}

TEST(DetectFormatTest, MajorityOfAcceptedLinesWins) {
  std::string syn(kSynapseDocLine);
  std::string ngx =
      "203.0.113.9 - - [30/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 0 "
      "\"-\" \"-\"";
  std::string tsv = "1 GET / 203.0.113.9 -";
  {
    std::vector<std::string_view> lines = {syn, "Traceback (most recent call)",
                                           syn, tsv};
    FormatDetection d = DetectFormatWithVotes(lines);
    EXPECT_EQ(d.format, LogFormat::kSynapse);
    EXPECT_TRUE(d.recognized);
    EXPECT_EQ(d.votes[static_cast<int>(LogFormat::kSynapse)], 2);
    EXPECT_EQ(d.votes[static_cast<int>(LogFormat::kTsv)], 1);
  }
  {
    std::vector<std::string_view> lines = {ngx, ngx, syn};
    EXPECT_EQ(DetectFormat(lines), LogFormat::kNginx);
  }
  {
    std::vector<std::string_view> lines = {tsv, "", tsv, ngx};
    EXPECT_EQ(DetectFormat(lines), LogFormat::kTsv);
  }
  {
    std::vector<std::string_view> lines = {tsv, syn};  // tie: Synapse first
    EXPECT_EQ(DetectFormat(lines), LogFormat::kSynapse);
  }
}

TEST(DetectFormatTest, DefaultsWhenNothingParses) {
  std::vector<std::string_view> startup = {
      "2026-11-30 09:59:58,001 - synapse.app.homeserver - 390 - INFO - main - "
      "Setting up server",
      "2026-11-30 09:59:58,101 - synapse.storage.database - 411 - INFO - main "
      "- Preparing database"};
  FormatDetection d = DetectFormatWithVotes(startup);
  EXPECT_EQ(d.format, LogFormat::kSynapse);
  EXPECT_FALSE(d.recognized);

  std::vector<std::string_view> junk = {"hello", "world"};
  d = DetectFormatWithVotes(junk);
  EXPECT_EQ(d.format, LogFormat::kTsv);
  EXPECT_FALSE(d.recognized);
  EXPECT_EQ(DetectFormat({}), LogFormat::kTsv);
}

}  // namespace
}  // namespace mxlimit::replay
