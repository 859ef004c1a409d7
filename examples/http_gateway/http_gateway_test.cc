// Starts http_gateway on an ephemeral loopback port with gateway_test.yaml and
// talks real HTTP to it. The server is killed when each test ends, whatever
// happened (and by the kernel if this process dies first).
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/matrix_response.h"

namespace {

class GatewayProcess {
 public:
  // Starts the gateway with `flags` (after --port 0 --config ...) and waits
  // for the "port=N" line. port() is 0 if that failed.
  explicit GatewayProcess(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {HTTP_GATEWAY_BIN, "--port", "0",
                                     "--config", HTTP_GATEWAY_CONFIG};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out[2];
    if (pipe(out) != 0) return;
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      // The server must not outlive a crashed test.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    if (pid_ < 0) {
      close(out[0]);
      return;
    }
    std::string line;
    pollfd p{out[0], POLLIN, 0};
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (line.find('\n') == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[64];
      const ssize_t n = read(out[0], buf, sizeof(buf));
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    if (line.rfind("port=", 0) == 0) {
      std::from_chars(line.data() + 5, line.data() + line.size(), port_);
    }
  }

  ~GatewayProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

constexpr char kAliceToken[] = "alice-token";
constexpr char kBobToken[] = "bob-token";

std::vector<std::string> Tokens() {
  return {"--token", std::string(kAliceToken) + "=@alice:example.org",
          "--token", std::string(kBobToken) + "=@bob:example.org"};
}

std::string SendPath(std::string_view room, int txn) {
  return "/_matrix/client/v3/rooms/" + std::string(room) +
         "/send/m.room.message/txn" + std::to_string(txn);
}

httplib::Result Send(httplib::Client& client, const char* token,
                     std::string_view room, int txn) {
  httplib::Headers headers = {
      {"Authorization", std::string("Bearer ") + token}};
  return client.Put(SendPath(room, txn), headers, R"({"body":"hi"})",
                    "application/json");
}

// The retry_after_ms of a 429 body, checked to be exactly the body
// matrix_response.h writes for that wait; -1 if it is not.
int64_t RetryAfterMs(const std::string& body) {
  constexpr std::string_view kField = R"("retry_after_ms":)";
  const size_t at = body.find(kField);
  if (at == std::string::npos) return -1;
  int64_t ms = -1;
  const char* first = body.data() + at + kField.size();
  std::from_chars(first, body.data() + body.size(), ms);
  if (body != mxlimit::LimitExceededBody(std::chrono::milliseconds(ms),
                                         /*never=*/false)) {
    return -1;
  }
  return ms;
}

TEST(HttpGatewayTest, LimitsAUserAcrossRoomsAndLetsThemBackAfterRetryAfter) {
  GatewayProcess gateway(Tokens());
  ASSERT_GT(gateway.port(), 0) << "the gateway did not report its port";
  httplib::Client client("127.0.0.1", gateway.port());

  // The burst of 3 passes.
  const auto first = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    httplib::Result res = Send(client, kAliceToken, "!a%3Aexample.org", i);
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200) << "request " << i;
    EXPECT_EQ(res->body, "{}");
  }
  // The next one, in another room, is denied: the route is the same.
  httplib::Result denied = Send(client, kAliceToken, "!b%3Aexample.org", 3);
  const auto denied_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(denied);
  ASSERT_EQ(denied->status, 429);
  EXPECT_EQ(denied->get_header_value("Content-Type"), "application/json");
  const int64_t ms = RetryAfterMs(denied->body);
  ASSERT_GT(ms, 0) << denied->body;
  // One per second: the fourth request may pass one second after the first
  // passed, so the wait is at most 1000 ms and at least 1000 ms minus the
  // time the requests took.
  const int64_t elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(denied_at - first)
          .count();
  EXPECT_LE(ms, 1000);
  EXPECT_GE(ms, 1000 - elapsed_ms - 1);
  EXPECT_EQ(denied->get_header_value("Retry-After"),
            std::to_string((ms + 999) / 1000));

