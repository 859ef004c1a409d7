// mxlimitd's completion feed: lines handled per second on the feed's one
// thread, with the pending table full (as under load: every completion finds
// a table at capacity, and the next decision refills the slot it freed).
// The naive baseline in the same binary keeps pending requests in a
// std::unordered_map of std::string and parses with std::istringstream.
//
//   BM_FeedLines/settled     nginx lines of kept failed logins: parse, take,
//                            Settle (charges failed-login-per-ip), refill
//   BM_FeedLines/no_pending  lines whose id nothing kept: parse and look up
//   BM_FeedSocket/udp:0|1    the same settled lines through a unix datagram
//                            (0) or loopback UDP (1) socket and the
//                            FeedReceiver thread; the time is
//                            the sender's pace, `feed_lines_per_cpu_s` what
//                            one core of the receiving side handles (lines
//                            per second of CPU time of every thread but the
//                            sender's)
//   BM_NaiveFeedLines        the baseline for /settled

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "benchmark/benchmark.h"
#include "mxlimit/config.h"
#include "mxlimit/shared_limiter.h"
#include "src/daemon/feed_receiver.h"
#include "src/daemon/feed_sink.h"
#include "src/daemon/pending_table.h"

namespace mxlimit::daemon {
namespace {

constexpr size_t kPending = 16384;
constexpr int kLines = 1 << 16;

std::string Id(int n) {
  char id[33];
  std::snprintf(id, sizeof(id), "%032x", n);
  return id;
}

std::string Client(int n) {
  return "10." + std::to_string((n >> 16) & 255) + "." +
         std::to_string((n >> 8) & 255) + "." + std::to_string(n & 255);
}

std::string Line(int n) {
  return "<190>Dec  5 20:13:47 mxlimit: " + Client(n) +
         " - - [05/Dec/2026:20:13:47 +0000] \"POST /_matrix/client/v3/login "
         "HTTP/1.1\" 403 70 \"-\" \"Element/1.11.80\" \"-\" \"" +
         Id(n) + "\"";
}

int64_t CpuNanos(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::unique_ptr<SharedLimiter> DefaultLimiter() {
  absl::StatusOr<LimiterConfig> config = ParseConfig("{}", "bench.yaml");
  return *SharedLimiter::Create(*config);
}

PendingRequest Kept(int n, std::vector<IpAddress>& clients) {
  PendingRequest r;
  r.client = clients[static_cast<size_t>(n) % clients.size()];
  r.settles = true;
  return r;
}

void BM_FeedLines(benchmark::State& state) {
  const bool settled = state.range(0) == 1;
  std::unique_ptr<SharedLimiter> limiter = DefaultLimiter();
  PendingTable pending(kPending);
  FeedSink sink(*limiter, pending);
  std::vector<std::string> lines;
  std::vector<std::string> ids;
  std::vector<IpAddress> clients;
  for (int i = 0; i < kLines; ++i) {
    lines.push_back(Line(i));
    ids.push_back(Id(i));
    clients.push_back(*ParseIpAddress(Client(i)));
  }
  // Full: every slot taken by a request whose line never comes, then the
  // kept requests of the next kWindow lines, each evicting the oldest of
  // those in its stripe (the table evicts per stripe).
  constexpr size_t kWindow = kPending / 2;
  for (int i = 0; i < static_cast<int>(kPending); ++i) {
    pending.Put("lost" + Id(i), Kept(i, clients));
  }
  if (settled) {
    for (size_t i = 0; i < kWindow; ++i) {
      pending.Put(ids[i], Kept(static_cast<int>(i), clients));
    }
  }
  const MonotonicTime now = MonotonicTime::FromSteadyClock();
  int next = 0;
  for (auto _ : state) {
    const size_t i = static_cast<size_t>(next);
    sink.HandleDatagram(lines[i], now);
    if (settled) {
      // The decision that refills the slot, kWindow lines ahead.
      const size_t refill = (i + kWindow) % lines.size();
      pending.Put(ids[refill], Kept(static_cast<int>(refill), clients));
    }
    next = (next + 1) % kLines;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["pending"] = static_cast<double>(pending.counters().entries);
  state.counters["settled"] =
      static_cast<double>(sink.lines(FeedLineResult::kSettled));
  if (settled && sink.lines(FeedLineResult::kSettled) == 0) {
    state.SkipWithError("no line settled");
  }
}
BENCHMARK(BM_FeedLines)->Arg(1)->Arg(0)->ArgNames({"settled"});

// The naive way: strings everywhere.
struct NaiveKept {
  std::string client;
  std::string user;
};

void BM_NaiveFeedLines(benchmark::State& state) {
  std::unique_ptr<SharedLimiter> limiter = DefaultLimiter();
  std::unordered_map<std::string, NaiveKept> pending;
  std::vector<std::string> lines;
  for (int i = 0; i < kLines; ++i) lines.push_back(Line(i));
  for (int i = 0; i < static_cast<int>(kPending); ++i) {
    pending[Id(i)] = NaiveKept{Client(i), ""};
  }
  const MonotonicTime now = MonotonicTime::FromSteadyClock();
  int next = 0;
  for (auto _ : state) {
    const std::string& raw = lines[static_cast<size_t>(next)];
    std::istringstream in(raw.substr(raw.find(": ") + 2));
    std::string ip, dash, user, time, zone, method, target, proto, status,
        bytes, referer, agent, xff, id;
    in >> ip >> dash >> user >> time >> zone >> method >> target >> proto >>
        status >> bytes >> referer >> agent >> xff >> id;
    id = id.substr(1, id.size() - 2);
    auto it = pending.find(id);
    if (it != pending.end()) {
      Request request;
      request.method = method.substr(1);
      request.target = target;
      const absl::StatusOr<IpAddress> client =
          ParseIpAddress(it->second.client);
      request.client = *client;
      Completion completion;
      completion.status = std::stoi(status);
      completion.body_bytes = std::stoll(bytes);
      limiter->Settle(request, completion, now);
      pending.erase(it);
      const int refill = (next + static_cast<int>(kPending)) % kLines;
      pending[Id(refill)] = NaiveKept{Client(refill), ""};
    }
    next = (next + 1) % kLines;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NaiveFeedLines);

void BM_FeedSocket(benchmark::State& state) {
  const bool udp = state.range(0) == 1;
  std::unique_ptr<SharedLimiter> limiter = DefaultLimiter();
  PendingTable pending(kPending);
  FeedSink sink(*limiter, pending);
  // Under $TMPDIR as other tools' scratch is, so a machine whose /tmp is
  // small, shared or read-only can point the run elsewhere.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir =
      std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") +
      "/mxlimit-feed-bench-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    state.SkipWithError("mkdtemp");
    return;
  }
  const std::string path = dir + "/feed.sock";
  // A long $TMPDIR could not hold the socket: sun_path is ~108 bytes.
  if (!udp && path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    rmdir(dir.c_str());
    state.SkipWithError("$TMPDIR too long for a unix socket path");
    return;
  }
  const FeedAddress at =
      *ParseFeedAddress(udp ? std::string("udp:127.0.0.1:0") : "unix:" + path);
  std::unique_ptr<FeedReceiver> feed = *FeedReceiver::Start({&at, 1}, sink);
  std::vector<std::string> lines;
  std::vector<IpAddress> clients;
  for (int i = 0; i < kLines; ++i) {
    lines.push_back(Line(i));
    clients.push_back(*ParseIpAddress(Client(i)));
  }
  sockaddr_storage to{};
  socklen_t to_len = 0;
  if (udp) {
    auto* in = reinterpret_cast<sockaddr_in*>(&to);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::string& bound = feed->bound()[0];
    in->sin_port = htons(
        static_cast<uint16_t>(std::stoi(bound.substr(bound.rfind(':') + 1))));
    to_len = sizeof(sockaddr_in);
  } else {
    auto* un = reinterpret_cast<sockaddr_un*>(&to);
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, path.data(), path.size());
    to_len = sizeof(sockaddr_un);
  }
  const int fd = socket(udp ? AF_INET : AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int next = 0;
  uint64_t sent = 0;
  const int64_t process_start = CpuNanos(CLOCK_PROCESS_CPUTIME_ID);
  const int64_t sender_start = CpuNanos(CLOCK_THREAD_CPUTIME_ID);
  for (auto _ : state) {
    // Kept as the sidecar keeps it, then its line sent. A unix sender waits
    // for room; a UDP one does not, and what the kernel drops is counted.
    pending.Put(Id(next), Kept(next, clients));
    const std::string& line = lines[static_cast<size_t>(next)];
    (void)sendto(fd, line.data(), line.size(), 0,
                 reinterpret_cast<const sockaddr*>(&to), to_len);
    ++sent;
    next = (next + 1) % kLines;
  }
  // Everything sent has been read or dropped.
  while (feed->datagrams() + feed->dropped() < sent) std::this_thread::yield();
  const int64_t others = (CpuNanos(CLOCK_PROCESS_CPUTIME_ID) - process_start) -
                         (CpuNanos(CLOCK_THREAD_CPUTIME_ID) - sender_start);
  state.SetItemsProcessed(state.iterations());
  state.counters["feed_lines_per_cpu_s"] =
      others > 0 ? static_cast<double>(feed->datagrams()) * 1e9 /
                       static_cast<double>(others)
                 : 0.0;
  state.counters["settled"] =
      static_cast<double>(sink.lines(FeedLineResult::kSettled));
  state.counters["dropped"] = static_cast<double>(feed->dropped());
  close(fd);
  feed.reset();
  rmdir(dir.c_str());
}
BENCHMARK(BM_FeedSocket)->Arg(0)->Arg(1)->ArgNames({"udp"})->UseRealTime();

}  // namespace
}  // namespace mxlimit::daemon
