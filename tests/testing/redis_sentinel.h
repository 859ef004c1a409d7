// A throwaway Redis Sentinel set for tests: a primary and a replica
// (RedisServer) watched as `mymaster` by three Sentinels (`redis-server
// CONF --sentinel`) on free loopback ports, with short failure detection
// (down after 400 ms), each stopped by PID.
//
//   std::string why;
//   auto set = SentinelSet::Start(&why);
//   if (set == nullptr) GTEST_SKIP() << why;
//   options.url = set->url();  // redis-sentinel://127.0.0.1:P1,.../mymaster
//   set->primary().Kill();      // the Sentinels promote the replica
//
// Linux only; links hiredis.

#ifndef MXLIMIT_TESTS_TESTING_REDIS_SENTINEL_H_
#define MXLIMIT_TESTS_TESTING_REDIS_SENTINEL_H_

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

namespace mxlimit::testing {

class SentinelSet {
 public:
  static constexpr int kSentinels = 3;

  // Null, with `why`, when redis-server is missing or the set does not come
  // together (the Sentinels knowing the replica and each other) in 20 s.
  static std::unique_ptr<SentinelSet> Start(std::string* why) {
    std::unique_ptr<SentinelSet> s(new SentinelSet());
    s->primary_ = RedisServer::Start({}, why);
    if (s->primary_ == nullptr) return nullptr;
    s->replica_ = RedisServer::Start(
        {{"--replicaof", "127.0.0.1", std::to_string(s->primary_->port())}},
        why);
    if (s->replica_ == nullptr) return nullptr;
    s->dir_ = MakeTempDir("mxlimit-sentinel-");
    for (int i = 0; i < kSentinels; ++i) {
      if (!s->LaunchSentinel(i)) {
        *why = "a Sentinel did not start; see " + s->dir_;
        return nullptr;
      }
    }
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!s->Settled()) {
      if (std::chrono::steady_clock::now() > give_up) {
        *why = "the Sentinels did not find the replica and each other in 20 s";
        return nullptr;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return s;
  }

  ~SentinelSet() {
    for (pid_t pid : pids_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string url() const {
    std::string hosts;
    for (int port : ports_) {
      if (!hosts.empty()) hosts += ",";
      hosts += "127.0.0.1:" + std::to_string(port);
    }
    return "redis-sentinel://" + hosts + "/mymaster";
  }
  RedisServer& primary() { return *primary_; }
  RedisServer& replica() { return *replica_; }

  // The port the first Sentinel that answers names as the primary's; 0 when
  // none answers.
  int PrimaryPort() const {
    for (int port : ports_) {
      const std::vector<std::string> r =
          Ask(port, {"SENTINEL", "get-master-addr-by-name", "mymaster"});
      if (r.size() == 2) return std::atoi(r[1].c_str());
    }
    return 0;
  }

  // SENTINEL FAILOVER: a switch with both servers alive.
  bool Failover() const {
    const std::vector<std::string> r =
        Ask(ports_[0], {"SENTINEL", "FAILOVER", "mymaster"});
    return r.size() == 1 && r[0] == "OK";
  }

 private:
  SentinelSet() = default;

  bool LaunchSentinel(int i) {
    const int port = RedisServer::FreePortForTests();
    const std::string conf = dir_ + "/sentinel-" + std::to_string(i) + ".conf";
    std::ofstream(conf) << "port " << port << "\n"
                        << "bind 127.0.0.1\n"
                        << "daemonize no\n"
                        << "dir " << dir_ << "\n"
                        << "logfile " << dir_ << "/sentinel-" << i << ".log\n"
                        << "sentinel monitor mymaster 127.0.0.1 "
                        << primary_->port() << " 2\n"
                        << "sentinel down-after-milliseconds mymaster 400\n"
                        << "sentinel failover-timeout mymaster 4000\n";
    const std::string& binary = primary_->binary();
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // As RedisServer's.
      execl(binary.c_str(), binary.c_str(), conf.c_str(), "--sentinel",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    if (pid < 0) return false;
    pids_.push_back(pid);
    ports_.push_back(port);
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < give_up) {
      if (Ask(port, {"PING"}) == std::vector<std::string>{"PONG"}) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Every Sentinel knows the replica and the two other Sentinels: only then
  // can they agree on a failover.
  bool Settled() const {
    for (int port : ports_) {
      const std::vector<std::string> r =
          Ask(port, {"SENTINEL", "master", "mymaster"});
      std::string slaves, others;
      for (size_t k = 0; k + 1 < r.size(); k += 2) {
        if (r[k] == "num-slaves") slaves = r[k + 1];
        if (r[k] == "num-other-sentinels") others = r[k + 1];
      }
      if (slaves != "1" || others != std::to_string(kSentinels - 1)) {
        return false;
      }
    }
    return true;
  }

  // One command on a fresh connection; a flat reply as strings (empty on
  // any failure).
  static std::vector<std::string> Ask(int port,
                                      const std::vector<std::string>& args) {
    timeval tv{1, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
    std::vector<std::string> out;
    if (c == nullptr || c->err != 0) {
      if (c != nullptr) redisFree(c);
      return out;
    }
    redisSetTimeout(c, tv);
    redisReply* r = RedisServer::CommandArgv(c, args);
    auto text = [](const redisReply* e) {
      return e->type == REDIS_REPLY_INTEGER ? std::to_string(e->integer)
                                            : std::string(e->str, e->len);
    };
    if (r != nullptr && r->type == REDIS_REPLY_ARRAY) {
      for (size_t i = 0; i < r->elements; ++i) {
        out.push_back(text(r->element[i]));
      }
    } else if (r != nullptr && r->type != REDIS_REPLY_NIL &&
               r->type != REDIS_REPLY_ERROR) {
      out.push_back(text(r));
    }
    if (r != nullptr) freeReplyObject(r);
    redisFree(c);
    return out;
  }

  std::unique_ptr<RedisServer> primary_;
  std::unique_ptr<RedisServer> replica_;
  std::string dir_;
  std::vector<pid_t> pids_;
  std::vector<int> ports_;
};

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_REDIS_SENTINEL_H_