  // A third room: still no fresh budget.
  httplib::Result again = Send(client, kAliceToken, "!c%3Aexample.org", 4);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 429);

  // Bob, from the same address, has his own budget.
  httplib::Result bob = Send(client, kBobToken, "!a%3Aexample.org", 5);
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->status, 200);

  // After the advertised wait, Alice passes again. (The only sleep: the
  // server runs on the real clock.)
  std::this_thread::sleep_until(denied_at + std::chrono::milliseconds(ms + 20));
  httplib::Result later = Send(client, kAliceToken, "!b%3Aexample.org", 6);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->status, 200) << later->body;

  // The counters tell the same story.
  httplib::Result metrics = client.Get("/_mxlimit/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(
      metrics->body.find(R"(policy="send",scope="user",result="denied"} 2)"),
      std::string::npos)
      << metrics->body;
}

TEST(HttpGatewayTest, UnknownTokenIsRejectedBeforeTheLimiter) {
  GatewayProcess gateway(Tokens());
  ASSERT_GT(gateway.port(), 0);
  httplib::Client client("127.0.0.1", gateway.port());
  httplib::Result res = Send(client, "stolen", "!a%3Aexample.org", 1);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_NE(res->body.find("M_UNKNOWN_TOKEN"), std::string::npos);
}

int Login(httplib::Client& client, const std::string& forwarded_for) {
  httplib::Headers headers;
  if (!forwarded_for.empty()) headers.emplace("X-Forwarded-For", forwarded_for);
  httplib::Result res = client.Post("/_matrix/client/v3/login", headers, "{}",
                                    "application/json");
  return res ? res->status : -1;
}

TEST(HttpGatewayTest, XForwardedForIsIgnoredFromAnUntrustedPeer) {
  GatewayProcess gateway(Tokens());
  ASSERT_GT(gateway.port(), 0);
  httplib::Client client("127.0.0.1", gateway.port());
  // Two logins per minute per address: every claimed address is 127.0.0.1.
  EXPECT_EQ(Login(client, "203.0.113.1"), 200);
  EXPECT_EQ(Login(client, "203.0.113.2"), 200);
  EXPECT_EQ(Login(client, "203.0.113.3"), 429);
  EXPECT_EQ(Login(client, ""), 429);
}

TEST(HttpGatewayTest, XForwardedForFromATrustedProxyNamesTheClient) {
  std::vector<std::string> flags = Tokens();
  flags.insert(flags.end(), {"--trusted-proxy", "127.0.0.1/32"});
  GatewayProcess gateway(flags);
  ASSERT_GT(gateway.port(), 0);
  httplib::Client client("127.0.0.1", gateway.port());
  EXPECT_EQ(Login(client, "203.0.113.1"), 200);
  EXPECT_EQ(Login(client, "203.0.113.1"), 200);
  EXPECT_EQ(Login(client, "203.0.113.1"), 429);
  // Another client behind the same proxy has its own budget.
  EXPECT_EQ(Login(client, "203.0.113.2"), 200);
  // A client cannot pick its address by prepending one: the proxy's entry,
  // the rightmost untrusted one, counts.
  EXPECT_EQ(Login(client, "198.51.100.7, 203.0.113.1"), 429);
  // Trusted hops are skipped from the right.
  EXPECT_EQ(Login(client, "203.0.113.1, 127.0.0.1"), 429);
}

TEST(HttpGatewayTest, XForwardedForHopWithAPortNamesTheClientNotTheProxy) {
  std::vector<std::string> flags = Tokens();
  flags.insert(flags.end(), {"--trusted-proxy", "127.0.0.1/32"});
  GatewayProcess gateway(flags);
  ASSERT_GT(gateway.port(), 0);
  httplib::Client client("127.0.0.1", gateway.port());
  // The port is dropped: three requests from one client, whatever its port.
  EXPECT_EQ(Login(client, "203.0.113.9:5678"), 200);
  EXPECT_EQ(Login(client, "198.51.100.7 , 203.0.113.9:5679 "), 200);
  EXPECT_EQ(Login(client, "203.0.113.9"), 429);
  // Others behind the proxy are not charged for it, IPv6 with a port too.
  EXPECT_EQ(Login(client, "[2001:db8::9]:443"), 200);
  EXPECT_EQ(Login(client, "203.0.113.10:1, 127.0.0.1:2"), 200);
}

}  // namespace
