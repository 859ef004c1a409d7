// http_gateway: mxlimit in front of a stub Matrix homeserver, over HTTP.
//
// A small cpp-httplib server bound to 127.0.0.1 that does, per request, what a
// homeserver embedding mxlimit does: find the client address (the socket
// peer, or X-Forwarded-For when the peer is a trusted proxy), authenticate the
// user from `Authorization: Bearer`, ask a ShardedLimiter, and either answer
// 429 M_LIMIT_EXCEEDED with `Retry-After` or pass the request on to the
// (stub) Matrix handler, which answers 200 `{}`.
//
//   http_gateway [--port N] [--config FILE] [--token TOKEN=@user:server]...
//                [--trusted-proxy CIDR]... [--shards N]
//
//   --port 0 binds an ephemeral port. Either way the bound port is printed on
//   stdout as "port=N" once the server accepts connections.
//
// GET /_mxlimit/metrics serves the limiter's counters in Prometheus format
// (not rate limited: it is the operator's endpoint, not a Matrix one).
#include <httplib.h>

#include <charconv>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "mxlimit/config.h"
#include "mxlimit/ip.h"
#include "mxlimit/matrix_response.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/stats.h"

namespace {

struct Options {
  int port = 8008;
  std::string config_path;
  // Access token -> Matrix user ID. A real server looks tokens up in its
  // database; the map stands in for it.
  absl::flat_hash_map<std::string, std::string> tokens;
  // Peers whose X-Forwarded-For is believed.
  std::vector<mxlimit::Cidr> trusted_proxies;
  size_t shards = 0;
};

constexpr std::string_view kUsage =
    "usage: http_gateway [--port N] [--config FILE] "
    "[--token TOKEN=@user:server]... [--trusted-proxy CIDR]... [--shards N]\n";

// Plain decimal only: CLI11's own integer conversion would also take "0x50",
// "+80" or " 80", and read "010" as octal.
bool ParseNumber(std::string_view text, size_t max, size_t& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && out <= max;
}

// Adds `--name VALUE`: one value per use, any number of uses, each handed to
// `apply` in order (a later --port wins; every --token adds one).
void AddRepeatable(CLI::App& app, const std::string& name,
                   std::function<void(const std::string&)> apply) {
  app.add_option_function<std::vector<std::string>>(
         name,
         [name, apply](const std::vector<std::string>& values) {
           for (const std::string& v : values) apply(v);
         })
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// Returns an error message, or "" when the arguments are fine.
std::string ParseArgs(int argc, char** argv, Options& o) {
  CLI::App app("mxlimit in front of a stub Matrix homeserver", "http_gateway");
  app.set_help_flag();  // --help is a usage error, as any unknown flag
  auto fail = [](const std::string& flag, const std::string& what) {
    throw CLI::ValidationError(flag, what);
  };
  AddRepeatable(app, "--port", [&](const std::string& v) {
    size_t n = 0;
    if (!ParseNumber(v, 65535, n)) fail("--port", "expected 0 to 65535");
    o.port = static_cast<int>(n);
  });
  AddRepeatable(app, "--config",
                [&](const std::string& v) { o.config_path = v; });
  AddRepeatable(app, "--token", [&](const std::string& v) {
    const size_t eq = v.find('=');
    if (eq == 0 || eq == std::string::npos) {
      fail("--token", "expected TOKEN=@user:server");
    }
    o.tokens[v.substr(0, eq)] = v.substr(eq + 1);
  });
  AddRepeatable(app, "--trusted-proxy", [&](const std::string& v) {
    absl::StatusOr<mxlimit::Cidr> net = mxlimit::ParseCidr(v);
    if (!net.ok()) fail("--trusted-proxy", net.status().ToString());
    o.trusted_proxies.push_back(*net);
  });
  AddRepeatable(app, "--shards", [&](const std::string& v) {
    size_t n = 0;
    if (!ParseNumber(v, mxlimit::ShardedLimiter::kMaxShards, n)) {
      fail("--shards", "expected a number");
    }
    o.shards = n;
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

// The client address: the socket peer, or, when the peer is a trusted proxy,
// the client that X-Forwarded-For names (read from the right, ports dropped;
// see mxlimit::ClientAddressFromForwardedFor).
bool ClientAddress(const Options& o, const httplib::Request& req,
                   mxlimit::IpAddress& out) {
  absl::StatusOr<mxlimit::IpAddress> peer =
      mxlimit::ParseIpAddress(req.remote_addr);
  if (!peer.ok()) return false;
  out = *peer;
  if (!req.has_header("X-Forwarded-For")) return true;
  // Every X-Forwarded-For header, in order, is one comma-separated list.
  const auto [first, last] = req.headers.equal_range("X-Forwarded-For");
  const std::string chain = absl::StrJoin(
      first, last, ",",
      [](std::string* out, const auto& header) { out->append(header.second); });
  out = mxlimit::ClientAddressFromForwardedFor(*peer, chain, o.trusted_proxies);
  return true;
}

void JsonError(httplib::Response& res, int status, std::string_view errcode,
               std::string_view error) {
  res.status = status;
  res.set_content(std::string(R"({"errcode":")") + std::string(errcode) +
                      R"(","error":")" + std::string(error) + R"("})",
                  "application/json");
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (std::string error = ParseArgs(argc, argv, options); !error.empty()) {
    std::fprintf(stderr, "http_gateway: %s\n%s", error.c_str(), kUsage.data());
    return 2;
  }
  mxlimit::LimiterConfig config;
  if (!options.config_path.empty()) {
    absl::StatusOr<mxlimit::LimiterConfig> loaded =
        mxlimit::LoadConfigFile(options.config_path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "http_gateway: %s\n",
                   std::string(loaded.status().message()).c_str());
      return 1;
    }
    config = *std::move(loaded);
  }
  absl::StatusOr<std::unique_ptr<mxlimit::ShardedLimiter>> created =
      mxlimit::ShardedLimiter::Create(config, options.shards);
  if (!created.ok()) {
    std::fprintf(stderr, "http_gateway: %s\n",
                 created.status().ToString().c_str());
    return 1;
  }
  // Shared by every server thread: ShardedLimiter does its own locking.
  mxlimit::ShardedLimiter& limiter = **created;

  httplib::Server server;
  server.Get("/_mxlimit/metrics",
             [&](const httplib::Request&, httplib::Response& res) {
               res.set_content(mxlimit::FormatPrometheus(limiter.Stats()),
                               "text/plain; version=0.0.4");
             });
  // Every Matrix request passes through here before its handler.
  server.set_pre_routing_handler([&](const httplib::Request& req,
                                     httplib::Response& res) {
    using Result = httplib::Server::HandlerResponse;
    if (req.path == "/_mxlimit/metrics") return Result::Unhandled;
    mxlimit::Request request;
    request.method = req.method;
    request.target = req.target;  // raw, still percent-encoded
    if (!ClientAddress(options, req, request.client)) {
      JsonError(res, 400, "M_UNKNOWN", "Unknown client address");
      return Result::Handled;
    }
    std::string auth = req.get_header_value("Authorization");
    if (!auth.empty()) {
      constexpr std::string_view kBearer = "Bearer ";
      auto user = auth.rfind(kBearer, 0) == 0
                      ? options.tokens.find(auth.substr(kBearer.size()))
                      : options.tokens.end();
      if (user == options.tokens.end()) {
        JsonError(res, 401, "M_UNKNOWN_TOKEN", "Unknown access token");
        return Result::Handled;
      }
      request.user_id = user->second;
    }
    const mxlimit::Decision d = limiter.Check(request);
    if (d.allowed) return Result::Unhandled;
    res.status = 429;
    const std::string retry = mxlimit::RetryAfterValue(d.retry_after, d.never);
    if (!retry.empty()) res.set_header("Retry-After", retry);
    res.set_content(mxlimit::LimitExceededBody(d.retry_after, d.never),
                    "application/json");
    return Result::Handled;
  });
  // The stub homeserver: every route answers an empty JSON object.
  auto stub = [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  };
  server.Get(".*", stub);
  server.Post(".*", stub);
  server.Put(".*", stub);
  server.Delete(".*", stub);
  server.Patch(".*", stub);

  // Loopback only: this is an example, not a server to expose.
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port("127.0.0.1");
  } else if (!server.bind_to_port("127.0.0.1", port)) {
    port = -1;
  }
  if (port < 0) {
    std::fprintf(stderr, "http_gateway: cannot bind 127.0.0.1:%d\n",
                 options.port);
    return 1;
  }
  std::printf("port=%d\n", port);
  std::fflush(stdout);
  return server.listen_after_bind() ? 0 : 1;
}
