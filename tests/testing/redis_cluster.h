// A throwaway Redis Cluster for tests: three primaries (and, when asked, a
// replica of each) started as RedisServers with `--cluster-enabled yes` on
// free loopback ports, joined by `redis-cli --cluster create`, with a short
// node timeout (1 s) so that a killed primary's replica takes over within a
// few seconds. Every server is stopped by PID.
//
//   std::string why;
//   auto cluster = ClusterSet::Start(/*replicas=*/false, &why);
//   if (cluster == nullptr) GTEST_SKIP() << why;
//   options.url = cluster->url();  // redis-cluster://127.0.0.1:P1,...
//   cluster->MoveSlot(slot, 0, 1, [&] { /* ASK window */ });
//
// Linux only; links hiredis.

#ifndef MXLIMIT_TESTS_TESTING_REDIS_CLUSTER_H_
#define MXLIMIT_TESTS_TESTING_REDIS_CLUSTER_H_

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/redis_server.h"

namespace mxlimit::testing {

class ClusterSet {
 public:
  static constexpr int kPrimaries = 3;

  // Null, with `why`, when redis-server or redis-cli is missing or the
  // cluster does not come together in 30 s.
  static std::unique_ptr<ClusterSet> Start(bool replicas, std::string* why) {
    const std::string cli = RedisServer::FindProgram("redis-cli");
    if (cli.empty()) {
      *why = "redis-cli not installed: apt install redis-tools";
      RedisServer::RequireOrSkip(*why);
      return nullptr;
    }
    std::unique_ptr<ClusterSet> s(new ClusterSet());
    const int count = replicas ? 2 * kPrimaries : kPrimaries;
    std::string addresses;
    for (int i = 0; i < count; ++i) {
      RedisServer::Options o;
      o.extra_args = {"--cluster-enabled", "yes", "--cluster-config-file",
                      "nodes.conf", "--cluster-node-timeout", "1000",
                      "--cluster-port",
                      std::to_string(RedisServer::FreePortForTests()),
                      "--cluster-require-full-coverage", "no",
                      // Replicas in sync at once, not after the default 5 s
                      // wait for more replicas: one never synced cannot
                      // take over.
                      "--repl-diskless-sync-delay", "0"};
      auto server = RedisServer::Start(std::move(o), why);
      if (server == nullptr) return nullptr;
      addresses += " 127.0.0.1:" + std::to_string(server->port());
      s->servers_.push_back(std::move(server));
    }
    const std::string command =
        cli + " --cluster create" + addresses + " --cluster-replicas " +
        (replicas ? "1" : "0") + " --cluster-yes > /dev/null 2>&1";
    if (std::system(command.c_str()) != 0) {
      *why = "redis-cli --cluster create failed";
      return nullptr;
    }
    if (!s->WaitSettled(std::chrono::seconds(30))) {
      *why = "the cluster did not settle in 30 s";
      return nullptr;
    }
    return s;
  }

  std::string url() const {
    std::string hosts;
    for (int i = 0; i < kPrimaries; ++i) {
      if (!hosts.empty()) hosts += ",";
      hosts += "127.0.0.1:" + std::to_string(servers_[i]->port());
    }
    return "redis-cluster://" + hosts;
  }

  // Every server, primaries first as created (a failover changes which
  // are primaries; see PrimaryOf).
  RedisServer& server(int i) { return *servers_[i]; }
  int size() const { return static_cast<int>(servers_.size()); }

  // The port of the primary that serves `slot` as server `i` sees it; 0
  // when it names none.
  int PrimaryOf(uint16_t slot, int i = 0) {
    std::istringstream in(servers_[i]->Command({"CLUSTER", "NODES"}));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string id, address, flags, master, ping, pong, epoch, state, range;
      f >> id >> address >> flags >> master >> ping >> pong >> epoch >> state;
      if (flags.find("master") == std::string::npos ||
          flags.find("fail") != std::string::npos) {
        continue;
      }
      while (f >> range) {
        if (range.front() == '[') continue;  // Migration markers.
        const size_t dash = range.find('-');
        const int first = std::atoi(range.c_str());
        const int last = dash == std::string::npos
                             ? first
                             : std::atoi(range.c_str() + dash + 1);
        if (slot >= first && slot <= last) {
          return std::atoi(address.c_str() + address.find(':') + 1);
        }
      }
    }
    return 0;
  }

  // Which server listens on `port`; -1 when none.
  int IndexOfPort(int port) const {
    for (size_t i = 0; i < servers_.size(); ++i) {
      if (servers_[i]->port() == port) return static_cast<int>(i);
    }
    return -1;
  }

  std::string NodeId(int i) {
    return servers_[i]->Command({"CLUSTER", "MYID"});
  }

  // Moves `slot` and its keys from server `from` to server `to` as
  // `redis-cli --cluster reshard` does: IMPORTING and MIGRATING, then
  // `during` (the window in which the source answers ASK for keys it no
  // longer has), then MIGRATE of every key, then the new owner announced
  // to every primary.
  bool MoveSlot(uint16_t slot, int from, int to,
                const std::function<void()>& during) {
    const std::string s = std::to_string(slot);
    if (servers_[to]->Command(
            {"CLUSTER", "SETSLOT", s, "IMPORTING", NodeId(from)}) != "OK" ||
        servers_[from]->Command(
            {"CLUSTER", "SETSLOT", s, "MIGRATING", NodeId(to)}) != "OK") {
      return false;
    }
    if (during) during();
    for (;;) {
      const std::string keys =
          servers_[from]->Command({"CLUSTER", "GETKEYSINSLOT", s, "1000"});
      if (keys.empty()) break;
      std::vector<std::string> migrate = {
          "MIGRATE", "127.0.0.1", std::to_string(servers_[to]->port()), "", "0",
          "5000",    "KEYS"};
      std::istringstream in(keys);
      std::string key;
      while (std::getline(in, key, ',')) migrate.push_back(key);
      const std::string r = servers_[from]->Command(migrate);
      if (r != "OK" && r != "NOKEY") return false;
    }
    const std::string owner = NodeId(to);
    for (int i = 0; i < kPrimaries; ++i) {
      servers_[i]->Command({"CLUSTER", "SETSLOT", s, "NODE", owner});
    }
    return true;
  }

 private:
  ClusterSet() = default;

  // Every server says cluster_state:ok and knows every node, and every
  // replica is in sync with its primary.
  bool WaitSettled(std::chrono::seconds limit) {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    const std::string nodes =
        "cluster_known_nodes:" + std::to_string(servers_.size());
    while (std::chrono::steady_clock::now() < give_up) {
      bool all = true;
      for (auto& server : servers_) {
        const std::string info = server->Command({"CLUSTER", "INFO"});
        const std::string repl = server->Command({"INFO", "replication"});
        if (info.find("cluster_state:ok") == std::string::npos ||
            info.find(nodes) == std::string::npos ||
            (repl.find("role:slave") != std::string::npos &&
             repl.find("master_link_status:up") == std::string::npos)) {
          all = false;
          break;
        }
      }
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::vector<std::unique_ptr<RedisServer>> servers_;
};

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_REDIS_CLUSTER_H_
