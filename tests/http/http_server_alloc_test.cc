// The server's request path allocates nothing: a keepalive connection's
// requests are read, parsed, handled and answered in the slot's buffers.
// Its own binary, because it replaces the global operator new.
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "src/http/server.h"
#include "tests/testing/counting_new.h"
#include "tests/testing/raw_http.h"

namespace mxlimit::http {
namespace {

class Fixed : public HttpHandler {
 public:
  void Handle(const HttpRequestHead& head, const IpAddress&,
              HttpResponse& out) override {
    out.status = head.Field("X-Deny").empty() ? 204 : 403;
    out.AddHeader("X-Mxlimit-Policy", out.Keep("test.policy"));
  }
};

TEST(HttpServerAllocTest, KeepAliveRequestsAllocateNothing) {
  Fixed handler;
  ServerOptions options;
  options.threads = 2;
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(options, handler);
  ASSERT_TRUE(server.ok());
  testing::RawConnection c((*server)->port());
  const std::string request =
      "GET /_mxlimit/auth_request HTTP/1.1\r\nHost: x\r\n"
      "X-Original-URI: /_matrix/client/v3/sync\r\nX-Deny: 1\r\n\r\n";
  // Warm up: the slot's buffers are made on first use.
  c.Send(request);
  ASSERT_EQ(c.ReadResponse().status, 403);

  char reply[4096];
  const long before = ::mxlimit::testing::AllocationCount();
  size_t answered = 0;
  for (int i = 0; i < 1000; ++i) {
    c.Send(request);  // sends in place, no copy
    // Read exactly one response of known shape without allocating.
    size_t got = 0;
    while (true) {
      const ssize_t n = recv(c.fd(), reply + got, sizeof(reply) - got, 0);
      ASSERT_GT(n, 0);
      got += static_cast<size_t>(n);
      if (got >= 4 && std::memcmp(reply + got - 4, "\r\n\r\n", 4) == 0) break;
    }
    if (std::strncmp(reply, "HTTP/1.1 403", 12) == 0) ++answered;
  }
  EXPECT_EQ(::mxlimit::testing::AllocationCount() - before, 0);
  EXPECT_EQ(answered, 1000u);
}

}  // namespace
}  // namespace mxlimit::http
