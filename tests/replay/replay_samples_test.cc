// The bundled samples (examples/data, written by
// scripts/gen_sample_traffic.py) parse as their README says.

#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "src/replay/line_reader.h"
#include "src/replay/log_parsers.h"

namespace mxlimit::replay {
namespace {

struct Parsed {
  LogPrefix prefix = LogPrefix::kNone;
  LogFormat detected = LogFormat::kTsv;
  std::map<ParseResult, int> results;
  // Requests per actor of interest.
  int login_net = 0, spammer = 0, scanner = 0, claims = 0;
  int acting = 0, federation = 0, anonymous = 0, forwarded = 0;
  int64_t first_ms = INT64_MAX, last_ms = INT64_MIN;
};

Parsed ParseSample(const char* name) {
  Parsed p;
  std::string path = std::string(MXLIMIT_SOURCE_DIR) + "/examples/data/" + name;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return p;
  // Detection looks at the first 100 lines, as replay does: the prefix,
  // then the format of what the prefix leaves.
  {
    LineReader reader(f);
    std::vector<std::string> head;
    Line line;
    while (head.size() < 100 && reader.Next(&line)) {
      head.emplace_back(line.text);
    }
    std::vector<std::string_view> views(head.begin(), head.end());
    p.prefix = DetectLogPrefix(views);
    std::vector<std::string_view> inner;
    for (std::string_view v : views) {
      std::string_view stripped;
      if (StripLogPrefix(p.prefix, v, &stripped)) inner.push_back(stripped);
    }
    p.detected = DetectFormat(inner);
  }
  std::rewind(f);
  LineReader reader(f);
  Line line;
  LogRecord r;
  while (reader.Next(&line)) {
    ParseResult res = line.too_long ? ParseResult::kTooLong
                                    : ParsePrefixedLogLine(p.prefix, p.detected,
                                                           line.text, &r);
    ++p.results[res];
    if (res != ParseResult::kOk) continue;
    p.first_ms = std::min(p.first_ms, r.time_ms);
    p.last_ms = std::max(p.last_ms, r.time_ms);
    if (r.client_ip.starts_with("2001:db8:bad:cafe:")) ++p.login_net;
    if (r.user == "@xk7q2vb:example.org") ++p.spammer;
    if (r.client_ip == "198.51.100.23") ++p.scanner;
    if (r.user == "@mallory:example.org" &&
        r.target.find("/keys/claim") != std::string_view::npos) {
      ++p.claims;
    }
    if (!r.acting_user.empty()) ++p.acting;
    if (!r.origin_server.empty()) ++p.federation;
    if (r.user.empty()) ++p.anonymous;
    if (!r.forwarded_for.empty()) ++p.forwarded;
  }
  EXPECT_TRUE(reader.status().ok());
  std::fclose(f);
  return p;
}

constexpr int64_t kTenAmUtc = 1796032800000;  // 2026-11-30 10:00:00

TEST(ReplaySamplesTest, SynapseSampleMatchesItsReadme) {
  Parsed p = ParseSample("sample-synapse.log");
  EXPECT_EQ(p.detected, LogFormat::kSynapse);
  EXPECT_EQ(p.results[ParseResult::kOk], 29628);
  EXPECT_EQ(p.results[ParseResult::kNotRequest], 10);
  EXPECT_EQ(p.results.size(), 2u) << "no other kind of rejection";
  EXPECT_EQ(p.login_net, 941);
  EXPECT_EQ(p.spammer, 1369);
  EXPECT_EQ(p.scanner, 2372);
  EXPECT_EQ(p.claims, 817);
  EXPECT_GT(p.acting, 30);       // bridge puppets and the admin
  EXPECT_GT(p.federation, 200);  // {server.name} requesters
  // Arrivals: long-polls that started up to 30 s before the first line, the
  // last request before 10:05:00.
  EXPECT_GE(p.first_ms, kTenAmUtc - 31'000);
  EXPECT_LT(p.first_ms, kTenAmUtc);
  EXPECT_LT(p.last_ms, kTenAmUtc + 300'000);
}

TEST(ReplaySamplesTest, TsvSampleParsesWhole) {
  Parsed p = ParseSample("sample.tsv");
  EXPECT_EQ(p.detected, LogFormat::kTsv);
  EXPECT_EQ(p.results[ParseResult::kOk], 49);
  EXPECT_EQ(p.results.size(), 1u);
  EXPECT_EQ(p.login_net, 9);
  EXPECT_EQ(p.first_ms, 0);
  EXPECT_EQ(p.last_ms, 60'100);
}

TEST(ReplaySamplesTest, NginxSampleHasThreeMalformedRequests) {
  Parsed p = ParseSample("sample-nginx.log");
  EXPECT_EQ(p.detected, LogFormat::kNginx);
  EXPECT_EQ(p.results[ParseResult::kOk], 41);
  EXPECT_EQ(p.results[ParseResult::kBadRequestLine], 3);
  EXPECT_EQ(p.login_net, 10);
  EXPECT_EQ(p.anonymous, 41);        // nginx knows no Matrix user
  EXPECT_EQ(p.first_ms, kTenAmUtc);  // 11:00:00 +0100
  EXPECT_EQ(p.prefix, LogPrefix::kNone);
  EXPECT_EQ(p.forwarded, 0);
}

// The operator-shaped samples: the first 200 lines of sample-synapse.log
// (journald, TerseJson) and sample-nginx.log behind a balancer (nginx + XFF,
// Caddy), each with the one line of another logger the README describes.

TEST(ReplaySamplesTest, JournaldSampleIsTheSynapseSampleWithPrefixes) {
  Parsed p = ParseSample("sample-synapse-journald.log");
  EXPECT_EQ(p.prefix, LogPrefix::kJournald);
  EXPECT_EQ(p.detected, LogFormat::kSynapse);
  EXPECT_EQ(p.results[ParseResult::kOk], 200);
  EXPECT_EQ(p.results[ParseResult::kNotRequest], 1);  // systemd's line
  EXPECT_EQ(p.results.size(), 2u);
  EXPECT_GE(p.first_ms, kTenAmUtc - 31'000);
}

TEST(ReplaySamplesTest, SynapseJsonSampleIsTheSynapseSampleAsJson) {
  Parsed p = ParseSample("sample-synapse.json.log");
  EXPECT_EQ(p.prefix, LogPrefix::kNone);
  EXPECT_EQ(p.detected, LogFormat::kSynapseJson);
  EXPECT_EQ(p.results[ParseResult::kOk], 200);
  EXPECT_EQ(p.results[ParseResult::kNotRequest], 1);  // another logger
  EXPECT_EQ(p.results.size(), 2u);
  Parsed text = ParseSample("sample-synapse-journald.log");
  EXPECT_EQ(p.federation, text.federation);
  EXPECT_EQ(p.anonymous, text.anonymous);
  EXPECT_EQ(p.acting, text.acting);
}

TEST(ReplaySamplesTest, NginxXffSampleCarriesEveryClientInTheHeader) {
  Parsed p = ParseSample("sample-nginx-xff.log");
  EXPECT_EQ(p.detected, LogFormat::kNginx);
  EXPECT_EQ(p.results[ParseResult::kOk], 41);
  EXPECT_EQ(p.results[ParseResult::kBadRequestLine], 3);
  EXPECT_EQ(p.forwarded, 41);
  EXPECT_EQ(p.login_net, 0);  // the peer is the balancer
}

TEST(ReplaySamplesTest, CaddySampleHasTheValidNginxRequests) {
  Parsed p = ParseSample("sample-caddy.json.log");
  EXPECT_EQ(p.detected, LogFormat::kCaddy);
  EXPECT_EQ(p.results[ParseResult::kOk], 41);
  EXPECT_EQ(p.results[ParseResult::kNotRequest], 1);
  EXPECT_EQ(p.login_net, 10);  // client_ip, not the balancer
  EXPECT_EQ(p.anonymous, 41);
  EXPECT_EQ(p.first_ms, kTenAmUtc);  // ts minus duration
}

}  // namespace
}  // namespace mxlimit::replay
