// mxlimitd's completion feed: the sink and the sockets, end to end through
// the sidecar with the built-in policies on (the pending table has its own
// test, pending_table_test.cc).
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "src/daemon/feed_receiver.h"
#include "src/daemon/feed_sink.h"
#include "src/daemon/pending_table.h"
#include "src/daemon/sidecar.h"
#include "tests/testing/raw_http.h"
#include "tests/testing/temp_dir.h"

namespace mxlimit::daemon {
namespace feed_test {

using ::testing::HasSubstr;

constexpr std::string_view kLogin = "/_matrix/client/v3/login";
constexpr std::string_view kInitialSync = "/_matrix/client/v3/sync";

// A request id as nginx's $request_id writes one (32 hex digits).
std::string Id(int n) {
  char id[33];
  std::snprintf(id, sizeof(id), "%032x", n);
  return id;
}

// An nginx line in the feed's log format, as nginx sends it to syslog.
std::string NginxDatagram(std::string_view ip, std::string_view method,
                          std::string_view uri, int status, int64_t bytes,
                          std::string_view id) {
  return "<190>Dec  5 20:13:47 nginx: " + std::string(ip) +
         " - - [05/Dec/2026:20:13:47 +0000] \"" + std::string(method) + " " +
         std::string(uri) + " HTTP/1.1\" " + std::to_string(status) + " " +
         std::to_string(bytes) + " \"-\" \"Element/1.11\" \"-\" \"" +
         std::string(id) + "\"";
}

// A Caddy access entry whose X-Request-Id response header is `id`.
std::string CaddyDatagram(std::string_view ip, std::string_view method,
                          std::string_view uri, int status, int64_t bytes,
                          std::string_view id) {
  return R"({"level":"info","ts":1796032800.5,"logger":"http.log.access.log0",)"
         R"("msg":"handled request","request":{"remote_ip":")" +
         std::string(ip) + R"(","client_ip":")" + std::string(ip) +
         R"(","proto":"HTTP/1.1","method":")" + std::string(method) +
         R"(","host":"matrix.example.org","uri":")" + std::string(uri) +
         R"(","headers":{"User-Agent":["curl"]}},"duration":0.01,"size":)" +
         std::to_string(bytes) + R"(,"status":)" + std::to_string(status) +
         R"(,"resp_headers":{"X-Request-Id":[")" + std::string(id) +
         R"("],"Content-Type":["application/json"]}})"
         "\n";
}

TEST(FeedAddressTest, TakesUnixPathsAndLoopbackUdpOnly) {
  absl::StatusOr<FeedAddress> unix_feed =
      ParseFeedAddress("unix:/run/mxlimitd/feed.sock");
  ASSERT_TRUE(unix_feed.ok());
  EXPECT_EQ(unix_feed->kind, FeedAddress::Kind::kUnix);
  EXPECT_EQ(unix_feed->path, "/run/mxlimitd/feed.sock");
  absl::StatusOr<FeedAddress> udp = ParseFeedAddress("udp:127.0.0.1:5140");
  ASSERT_TRUE(udp.ok());
  EXPECT_EQ(udp->host, "127.0.0.1");
  EXPECT_EQ(udp->port, 5140);
  EXPECT_TRUE(ParseFeedAddress("udp:[::1]:5140").ok());
  // Anyone on the network could end leases early: refused, saying why.
  absl::StatusOr<FeedAddress> open = ParseFeedAddress("udp:0.0.0.0:5140");
  ASSERT_FALSE(open.ok());
  EXPECT_THAT(std::string(open.status().message()), HasSubstr("loopback"));
  EXPECT_FALSE(ParseFeedAddress("udp:10.0.0.1:5140").ok());
  EXPECT_FALSE(ParseFeedAddress("udp:localhost:5140").ok());
  EXPECT_FALSE(ParseFeedAddress("unix:").ok());
  EXPECT_FALSE(ParseFeedAddress("unix:" + std::string(200, 'a')).ok());
  EXPECT_FALSE(ParseFeedAddress("tcp:127.0.0.1:5140").ok());
  EXPECT_FALSE(ParseFeedAddress("/run/feed.sock").ok());
}

