#include "src/daemon/flags.h"

#include <arpa/inet.h>

#include <charconv>
#include <functional>

#include "CLI/CLI.hpp"
#include "mxlimit/options.h"
#include "src/daemon/admin_server.h"
#include "src/daemon/feed_receiver.h"

namespace mxlimit::daemon {

const std::string_view kUsage = R"(usage: mxlimitd --config FILE [options]

mxlimit as a sidecar for a reverse proxy: answers nginx auth_request and
Caddy/Traefik/Envoy forward-auth subrequests with the limiter's decision.

  --listen HOST:PORT        address to serve on (default 127.0.0.1:8089;
                            numeric only, IPv6 as [::1]:8089; port 0 picks
                            one). Once serving, prints "listening HOST:PORT"
  --config FILE             the policy file (YAML, see docs/policies.md);
                            SIGHUP reloads it, keeping the old policies if
                            the new file has errors
  --secret-file FILE        the token-hash key, created (mode 0600) at first
                            start (default: mxlimitd.secret beside --config)
  --store URL               share buckets with every process using this
                            store: redis://HOST:PORT[/DB],
                            redis://[USER]:PASSWORD@HOST:PORT[/DB] or
                            unix:///PATH[?db=DB]; sets store.url over the
                            config's (docs/shared-state.md). A store that
                            cannot be reached at start only means local
                            decisions until it can
  --store-secret-file FILE  the store key secret (at least 16 bytes; one
                            trailing newline dropped), the same on every
                            process; sets store.key_secret over the config's
  --trusted-proxy CIDR      a peer whose X-Forwarded-For (and, from nginx,
                            X-Real-IP) is believed (repeatable; default none:
                            the client is the socket peer)
  --user-key token-hash     the user is @t<keyed hash of the token>:mxlimit
                            (default): one budget per access token
  --user-key whoami=URL     the user is whoever GET URL/_matrix/client/v3/
                            account/whoami names; unknown tokens use the
                            token hash until answered (never waits)
  --token-cache N           whoami answers kept (default 100000)
  --token-ttl SECONDS       how long a whoami answer is kept (default 300)
  --whoami-timeout MS       deadline of one whoami request (default 2000)
  --appservice-registration FILE
                            an appservice registration (repeatable): its
                            as_token's requests are exempt; with ?user_id=
                            too, unless `rate_limited` is true (the default)
  --threads N               worker threads (default 2)
  --max-connections N       open connections in all (default 1024); one more
                            is answered 503
  --max-held N              decision answers held at once for policies with
                            on_limit: delay (default 10000); past it they
                            deny at once; 0: never hold
  --feed unix:PATH          the proxy's access log, streamed as datagrams
  --feed udp:127.0.0.1:PORT (repeatable): each line ends the request its
                            id names, releasing its in-flight leases and
                            charging policies charged on the response. A
                            unix socket is created with mode 0660; UDP is
                            loopback only. Once bound, prints "feed ADDRESS"
                            (docs/mxlimitd.md, "The completion feed")
  --feed-pending N          admitted requests kept for their completion
                            (default 16384); past it the oldest is dropped
                            and its leases end by their lease time
  --admin-listen unix:PATH  the admin API (tiers at runtime, bucket resets;
  --admin-listen 127.0.0.1:PORT
                            docs/mxlimitd.md, "Operations") on its own
                            listener: a unix socket created with mode 0600,
                            or a loopback port. Never on --listen. Once
                            bound, prints "admin ADDRESS"
  --admin-token-file FILE   the admin API's bearer token (at least 16
                            printable bytes; one trailing newline dropped);
                            required with --admin-listen
  --state-dir DIR           keep state across restarts (created 0700 when
                            missing): the runtime tier assignments, written
                            on every change, and the buckets, written at
                            SIGTERM and read back at start (docs/mxlimitd.md,
                            "State across restarts")
  --snapshot-interval SECONDS
                            with --state-dir, also write the buckets this
                            often, so a crash loses at most that much
                            (default 0: at SIGTERM only)
  --version                 print the version and exit
  --help                    print this and exit

Endpoints: /_mxlimit/auth_request (nginx: 204 | 403 + Retry-After,
X-Mxlimit-Body, X-Mxlimit-Policy), /_mxlimit/forward_auth (Caddy, Traefik:
200 | 429 + Retry-After + Matrix body; Envoy ext_authz: the same at
/_mxlimit/forward_auth<original target>, with the original method),
/_mxlimit/metrics, /_mxlimit/health; on --admin-listen alone,
/_mxlimit/admin/v1/tiers[/users/ID|/networks/CIDR] and
/_mxlimit/admin/v1/reset.
SIGTERM drains requests under way (and, with --state-dir, saves the
buckets) and exits 0. See docs/deploy-nginx.md and
docs/deploy-caddy.md.
)";

