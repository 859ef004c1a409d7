// mxlimitd: the limiter as a sidecar for a reverse proxy. See flags.cc for
// the command line, sidecar.h for the endpoints and docs/deploy-nginx.md for
// a deployment.
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mxlimit/config.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/ip.h"
#include "mxlimit/options.h"
#include "mxlimit/shared_limiter.h"
#include "mxlimit/version.h"
#include "src/daemon/admin_api.h"
#include "src/daemon/admin_server.h"
#include "src/daemon/appservice.h"
#include "src/daemon/daemon_metrics.h"
#include "src/daemon/feed_receiver.h"
#include "src/daemon/feed_sink.h"
#include "src/daemon/flags.h"
#include "src/daemon/log.h"
#include "src/daemon/pending_table.h"
#include "src/daemon/sidecar.h"
#include "src/daemon/state_dir.h"
#include "src/daemon/store_flags.h"
#include "src/daemon/store_watch.h"
#include "src/daemon/tier_sync.h"
#include "src/daemon/token_key.h"
#include "src/daemon/whoami_cache.h"
#include "src/http/server.h"

namespace {

using mxlimit::daemon::Log;

std::string SecretPath(const mxlimit::daemon::Flags& flags) {
  if (!flags.secret_file.empty()) return flags.secret_file;
  const size_t slash = flags.config_path.rfind('/');
  const std::string dir = slash == std::string::npos
                              ? std::string(".")
                              : flags.config_path.substr(0, slash + 1);
  return dir + (dir.back() == '/' ? "" : "/") + "mxlimitd.secret";
}

int Fail(std::string_view what, std::string_view message) {
  Log("error", what, {{"error", message}});
  return 1;
}

// Reloads the policy file, with the store flags over it as at the start; the
// limiter keeps its old policies on any error, a changed store section
// included (that needs a restart).
void Reload(const std::string& path,
            const mxlimit::daemon::StoreOverrides& store,
            mxlimit::SharedLimiter& limiter, mxlimit::daemon::Sidecar& sidecar,
            mxlimit::daemon::DaemonMetrics& metrics) {
  absl::StatusOr<mxlimit::LimiterConfig> config = mxlimit::LoadConfigFile(path);
  absl::Status status = config.status();
  if (status.ok()) status = store.Apply(*config);
  if (status.ok()) status = limiter.Reload(*config);
  metrics.CountReload(status.ok());
  if (status.ok()) {
    sidecar.set_response_headers(config->response_headers);
    Log("info", "reloaded", {{"config", path}});
  } else {
    Log("error", "reload refused; the old policies stay",
        {{"config", path}, {"error", std::string(status.message())}});
  }
}

// Trusting every address is a typo or a misunderstanding, never what an
// operator wants: any client could then name any address and escape
// every ip-scope limit. Not refused (a test rig may mean it), but said
// before anything is served.
void WarnIfTrustingEveryAddress(const mxlimit::daemon::Flags& flags) {
  for (const mxlimit::Cidr& net : flags.trusted_proxies) {
    if (net.prefix_len != 0) continue;
    Log("warn",
        "--trusted-proxy covers every address: any client may name any "
        "address in X-Forwarded-For, Forwarded or X-Real-IP and is believed, "
        "so ip-scope limits and exempt.ips do not hold; list only the "
        "proxies' own addresses",
        {{"trusted_proxy", mxlimit::FormatCidr(net)}});
  }
}

// The whoami cache (--user-key whoami=URL), started; null for token-hash
// user keys.
std::unique_ptr<mxlimit::daemon::WhoamiCache> StartWhoami(
    const mxlimit::daemon::Flags& flags,
    const mxlimit::internal::SipKey& secret) {
  if (flags.whoami_url.empty()) return nullptr;
  mxlimit::daemon::WhoamiCache::Options options;
  options.homeserver = flags.whoami_url;
  options.capacity = flags.token_cache;
  options.ttl = flags.token_ttl;
  options.deadline = flags.whoami_timeout;
  auto whoami = std::make_unique<mxlimit::daemon::WhoamiCache>(options, secret);
  whoami->Start();
  return whoami;
}

// The state dir (--state-dir) with what it kept loaded into `limiter`;
// null without the flag.
absl::StatusOr<std::unique_ptr<mxlimit::daemon::StateDir>> OpenStateDir(
    const mxlimit::daemon::Flags& flags, mxlimit::SharedLimiter& limiter) {
  if (flags.state_dir.empty()) {
    return std::unique_ptr<mxlimit::daemon::StateDir>();
  }
  absl::StatusOr<std::unique_ptr<mxlimit::daemon::StateDir>> state =
      mxlimit::daemon::StateDir::Open(flags.state_dir);
  if (state.ok()) (*state)->Load(limiter);
  return state;
}

// With a store, the runtime tier assignments shared through it, read once
// before anything is served; null without one.
absl::StatusOr<std::unique_ptr<mxlimit::daemon::TierSync>> MakeTierSync(
    const mxlimit::LimiterConfig& config, mxlimit::SharedLimiter& limiter) {
  if (config.store.url.empty()) {
    return std::unique_ptr<mxlimit::daemon::TierSync>();
  }
  absl::StatusOr<std::unique_ptr<mxlimit::daemon::TierSync>> sync =
      mxlimit::daemon::TierSync::Create(config.store,
                                        std::chrono::milliseconds(1000));
  if (sync.ok()) (*sync)->Reconcile(limiter, /*force=*/true);
  return sync;
}

// The admin API and its listener (--admin-listen), when asked for.
struct Admin {
  std::unique_ptr<mxlimit::daemon::AdminApi> api;
  std::unique_ptr<mxlimit::daemon::AdminServer> server;
};

absl::Status StartAdmin(const mxlimit::daemon::Flags& flags,
                        mxlimit::SharedLimiter& limiter,
                        const mxlimit::daemon::StateDir* state,
                        mxlimit::daemon::TierSync* shared, Admin& out) {
  if (flags.admin_listen.empty()) return absl::OkStatus();
  absl::StatusOr<mxlimit::daemon::AdminToken> token =
      mxlimit::daemon::AdminToken::Load(flags.admin_token_file);
  if (!token.ok()) return token.status();
  std::function<void()> on_change;
  if (state != nullptr) {
    on_change = [state, &limiter] { (void)state->SaveTiers(limiter); };
  }
  out.api = std::make_unique<mxlimit::daemon::AdminApi>(
      limiter, *token, std::move(on_change), shared);
  absl::StatusOr<std::unique_ptr<mxlimit::daemon::AdminServer>> started =
      mxlimit::daemon::AdminServer::Start(
          *mxlimit::daemon::ParseAdminListen(flags.admin_listen), *out.api);
  if (!started.ok()) return started.status();
  out.server = std::move(*started);
  std::printf("admin %s\n", out.server->bound().c_str());
  return absl::OkStatus();
}

// What the main thread does between signals, once a second when there is
// anything to do: the shared tier assignments reconciled (tier_sync.h), the
// store's state logged when it changes (store_watch.h), and the buckets
// saved every --snapshot-interval.
class Housekeeping {
 public:
  Housekeeping(bool watch_store, const mxlimit::daemon::StateDir* state,
               std::chrono::seconds interval, mxlimit::daemon::TierSync* tiers)
      : watch_store_(watch_store),
        tiers_(tiers),
        state_(interval.count() > 0 ? state : nullptr),
        interval_(interval),
        next_snapshot_(std::chrono::steady_clock::now() + interval) {}

