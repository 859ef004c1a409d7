// mxlimitd_load: a closed-loop (or paced) load generator for mxlimitd's
// decision endpoints, for bench/mxlimitd/run. Each connection is a blocking
// keepalive socket on its own thread, sending the subrequest a proxy would
// send, with a fresh message target each time and a token and client address
// drawn from fixed pools (so the pool sizes decide how many distinct users
// and addresses the daemon sees). `--endpoint matrix` sends the client's
// own request instead (a message send, the client address as
// X-Forwarded-For), to a proxy in front of the daemon.
//
//   mxlimitd_load --port P [--endpoint forward_auth|auth_request|matrix]
//                 [--connections 4] [--seconds 5] [--rate 0 (unpaced)]
//                 [--tokens 1000] [--clients 1000] [--sequential]
//
// Prints one line of `key=value` figures: requests, seconds, rps, allowed,
// denied, other, and the client-side latency p50/p90/p99/max in microseconds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int port = 0;
  std::string endpoint = "forward_auth";
  int connections = 4;
  double seconds = 5;
  double rate = 0;  // requests/s in all; 0: as fast as answers come
  long tokens = 1000;
  long clients = 1000;
  // Tokens and clients in order (request n of the run uses token and client
  // n mod pool) instead of at random: N requests show N distinct ones.
  bool sequential = false;
};

struct Result {
  long allowed = 0;
  long denied = 0;
  long other = 0;
  std::vector<uint32_t> latency_us;
};

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Reads one response; returns its status (0 on a closed connection).
// `closes`: the response says the server closes the connection after it
// (nginx does after `keepalive_requests`).
int ReadResponse(int fd, std::string& buf, bool& closes) {
  char chunk[8192];
  while (true) {
    const size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t length = 0;
      const size_t cl = buf.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) {
        length = std::strtoul(buf.c_str() + cl + 16, nullptr, 10);
      }
      if (buf.size() >= end + 4 + length) {
        closes = std::string_view(buf.data(), end).find("Connection: close") !=
                 std::string_view::npos;
        const int status = std::atoi(buf.c_str() + 9);
        buf.erase(0, end + 4 + length);
        return status;
      }
    }
    const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return 0;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

void Run(const Options& o, int index, Clock::time_point start,
         Clock::time_point stop, Result& out) {
  int fd = Connect(o.port);
  const bool nginx = o.endpoint == "auth_request";
  const bool matrix = o.endpoint == "matrix";
  std::string buf;
  std::string request;
  request.reserve(512);
  uint64_t seq = static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ULL;
  const double interval_s =
      o.rate > 0 ? o.connections / o.rate : 0;  // per connection
  Clock::time_point next = start;
  out.latency_us.reserve(1 << 20);
  for (long k = 0;; ++k) {
    if (interval_s > 0) {
      next = start + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(interval_s * k));
      std::this_thread::sleep_until(next);
    }
    const Clock::time_point sent = Clock::now();
    if (sent >= stop) break;
    seq = seq * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t n =
        static_cast<uint64_t>(k) * static_cast<uint64_t>(o.connections) +
        static_cast<uint64_t>(index);
    const uint64_t token =
        (o.sequential ? n : seq >> 20) % static_cast<uint64_t>(o.tokens);
    const uint64_t client = (o.sequential ? n : (seq >> 40) ^ (seq >> 7)) %
                            static_cast<uint64_t>(o.clients);
    if (matrix) {
      request = "PUT ";
    } else {
      request = "GET /_mxlimit/";
      request += o.endpoint;
      request += " HTTP/1.1\r\nHost: mxlimitd\r\n";
      request += nginx ? "X-Original-Method: PUT\r\nX-Original-URI: "
                       : "X-Forwarded-Method: PUT\r\nX-Forwarded-Uri: ";
    }
    request += "/_matrix/client/v3/rooms/!r" + std::to_string(token % 97) +
               ":example.org/send/m.room.message/t" + std::to_string(k);
    if (matrix) request += " HTTP/1.1\r\nHost: matrix\r\nContent-Length: 0";
    request += "\r\nX-Forwarded-For: 10." + std::to_string(client >> 16 & 255) +
               "." + std::to_string(client >> 8 & 255) + "." +
               std::to_string(client & 255);
    request += "\r\nAuthorization: Bearer syt_load_" + std::to_string(token);
    request += "\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      break;
    }
    bool server_closes = false;
    const int status = ReadResponse(fd, buf, server_closes);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        Clock::now() - sent)
                        .count();
    out.latency_us.push_back(static_cast<uint32_t>(us));
    if (status == 200 || status == 204) {
      ++out.allowed;
    } else if (status == 403 || status == 429) {
      ++out.denied;
    } else {
      ++out.other;
      if (status == 0) break;
    }
    if (server_closes) {
      close(fd);
      buf.clear();
      fd = Connect(o.port);
    }
  }
  close(fd);
}

bool Flag(int argc, char** argv, int& i, const char* name, std::string& v) {
  if (std::strcmp(argv[i], name) != 0 || i + 1 >= argc) return false;
  v = argv[++i];
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (Flag(argc, argv, i, "--port", v))
      o.port = std::atoi(v.c_str());
    else if (Flag(argc, argv, i, "--endpoint", v))
      o.endpoint = v;
    else if (Flag(argc, argv, i, "--connections", v))
      o.connections = std::atoi(v.c_str());
    else if (Flag(argc, argv, i, "--seconds", v))
      o.seconds = std::atof(v.c_str());
    else if (Flag(argc, argv, i, "--rate", v))
      o.rate = std::atof(v.c_str());
    else if (Flag(argc, argv, i, "--tokens", v))
      o.tokens = std::atol(v.c_str());
    else if (Flag(argc, argv, i, "--clients", v))
      o.clients = std::atol(v.c_str());
    else if (std::strcmp(argv[i], "--sequential") == 0)
      o.sequential = true;
    else {
      std::fprintf(stderr, "mxlimitd_load: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (o.port <= 0 || o.connections < 1 || o.tokens < 1 || o.clients < 1) {
    std::fprintf(stderr, "mxlimitd_load: --port is required\n");
    return 2;
  }
  std::vector<Result> results(static_cast<size_t>(o.connections));
  std::vector<std::thread> threads;
  const Clock::time_point start = Clock::now();
  const Clock::time_point stop =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(o.seconds));
  for (int c = 0; c < o.connections; ++c) {
    threads.emplace_back(Run, std::cref(o), c, start, stop,
                         std::ref(results[static_cast<size_t>(c)]));
  }
  for (std::thread& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - start).count();
  Result total;
  for (Result& r : results) {
    total.allowed += r.allowed;
    total.denied += r.denied;
    total.other += r.other;
    total.latency_us.insert(total.latency_us.end(), r.latency_us.begin(),
                            r.latency_us.end());
  }
  std::sort(total.latency_us.begin(), total.latency_us.end());
  auto pct = [&](double p) -> unsigned {
    if (total.latency_us.empty()) return 0;
    return total.latency_us[static_cast<size_t>(
        p * static_cast<double>(total.latency_us.size() - 1))];
  };
  const long requests = total.allowed + total.denied + total.other;
  std::printf(
      "requests=%ld seconds=%.2f rps=%.0f allowed=%ld denied=%ld other=%ld "
      "p50_us=%u p90_us=%u p99_us=%u max_us=%u\n",
      requests, elapsed, static_cast<double>(requests) / elapsed, total.allowed,
      total.denied, total.other, pct(0.5), pct(0.9), pct(0.99),
      total.latency_us.empty() ? 0u : total.latency_us.back());
  return total.other > 0 ? 1 : 0;
}
