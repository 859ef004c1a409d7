#include <string>

#include "gtest/gtest.h"
#include "src/http/request_head.h"

namespace mxlimit::http {
namespace {

HeadParse Parse(const std::string& text, HttpRequestHead& head) {
  return ParseRequestHead(text, head);
}

TEST(HttpHeadTest, ReadsWhatNginxSends) {
  const std::string text =
      "GET /_mxlimit/auth_request HTTP/1.1\r\n"
      "Host: mxlimitd\r\n"
      "X-Original-URI: /_matrix/client/v3/sync?since=s1\r\n"
      "x-original-method:   PUT  \r\n"
      "Content-Length: 0\r\n"
      "\r\n"
      "GET /next";
  HttpRequestHead head;
  const HeadParse p = Parse(text, head);
  ASSERT_EQ(p.state, HeadParse::kComplete);
  EXPECT_EQ(p.head_bytes, text.find("GET /next"));
  EXPECT_EQ(head.method, "GET");
  EXPECT_EQ(head.target, "/_mxlimit/auth_request");
  EXPECT_EQ(head.minor_version, 1);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_EQ(head.content_length, 0);
  // Names are matched without regard to case; values lose their blanks.
  EXPECT_EQ(head.Field("X-Original-Method"), "PUT");
  EXPECT_EQ(head.Field("x-original-uri"), "/_matrix/client/v3/sync?since=s1");
  bool found = true;
  EXPECT_EQ(head.Field("Authorization", &found), "");
  EXPECT_FALSE(found);
}

TEST(HttpHeadTest, IncompleteUntilTheBlankLine) {
  HttpRequestHead head;
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nHost: x\r\n", head).state,
            HeadParse::kIncomplete);
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nHost: x\r\n\r", head).state,
            HeadParse::kIncomplete);
  EXPECT_EQ(Parse("GET / HTTP/1.1\nHost: x\n\n", head).state,
            HeadParse::kComplete);
}

TEST(HttpHeadTest, FindHeadEndSeesATerminatorSplitAcrossReads) {
  const std::string text = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  // Searched up to each possible split point, then the rest arrives.
  for (size_t searched = 0; searched < text.size(); ++searched) {
    EXPECT_EQ(FindHeadEnd(text, searched), text.size()) << searched;
  }
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nHost: x\r\n", 0), 0u);
}

TEST(HttpHeadTest, ConnectionSemantics) {
  HttpRequestHead head;
  ASSERT_EQ(Parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", head).state,
            HeadParse::kComplete);
  EXPECT_FALSE(head.keep_alive);
  ASSERT_EQ(Parse("GET / HTTP/1.0\r\n\r\n", head).state, HeadParse::kComplete);
  EXPECT_FALSE(head.keep_alive);
  ASSERT_EQ(
      Parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", head).state,
      HeadParse::kComplete);
  EXPECT_TRUE(head.keep_alive);
}

struct Bad {
  const char* text;
  int status;
};

TEST(HttpHeadTest, RefusesWhatTwoParsersCouldReadDifferently) {
  const Bad cases[] = {
      {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},    // blank before colon
      {"GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400},  // obs-fold
      {"GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400},     // bare CR
      {"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400},    // control byte
      {"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / HTTP/1.2\r\n\r\n", 505},
      {"GET / FTP/1.1\r\n\r\n", 400},
      {"GET /\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"GET /a\x7f HTTP/1.1\r\n\r\n", 400},
  };
  for (const Bad& c : cases) {
    HttpRequestHead head;
    const HeadParse p = Parse(c.text, head);
    EXPECT_EQ(p.state, HeadParse::kError) << c.text;
    EXPECT_EQ(p.status, c.status) << c.text;
    EXPECT_FALSE(p.reason.empty());
  }
}

TEST(HttpHeadTest, AgreeingContentLengthsAreOne) {
  HttpRequestHead head;
  ASSERT_EQ(
      Parse("GET / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
            head)
          .state,
      HeadParse::kComplete);
  EXPECT_EQ(head.content_length, 5);
}

TEST(HttpHeadTest, BoundsFieldCountAndTargetLength) {
  std::string many = "GET / HTTP/1.1\r\n";
  for (size_t i = 0; i <= kMaxHeaderFields; ++i) many += "A: b\r\n";
  many += "\r\n";
  HttpRequestHead head;
  HeadParse p = Parse(many, head);
  EXPECT_EQ(p.state, HeadParse::kError);
  EXPECT_EQ(p.status, 431);

  const std::string long_target =
      "GET /" + std::string(kMaxTargetBytes, 'a') + " HTTP/1.1\r\n\r\n";
  p = Parse(long_target, head);
  EXPECT_EQ(p.state, HeadParse::kError);
  EXPECT_EQ(p.status, 414);
}

}  // namespace
}  // namespace mxlimit::http
