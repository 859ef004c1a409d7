// -----------------------------------------------------------------------------
// File: options.h
// -----------------------------------------------------------------------------
//
// Everything about a `Limiter` that is not a policy: table capacities, address
// prefixes, exemptions. The YAML loader fills these in from `tables:` and
// `exempt:`; embedders can also build them in code.

#ifndef MXLIMIT_OPTIONS_H_
#define MXLIMIT_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "mxlimit/ip.h"
#include "mxlimit/policy.h"
#include "mxlimit/route_options.h"
#include "mxlimit/tiers.h"

namespace mxlimit {

struct TableOptions {
  // Per-IP table: at most this many buckets; the least recently used is
  // evicted to admit a new one.
  size_t ip_capacity = 100'000;
  // Client addresses are masked to these prefixes before keying: one IPv6
  // host usually owns a whole /64, so per-address IPv6 keys would limit
  // nothing.
  int ipv4_prefix = 32;
  int ipv6_prefix = 64;
  // Per-user table capacity.
  size_t user_capacity = 100'000;
  // Per-origin (federation), per-room and per-target-account tables. A
  // ShardedLimiter keeps one table of each for all its shards.
  size_t origin_capacity = 10'000;
  size_t room_capacity = 20'000;
  size_t target_capacity = 20'000;
  // Leases of in-flight limits (`Policy::concurrency`) held at once, over
  // every in-flight policy and bucket. When all are held, taking one ends
  // the lease nearest its expiry first.
  size_t lease_capacity = 10'000;

  // Capacities above this are rejected as absurd (memory is allocated up
  // front).
  static constexpr size_t kMaxCapacity = 100'000'000;
};

struct ExemptOptions {
  // Requests from these networks are neither checked nor charged.
  std::vector<Cidr> ips;
  // Requests by these Matrix user IDs are neither checked nor charged.
  std::vector<std::string> users;
};

// Checks capacities (1 to kMaxCapacity) and prefixes (IPv4 0-32, IPv6
// 0-128). Messages name the field as the YAML file spells it.
absl::Status ValidateTableOptions(const TableOptions& tables);

// Where a `SharedLimiter` (shared_limiter.h) keeps the buckets it shares
// with other processes: the `store:` section. Unused by `Limiter` and
// `ShardedLimiter`. docs/shared-state.md explains every field.
struct StoreOptions {
  // Which clock a shared bucket's time comes from.
  enum class Clock : uint8_t {
    // The store's (Redis `TIME`): one clock for every process and machine.
    kStore,
    // The `now` each call passes: deterministic replays and tests; unsafe
    // across machines whose clocks differ.
    kCaller,
  };

  // `redis://HOST:PORT[/DB]` (with optional `user:password@` before HOST),
  // the same with `rediss://` for TLS, or `unix:///PATH[?db=DB]`. Empty: no
  // store; every policy is local.
  std::string url;
  // TLS for a `rediss://` URL (the `store.tls` section). The server's
  // certificate is always verified, against `ca_file` or, when that is
  // empty, the system's trust store, and must name the URL's host.
  struct Tls {
    // PEM certificates to trust instead of the system's.
    std::string ca_file;
    // A client certificate (PEM chain) and its key, for a Redis that sets
    // `tls-auth-clients yes`: both or neither.
    std::string cert_file;
    std::string key_file;

    bool operator==(const Tls&) const = default;
  };
  Tls tls;
  // Keys the hash that names each bucket in the store; every process that
  // shares buckets must have the same one. At least 16 bytes.
  std::string key_secret;
  // Longest a check waits for the store before the local fallback decides.
  std::chrono::microseconds timeout{5000};
  // How often approximate-mode charges are sent to the store.
  std::chrono::milliseconds sync_interval{50};
  // While the store is unreachable each shared policy's rate and burst are
  // scaled by this (e.g. 1/N for N processes), in (0, 1].
  double fallback_share = 1.0;
  // Connections to the store per process, 1 to 4.
  int connections = 1;
  Clock clock = Clock::kStore;
  // Ops waiting for the store at most; a check finding the queue full falls
  // back at once.
  size_t max_in_flight = 4096;
  // Deny without asking the store when the local mirror already proves the
  // store would (docs/shared-state.md: "Local denial").
  bool local_denial = true;

  static constexpr size_t kMinKeySecretBytes = 16;
  static constexpr int kMaxConnections = 4;
};

// Checks every field but `url`'s syntax (the store parses that). Messages
// name the field as the YAML file spells it (`store.timeout`, ...).
absl::Status ValidateStoreOptions(const StoreOptions& store);

// What is wrong with the shape of a `store.url`, or "" when it has one of
// the accepted shapes: `redis://[[USER]:PASSWORD@]HOST:PORT[/DB]` (HOST a
// DNS name, an IPv4 address or a bracketed IPv6 one; PORT 1-65535, required;
// DB a decimal number; USER and PASSWORD may be percent-encoded), the same
// with `rediss://` (TLS), or `unix:///PATH[?db=DB]`. The YAML loader,
// mxlimitd's
// `--store` and `mxlimit replay --store` apply it, so a typo is reported
// where it was written rather than when the store first connects; the
// store applies the same grammar (one parser for both), so a URL accepted
// here is one the store connects to. The message never repeats a password.
std::string StoreUrlProblem(std::string_view url);

// `url` for logs and messages, whatever its shape (well-formed or not, any
// scheme or none): everything before the last '@' but a scheme and a user
// name is replaced by `***` (`redis://USER:***@HOST:PORT`,
// `rediss://:***@HOST:PORT`, `***@HOST`), and so is every query value but
// `db`'s (`?password=***`). Text without '@' or '?' is returned unchanged.
// StoreUrlProblem quotes a URL only through this.
std::string RedactStoreUrl(std::string_view url);

// Which header fields an embedder adds to its responses beside the limiter's
// decisions (`response_headers:` in the policy file). The limiter itself
// writes no header: it reports the choice, and the embedder (mxlimitd)
// formats the fields from each `Decision`.
enum class ResponseHeaders : uint8_t {
  kNone,       // `none` (the default): only a 429's Retry-After.
  kRateLimit,  // `ratelimit`: the IETF RateLimit-Policy and RateLimit fields
               // (FormatRateLimitHeaders, ratelimit_headers.h) on allowed
               // and denied answers alike.
};

// A whole limiter configuration, as a YAML file describes it.
struct LimiterConfig {
  // Whether the documented built-in policies apply (operators may switch them
  // off, or replace one by defining a policy with its name).
  bool builtin_policies = true;
  // Observe only: every policy, built-ins included, becomes a shadow policy
  // (counted and reported, never denying). For a first deployment.
  bool shadow_mode = false;
  TableOptions tables;
  // Which routes are keys (`routes:`): built-in packs and extra templates.
  // Fixed at start-up like `tables`: route ids key the buckets.
  RouteOptions routes;
  ExemptOptions exempt;
  // Tiers and who is in them (`tiers:`, tiers.h).
  TierOptions tiers;
  // Operator policies, in file order.
  std::vector<Policy> policies;
  // Only a `SharedLimiter` reads it.
  StoreOptions store;
  // Which header fields the embedder adds to its answers. Only the embedder
  // reads it: the limiter (and `Limiter::Reload`) ignores it.
  ResponseHeaders response_headers = ResponseHeaders::kNone;
};

}  // namespace mxlimit

#endif  // MXLIMIT_OPTIONS_H_
