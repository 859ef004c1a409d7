// -----------------------------------------------------------------------------
// File: tests/testing/redis_server.h
// -----------------------------------------------------------------------------
//
// A throwaway redis-server for tests: started on a free loopback port (and a
// Unix socket) in a temporary directory, with no persistence, and stopped by
// PID. Tests can freeze it (SIGSTOP: a server that accepts but never
// answers), kill it and restart it on the same port (a restart that loses
// every key), and send it raw commands over a separate hiredis connection.
//
//   std::string why;
//   auto redis = mxlimit::testing::RedisServer::Start({}, &why);
//   if (redis == nullptr) GTEST_SKIP() << why;
//   options.url = redis->url();
//   EXPECT_EQ(redis->Command({"EXISTS", "k"}), "0");
//
// Linux only; links hiredis.

#ifndef MXLIMIT_TESTS_TESTING_REDIS_SERVER_H_
#define MXLIMIT_TESTS_TESTING_REDIS_SERVER_H_

#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace mxlimit::testing {

class RedisServer {
 public:
  struct Options {
    // Appended to the command line, e.g. {"--requirepass", "secret"}.
    std::vector<std::string> extra_args;
    // A TLS port too, with the files test_certificates.h made in this
    // directory: `tls_cert`.crt/.key as the server's certificate, clients
    // verified against ca.crt as `tls_auth_clients` says (no, optional,
    // yes). The plain port stays, for Command().
    std::string tls_dir = {};
    std::string tls_cert = "server";
    std::string tls_auth_clients = "no";
  };

  // Starts a server and waits until it answers PING. Null, with `why` set,
  // when redis-server is not installed or would not start.
  static std::unique_ptr<RedisServer> Start(Options options, std::string* why) {
    const std::string binary = FindOnPath("redis-server");
    if (binary.empty()) {
      *why = "redis-server not installed: apt install redis-server";
      RequireOrSkip(*why);
      return nullptr;
    }
    const std::string dir = MakeTempDir("mxlimit-redis-");
    if (dir.empty()) {
      *why = "mkdtemp failed";
      return nullptr;
    }
    std::unique_ptr<RedisServer> s(new RedisServer());
    s->binary_ = binary;
    s->dir_ = dir;
    s->options_ = std::move(options);
    s->port_ = FreePort();
    if (!s->options_.tls_dir.empty()) s->tls_port_ = FreePort();
    if (!s->Launch()) {
      *why = "redis-server did not start; see " + s->dir_ + "/redis.log";
      return nullptr;
    }
    return s;
  }

  ~RedisServer() {
    Stop();
    if (context_ != nullptr) redisFree(context_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  int port() const { return port_; }
  // With Options::tls_dir: rediss://127.0.0.1:TLS_PORT.
  int tls_port() const { return tls_port_; }
  std::string tls_url() const {
    return "rediss://127.0.0.1:" + std::to_string(tls_port_);
  }
  std::string unix_path() const { return dir_ + "/redis.sock"; }
  std::string url() const {
    return "redis://127.0.0.1:" + std::to_string(port_);
  }
  pid_t pid() const { return pid_; }
  const std::string& binary() const { return binary_; }

  // A free loopback port, for other servers a test starts (Sentinels).
  static int FreePortForTests() { return FreePort(); }
  // With MXLIMIT_REQUIRE_REDIS set (.ci/run sets it), a Redis tool that is
  // missing ends the test as a failure rather than letting it skip: CI runs
  // every Redis test or fails.
  static void RequireOrSkip(const std::string& why) {
    const char* required = getenv("MXLIMIT_REQUIRE_REDIS");
    if (required == nullptr || *required == '\0') return;
    std::fprintf(stderr, "MXLIMIT_REQUIRE_REDIS is set: %s\n", why.c_str());
    std::abort();
  }

  // A program on PATH ("" when absent), for other tools a test runs.
  static std::string FindProgram(const std::string& name) {
    return FindOnPath(name);
  }

  // SIGSTOP: connections stay open, nothing is answered. The signal takes
  // effect some time after kill() returns, so wait for the server (our
  // child) to report itself stopped: until then it may still answer.
  void Freeze() {
    if (kill(pid_, SIGSTOP) != 0) return;
    int status = 0;
    while (waitpid(pid_, &status, WUNTRACED) < 0 && errno == EINTR) {
    }
  }
  void Thaw() { kill(pid_, SIGCONT); }

  // SIGKILL: every connection drops, every key is gone.
  void Kill() {
    if (context_ != nullptr) redisFree(context_);
    context_ = nullptr;
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Starts it again on the same port (a new run_id).
  bool Restart() {
    Kill();
    return Launch();
  }

  // SIGTERM, then SIGKILL after 5 s.
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);
    kill(pid_, SIGTERM);
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > give_up) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
  }

