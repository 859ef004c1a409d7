// The formats operators' logs come in besides the plain ones: journald and
// docker prefixes, Synapse's TerseJson records, Caddy's JSON access log and
// nginx's combined + "$http_x_forwarded_for"; and the JSON scanner under the
// two JSON parsers.

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "src/replay/json_scan.h"
#include "src/replay/log_parsers.h"
#include "src/replay/log_record.h"

namespace mxlimit::replay {
namespace {

// 2026-11-30 10:00:00 UTC (1796032800 s) in ms since the epoch.
constexpr int64_t kTenAm = 1795996800000 + 10 * 3600 * 1000;

constexpr std::string_view kSynapseLine =
    "2026-11-30 10:00:00,250 - synapse.access.http.8008 - 473 - INFO - "
    "PUT-1042 - 203.0.113.9 - 8008 - {@alice:example.org} Processed request: "
    "0.250sec/0.000sec (0.010sec, 0.000sec) (0.001sec/0.004sec/2) 62B 200 "
    "\"PUT /_matrix/client/v3/rooms/!abc%3Aexample.org/send/m.room.message/m1 "
    "HTTP/1.1\" \"Element/1.11.80\" [0 dbevts]";

constexpr std::string_view kNginxLine =
    "203.0.113.9 - - [30/Nov/2026:10:00:00 +0000] \"GET "
    "/_matrix/client/v3/sync HTTP/1.1\" 200 512 \"-\" \"Element/1.11.80\"";

// A TerseJson access record with `extra` spliced in before the closing brace
// (a later duplicate key wins).
std::string SynapseJson(std::string_view extra = "") {
  std::string s =
      R"({"log":"203.0.113.9 - 8008 - {@alice:example.org} Processed )"
      R"(request: 0.250sec/0.000sec (0.010sec, 0.000sec) )"
      R"((0.001sec/0.004sec/2) 62B 200 \"PUT /x HTTP/1.1\" \"Element\" )"
      R"([0 dbevts]","namespace":"synapse.access.http.8008","level":"INFO",)"
      R"("time":1796032800.5,"request":"PUT-1042","ip_address":"203.0.113.9",)"
      R"("site_tag":"8008","requester":"@alice:example.org",)"
      R"("authenticated_entity":"@alice:example.org","method":"PUT",)"
      R"("url":"/_matrix/client/v3/rooms/!abc%3Aexample.org/send/m.room.)"
      R"(message/m1","protocol":"HTTP/1.1","user_agent":"Element/1.11.80")";
  s += extra;
  s += "}";
  return s;
}

