#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/http/server.h"
#include "tests/testing/raw_http.h"

namespace mxlimit::http {
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
  // Waits for the server to see that connections went away.
  bool OpenBecomes(uint64_t n) const {
    const auto until = std::chrono::steady_clock::now() + milliseconds(2000);
    while (server_->Counters().open != n) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return true;
  }
  // Opens `n` connections at once and checks each is answered; they stay
  // open as long as the caller keeps what this returns.
  std::vector<std::unique_ptr<RawConnection>> EveryConnectionAnswered(
      size_t n) {
    std::vector<std::unique_ptr<RawConnection>> conns;
    for (size_t k = 0; k < n; ++k) {
      conns.push_back(std::make_unique<RawConnection>(port()));
      EXPECT_TRUE(conns.back()->connected());
      conns.back()->Send("GET /ok" + std::to_string(k) + " HTTP/1.1\r\n\r\n");
    }
    for (size_t k = 0; k < n; ++k) {
      EXPECT_EQ(conns[k]->ReadResponse(milliseconds(2000)).body,
                "GET /ok" + std::to_string(k))
          << "connection " << k << " of " << n;
    }
    EXPECT_EQ(server_->Counters().open, n);
    return conns;
  }

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

// Every answer that closes the connection frees its slot exactly once: the
// open count returns to zero, and every slot then serves one connection.
TEST_F(HttpServerTest, ErrorAnswersThatCloseFreeTheirSlotOnce) {
  ServerOptions o;
  o.threads = 1;
  o.max_connections = 4;
  Start(o);
  const std::pair<std::string, int> hostile[] = {
      {"GET / HTTP/1.1\r\nAuthorization: Bearer a\x01b\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 70000\r\n\r\n", 413},
      {"GET /" + std::string(kMaxTargetBytes + 100, 'a'), 414},
      {"GET / HTTP/1.1\r\nA: " + std::string(70 * 1024, 'b') + "\r\n\r\n", 431},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"GET / HTTP/2.0\r\n\r\n", 505},
  };
  for (int round = 0; round < 3; ++round) {
    for (const auto& [request, status] : hostile) {
      RawConnection c(port());
      ASSERT_TRUE(c.connected());
      c.Send(request);
      EXPECT_EQ(c.ReadResponse().status, status) << request.substr(0, 40);
      EXPECT_TRUE(c.ClosedWithin(milliseconds(1000)));
    }
  }
  EXPECT_TRUE(OpenBecomes(0)) << server_->Counters().open;
  const auto open = EveryConnectionAnswered(4);
  RawConnection over(port());
  EXPECT_EQ(over.ReadResponse().status, 503);
}

// The bound is for the process: with two workers, all of it is usable
// whichever worker accepts.
TEST_F(HttpServerTest, MaxConnectionsHoldsForTheProcessNotPerWorker) {
  ServerOptions o;
  o.threads = 2;
  o.max_connections = 6;
  Start(o);
  const auto open = EveryConnectionAnswered(6);
  RawConnection over(port());
  EXPECT_EQ(over.ReadResponse().status, 503);
  EXPECT_EQ(server_->Counters().refused_over_limit, 1u);
}

TEST_F(HttpServerTest, AConnectionThatSendsNothingIsClosedAtTheHeadTimeout) {
  ServerOptions o;
  o.request_timeout = milliseconds(200);
  o.idle_timeout = milliseconds(60'000);
  Start(o);
  RawConnection silent(port());
  ASSERT_TRUE(silent.connected());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(silent.ClosedWithin(milliseconds(3000)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  EXPECT_TRUE(OpenBecomes(0));
  // A connection that was answered and then waits is idle, not timed out.
  RawConnection kept(port());
  kept.Send("GET /k HTTP/1.1\r\n\r\n");
  EXPECT_EQ(kept.ReadResponse().status, 200);
  EXPECT_FALSE(kept.ClosedWithin(milliseconds(500)));
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
}  // namespace mxlimit::http
