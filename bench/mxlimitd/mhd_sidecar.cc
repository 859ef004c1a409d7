// mxlimitd_mhd: mxlimitd's Sidecar (the same handler, set up from the same
// flags and policy file) served by libmicrohttpd instead of mxlimitd's own
// server, so that bench/mxlimitd/run can measure the two side by side
// (issue #31: the HTTP server, decided by measurement; docs/design.md has
// the result). Not a product: it takes mxlimitd's flags, prints
// "listening HOST:PORT" as mxlimitd does, and stops on SIGTERM or SIGINT.
//
// What the Sidecar gets is what mxlimitd's server gives it: the method, the
// raw request target (libmicrohttpd unescapes the path and splits off the
// query, so the target is copied as it arrived, from the URI log callback),
// the header fields, and the socket peer. The answer is the Sidecar's status,
// Content-Type, headers and body. libmicrohttpd's own checks stand in for
// mxlimitd's server-level ones (strict head parsing, 503 at the connection
// bound): the handler, not the server, is the same.
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "mxlimit/config.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/ip.h"
#include "mxlimit/shared_limiter.h"
#include "src/daemon/appservice.h"
#include "src/daemon/daemon_metrics.h"
#include "src/daemon/flags.h"
#include "src/daemon/sidecar.h"
#include "src/daemon/store_flags.h"
#include "src/daemon/token_key.h"
#include "src/daemon/whoami_cache.h"
#include "src/http/request_head.h"
#include "src/http/response.h"
#include "src/http/server.h"

namespace {

using mxlimit::http::HttpRequestHead;
using mxlimit::http::HttpResponse;

// mxlimitd's ServerOptions defaults, in libmicrohttpd's terms. It has one
// inactivity timeout where mxlimitd has two (10 s for a head under way,
// 120 s for an idle keepalive): the shorter one, which is what bounds a
// slow client.
constexpr unsigned kTimeoutSeconds = 10;
// The per-connection pool holds the read buffer, so it must take
// mxlimitd's 64 KiB head bound with room for libmicrohttpd's own use.
constexpr size_t kConnectionMemory = size_t{96} * 1024;

// Per TCP connection, made when libmicrohttpd accepts it and reused by every
// request on it: the raw target of the request under way.
struct Connection {
  std::string target;
  bool handled = false;  // the access handler has seen this request
  int64_t discarded = 0;
};

struct Server {
  mxlimit::daemon::Sidecar* sidecar = nullptr;
};

mxlimit::IpAddress PeerAddress(const sockaddr* sa) {
  mxlimit::IpAddress ip;
  if (sa == nullptr) return ip;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ip.bytes[10] = 0xFF;
    ip.bytes[11] = 0xFF;
    std::memcpy(ip.bytes.data() + 12, &in->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    std::memcpy(ip.bytes.data(), &in6->sin6_addr, 16);
  }
  return ip;
}

void NotifyConnection(void*, MHD_Connection*, void** socket_context,
                      MHD_ConnectionNotificationCode code) {
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    auto* c = new Connection;
    c->target.reserve(256);
    *socket_context = c;
  } else {
    delete static_cast<Connection*>(*socket_context);
    *socket_context = nullptr;
  }
}

Connection* ConnectionOf(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info == nullptr ? nullptr
                         : static_cast<Connection*>(info->socket_context);
}

// Called with the target as it arrived, before libmicrohttpd splits and
// unescapes it in place; what it returns is the request's context.
void* UriLog(void*, const char* uri, MHD_Connection* connection) {
  Connection* c = ConnectionOf(connection);
  if (c == nullptr) return nullptr;
  c->target.assign(uri);
  c->handled = false;
  c->discarded = 0;
  return c;
}

MHD_Result AddField(void* cls, MHD_ValueKind, const char* key, size_t key_size,
                    const char* value, size_t value_size) {
  auto& head = *static_cast<HttpRequestHead*>(cls);
  if (head.field_count == mxlimit::http::kMaxHeaderFields) return MHD_NO;
  head.fields[head.field_count++] = {std::string_view(key, key_size),
                                     std::string_view(value, value_size)};
  return MHD_YES;
}

// A NUL-terminated copy for libmicrohttpd, which copies it again.
const char* CString(std::string& buffer, std::string_view text) {
  buffer.assign(text);
  return buffer.c_str();
}