TEST(StripSyslogHeaderTest, RemovesNginxHeadersWithAndWithoutAHostName) {
  EXPECT_EQ(StripSyslogHeader("<190>Dec  5 20:13:47 host1 nginx: 1.2.3.4 - -"),
            "1.2.3.4 - -");
  EXPECT_EQ(StripSyslogHeader("<190>Dec 15 20:13:47 mxfeed: 1.2.3.4 - -"),
            "1.2.3.4 - -");
  EXPECT_EQ(StripSyslogHeader(R"({"level":"info"})"), R"({"level":"info"})");
  EXPECT_EQ(StripSyslogHeader("1.2.3.4 - - [x]"), "1.2.3.4 - - [x]");
  // Not a header: left for the parser to refuse.
  EXPECT_EQ(StripSyslogHeader("<abc>Dec  5 20:13:47 h t: x"),
            "<abc>Dec  5 20:13:47 h t: x");
  EXPECT_EQ(StripSyslogHeader("<1>"), "<1>");
}

// The sink over a limiter with the built-in policies on.
class FeedSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<LimiterConfig> config = ParseConfig("{}", "default.yaml");
    ASSERT_TRUE(config.ok()) << config.status();
    ASSERT_TRUE(config->builtin_policies);
    limiter_ = *SharedLimiter::Create(*config);
  }

  // A decision as the sidecar makes it, kept as the sidecar keeps it.
  Decision Decide(std::string_view ip, std::string_view method,
                  std::string_view target, std::string_view id,
                  std::string_view user = {}) {
    Request r;
    r.method = method;
    r.target = target;
    r.client = *ParseIpAddress(ip);
    r.user_id = user;
    const Decision d = limiter_->Check(r, now_);
    if (d.allowed && (d.leases.count > 0 || d.settles)) {
      PendingRequest kept;
      kept.client = r.client;
      kept.user_id = r.user_id;
      kept.leases = d.leases;
      kept.settles = d.settles;
      pending_.Put(id, kept);
    }
    return d;
  }

  MonotonicTime now_ = MonotonicTime::FromNanoseconds(1'000'000'000'000);
  std::unique_ptr<SharedLimiter> limiter_;
  PendingTable pending_{1024};
};

TEST_F(FeedSinkTest, ThreeFailedLoginsThenTheAddressIsLimited) {
  FeedSink sink(*limiter_, pending_);
  for (int i = 0; i < 3; ++i) {
    const std::string id = Id(i);
    ASSERT_TRUE(Decide("203.0.113.9", "POST", kLogin, id).allowed) << i;
    EXPECT_EQ(sink.HandleLine(StripSyslogHeader(NginxDatagram(
                                  "203.0.113.9", "POST", kLogin, 403, 60, id)),
                              now_),
              FeedLineResult::kSettled);
  }
  const Decision denied = Decide("203.0.113.9", "POST", kLogin, Id(3));
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.policy, "failed-login-per-ip");
  // Another address logs in.
  EXPECT_TRUE(Decide("198.51.100.7", "POST", kLogin, Id(4)).allowed);
}

TEST_F(FeedSinkTest, SuccessfulLoginsAreNotChargedAsFailures) {
  FeedSink sink(*limiter_, pending_);
  // Three logins succeed: were they charged as failures, failed-login-per-ip
  // (burst 3) would deny the fourth, which login-per-ip (burst 5) allows.
  for (int i = 0; i < 3; ++i) {
    const std::string id = "ok" + std::to_string(i);
    ASSERT_TRUE(Decide("203.0.113.9", "POST", kLogin, id).allowed);
    sink.HandleDatagram(
        CaddyDatagram("203.0.113.9", "POST", kLogin, 200, 900, id), now_);
  }
  EXPECT_EQ(sink.lines(FeedLineResult::kSettled), 3u);
  const Decision d = Decide("203.0.113.9", "POST", kLogin, "ok3");
  EXPECT_TRUE(d.allowed) << d.policy;
}

TEST_F(FeedSinkTest, ALongOriginDoesNotEscapeTheAddressCharge) {
  FeedSink sink(*limiter_, pending_);
  // A client sends `Authorization: X-Matrix origin=<300 bytes>` with its
  // login: the name is too long to keep, the failure is still charged.
  const std::string origin(300, 'a');
  for (int i = 0; i < 3; ++i) {
    const std::string id = Id(i);
    Request r;
    r.method = "POST";
    r.target = kLogin;
    r.client = *ParseIpAddress("203.0.113.9");
    r.origin = origin;
    const Decision d = limiter_->Check(r, now_);
    ASSERT_TRUE(d.allowed) << i;
    ASSERT_TRUE(d.settles);
    PendingRequest kept;
    kept.client = r.client;
    kept.origin = r.origin;
    kept.settles = d.settles;
    pending_.Put(id, kept);
    sink.HandleDatagram(
        NginxDatagram("203.0.113.9", "POST", kLogin, 403, 60, id), now_);
  }
  EXPECT_EQ(sink.lines(FeedLineResult::kSettled), 3u);
  EXPECT_FALSE(Decide("203.0.113.9", "POST", kLogin, Id(3)).allowed);
}