  bool needs_ticks() const {
    return watch_store_ || state_ != nullptr || tiers_ != nullptr;
  }

  void Tick(mxlimit::SharedLimiter& limiter) {
    const auto now = std::chrono::steady_clock::now();
    if (tiers_ != nullptr) tiers_->Reconcile(limiter);
    if (watch_store_) {
      if (std::optional<mxlimit::daemon::StoreWatch::Line> line =
              store_watch_.Observe(limiter.StoreStats(), now)) {
        mxlimit::daemon::LogFields(line->level, line->message, line->fields);
      }
    }
    if (state_ != nullptr && now >= next_snapshot_) {
      (void)state_->SaveBuckets(limiter);
      next_snapshot_ = now + interval_;
    }
  }

 private:
  const bool watch_store_;
  mxlimit::daemon::TierSync* const tiers_;
  const mxlimit::daemon::StateDir* const state_;
  const std::chrono::seconds interval_;
  std::chrono::steady_clock::time_point next_snapshot_;
  mxlimit::daemon::StoreWatch store_watch_;
};

}  // namespace

int main(int argc, char** argv) {
  mxlimit::daemon::Flags flags;
  if (std::string error = mxlimit::daemon::ParseFlags(argc, argv, flags);
      !error.empty()) {
    std::fprintf(stderr, "mxlimitd: %s\n%s", error.c_str(),
                 mxlimit::daemon::kUsage.data());
    return 2;
  }
  if (flags.help) {
    std::fputs(mxlimit::daemon::kUsage.data(), stdout);
    return 0;
  }
  if (flags.version) {
    std::printf("mxlimitd %s\n", std::string(mxlimit::kVersion).c_str());
    return 0;
  }

  // Signals are taken by sigwait below; every thread inherits this mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<mxlimit::LimiterConfig> config =
      mxlimit::LoadConfigFile(flags.config_path);
  if (!config.ok()) {
    return Fail("cannot load the policy file",
                mxlimit::internal::FromAbsl(config.status().message()));
  }
  absl::StatusOr<mxlimit::daemon::StoreOverrides> store =
      mxlimit::daemon::StoreOverrides::FromFlags(flags);
  if (!store.ok()) {
    return Fail("cannot load the store key secret",
                mxlimit::internal::FromAbsl(store.status().message()));
  }
  if (absl::Status applied = store->Apply(*config); !applied.ok()) {
    return Fail("cannot configure the store",
                mxlimit::internal::FromAbsl(applied.message()));
  }
  // Without a store this is exactly a ShardedLimiter. With one, Create does
  // not wait for it: a store that is down only means local decisions until
  // it is up; a URL no store can be made of stops the start here.
  absl::StatusOr<std::unique_ptr<mxlimit::SharedLimiter>> limiter =
      mxlimit::SharedLimiter::Create(*config);
  if (!limiter.ok()) {
    return Fail("cannot build the limiter",
                mxlimit::internal::FromAbsl(limiter.status().message()));
  }
  const std::string secret_path = SecretPath(flags);
  absl::StatusOr<mxlimit::internal::SipKey> secret =
      mxlimit::daemon::LoadOrCreateSecret(secret_path);
  if (!secret.ok()) {
    return Fail("cannot load the token-hash secret",
                mxlimit::internal::FromAbsl(secret.status().message()));
  }
  absl::StatusOr<mxlimit::daemon::AppserviceRegistry> appservices =
      mxlimit::daemon::AppserviceRegistry::Load(flags.appservice_registrations,
                                                *secret);
  if (!appservices.ok()) {
    return Fail("cannot load an appservice registration",
                mxlimit::internal::FromAbsl(appservices.status().message()));
  }
  std::unique_ptr<mxlimit::daemon::WhoamiCache> whoami =
      StartWhoami(flags, *secret);

  // The completion feed is bound before anything is served, so that no
  // decision is kept for a feed that then fails to start.
  std::unique_ptr<mxlimit::daemon::PendingTable> pending;
  std::unique_ptr<mxlimit::daemon::FeedSink> feed_sink;
  std::unique_ptr<mxlimit::daemon::FeedReceiver> feed;
  if (!flags.feeds.empty()) {
    std::vector<mxlimit::daemon::FeedAddress> addresses;
    for (const std::string& text : flags.feeds) {
      addresses.push_back(*mxlimit::daemon::ParseFeedAddress(text));
    }
    pending =
        std::make_unique<mxlimit::daemon::PendingTable>(flags.feed_pending);
    feed_sink =
        std::make_unique<mxlimit::daemon::FeedSink>(**limiter, *pending);
    absl::StatusOr<std::unique_ptr<mxlimit::daemon::FeedReceiver>> started =
        mxlimit::daemon::FeedReceiver::Start(addresses, *feed_sink);
    if (!started.ok()) {
      return Fail("cannot open the feed",
                  mxlimit::internal::FromAbsl(started.status().message()));
    }
    feed = std::move(*started);
    for (const std::string& address : feed->bound()) {
      std::printf("feed %s\n", address.c_str());
    }
  }

  // What the last run kept comes back before anything is decided.
  absl::StatusOr<std::unique_ptr<mxlimit::daemon::StateDir>> state =
      OpenStateDir(flags, **limiter);
  if (!state.ok()) {
    return Fail("cannot use the state dir",
                mxlimit::internal::FromAbsl(state.status().message()));
  }

  // With a store, runtime tiers are the store's, shared by every process
  // on it (tier_sync.h).
  absl::StatusOr<std::unique_ptr<mxlimit::daemon::TierSync>> tier_sync =
      MakeTierSync(*config, **limiter);
  if (!tier_sync.ok()) {
    return Fail("cannot share tiers through the store",
                mxlimit::internal::FromAbsl(tier_sync.status().message()));
  }

  // The admin API is bound before anything is served, like the feed: a
  // token or an address that fails stops the start.
  Admin admin;
  if (absl::Status started =
          StartAdmin(flags, **limiter, state->get(), tier_sync->get(), admin);
      !started.ok()) {
    return Fail("cannot start the admin API",
                mxlimit::internal::FromAbsl(started.message()));
  }

  mxlimit::daemon::DaemonMetrics metrics;
  mxlimit::daemon::SidecarOptions sidecar_options;
  sidecar_options.trusted_proxies = flags.trusted_proxies;
  sidecar_options.max_held = flags.max_held;
  sidecar_options.pending = pending.get();
  sidecar_options.feed_sink = feed_sink.get();
  sidecar_options.feed_receiver = feed.get();
  mxlimit::daemon::Sidecar sidecar(**limiter, sidecar_options, *secret,
                                   *appservices, whoami.get(), metrics);
  sidecar.set_response_headers(config->response_headers);
  mxlimit::http::ServerOptions server_options;
  server_options.host = flags.listen_host;
  server_options.port = flags.listen_port;
  server_options.threads = flags.threads;
  server_options.max_connections = flags.max_connections;
  server_options.max_held_per_worker = flags.max_held;
  absl::StatusOr<std::unique_ptr<mxlimit::http::HttpServer>> server =
      mxlimit::http::HttpServer::Start(server_options, sidecar);
  if (!server.ok())
    return Fail("cannot serve",
                mxlimit::internal::FromAbsl(server.status().message()));
  sidecar.set_server(server->get());
  WarnIfTrustingEveryAddress(flags);

  const bool v6 = flags.listen_host.find(':') != std::string::npos;
  const std::string address =
      (v6 ? "[" + flags.listen_host + "]" : flags.listen_host) + ":" +
      std::to_string((*server)->port());
  std::printf("listening %s\n", address.c_str());
  std::fflush(stdout);
  Log("info", "listening",
      {{"addr", address},
       {"version", mxlimit::kVersion},
       {"config", flags.config_path},
       {"user_key", whoami ? "whoami" : "token-hash"},
       {"store", config->store.url.empty()
                     ? std::string("none")
                     : mxlimit::RedactStoreUrl(config->store.url)},
       {"threads", std::to_string(flags.threads)},
       {"appservices", std::to_string(appservices->size())},
       {"feeds", std::to_string(flags.feeds.size())},
       {"admin", admin.server ? admin.server->bound() : std::string("off")}});

  Housekeeping housekeeping((*limiter)->has_store(), state->get(),
                            flags.snapshot_interval, tier_sync->get());
  const timespec kTick = {1, 0};
  while (true) {
    const int sig = housekeeping.needs_ticks()
                        ? sigtimedwait(&signals, nullptr, &kTick)
                        : sigwaitinfo(&signals, nullptr);
    if (sig < 0) {
      if (errno == EAGAIN) housekeeping.Tick(**limiter);
      continue;
    }
    if (sig == SIGHUP) {
      Reload(flags.config_path, *store, **limiter, sidecar, metrics);
      continue;
    }
    Log("info", "draining", {{"signal", sig == SIGTERM ? "TERM" : "INT"}});
    if (admin.server) admin.server->Stop();
    (*server)->Drain();
    // After the last answer: the snapshot holds every charge made.
    if (*state) (void)(*state)->SaveBuckets(**limiter);
    Log("info", "stopped");
    return 0;
  }
}