MHD_Result Answer(MHD_Connection* connection, const HttpResponse& out) {
  MHD_Response* response = MHD_create_response_from_buffer(
      out.body.size(), const_cast<char*>(out.body.data()),
      MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  thread_local std::string name;
  thread_local std::string value;
  if (!out.content_type.empty()) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            CString(value, out.content_type));
  }
  for (size_t i = 0; i < out.header_count; ++i) {
    MHD_add_response_header(response, CString(name, out.headers[i].name),
                            CString(value, out.headers[i].value));
  }
  const MHD_Result queued = MHD_queue_response(
      connection, static_cast<unsigned>(out.status), response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result Access(void* cls, MHD_Connection* connection, const char*,
                  const char* method, const char* version,
                  const char* /*upload_data*/, size_t* upload_data_size,
                  void** request_context) {
  auto* c = static_cast<Connection*>(*request_context);
  if (c == nullptr) return MHD_NO;
  if (!c->handled) {
    // The first call comes with the head. A response queued before the
    // request (its body, or the lack of one) has been read makes
    // libmicrohttpd close the connection after it, so the answer waits for
    // the next call even when there is no body.
    c->handled = true;
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    c->discarded += static_cast<int64_t>(*upload_data_size);
    *upload_data_size = 0;
    if (c->discarded <= mxlimit::http::kMaxBodyBytes) return MHD_YES;
    HttpResponse too_large;
    too_large.status = 413;
    too_large.content_type = "text/plain; charset=utf-8";
    too_large.body = "mxlimitd: body too large\n";
    return Answer(connection, too_large);
  }

  HttpRequestHead head;
  head.method = method;
  head.target = c->target;
  head.minor_version = std::strcmp(version, MHD_HTTP_VERSION_1_0) == 0 ? 0 : 1;
  MHD_get_connection_values_n(connection, MHD_HEADER_KIND, &AddField, &head);
  const std::string_view length = head.Field("Content-Length");
  if (!length.empty()) {
    int64_t n = 0;
    for (const char d : length) n = n * 10 + (d - '0');
    head.content_length = n;
  }
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const mxlimit::IpAddress peer =
      PeerAddress(info == nullptr ? nullptr : info->client_addr);
  thread_local HttpResponse out;
  out.Reset();
  static_cast<Server*>(cls)->sidecar->Handle(head, peer, out);
  return Answer(connection, out);
}

int Fail(std::string_view what, std::string_view message) {
  std::fprintf(stderr, "mxlimitd_mhd: %.*s: %.*s\n",
               static_cast<int>(what.size()), what.data(),
               static_cast<int>(message.size()), message.data());
  return 1;
}

std::string SecretPath(const mxlimit::daemon::Flags& flags) {
  if (!flags.secret_file.empty()) return flags.secret_file;
  const size_t slash = flags.config_path.rfind('/');
  const std::string dir = slash == std::string::npos
                              ? std::string(".")
                              : flags.config_path.substr(0, slash + 1);
  return dir + (dir.back() == '/' ? "" : "/") + "mxlimitd.secret";
}

}  // namespace

int main(int argc, char** argv) {
  mxlimit::daemon::Flags flags;
  if (std::string error = mxlimit::daemon::ParseFlags(argc, argv, flags);
      !error.empty() || flags.help || flags.version) {
    std::fprintf(stderr, "mxlimitd_mhd: %s\ntakes mxlimitd's flags:\n%s",
                 error.c_str(), mxlimit::daemon::kUsage.data());
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
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
  absl::StatusOr<std::unique_ptr<mxlimit::SharedLimiter>> limiter =
      mxlimit::SharedLimiter::Create(*config);
  if (!limiter.ok()) {
    return Fail("cannot build the limiter",
                mxlimit::internal::FromAbsl(limiter.status().message()));
  }
  absl::StatusOr<mxlimit::internal::SipKey> secret =
      mxlimit::daemon::LoadOrCreateSecret(SecretPath(flags));
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
  std::unique_ptr<mxlimit::daemon::WhoamiCache> whoami;
  if (!flags.whoami_url.empty()) {
    mxlimit::daemon::WhoamiCache::Options options;
    options.homeserver = flags.whoami_url;
    options.capacity = flags.token_cache;
    options.ttl = flags.token_ttl;
    options.deadline = flags.whoami_timeout;
    whoami = std::make_unique<mxlimit::daemon::WhoamiCache>(options, *secret);
    whoami->Start();
  }
  mxlimit::daemon::DaemonMetrics metrics;
  mxlimit::daemon::SidecarOptions sidecar_options;
  sidecar_options.trusted_proxies = flags.trusted_proxies;
  mxlimit::daemon::Sidecar sidecar(**limiter, sidecar_options, *secret,
                                   *appservices, whoami.get(), metrics);
  Server server{&sidecar};

  const bool v6 = flags.listen_host.find(':') != std::string::npos;
  sockaddr_storage address{};
  if (v6) {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(flags.listen_port);
    inet_pton(AF_INET6, flags.listen_host.c_str(), &in6.sin6_addr);
  } else {
    auto& in = reinterpret_cast<sockaddr_in&>(address);
    in.sin_family = AF_INET;
    in.sin_port = htons(flags.listen_port);
    inet_pton(AF_INET, flags.listen_host.c_str(), &in.sin_addr);
  }
  // epoll, one loop per pool thread as mxlimitd has one per worker; TURBO:
  // read and write before asking epoll, and accept from the shared socket
  // without the cross-thread check.
  MHD_Daemon* daemon = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO | MHD_USE_ERROR_LOG |
          (v6 ? MHD_USE_IPv6 : 0),
      flags.listen_port, nullptr, nullptr, &Access, &server,
      MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&address),
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned>(flags.threads),
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(flags.max_connections),
      MHD_OPTION_CONNECTION_TIMEOUT, kTimeoutSeconds,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnectionMemory,
      MHD_OPTION_URI_LOG_CALLBACK, &UriLog, nullptr,
      MHD_OPTION_NOTIFY_CONNECTION, &NotifyConnection, nullptr, MHD_OPTION_END);
  if (daemon == nullptr) return Fail("cannot serve", std::strerror(errno));
  const MHD_DaemonInfo* bound =
      MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  const std::string where =
      (v6 ? "[" + flags.listen_host + "]" : flags.listen_host) + ":" +
      std::to_string(bound != nullptr ? bound->port : flags.listen_port);
  std::printf("listening %s\n", where.c_str());
  std::fflush(stdout);

  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  MHD_stop_daemon(daemon);
  return 0;
}