std::string Caddy(std::string_view request_extra = "",
                  std::string_view extra = "") {
  std::string s =
      R"({"level":"info","ts":1796032800.5,"logger":"http.log.access.log0",)"
      R"("msg":"handled request","request":{"remote_ip":"10.0.0.2",)"
      R"("remote_port":"51234","client_ip":"203.0.113.9","proto":"HTTP/2.0",)"
      R"("method":"GET","host":"matrix.example.org",)"
      R"("uri":"/_matrix/client/v3/sync?timeout=30000",)"
      R"("headers":{"User-Agent":["Element/1.11.80"],"Accept":["*/*"]},)"
      R"("tls":{"resumed":false,"version":772,"server_name":"m.example.org"})";
  s += request_extra;
  s += R"(},"bytes_read":0,"user_id":"","duration":0.25,"size":512,)"
       R"("status":200,"resp_headers":{"Content-Type":["application/json"]})";
  s += extra;
  s += "}";
  return s;
}

// Keeps a copy alive so the record's views stay valid.
std::string_view Keep(std::string line) {
  static std::deque<std::string> kept;
  kept.push_back(std::move(line));
  return kept.back();
}

// ---------------------------------------------------------------------------
// JSON scanner
// ---------------------------------------------------------------------------

TEST(JsonObjectReaderTest, ReadsMembersAndSkipsNestedValues) {
  internal::JsonObjectReader reader(
      R"( {"a":"x\"y","b":-1.5e3,"c":{"d":[1,{"e":null}]},"f":true} )");
  internal::JsonMember m;
  std::vector<std::string> seen;
  while (reader.Next(&m))
    seen.push_back(std::string(m.key) + "=" + std::string(m.value));
  EXPECT_TRUE(reader.ok());
  EXPECT_EQ(seen,
            (std::vector<std::string>{"a=x\\\"y", "b=-1.5e3",
                                      "c={\"d\":[1,{\"e\":null}]}", "f=true"}));
}

TEST(JsonObjectReaderTest, RejectsWhatIsNotOneObject) {
  for (std::string_view bad :
       {"", "{", "[]", "{\"a\":1,}", "{\"a\":01}", "{\"a\":1} x", "{'a':1}",
        "{\"a\":\"\x01\"}", "{\"a\":\"\\x\"}", "{\"a\":tru}", "{\"a\" 1}",
        "{\"a\":1 \"b\":2}", "{\"a\":\"unterminated}", "{\"a\":-}",
        "{\"a\":1.}"}) {
    internal::JsonObjectReader reader(bad);
    internal::JsonMember m;
    while (reader.Next(&m)) {
    }
    EXPECT_FALSE(reader.ok()) << bad;
  }
}

TEST(JsonObjectReaderTest, BoundsNestingDepth) {
  std::string deep = "{\"a\":" + std::string(100000, '[') + "}";
  internal::JsonObjectReader reader(deep);
  internal::JsonMember m;
  EXPECT_FALSE(reader.Next(&m));
  EXPECT_FALSE(reader.ok());
  std::string ok = "{\"a\":" + std::string(internal::kMaxJsonDepth, '[') +
                   std::string(internal::kMaxJsonDepth, ']') + "}";
  internal::JsonObjectReader shallow(ok);
  EXPECT_TRUE(shallow.Next(&m));
}

TEST(JsonSecondsToMsTest, ConvertsAndRounds) {
  int64_t ms = 0;
  ASSERT_TRUE(internal::JsonSecondsToMs("1796032800.25", &ms));
  EXPECT_EQ(ms, 1796032800250);
  ASSERT_TRUE(internal::JsonSecondsToMs("0.0004999", &ms));
  EXPECT_EQ(ms, 0);
  ASSERT_TRUE(internal::JsonSecondsToMs("0.0015", &ms));
  EXPECT_EQ(ms, 2);
  ASSERT_TRUE(internal::JsonSecondsToMs("12", &ms));
  EXPECT_EQ(ms, 12000);
  for (std::string_view bad : {"", "-1", "1e3", "1.", ".5", "1234567890123"}) {
    EXPECT_FALSE(internal::JsonSecondsToMs(bad, &ms)) << bad;
  }
}

// ---------------------------------------------------------------------------
// synapse-json
// ---------------------------------------------------------------------------

TEST(SynapseJsonParserTest, ParsesAnAccessRecord) {
  LogRecord r;
  ASSERT_EQ(ParseSynapseJsonLine(Keep(SynapseJson()), &r), ParseResult::kOk);
  // time 1796032800.5 minus 0.250 s of processing.
  EXPECT_EQ(r.time_ms, kTenAm + 250);
  EXPECT_EQ(r.method, "PUT");
  EXPECT_EQ(r.target,
            "/_matrix/client/v3/rooms/!abc%3Aexample.org/send/m.room.message/"
            "m1");
  EXPECT_EQ(r.client_ip, "203.0.113.9");
  EXPECT_EQ(r.user, "@alice:example.org");
  EXPECT_TRUE(r.acting_user.empty());
}

TEST(SynapseJsonParserTest, ReadsHowTheRequestEnded) {
  LogRecord r;
  ASSERT_EQ(ParseSynapseJsonLine(Keep(SynapseJson()), &r), ParseResult::kOk);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body_bytes, 62);
  // A message cut short after the processing time still parses, with the
  // status and size unknown.
  std::string cut = SynapseJson();
  const size_t from = cut.find("(0.010sec");
  cut.erase(from, cut.find(R"(\"PUT)") - from);
  ASSERT_EQ(ParseSynapseJsonLine(Keep(cut), &r), ParseResult::kOk);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.body_bytes, -1);
}

TEST(SynapseJsonParserTest, RequesterVariants) {
  LogRecord r;
  ASSERT_EQ(ParseSynapseJsonLine(Keep(SynapseJson(R"(,"requester":null)")), &r),
            ParseResult::kOk);
  EXPECT_TRUE(r.user.empty());
  ASSERT_EQ(
      ParseSynapseJsonLine(
          Keep(SynapseJson(R"(,"requester":"@tg_1:example.org",)"
                           R"("authenticated_entity":"@bot:example.org")")),
          &r),
      ParseResult::kOk);
  EXPECT_EQ(r.user, "@tg_1:example.org");
  EXPECT_EQ(r.acting_user, "@bot:example.org");
  ASSERT_EQ(ParseSynapseJsonLine(
                Keep(SynapseJson(R"(,"requester":"@a:x|@b:x")")), &r),
            ParseResult::kOk);
  EXPECT_EQ(r.user, "@b:x");
  EXPECT_EQ(r.acting_user, "@a:x");
  ASSERT_EQ(
      ParseSynapseJsonLine(
          Keep(SynapseJson(R"(,"requester":"matrix.example.com",)"
                           R"("authenticated_entity":"matrix.example.com")")),
          &r),
      ParseResult::kOk);
  EXPECT_TRUE(r.user.empty());
  EXPECT_EQ(r.origin_server, "matrix.example.com");
  EXPECT_EQ(
      ParseSynapseJsonLine(Keep(SynapseJson(R"(,"requester":"@nocolon")")), &r),
      ParseResult::kBadUser);
  EXPECT_EQ(ParseSynapseJsonLine(Keep(SynapseJson(R"(,"requester":5)")), &r),
            ParseResult::kBadUser);
}

TEST(SynapseJsonParserTest, RejectsOtherRecordsAndDamage) {
  LogRecord r;
  EXPECT_EQ(ParseSynapseJsonLine(
                Keep(SynapseJson(R"(,"namespace":"synapse.http.server")")), &r),
            ParseResult::kNotRequest);
  EXPECT_EQ(ParseSynapseJsonLine(
                Keep(SynapseJson(R"(,"log":"Received request: GET /x")")), &r),
            ParseResult::kNotRequest);
  EXPECT_EQ(
      ParseSynapseJsonLine(Keep(SynapseJson(R"(,"time":"yesterday")")), &r),
      ParseResult::kBadTimestamp);
  EXPECT_EQ(ParseSynapseJsonLine(Keep(SynapseJson(R"(,"ip_address":"-")")), &r),
            ParseResult::kBadClientAddress);
  EXPECT_EQ(ParseSynapseJsonLine(Keep(SynapseJson(R"(,"url":"/a\"b")")), &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseSynapseJsonLine(Keep(SynapseJson(R"(,"method":"")")), &r),
            ParseResult::kBadRequestLine);
  std::string truncated = SynapseJson();
  truncated.resize(truncated.size() / 2);
  EXPECT_EQ(ParseSynapseJsonLine(Keep(truncated), &r), ParseResult::kMalformed);
  EXPECT_EQ(ParseSynapseJsonLine(kSynapseLine, &r), ParseResult::kNotRequest);
  EXPECT_EQ(ParseSynapseJsonLine(Keep(Caddy()), &r), ParseResult::kNotRequest);
  EXPECT_EQ(ParseSynapseJsonLine("  ", &r), ParseResult::kEmpty);
}

// ---------------------------------------------------------------------------
// caddy
// ---------------------------------------------------------------------------

TEST(CaddyParserTest, ParsesAnAccessEntry) {
  LogRecord r;
  ASSERT_EQ(ParseCaddyLine(Keep(Caddy()), &r), ParseResult::kOk);
  EXPECT_EQ(r.time_ms, kTenAm + 250);  // ts minus duration
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/_matrix/client/v3/sync?timeout=30000");
  EXPECT_EQ(r.client_ip, "203.0.113.9");  // client_ip, not the proxy
  EXPECT_TRUE(r.user.empty());
}

TEST(CaddyParserTest, ReadsHowTheRequestEnded) {
  LogRecord r;
  ASSERT_EQ(ParseCaddyLine(Keep(Caddy()), &r), ParseResult::kOk);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body_bytes, 512);
  // Values that are not plain integers leave them unknown.
  ASSERT_EQ(
      ParseCaddyLine(Keep(Caddy("", R"(,"status":"403","size":1e9)")), &r),
      ParseResult::kOk);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.body_bytes, -1);
}

TEST(CaddyParserTest, ReadsTheRequestIdResponseHeaderOnly) {
  LogRecord r;
  ASSERT_EQ(ParseCaddyLine(Keep(Caddy()), &r), ParseResult::kOk);
  EXPECT_TRUE(r.request_id.empty());
  const std::string id = "0d6f6c0e-3b8a-4f5e-9a51-2c1e7d9b4a10";
  const std::string with_id = R"(,"resp_headers":{"X-Request-Id":[")" + id +
                              R"("],"Server":["Caddy"]})";
  ASSERT_EQ(ParseCaddyLine(Keep(Caddy("", with_id)), &r), ParseResult::kOk);
  EXPECT_EQ(r.request_id, id);
  // A client's own X-Request-Id is a request header: never read.
  ASSERT_EQ(ParseCaddyLine(
                Keep(Caddy(R"(,"headers":{"X-Request-Id":["forged"]})")), &r),
            ParseResult::kOk);
  EXPECT_TRUE(r.request_id.empty());
  // A backend's own id is appended after Caddy's: the first is read.
  ASSERT_EQ(
      ParseCaddyLine(Keep(Caddy("", R"(,"resp_headers":{"X-Request-Id":[")" +
                                        id + R"(","backend-own"]})")),
                     &r),
      ParseResult::kOk);
  EXPECT_EQ(r.request_id, id);
  // Not a plain id: a non-string, an escape, an empty array, a space.
  for (const std::string& bad :
       {std::string("[1]"), std::string(R"(["a\"b"])"), std::string("[]"),
        std::string(R"(["a b"])")}) {
    ASSERT_EQ(
        ParseCaddyLine(
            Keep(Caddy("", R"(,"resp_headers":{"X-Request-Id":)" + bad + "}")),
            &r),
        ParseResult::kOk)
        << bad;
    EXPECT_TRUE(r.request_id.empty()) << bad;
  }
}

TEST(CaddyParserTest, FallsBackToRemoteIpAndAcceptsCrlf) {
  LogRecord r;
  ASSERT_EQ(ParseCaddyLine(Keep(Caddy(R"(,"client_ip":"")") + "\r"), &r),
            ParseResult::kOk);
  EXPECT_EQ(r.client_ip, "10.0.0.2");
}

TEST(CaddyParserTest, RejectsOtherLoggersAndDamage) {
  LogRecord r;
  EXPECT_EQ(
      ParseCaddyLine(Keep(Caddy("", R"(,"logger":"http.handlers.rp")")), &r),
      ParseResult::kNotRequest);
  EXPECT_EQ(
      ParseCaddyLine(Keep(Caddy("", R"(,"logger":"http.log.accessx")")), &r),
      ParseResult::kNotRequest);
  EXPECT_EQ(
      ParseCaddyLine(Keep(Caddy("", R"(,"ts":"2026-11-30T10:00:00Z")")), &r),
      ParseResult::kBadTimestamp);
  EXPECT_EQ(ParseCaddyLine(Keep(Caddy("", R"(,"duration":"250ms")")), &r),
            ParseResult::kBadTimestamp);
  EXPECT_EQ(ParseCaddyLine(Keep(Caddy(R"(,"client_ip":"evil")")), &r),
            ParseResult::kBadClientAddress);
  EXPECT_EQ(ParseCaddyLine(Keep(Caddy(R"(,"uri":"no-slash")")), &r),
            ParseResult::kBadRequestLine);
  EXPECT_EQ(ParseCaddyLine(Keep(Caddy("", R"(,"request":[])")), &r),
            ParseResult::kMalformed);
  EXPECT_EQ(ParseCaddyLine(Keep(SynapseJson()), &r), ParseResult::kNotRequest);
  EXPECT_EQ(ParseCaddyLine(kNginxLine, &r), ParseResult::kNotRequest);
}

// ---------------------------------------------------------------------------
// nginx + "$http_x_forwarded_for"
// ---------------------------------------------------------------------------

TEST(NginxForwardedForTest, ReadsTheTrailingField) {
  LogRecord r;
  ASSERT_EQ(
      ParseNginxLine(
          Keep(std::string(kNginxLine) + " \"198.51.100.4, 10.0.0.9\""), &r),
      ParseResult::kOk);
  EXPECT_EQ(r.client_ip, "203.0.113.9");
  EXPECT_EQ(r.forwarded_for, "198.51.100.4, 10.0.0.9");
  ASSERT_EQ(ParseNginxLine(Keep(std::string(kNginxLine) + " \"-\""), &r),
            ParseResult::kOk);
  EXPECT_TRUE(r.forwarded_for.empty());
  ASSERT_EQ(ParseNginxLine(kNginxLine, &r), ParseResult::kOk);
  EXPECT_TRUE(r.forwarded_for.empty());
  // Other extensions are not X-Forwarded-For.
  ASSERT_EQ(
      ParseNginxLine(Keep(std::string(kNginxLine) + " 0.012 \"10.0.0.1\""), &r),
      ParseResult::kOk);
  EXPECT_TRUE(r.forwarded_for.empty());
  ASSERT_EQ(ParseNginxLine(Keep(std::string(kNginxLine) + " \"a\" \"b\""), &r),
            ParseResult::kOk);
  EXPECT_TRUE(r.forwarded_for.empty());
  EXPECT_TRUE(r.request_id.empty());
}

TEST(NginxRequestIdTest, ReadsTheFeedFormatsFourthField) {
  LogRecord r;
  const std::string id = "5f2c0e3a9b1d4e7f8a6b5c4d3e2f1a09";
  ASSERT_EQ(ParseNginxLine(
                Keep(std::string(kNginxLine) + " \"-\" \"" + id + "\""), &r),
            ParseResult::kOk);
  EXPECT_EQ(r.request_id, id);
  EXPECT_TRUE(r.forwarded_for.empty());
  ASSERT_EQ(ParseNginxLine(Keep(std::string(kNginxLine) +
                                " \"198.51.100.4\" \"" + id + "\""),
                           &r),
            ParseResult::kOk);
  EXPECT_EQ(r.forwarded_for, "198.51.100.4");
  EXPECT_EQ(r.request_id, id);
  // Not $request_id's shape: neither field is read.
  for (const std::string& bad :
       {std::string("5F2C0E3A9B1D4E7F8A6B5C4D3E2F1A09"), id + "0", id.substr(1),
        std::string("-")}) {
    ASSERT_EQ(ParseNginxLine(Keep(std::string(kNginxLine) +
                                  " \"198.51.100.4\" \"" + bad + "\""),
                             &r),
              ParseResult::kOk);
    EXPECT_TRUE(r.request_id.empty()) << bad;
    EXPECT_TRUE(r.forwarded_for.empty()) << bad;
  }
}

// ---------------------------------------------------------------------------
// Prefixes
// ---------------------------------------------------------------------------

TEST(LogPrefixTest, StripsJournaldShortAndShortIso) {
  std::string_view inner;
  const std::string shortline =
      "Dec 01 10:00:00 hs1 python3[123]: " + std::string(kSynapseLine);
  ASSERT_TRUE(StripLogPrefix(LogPrefix::kJournald, shortline, &inner));
  EXPECT_EQ(inner, kSynapseLine);
  ASSERT_TRUE(StripLogPrefix(LogPrefix::kJournald,
                             "Dec  1 10:00:00 hs1 matrix-synapse: x", &inner));
  EXPECT_EQ(inner, "x");
  ASSERT_TRUE(StripLogPrefix(LogPrefix::kJournald,
                             "Dec 01 10:00:00.123456 hs1 python3[9]: p",
                             &inner));
  EXPECT_EQ(inner, "p");
  ASSERT_TRUE(StripLogPrefix(LogPrefix::kJournald,
                             "2026-12-01T10:00:00+0000 hs1 python3[9]: y",
                             &inner));
  EXPECT_EQ(inner, "y");
  for (std::string_view bad :
       {"-- Boot 3f2a --", "Dec 01 10:00:00 hs1", "Dec 01 10:00 hs1 p[1]: x",
        "Dec 01 10:00:00 hs1 p[x]: x", "Dec 01 10:00:00 hs1 p q: x", ""}) {
    EXPECT_FALSE(StripLogPrefix(LogPrefix::kJournald, bad, &inner)) << bad;
  }
  EXPECT_FALSE(StripLogPrefix(LogPrefix::kJournald, kSynapseLine, &inner));
}

TEST(LogPrefixTest, StripsDockerNamesAndTimestamps) {
  std::string_view inner;
  ASSERT_TRUE(StripLogPrefix(LogPrefix::kDocker, "synapse_1  | hello", &inner));
  EXPECT_EQ(inner, "hello");
  ASSERT_TRUE(StripLogPrefix(LogPrefix::kDocker,
                             "synapse-1  | 2026-11-30T10:00:00.123456789Z hi",
                             &inner));
  EXPECT_EQ(inner, "hi");
  ASSERT_TRUE(StripLogPrefix(LogPrefix::kDocker,
                             "2026-11-30T10:00:00.5+01:00 bare", &inner));
  EXPECT_EQ(inner, "bare");
  ASSERT_TRUE(StripLogPrefix(LogPrefix::kDocker, "synapse_1  |", &inner));
  EXPECT_EQ(inner, "");
  for (std::string_view bad :
       {"synapse_1 hello", "| x", "a|b", "", "2026-11-30 10:00:00,250 - x"}) {
    EXPECT_FALSE(StripLogPrefix(LogPrefix::kDocker, bad, &inner)) << bad;
  }
  EXPECT_FALSE(StripLogPrefix(LogPrefix::kDocker, kNginxLine, &inner));
  EXPECT_FALSE(StripLogPrefix(LogPrefix::kDocker, kSynapseLine, &inner));
}

TEST(LogPrefixTest, PrefixedLinesParseAsTheirInnerFormat) {
  LogRecord r;
  const std::string docker = "synapse_1  | " + SynapseJson();
  ASSERT_EQ(ParsePrefixedLogLine(LogPrefix::kDocker, LogFormat::kSynapseJson,
                                 Keep(docker), &r),
            ParseResult::kOk);
  EXPECT_EQ(r.user, "@alice:example.org");
  EXPECT_EQ(ParsePrefixedLogLine(LogPrefix::kJournald, LogFormat::kSynapse,
                                 "-- Boot 3f2a --", &r),
            ParseResult::kNotRequest);
  EXPECT_EQ(ParsePrefixedLogLine(LogPrefix::kJournald, LogFormat::kSynapse,
                                 " \r", &r),
            ParseResult::kEmpty);
}

TEST(LogPrefixTest, DetectsThePrefixMostLinesCarry) {
  const std::string j =
      "Dec 01 10:00:00 hs1 python3[1]: " + std::string(kSynapseLine);
  const std::string d = "synapse_1  | " + std::string(kSynapseLine);
  std::vector<std::string_view> lines = {j, "-- Boot x --", j, d};
  EXPECT_EQ(DetectLogPrefix(lines), LogPrefix::kJournald);
  lines = {d, d, std::string_view(kSynapseLine)};
  EXPECT_EQ(DetectLogPrefix(lines), LogPrefix::kDocker);
  lines = {kSynapseLine, kNginxLine, "1 GET / 203.0.113.9 -"};
  EXPECT_EQ(DetectLogPrefix(lines), LogPrefix::kNone);
}

// ---------------------------------------------------------------------------
// Detection and hostile input, new formats
// ---------------------------------------------------------------------------

TEST(DetectFormatTest, RecognizesTheJsonFormats) {
  const std::string syn = SynapseJson();
  const std::string caddy = Caddy();
  std::vector<std::string_view> lines = {syn, syn, caddy};
  FormatDetection d = DetectFormatWithVotes(lines);
  EXPECT_EQ(d.format, LogFormat::kSynapseJson);
  EXPECT_EQ(d.votes[static_cast<int>(LogFormat::kCaddy)], 1);
  lines = {caddy};
  EXPECT_EQ(DetectFormat(lines), LogFormat::kCaddy);
}

TEST(LogFormatTest, NewNamesRoundTrip) {
  for (int i = 0; i < kLogFormatCount; ++i) {
    const auto f = static_cast<LogFormat>(i);
    EXPECT_EQ(ParseLogFormatName(LogFormatName(f)), f);
  }
  EXPECT_EQ(LogFormatName(LogFormat::kSynapseJson), "synapse-json");
  EXPECT_EQ(LogFormatName(LogFormat::kCaddy), "caddy");
  EXPECT_FALSE(ParseLogFormatName("journald").has_value());
  EXPECT_EQ(LogPrefixName(LogPrefix::kDocker), "docker");
}

TEST(NewParsersTest, EveryPrefixOfAGoodLineIsRejectedSafely) {
  for (const std::string& good : {SynapseJson(), Caddy()}) {
    for (size_t n = 0; n < good.size(); ++n) {
      const std::string cut = good.substr(0, n);
      LogRecord r;
      EXPECT_NE(ParseSynapseJsonLine(cut, &r), ParseResult::kOk) << cut;
      EXPECT_NE(ParseCaddyLine(cut, &r), ParseResult::kOk) << cut;
    }
  }
}

TEST(NewParsersTest, JunkIsRejectedWithoutCrashing) {
  std::vector<std::string> junk = {std::string("\0\0{", 3),
                                   "{}",
                                   "{\"a\":" + std::string(1 << 20, '{'),
                                   std::string(70000, '"'),
                                   "{" + std::string(100000, ' '),
                                   "{\"log\":\"" + std::string(100000, '\\')};
  std::string pseudo = "{";
  uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1103515245 + 12345;
    pseudo.push_back(static_cast<char>(x >> 16));
  }
  junk.push_back(pseudo);
  for (const std::string& line : junk) {
    for (LogFormat f : {LogFormat::kSynapseJson, LogFormat::kCaddy}) {
      LogRecord r;
      EXPECT_NE(ParseLogLine(f, line, &r), ParseResult::kOk);
    }
    for (LogPrefix p : {LogPrefix::kJournald, LogPrefix::kDocker}) {
      LogRecord r;
      EXPECT_NE(ParsePrefixedLogLine(p, LogFormat::kSynapse, line, &r),
                ParseResult::kOk);
    }
  }
}

}  // namespace
}  // namespace mxlimit::replay
