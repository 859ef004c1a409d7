#include "src/daemon/http_server.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/testing/raw_http.h"

namespace mxlimit::daemon {
namespace {

using std::chrono::milliseconds;
using testing::RawConnection;
using testing::RawResponse;

// Answers "METHOD TARGET" so a test can see which request was served.
class Echo : public HttpHandler {
 public:
  void Handle(const HttpRequestHead& head, const IpAddress&,
              HttpResponse& out) override {
    out.status = 200;
    out.content_type = "text/plain";
    out.owned.assign(head.method);
    out.owned.append(" ");
    out.owned.append(head.target);
    out.body = out.owned;
  }
};

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options = {}) {
    absl::StatusOr<std::unique_ptr<HttpServer>> s =
        HttpServer::Start(options, echo_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  uint16_t port() const { return server_->port(); }

  Echo echo_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, KeepAliveAndPipelinedRequestsInOrder) {
  Start();
  RawConnection c(port());
  ASSERT_TRUE(c.connected());
  c.Send(
      "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
      "\r\n"  // a stray blank line between requests is ignored
      "PUT /c HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().body, "GET /a");
  EXPECT_EQ(c.ReadResponse().body, "GET /b");
  EXPECT_EQ(c.ReadResponse().body, "PUT /c");
  c.Send("GET /d HTTP/1.1\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().body, "GET /d");
  EXPECT_EQ(server_->Counters().open, 1u);
}

TEST_F(HttpServerTest, AHeadTrickledInByteByByte) {
  Start();
  RawConnection c(port());
  const std::string request = "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n";
  for (char ch : request) c.Send(std::string(1, ch));
  EXPECT_EQ(c.ReadResponse().body, "GET /slow");
}

TEST_F(HttpServerTest, BodiesAreSkippedUpToTheBound) {
  Start();
  RawConnection c(port());
  c.Send(
      "POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /q "
      "HTTP/1.1\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().body, "POST /p");
  EXPECT_EQ(c.ReadResponse().body, "GET /q");
  RawConnection big(port());
  big.Send("POST /p HTTP/1.1\r\nContent-Length: 70000\r\n\r\n");
  EXPECT_EQ(big.ReadResponse().status, 413);
  EXPECT_TRUE(big.ClosedWithin(milliseconds(1000)));
}

TEST_F(HttpServerTest, MalformedHeadIsAnsweredAndClosed) {
  Start();
  RawConnection c(port());
  c.Send("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n");
  const RawResponse r = c.ReadResponse();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_TRUE(c.ClosedWithin(milliseconds(1000)));
  EXPECT_EQ(server_->Counters().malformed, 1u);
}

TEST_F(HttpServerTest, OversizedTargetAndHeaders) {
  Start();
  RawConnection target(port());
  target.Send("GET /" + std::string(kMaxTargetBytes + 100, 'a'));
  EXPECT_EQ(target.ReadResponse().status, 414);
  RawConnection fields(port());
  fields.Send("GET / HTTP/1.1\r\nA: " + std::string(70 * 1024, 'b') +
              "\r\n\r\n");
  EXPECT_EQ(fields.ReadResponse().status, 431);
  // A 60 KiB target with small headers is fine.
  RawConnection ok(port());
  ok.Send("GET /" + std::string(60 * 1024, 'c') + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ok.ReadResponse().status, 200);
}

TEST_F(HttpServerTest, SlowHeadIsTimedOutIdleConnectionIsClosed) {
  ServerOptions o;
  o.request_timeout = milliseconds(200);
  o.idle_timeout = milliseconds(300);
  Start(o);
  RawConnection slow(port());
  slow.Send("GET / HTTP/1.1\r\nHost:");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(slow.ReadResponse(milliseconds(2000)).status, 408);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  EXPECT_TRUE(slow.ClosedWithin(milliseconds(500)));

  RawConnection idle(port());
  idle.Send("GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(idle.ReadResponse().status, 200);
  EXPECT_TRUE(idle.ClosedWithin(milliseconds(2000)));
  EXPECT_GE(server_->Counters().timed_out, 1u);
}

TEST_F(HttpServerTest, ConnectionsOverTheBoundAreRefused) {
  ServerOptions o;
  o.threads = 1;
  o.max_connections = 2;
  Start(o);
  RawConnection a(port());
  RawConnection b(port());
  a.Send("GET /a HTTP/1.1\r\n\r\n");
  b.Send("GET /b HTTP/1.1\r\n\r\n");
  ASSERT_EQ(a.ReadResponse().status, 200);
  ASSERT_EQ(b.ReadResponse().status, 200);
  RawConnection c(port());
  EXPECT_EQ(c.ReadResponse().status, 503);
  EXPECT_EQ(server_->Counters().refused_over_limit, 1u);
}

TEST_F(HttpServerTest, DrainFinishesRequestsUnderWayAndClosesIdleOnes) {
  Start();
  RawConnection idle(port());
  idle.Send("GET /i HTTP/1.1\r\n\r\n");
  ASSERT_EQ(idle.ReadResponse().status, 200);
  RawConnection busy(port());
  busy.Send("GET /under-way HTTP/1.1\r\n");  // head not finished yet
  std::this_thread::sleep_for(milliseconds(50));
  std::thread drain([this] { server_->Drain(); });
  EXPECT_TRUE(idle.ClosedWithin(milliseconds(1000)));
  busy.Send("Host: x\r\n\r\n");
  const RawResponse r = busy.ReadResponse();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /under-way");
  EXPECT_EQ(r.Header("Connection"), "close");
  drain.join();
  RawConnection late(port());
  EXPECT_FALSE(late.connected());
}

TEST_F(HttpServerTest, StartErrors) {
  ServerOptions o;
  o.host = "localhost";
  EXPECT_FALSE(HttpServer::Start(o, echo_).ok());
  o.host = "127.0.0.1";
  o.threads = 0;
  EXPECT_FALSE(HttpServer::Start(o, echo_).ok());
  Start();
  ServerOptions taken;
  taken.port = port();
  EXPECT_FALSE(HttpServer::Start(taken, echo_).ok());
}

}  // namespace
}  // namespace mxlimit::daemon