TEST_F(FeedSinkTest, AnInitialSyncLeaseEndsAtItsCompletion) {
  FeedSink sink(*limiter_, pending_);
  const std::string alice = "@alice:example.org";
  ASSERT_TRUE(Decide("203.0.113.9", "GET", kInitialSync, Id(1), alice).allowed);
  ASSERT_TRUE(Decide("203.0.113.9", "GET", kInitialSync, Id(2), alice).allowed);
  const Decision third =
      Decide("203.0.113.9", "GET", kInitialSync, Id(3), alice);
  ASSERT_FALSE(third.allowed);
  EXPECT_EQ(third.policy, "initial-sync-in-flight");
  sink.HandleDatagram(
      NginxDatagram("203.0.113.9", "GET", kInitialSync, 200, 123456, Id(1)),
      now_);
  EXPECT_EQ(sink.lines(FeedLineResult::kSettled), 1u);
  EXPECT_TRUE(Decide("203.0.113.9", "GET", kInitialSync, Id(4), alice).allowed);
}

TEST_F(FeedSinkTest, HostileLinesCostACounterAndValidTrafficStillSettles) {
  FeedSink sink(*limiter_, pending_);
  sink.HandleDatagram("garbage", now_);
  sink.HandleDatagram(std::string(60'000, '{'), now_);
  sink.HandleDatagram("<190>Dec  5 20:13:47 nginx: \x01\x02\xff", now_);
  // Parsed, but no id, or an id no decision was kept under.
  sink.HandleDatagram(
      "203.0.113.9 - - [05/Dec/2026:20:13:47 +0000] \"POST /login HTTP/1.1\" "
      "403 1 \"-\" \"-\"",
      now_);
  sink.HandleDatagram(
      NginxDatagram("203.0.113.9", "POST", kLogin, 403, 1, Id(99)), now_);
  // Ids that are not ids: quotes, spaces, overlong.
  sink.HandleDatagram(NginxDatagram("203.0.113.9", "POST", kLogin, 403, 1,
                                    std::string(65, 'a')),
                      now_);
  for (int i = 0; i < 10'000; ++i) {
    sink.HandleDatagram(
        NginxDatagram("203.0.113.9", "POST", kLogin, 403, 1, Id(100'000 + i)),
        now_);
  }
  EXPECT_EQ(sink.lines(FeedLineResult::kUnparsed), 3u);
  EXPECT_EQ(sink.lines(FeedLineResult::kNoId), 2u);
  EXPECT_EQ(sink.lines(FeedLineResult::kNoPending), 10'001u);
  // None of it charged the address: three real failures still fit, and
  // then it is limited.
  for (int i = 0; i < 3; ++i) {
    const std::string id = Id(i);
    ASSERT_TRUE(Decide("203.0.113.9", "POST", kLogin, id).allowed) << i;
    sink.HandleDatagram(
        NginxDatagram("203.0.113.9", "POST", kLogin, 401, 60, id), now_);
  }
  EXPECT_EQ(sink.lines(FeedLineResult::kSettled), 3u);
  EXPECT_FALSE(Decide("203.0.113.9", "POST", kLogin, Id(3)).allowed);
}

TEST_F(FeedSinkTest, MediaDownloadsAreChargedTheirBytes) {
  FeedSink sink(*limiter_, pending_);
  const std::string media = "/_matrix/client/v1/media/download/example.org/abc";
  // 500 MiB of burst: four 120 MiB downloads fit, the fifth finds 20 MiB
  // of room and takes the bucket 100 MiB into debt, and the sixth waits
  // for the 87 KiB/s rate to pay that back.
  int admitted = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string id = Id(i);
    const Decision d = Decide("203.0.113.9", "GET", media, id);
    if (!d.allowed) {
      EXPECT_EQ(d.policy, "media-download-bytes-per-ip");
      const double wait = std::chrono::duration<double>(d.retry_after).count();
      EXPECT_NEAR(wait, (100.0 * 1024 * 1024) / 89088, 2.0);
      break;
    }
    ++admitted;
    sink.HandleDatagram(
        NginxDatagram("203.0.113.9", "GET", media, 200, int64_t{120} << 20, id),
        now_);
  }
  EXPECT_EQ(admitted, 5);
  EXPECT_TRUE(Decide("198.51.100.7", "GET", media, Id(50)).allowed);
}

// The sidecar and the feed's socket, as mxlimitd runs them.
class FeedSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<LimiterConfig> config = ParseConfig("{}", "default.yaml");
    ASSERT_TRUE(config.ok());
    limiter_ = *SharedLimiter::Create(*config);
    dir_ = testing::MakeTempDir("mxlimitd_feed_");
    path_ = dir_ + "/feed.sock";
    sink_ = std::make_unique<FeedSink>(*limiter_, pending_);
    const FeedAddress at = *ParseFeedAddress("unix:" + path_);
    absl::StatusOr<std::unique_ptr<FeedReceiver>> feed =
        FeedReceiver::Start({&at, 1}, *sink_);
    ASSERT_TRUE(feed.ok()) << feed.status();
    feed_ = std::move(*feed);
    SidecarOptions options;
    options.trusted_proxies = {*ParseCidr("127.0.0.1/32")};
    options.pending = &pending_;
    options.feed_sink = sink_.get();
    options.feed_receiver = feed_.get();
    sidecar_ = std::make_unique<Sidecar>(*limiter_, options, secret_, registry_,
                                         nullptr, metrics_);
    server_ = *http::HttpServer::Start(http::ServerOptions{}, *sidecar_);
    sidecar_->set_server(server_.get());
    sender_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(sender_, 0);
  }
  void TearDown() override {
    if (sender_ >= 0) close(sender_);
  }

  // `token`: the request's access token, if any.
  testing::RawResponse Check(std::string_view ip, std::string_view method,
                             std::string_view uri, std::string_view id,
                             std::string_view token = "") {
    testing::RawConnection c(server_->port());
    c.Send("GET /_mxlimit/auth_request HTTP/1.1\r\nX-Original-Method: " +
           std::string(method) + "\r\nX-Original-URI: " + std::string(uri) +
           "\r\nX-Forwarded-For: " + std::string(ip) +
           (token.empty() ? ""
                          : "\r\nAuthorization: Bearer " + std::string(token)) +
           "\r\nX-Request-Id: " + std::string(id) + "\r\n\r\n");
    return c.ReadResponse();
  }
  int Auth(std::string_view ip, std::string_view method, std::string_view uri,
           std::string_view id) {
    return Check(ip, method, uri, id).status;
  }
  void Send(const std::string& datagram) {
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    std::memcpy(to.sun_path, path_.data(), path_.size());
    ASSERT_EQ(sendto(sender_, datagram.data(), datagram.size(), 0,
                     reinterpret_cast<const sockaddr*>(&to), sizeof(to)),
              static_cast<ssize_t>(datagram.size()));
  }
  // The receiver reads on its own thread: wait until it has read `n`.
  void AwaitDatagrams(uint64_t n) {
    for (int i = 0; i < 500 && feed_->datagrams() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GE(feed_->datagrams(), n);
  }
  std::string Metrics() {
    testing::RawConnection c(server_->port());
    c.Send("GET /_mxlimit/metrics HTTP/1.1\r\n\r\n");
    return c.ReadResponse().body;
  }

  internal::SipKey secret_{1, 2};
  AppserviceRegistry registry_;
  DaemonMetrics metrics_;
  std::string dir_;
  std::string path_;
  std::unique_ptr<SharedLimiter> limiter_;
  PendingTable pending_{256};
  std::unique_ptr<FeedSink> sink_;
  std::unique_ptr<FeedReceiver> feed_;
  std::unique_ptr<Sidecar> sidecar_;
  std::unique_ptr<http::HttpServer> server_;
  int sender_ = -1;
};

TEST_F(FeedSocketTest, TheSocketIsGroupWritableOnly) {
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(feed_->bound(), std::vector<std::string>{"unix:" + path_});
}

TEST_F(FeedSocketTest, FailedLoginsThroughTheSidecarAndTheSocket) {
  uint64_t sent = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string id = Id(i);
    ASSERT_EQ(Auth("203.0.113.9", "POST", kLogin, id), 204) << i;
    Send(NginxDatagram("203.0.113.9", "POST", kLogin, 403, 70, id));
    AwaitDatagrams(++sent);
  }
  EXPECT_EQ(Auth("203.0.113.9", "POST", kLogin, Id(3)), 403);
  EXPECT_EQ(Auth("198.51.100.7", "POST", kLogin, Id(4)), 204);
  const std::string metrics = Metrics();
  EXPECT_THAT(metrics,
              HasSubstr("mxlimitd_feed_lines_total{result=\"settled\"} 3\n"));
  EXPECT_THAT(metrics, HasSubstr("mxlimitd_feed_pending_capacity 256\n"));
}

TEST_F(FeedSocketTest, AnswersMarkTheRequestsWhoseCompletionIsWanted) {
  // Kept (a login is charged on its response; an initial sync holds a
  // lease): the proxy is told to send the line.
  testing::RawResponse r = Check("203.0.113.9", "POST", kLogin, Id(0));
  ASSERT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("X-Mxlimit-Feed"), "1");
  r = Check("203.0.113.9", "GET", kInitialSync, Id(1), "syncer");
  ASSERT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("X-Mxlimit-Feed"), "1");
  // Nothing to settle or release: no line wanted.
  r = Check("203.0.113.9", "GET", "/_matrix/client/versions", Id(2));
  ASSERT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("X-Mxlimit-Feed"), "");
  // An id the table cannot keep, and none at all.
  r = Check("203.0.113.9", "POST", kLogin, std::string(65, 'a'));
  ASSERT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("X-Mxlimit-Feed"), "");
  r = Check("203.0.113.9", "POST", kLogin, "");
  ASSERT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("X-Mxlimit-Feed"), "");
  // The same request checked again in a location that keeps nothing (an
  // internal redirect): the first check's entry still wants its line.
  r = Check("203.0.113.9", "GET", "/_matrix/client/versions", Id(1));
  ASSERT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("X-Mxlimit-Feed"), "1");
  // Once that line has come, the id is no one's.
  Send(NginxDatagram("203.0.113.9", "GET", kInitialSync, 200, 70, Id(1)));
  AwaitDatagrams(1);
  for (int i = 0; i < 500 && pending_.Contains(Id(1)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r = Check("203.0.113.9", "GET", "/_matrix/client/versions", Id(1));
  EXPECT_EQ(r.Header("X-Mxlimit-Feed"), "");
  // A denial keeps nothing: no line.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(Check("198.51.100.7", "GET", kInitialSync, Id(10 + i), "storm")
                  .Header("X-Mxlimit-Feed"),
              "1");
  }
  r = Check("198.51.100.7", "GET", kInitialSync, Id(12), "storm");
  ASSERT_EQ(r.status, 403);
  EXPECT_EQ(r.Header("X-Mxlimit-Feed"), "");
}