  // Runs one command (on a connection kept between calls, after SELECT db)
  // and renders the reply: an integer as its digits, a string or status as
  // itself, nil as "(nil)", an error as "ERR: <text>", an array as its
  // elements joined by ",". "(no connection)" when the server is down.
  std::string Command(const std::vector<std::string>& args, int db = 0) {
    return Command(args, db, /*retry=*/true);
  }

  // For Command() on a server started with --requirepass.
  void set_password(std::string password) { password_ = std::move(password); }

  // One command on `c`; the reply is the caller's to free (null when the
  // connection failed).
  static redisReply* CommandArgv(redisContext* c,
                                 const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    return static_cast<redisReply*>(redisCommandArgv(
        c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  }

 private:
  RedisServer() = default;

  std::string Command(const std::vector<std::string>& args, int db,
                      bool retry) {
    if (context_ != nullptr && (context_->err || context_db_ != db)) {
      redisFree(context_);
      context_ = nullptr;
    }
    if (context_ == nullptr) {
      timeval tv{2, 0};
      context_ = redisConnectWithTimeout("127.0.0.1", port_, tv);
      if (context_ == nullptr || context_->err) {
        if (context_ != nullptr) redisFree(context_);
        context_ = nullptr;
        return "(no connection)";
      }
      // A frozen server must not hang a test forever.
      redisSetTimeout(context_, tv);
      if (!password_.empty()) Run(context_, {"AUTH", password_});
      if (db != 0) Run(context_, {"SELECT", std::to_string(db)});
      context_db_ = db;
    }
    std::string reply = Run(context_, args);
    if (retry && reply == "(no reply)" && context_->err != 0) {
      // The server closed the connection (a restart, or Sentinel's CLIENT
      // KILL after a failover): once more on a new one.
      return Command(args, db, /*retry=*/false);
    }
    return reply;
  }

  static std::string Render(const redisReply* r) {
    if (r == nullptr) return "(no reply)";
    switch (r->type) {
      case REDIS_REPLY_INTEGER:
        return std::to_string(r->integer);
      case REDIS_REPLY_NIL:
        return "(nil)";
      case REDIS_REPLY_ERROR:
        return "ERR: " + std::string(r->str, r->len);
      case REDIS_REPLY_ARRAY: {
        std::string out;
        for (size_t i = 0; i < r->elements; ++i) {
          if (i > 0) out += ",";
          out += Render(r->element[i]);
        }
        return out;
      }
      default:
        return std::string(r->str, r->len);
    }
  }

  static std::string Run(redisContext* c,
                         const std::vector<std::string>& args) {
    redisReply* r = CommandArgv(c, args);
    std::string out = Render(r);
    if (r != nullptr) freeReplyObject(r);
    return out;
  }

  static std::string FindOnPath(const std::string& name) {
    const char* path = getenv("PATH");
    std::string p = path != nullptr ? path : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      const std::string candidate = p.substr(start, end - start) + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
    return "";
  }

  // A port the kernel just handed out and released: free unless another
  // process grabs it in between (unlikely enough for tests).
  static int FreePort() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    close(fd);
    return ntohs(addr.sin_port);
  }

  bool Launch() {
    // Loopback and a private socket only, no persistence, in the foreground.
    const std::pair<std::string, std::string> flags[] = {
        {"--port", std::to_string(port_)},
        {"--bind", "127.0.0.1"},
        {"--save", ""},
        {"--appendonly", "no"},
        {"--daemonize", "no"},
        {"--dir", dir_},
        {"--unixsocket", unix_path()},
        {"--unixsocketperm", "700"},
        {"--logfile", dir_ + "/redis.log"},
    };
    std::vector<std::string> args = {binary_};
    for (const auto& [flag, value] : flags) {
      args.push_back(flag);
      args.push_back(value);
    }
    if (tls_port_ != 0) {
      const std::string& d = options_.tls_dir;
      for (const std::string& a :
           {std::string("--tls-port"), std::to_string(tls_port_),
            std::string("--tls-cert-file"),
            d + "/" + options_.tls_cert + ".crt", std::string("--tls-key-file"),
            d + "/" + options_.tls_cert + ".key",
            std::string("--tls-ca-cert-file"), d + "/ca.crt",
            std::string("--tls-auth-clients"), options_.tls_auth_clients}) {
        args.push_back(a);
      }
    }
    for (const std::string& a : options_.extra_args) args.push_back(a);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      // A test that dies (a sanitizer's report, a crash) takes its server
      // with it, rather than leaving it holding ctest's output pipe.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      execv(binary_.c_str(), argv.data());
      _exit(127);
    }
    if (pid < 0) return false;
    pid_ = pid;
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < give_up) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      const std::string pong = Command({"PING"});
      if (pong == "PONG" || pong.find("NOAUTH") != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    Stop();
    return false;
  }

  std::string binary_;
  std::string dir_;
  Options options_;
  std::string password_;
  int port_ = 0;
  int tls_port_ = 0;
  pid_t pid_ = -1;
  redisContext* context_ = nullptr;
  int context_db_ = 0;
};

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_REDIS_SERVER_H_