namespace {

// Plain decimal only: CLI11's integer conversion would also take "0x50".
bool ParseNumber(std::string_view text, size_t min, size_t max, size_t& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end && out >= min &&
         out <= max;
}

void AddRepeatable(CLI::App& app, const std::string& name,
                   const std::function<void(const std::string&)>& apply) {
  app.add_option_function<std::vector<std::string>>(
         name,
         [apply](const std::vector<std::string>& values) {
           for (const std::string& v : values) apply(v);
         })
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace

bool ParseListenAddress(std::string_view text, std::string& host,
                        uint16_t& port) {
  std::string_view h;
  std::string_view p;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find("]:");
    if (close == std::string_view::npos) return false;
    h = text.substr(1, close - 1);
    p = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return false;
    h = text.substr(0, colon);
    p = text.substr(colon + 1);
    if (h.find(':') != std::string_view::npos) return false;  // IPv6 needs []
  }
  size_t n = 0;
  if (!ParseNumber(p, 0, 65535, n)) return false;
  const std::string candidate(h);
  unsigned char buf[16];
  if (inet_pton(AF_INET, candidate.c_str(), buf) != 1 &&
      inet_pton(AF_INET6, candidate.c_str(), buf) != 1) {
    return false;
  }
  host = candidate;
  port = static_cast<uint16_t>(n);
  return true;
}

std::string ParseFlags(int argc, char** argv, Flags& o) {
  CLI::App app("mxlimitd", "mxlimitd");
  app.set_help_flag();  // printed by main from kUsage
  app.add_flag("--help,-h", o.help);
  app.add_flag("--version", o.version);
  auto fail = [](const std::string& flag, const std::string& what) {
    throw CLI::ValidationError(flag, what);
  };
  auto number = [&](const std::string& flag, size_t min, size_t max,
                    const std::string& v) {
    size_t n = 0;
    if (!ParseNumber(v, min, max, n)) {
      fail(flag, "expected a number from " + std::to_string(min) + " to " +
                     std::to_string(max));
    }
    return n;
  };
  AddRepeatable(app, "--listen", [&](const std::string& v) {
    if (!ParseListenAddress(v, o.listen_host, o.listen_port)) {
      fail("--listen",
           "expected HOST:PORT with a numeric host, such as "
           "127.0.0.1:8089 or [::1]:8089");
    }
  });
  AddRepeatable(app, "--config",
                [&](const std::string& v) { o.config_path = v; });
  AddRepeatable(app, "--secret-file",
                [&](const std::string& v) { o.secret_file = v; });
  AddRepeatable(app, "--store", [&](const std::string& v) {
    if (std::string problem = StoreUrlProblem(v); !problem.empty()) {
      fail("--store", problem);
    }
    o.store_url = v;
  });
  AddRepeatable(app, "--store-secret-file",
                [&](const std::string& v) { o.store_secret_file = v; });
  AddRepeatable(app, "--trusted-proxy", [&](const std::string& v) {
    absl::StatusOr<Cidr> net = ParseCidr(v);
    if (!net.ok()) fail("--trusted-proxy", std::string(net.status().message()));
    o.trusted_proxies.push_back(*net);
  });
  AddRepeatable(app, "--user-key", [&](const std::string& v) {
    if (v == "token-hash") {
      o.whoami_url.clear();
    } else if (v.rfind("whoami=", 0) == 0 &&
               (v.rfind("whoami=http://", 0) == 0 ||
                v.rfind("whoami=https://", 0) == 0)) {
      o.whoami_url = v.substr(7);
      while (!o.whoami_url.empty() && o.whoami_url.back() == '/') {
        o.whoami_url.pop_back();
      }
    } else {
      fail("--user-key", "expected token-hash or whoami=http(s)://HOST[:PORT]");
    }
  });
  AddRepeatable(app, "--token-cache", [&](const std::string& v) {
    o.token_cache = number("--token-cache", 0, 10'000'000, v);
  });
  AddRepeatable(app, "--token-ttl", [&](const std::string& v) {
    o.token_ttl = std::chrono::seconds(number("--token-ttl", 1, 86'400, v));
  });
  AddRepeatable(app, "--whoami-timeout", [&](const std::string& v) {
    o.whoami_timeout =
        std::chrono::milliseconds(number("--whoami-timeout", 1, 60'000, v));
  });
  AddRepeatable(app, "--appservice-registration", [&](const std::string& v) {
    o.appservice_registrations.push_back(v);
  });
  AddRepeatable(app, "--threads", [&](const std::string& v) {
    o.threads = static_cast<int>(number("--threads", 1, 256, v));
  });
  AddRepeatable(app, "--max-connections", [&](const std::string& v) {
    o.max_connections = number("--max-connections", 1, 1'000'000, v);
  });
  AddRepeatable(app, "--max-held", [&](const std::string& v) {
    o.max_held = number("--max-held", 0, 1'000'000, v);
  });
  AddRepeatable(app, "--feed", [&](const std::string& v) {
    absl::StatusOr<FeedAddress> a = ParseFeedAddress(v);
    if (!a.ok()) fail("--feed", std::string(a.status().message()));
    o.feeds.push_back(v);
  });
  AddRepeatable(app, "--feed-pending", [&](const std::string& v) {
    o.feed_pending = number("--feed-pending", 1, 10'000'000, v);
  });
  AddRepeatable(app, "--admin-listen", [&](const std::string& v) {
    absl::StatusOr<AdminListenAddress> a = ParseAdminListen(v);
    if (!a.ok()) fail("--admin-listen", std::string(a.status().message()));
    o.admin_listen = v;
  });
  AddRepeatable(app, "--admin-token-file",
                [&](const std::string& v) { o.admin_token_file = v; });
  AddRepeatable(app, "--state-dir",
                [&](const std::string& v) { o.state_dir = v; });
  AddRepeatable(app, "--snapshot-interval", [&](const std::string& v) {
    o.snapshot_interval =
        std::chrono::seconds(number("--snapshot-interval", 0, 86'400, v));
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  if (o.help || o.version) return "";
  if (o.config_path.empty()) return "--config is required";
  // No token file, no admin API: a listener nobody can authenticate to, or
  // a token nothing serves, is a mistake either way.
  if (o.admin_listen.empty() != o.admin_token_file.empty()) {
    return "--admin-listen and --admin-token-file go together";
  }
  if (o.snapshot_interval.count() > 0 && o.state_dir.empty()) {
    return "--snapshot-interval needs --state-dir";
  }
  if (o.max_connections < static_cast<size_t>(o.threads)) {
    return "--max-connections must be at least --threads";
  }
  return "";
}

}  // namespace mxlimit::daemon