TEST_F(FeedSocketTest, AFloodOfGarbageAndOversizedDatagramsStaysBounded) {
  const std::string big(70'000, 'x');
  Send(big);
  constexpr int kFlood = 20'000;
  for (int i = 0; i < kFlood; ++i) {
    Send(i % 2 == 0 ? std::string("\xff garbage")
                    : NginxDatagram("203.0.113.9", "GET", kInitialSync, 200, 1,
                                    Id(100'000 + i)));
    // A blocking unix datagram sender waits for room: nothing is lost.
  }
  AwaitDatagrams(kFlood + 1);
  EXPECT_EQ(feed_->oversized(), 1u);
  EXPECT_EQ(sink_->lines(FeedLineResult::kUnparsed), kFlood / 2);
  EXPECT_EQ(sink_->lines(FeedLineResult::kNoPending), kFlood / 2);
  EXPECT_EQ(pending_.counters().entries, 0u);
  // And the next request still ends by its completion.
  ASSERT_EQ(Auth("203.0.113.9", "POST", kLogin, Id(7)), 204);
  EXPECT_EQ(pending_.counters().entries, 1u);
  Send(NginxDatagram("203.0.113.9", "POST", kLogin, 200, 10, Id(7)));
  AwaitDatagrams(kFlood + 2);
  EXPECT_EQ(sink_->lines(FeedLineResult::kSettled), 1u);
  EXPECT_EQ(pending_.counters().entries, 0u);
}

int OpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

TEST_F(FeedSocketTest, FileDescriptorsSentWithDatagramsAreNotKept) {
  const int before = OpenFds();
  for (int i = 0; i < 50; ++i) {
    const std::string line = "\xff not a line";
    iovec iov{const_cast<char*>(line.data()), line.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
    msghdr m{};
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    std::memcpy(to.sun_path, path_.data(), path_.size());
    m.msg_name = &to;
    m.msg_namelen = sizeof(to);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    const int fds[2] = {sender_, sender_};
    std::memcpy(CMSG_DATA(c), fds, sizeof(fds));
    ASSERT_EQ(sendmsg(sender_, &m, 0), static_cast<ssize_t>(line.size()));
  }
  AwaitDatagrams(50);
  EXPECT_EQ(sink_->lines(FeedLineResult::kUnparsed), 50u);
  // The feed's thread is this process's: none of the 100 descriptors stayed.
  EXPECT_LE(OpenFds(), before + 2);
}

TEST(FeedReceiverTest, RefusesASocketAnotherProcessServes) {
  const std::string dir = testing::MakeTempDir("mxlimitd_feed_live_");
  absl::StatusOr<LimiterConfig> config = ParseConfig("{}", "default.yaml");
  std::unique_ptr<SharedLimiter> limiter = *SharedLimiter::Create(*config);
  PendingTable pending(8);
  FeedSink sink(*limiter, pending);
  const FeedAddress at = *ParseFeedAddress("unix:" + dir + "/feed.sock");
  absl::StatusOr<std::unique_ptr<FeedReceiver>> serving =
      FeedReceiver::Start({&at, 1}, sink);
  ASSERT_TRUE(serving.ok());
  absl::StatusOr<std::unique_ptr<FeedReceiver>> second =
      FeedReceiver::Start({&at, 1}, sink);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("in use"));
  // The first still has its socket.
  struct stat st {};
  EXPECT_EQ(stat((dir + "/feed.sock").c_str(), &st), 0);
}

TEST(FeedReceiverTest, ReplacesAStaleSocketButNoOtherFile) {
  const std::string dir = testing::MakeTempDir("mxlimitd_feed_files_");
  absl::StatusOr<LimiterConfig> config = ParseConfig("{}", "default.yaml");
  std::unique_ptr<SharedLimiter> limiter = *SharedLimiter::Create(*config);
  PendingTable pending(8);
  FeedSink sink(*limiter, pending);
  const FeedAddress at = *ParseFeedAddress("unix:" + dir + "/feed.sock");
  {
    auto first = FeedReceiver::Start({&at, 1}, sink);
    ASSERT_TRUE(first.ok());
    // Left behind, as by a crash: the file outlives the process.
    const int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    const std::string stale = dir + "/stale.sock";
    std::memcpy(sa.sun_path, stale.data(), stale.size());
    ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)), 0);
    close(fd);
    const FeedAddress again = *ParseFeedAddress("unix:" + stale);
    EXPECT_TRUE(FeedReceiver::Start({&again, 1}, sink).ok());
  }
  // Stopping removes the socket file.
  EXPECT_NE(access((dir + "/feed.sock").c_str(), F_OK), 0);
  std::ofstream(dir + "/config.yaml") << "policies: []\n";
  const FeedAddress file = *ParseFeedAddress("unix:" + dir + "/config.yaml");
  absl::StatusOr<std::unique_ptr<FeedReceiver>> refused =
      FeedReceiver::Start({&file, 1}, sink);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("not a socket"));
  std::ifstream kept(dir + "/config.yaml");
  std::string line;
  std::getline(kept, line);
  EXPECT_EQ(line, "policies: []");
}

TEST(FeedReceiverTest, UdpOnLoopbackReportsItsPort) {
  absl::StatusOr<LimiterConfig> config = ParseConfig("{}", "default.yaml");
  std::unique_ptr<SharedLimiter> limiter = *SharedLimiter::Create(*config);
  PendingTable pending(8);
  FeedSink sink(*limiter, pending);
  const FeedAddress at = *ParseFeedAddress("udp:127.0.0.1:0");
  absl::StatusOr<std::unique_ptr<FeedReceiver>> feed =
      FeedReceiver::Start({&at, 1}, sink);
  ASSERT_TRUE(feed.ok()) << feed.status();
  ASSERT_EQ((*feed)->bound().size(), 1u);
  EXPECT_THAT((*feed)->bound()[0], HasSubstr("udp:127.0.0.1:"));
  EXPECT_NE((*feed)->bound()[0], "udp:127.0.0.1:0");
}

}  // namespace feed_test
}  // namespace mxlimit::daemon
