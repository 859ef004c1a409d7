// Held answers (HttpResponse::hold): sent after the hold on the worker's
// timer, in order behind it, without holding up other connections, exactly
// one OnHeldAnswerDone per hold whatever ends it, bounded per worker.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "src/http/server.h"
#include "tests/testing/raw_http.h"

namespace mxlimit::http {
namespace {

using std::chrono::milliseconds;
using testing::RawConnection;
using Clock = std::chrono::steady_clock;

// "/hold/N" is answered after N ms; anything else at once. The body names
// the target.
class Holder : public HttpHandler {
 public:
  void Handle(const HttpRequestHead& head, const IpAddress&,
              HttpResponse& out) override {
    out.status = 200;
    out.content_type = "text/plain";
    out.owned.assign(head.target);
    out.body = out.owned;
    constexpr std::string_view kHold = "/hold/";
    if (head.target.substr(0, kHold.size()) == kHold) {
      out.hold = milliseconds(
          std::stoi(std::string(head.target.substr(kHold.size()))));
      holds.fetch_add(1);
    }
  }
  void OnHeldAnswerDone() override { done.fetch_add(1); }

  std::atomic<int> holds{0};
  std::atomic<int> done{0};
};

class HttpHoldTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options = {}) {
    absl::StatusOr<std::unique_ptr<HttpServer>> s =
        HttpServer::Start(options, holder_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  bool Eventually(const std::function<bool()>& f) {
    const auto until = Clock::now() + milliseconds(3000);
    while (!f()) {
      if (Clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return true;
  }

  Holder holder_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpHoldTest, AHeldAnswerComesAfterItsHoldAndPipelinedOnesFollow) {
  Start();  // one worker: nothing else may run while a hold waits
  RawConnection c(server_->port());
  ASSERT_TRUE(c.connected());
  const Clock::time_point sent = Clock::now();
  c.Send("GET /hold/150 HTTP/1.1\r\n\r\nGET /next HTTP/1.1\r\n\r\n");
  const testing::RawResponse first = c.ReadResponse();
  const auto waited = Clock::now() - sent;
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, "/hold/150");
  EXPECT_GE(waited, milliseconds(150));
  EXPECT_EQ(c.ReadResponse().body, "/next");
  EXPECT_TRUE(Eventually([&] { return holder_.done.load() == 1; }));
  EXPECT_EQ(server_->Counters().held, 0u);
}

TEST_F(HttpHoldTest, AHoldBlocksNoOtherConnection) {
  Start();
  RawConnection held(server_->port());
  held.Send("GET /hold/1000 HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(Eventually([&] { return server_->Counters().held == 1; }));
  // The same (only) worker answers others at once meanwhile.
  for (int i = 0; i < 20; ++i) {
    RawConnection other(server_->port());
    const Clock::time_point sent = Clock::now();
    other.Send("GET /now HTTP/1.1\r\n\r\n");
    EXPECT_EQ(other.ReadResponse().body, "/now");
    EXPECT_LT(Clock::now() - sent, milliseconds(500));
  }
  EXPECT_EQ(held.ReadResponse().body, "/hold/1000");
}

TEST_F(HttpHoldTest, AClientGoneWhileHeldEndsTheHoldOnce) {
  Start();
  {
    RawConnection c(server_->port());
    c.Send("GET /hold/300 HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(Eventually([&] { return server_->Counters().held == 1; }));
  }  // closed by the client
  EXPECT_TRUE(Eventually([&] { return holder_.done.load() == 1; }));
  std::this_thread::sleep_for(milliseconds(400));  // past the hold
  EXPECT_EQ(holder_.done.load(), 1);
  EXPECT_EQ(server_->Counters().held, 0u);
  EXPECT_TRUE(Eventually([&] { return server_->Counters().open == 0; }));
}

TEST_F(HttpHoldTest, PastTheBoundAnAnswerGoesAtOnce) {
  ServerOptions options;
  options.max_held_per_worker = 2;
  Start(options);
  RawConnection a(server_->port()), b(server_->port()), c(server_->port());
  a.Send("GET /hold/800 HTTP/1.1\r\n\r\n");
  b.Send("GET /hold/800 HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(Eventually([&] { return server_->Counters().held == 2; }));
  const Clock::time_point sent = Clock::now();
  c.Send("GET /hold/800 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().body, "/hold/800");
  EXPECT_LT(Clock::now() - sent, milliseconds(500));
  EXPECT_EQ(a.ReadResponse().body, "/hold/800");
  EXPECT_EQ(b.ReadResponse().body, "/hold/800");
  EXPECT_TRUE(Eventually([&] { return holder_.done.load() == 3; }));
}

TEST_F(HttpHoldTest, ADrainSendsHeldAnswersAtOnce) {
  Start();
  RawConnection c(server_->port());
  c.Send("GET /hold/5000 HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(Eventually([&] { return server_->Counters().held == 1; }));
  const Clock::time_point start = Clock::now();
  std::thread drain([&] { server_->Drain(); });
  EXPECT_EQ(c.ReadResponse(milliseconds(2000)).body, "/hold/5000");
  drain.join();
  EXPECT_LT(Clock::now() - start, milliseconds(2000));
  EXPECT_EQ(holder_.done.load(), 1);
}

// Requests pipelined behind a held one are answered after it, in order.
TEST_F(HttpHoldTest, PipeliningBehindAHoldWaitsItsTurn) {
  Start();
  RawConnection c(server_->port());
  std::string burst = "GET /hold/200 HTTP/1.1\r\n\r\n";
  for (int i = 0; i < 300; ++i) burst += "GET /p HTTP/1.1\r\n\r\n";
  std::thread sender([&] { c.Send(burst); });
  EXPECT_EQ(c.ReadResponse().body, "/hold/200");
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(c.ReadResponse().body, "/p") << i;
  }
  sender.join();
}

}  // namespace
}  // namespace mxlimit::http
