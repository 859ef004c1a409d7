// The built-in default policies: one table, one row per policy.
// docs/policies.md
// ("Built-in policies") documents each row and where its numbers come from; a
// test holds the document and this table to each other.
//
// Conversion of Synapse's `per_second` figures: the rate is written in the
// smallest unit (second, minute, hour, day) in which per_second * unit is a
// whole number; when none is, per day rounded down (never looser than the
// source). E.g. 0.17/s = 612/hour exactly; 0.003/s = 259.2/day -> 259/day.
// Synapse's `burst_count` is the GCRA burst as is: both let that many requests
// through at once from a fresh bucket, then refill at the rate.

#include <cassert>
#include <chrono>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/policy.h"
#include "mxlimit/rate.h"

namespace mxlimit {
namespace {

using U = TimeUnit;
constexpr Scope kIp = Scope::kIp;
constexpr Scope kUser = Scope::kUser;
constexpr Scope kOrigin = Scope::kOrigin;
constexpr Scope kRoom = Scope::kRoom;
constexpr Scope kTarget = Scope::kTarget;

// Every method but OPTIONS: CORS preflights are answered by the proxy or the
// server without work, and a browser client sends one before many requests,
// so only the aggregate caps count them.
constexpr std::string_view kNoPreflight =
    "GET,HEAD,POST,PUT,DELETE,PATCH,CONNECT,TRACE";
constexpr std::string_view kRoute = "route";
constexpr std::string_view kNetwork = "network";
constexpr std::string_view kAggregate = "aggregate";
// Policies charged on the response, beside the route layer's request counts
// on the same routes.
constexpr std::string_view kResponse = "response";
constexpr std::string_view kMediaDownloads =
    "/_matrix/client/v1/media/download/*,/_matrix/client/v1/media/thumbnail/*,"
    "/_matrix/media/v3/download/*,/_matrix/media/v3/thumbnail/*";
// IPv4 /24 and IPv6 /48: what one tenant of a hosting provider commonly gets.
constexpr ClientPrefix kPerNetwork{24, 48};

struct BuiltinRow {
  std::string_view name;
  std::string_view layer;
  Scope scope;
  std::string_view methods;  // Comma-separated; empty = every method.
  std::string_view match;    // Comma-separated patterns.
  bool share_threshold;
  int64_t requests_per_unit;
  TimeUnit unit;
  int64_t burst;
  std::string_view source;
  std::optional<ClientPrefix> client_prefix = std::nullopt;
  // In-flight rows: the limit and lease (the rate fields are then unused),
  // and a query parameter the request must not carry.
  int concurrency = 0;
  int64_t lease_ms = 0;
  std::string_view query_absent = {};
  // `on_limit: delay` with this `max_delay` when above 0.
  int64_t max_delay_ms = 0;
  // Rows charged on the response: the statuses that charge (comma-separated
  // codes; empty = any), and what the bucket counts.
  bool on_response = false;
  std::string_view status = {};
  CostKind cost = CostKind::kRequests;
};

// clang-format off
const BuiltinRow kBuiltins[] = {
  // name, layer, scope, methods, match, share, rate, unit, burst, source
  {"login-per-ip", kRoute, kIp, "POST", "/_matrix/client/v3/login", false, 259, U::kDay, 5,
   "Synapse rc_login.address: per_second 0.003 (= 259.2/day, rounded down), burst_count 5"},
  {"registration-per-ip", kRoute, kIp, "POST", "/_matrix/client/v3/register", false, 612, U::kHour, 3,
   "Synapse rc_registration: per_second 0.17 (= 612/hour), burst_count 3"},
  {"registration-token-validity-per-ip", kRoute, kIp, "GET", "/_matrix/client/v1/register/m.login.registration_token/validity", false, 6, U::kMinute, 5,
   "Synapse rc_registration_token_validity: per_second 0.1 (= 6/minute), burst_count 5"},
  {"3pid-request-token-per-ip", kRoute, kIp, "POST", "/_matrix/client/v3/*/requestToken", true, 259, U::kDay, 5,
   "Synapse rc_3pid_validation: per_second 0.003 (= 259.2/day, rounded down), burst_count 5"},
  {"message-send", kRoute, kUser, "PUT,POST", "/_matrix/client/v3/rooms/{roomId}/send/*", true, 12, U::kMinute, 10,
   "Synapse rc_message: per_second 0.2 (= 12/minute), burst_count 10"},
  {"state-send", kRoute, kUser, "PUT", "/_matrix/client/v3/rooms/{roomId}/state/*", true, 12, U::kMinute, 10,
   "Synapse rc_message: per_second 0.2 (= 12/minute), burst_count 10"},
  {"redaction", kRoute, kUser, "PUT,POST", "/_matrix/client/v3/rooms/{roomId}/redact/*", true, 12, U::kMinute, 10,
   "Synapse rc_message: per_second 0.2 (= 12/minute), burst_count 10"},
  {"join-by-id-or-alias", kRoute, kUser, "POST", "/_matrix/client/v3/join/*", true, 6, U::kMinute, 10,
   "Synapse rc_joins.local: per_second 0.1 (= 6/minute), burst_count 10"},
  {"join-room", kRoute, kUser, "POST", "/_matrix/client/v3/rooms/{roomId}/join", false, 6, U::kMinute, 10,
   "Synapse rc_joins.local: per_second 0.1 (= 6/minute), burst_count 10"},
  {"invite", kRoute, kUser, "POST", "/_matrix/client/v3/rooms/{roomId}/invite", false, 18, U::kMinute, 10,
   "Synapse rc_invites.per_issuer: per_second 0.3 (= 18/minute), burst_count 10"},
  {"room-creation", kRoute, kUser, "POST", "/_matrix/client/v3/createRoom", false, 1382, U::kDay, 10,
   "Synapse rc_room_creation: per_second 0.016 (= 1382.4/day, rounded down), burst_count 10"},
  {"media-create", kRoute, kUser, "POST", "/_matrix/media/v1/create", false, 10, U::kSecond, 50,
   "Synapse rc_media_create: per_second 10 (= 10/second), burst_count 50"},
  {"media-upload", kRoute, kUser, "POST,PUT", "/_matrix/media/v3/upload*", true, 10, U::kSecond, 50,
   "no Synapse request-count limit on uploads; mirrors rc_media_create (per_second 10, burst_count 50)"},
  {"report", kRoute, kUser, "POST", "/_matrix/client/v3/*/report*", true, 1, U::kSecond, 5,
   "Synapse rc_reports: per_second 1 (= 1/second), burst_count 5"},
  {"presence-per-user", kRoute, kUser, "PUT", "/_matrix/client/v3/presence/{userId}/status", false, 6, U::kMinute, 1,
   "Synapse rc_presence.per_user: per_second 0.1 (= 6/minute), burst_count 1"},
  {"delayed-event-mgmt", kRoute, kUser, "GET,POST", "/_matrix/client/unstable/org.matrix.msc4140/delayed_events*", true, 1, U::kSecond, 5,
   "Synapse rc_delayed_event_mgmt: per_second 1 (= 1/second), burst_count 5"},
  {"user-directory-search", kRoute, kUser, "POST", "/_matrix/client/v3/user_directory/search", false, 1382, U::kDay, 200,
   "Synapse rc_user_directory (1.145): per_second 0.016 (= 1382.4/day, rounded down), burst_count 200"},
  {"key-requests", kRoute, kUser, "PUT", "/_matrix/client/v3/sendToDevice/m.room_key_request/*", true, 20, U::kSecond, 100,
   "Synapse rc_key_requests: per_second 20 (= 20/second), burst_count 100 (per device there; per user here)"},
  {"joins-per-room", kRoute, kRoom, "POST,PUT", "/_matrix/client/v3/rooms/{roomId}/join,/_matrix/client/v3/join/{roomIdOrAlias},/_matrix/federation/v1/send_join/{roomId}/{eventId},/_matrix/federation/v2/send_join/{roomId}/{eventId}", true, 1, U::kSecond, 10,
   "Synapse rc_joins_per_room: per_second 1 (= 1/second), burst_count 10; local and remote joins alike"},
  {"invites-per-room", kRoute, kRoom, "POST,PUT", "/_matrix/client/v3/rooms/{roomId}/invite,/_matrix/federation/v1/invite/{roomId}/{eventId},/_matrix/federation/v2/invite/{roomId}/{eventId}", true, 18, U::kMinute, 10,
   "Synapse rc_invites.per_room: per_second 0.3 (= 18/minute), burst_count 10"},
  {"federation-per-origin", kRoute, kOrigin, "", "/_matrix/federation/*", true, 10, U::kSecond, 50,
   "mxlimit, from Synapse rc_federation: sleep_limit 10 per window_size 1000 ms as 10/second, reject_limit 50 (what Synapse queues before it rejects) as the burst"},
  {"federation-in-flight", kRoute, kOrigin, "", "/_matrix/federation/*", true, 0, U::kSecond, 0,
   "mxlimit, from Synapse rc_federation: concurrent 3 per origin, the rest queued (on_limit: delay, max_delay 5 s: reject_limit 50 at 10 a second); lease 300 ms, so that mxlimitd, which sees no request end, starts at most 10 a second per origin (sleep_limit per window)",
   std::nullopt, 3, 300, {}, 5'000},
  {"initial-sync-in-flight", kRoute, kUser, "GET", "/_matrix/client/v3/sync", false, 0, U::kSecond, 0,
   "mxlimit, after element-hq/synapse#19506 (in-flight initial syncs): 2 per user without `since`, lease 180 s",
   std::nullopt, 2, 180'000, "since"},
  {"login-per-account", kRoute, kTarget, "POST", "/_matrix/client/v3/login", false, 259, U::kDay, 5,
   "Synapse rc_login.account: per_second 0.003 (= 259.2/day, rounded down), burst_count 5; applies when the embedder sets the target account"},
  {"invites-per-invitee", kRoute, kTarget, "POST", "/_matrix/client/v3/rooms/{roomId}/invite", false, 259, U::kDay, 5,
   "Synapse rc_invites.per_user: per_second 0.003 (= 259.2/day, rounded down), burst_count 5; applies when the embedder sets the invitee"},
  {"keys-per-user", kRoute, kUser, kNoPreflight, "/_matrix/client/v3/keys/*", true, 120, U::kMinute, 120,
   "mxlimit: 120/minute per user across /keys/ (no Synapse rc_ for keys)"},
  {"unknown-paths-per-ip", kRoute, kIp, kNoPreflight, "<fallback>", false, 120, U::kMinute, 60,
   "mxlimit: paths no Matrix endpoint serves (scanners, probes); one counter per address for all of them"},
  {"catch-all-ip", kRoute, kIp, kNoPreflight, "*", false, 6000, U::kMinute, 1000,
   "mxlimit: generous per-address, per-route ceiling (shared addresses carry many clients)"},
  {"catch-all-user", kRoute, kUser, kNoPreflight, "*", false, 1200, U::kMinute, 200,
   "mxlimit: generous per-user, per-route ceiling (several devices per user)"},
  {"login-per-network", kNetwork, kIp, "POST", "/_matrix/client/v3/login", false, 60, U::kHour, 20,
   "mxlimit: per IPv4 /24 and IPv6 /48, so rotating addresses inside one allocation gains no fresh bursts", kPerNetwork},
  {"registration-per-network", kNetwork, kIp, "POST", "/_matrix/client/v3/register", false, 30, U::kHour, 10,
   "mxlimit: per IPv4 /24 and IPv6 /48, as login-per-network", kPerNetwork},
  {"failed-login-per-ip", kResponse, kIp, "POST", "/_matrix/client/v3/login", false, 612, U::kHour, 3,
   "Synapse rc_login.failed_attempts: per_second 0.17 (= 612/hour), burst_count 3; per client address (mxlimitd cannot read the account), charged on 401 and 403 answers",
   std::nullopt, 0, 0, {}, 0, true, "401,403"},
  {"media-download-bytes-per-ip", kResponse, kIp, "GET,HEAD", kMediaDownloads, true, 89088, U::kSecond, 524288000,
   "Synapse remote_media_download_per_second 87K (= 89088 bytes/second), remote_media_download_burst_count 500M (= 524288000 bytes); charged with the bytes each response sent, local media too",
   std::nullopt, 0, 0, {}, 0, true, {}, CostKind::kResponseBytes},
  {"aggregate-per-ip", kAggregate, kIp, "", "*", true, 12000, U::kMinute, 2000,
   "mxlimit: one counter per address across every route (twice one route's catch-all): stops floods spread over many routes"},
  {"aggregate-per-user", kAggregate, kUser, "", "*", true, 2400, U::kMinute, 400,
   "mxlimit: one counter per user across every route (twice one route's catch-all)"},
};
// clang-format on

// "a,b" -> {"a", "b"}; "" -> {}. Rows never hold an empty item, so skipping
// empties only matters for "" (absl::StrSplit alone would make it {""}).
std::vector<std::string> SplitList(std::string_view list) {
  return absl::StrSplit(internal::ToAbsl(list), ',', absl::SkipEmpty());
}

std::vector<Policy> ParseBuiltins() {
  std::vector<Policy> out;
  out.reserve(std::size(kBuiltins));
  for (const BuiltinRow& row : kBuiltins) {
    Policy p;
    if (row.concurrency > 0) {
      p.concurrency =
          Concurrency{row.concurrency, std::chrono::milliseconds(row.lease_ms)};
      if (!row.query_absent.empty()) {
        p.query_absent.emplace_back(row.query_absent);
      }
    }
    absl::StatusOr<Rate> rate = Rate::Unlimited();
    if (!p.concurrency.has_value()) {
      rate = Rate::Create(row.requests_per_unit, row.unit, row.burst);
    }
    assert(rate.ok() && "built-in rate rows are valid by construction");
    p.name = std::string(row.name);
    p.match = SplitList(row.match);
    p.methods = SplitList(row.methods);
    p.layer = std::string(row.layer);
    p.client_prefix = row.client_prefix;
    p.scope = row.scope;
    if (row.max_delay_ms > 0) {
      p.on_limit = OnLimit::kDelay;
      p.max_delay = std::chrono::milliseconds(row.max_delay_ms);
    }
    p.rate = rate.ok() ? *rate : Rate::Unlimited();
    p.share_threshold = row.share_threshold;
    if (row.on_response) {
      p.charge = ChargeOn::kResponse;
      p.cost = row.cost;
      for (const std::string& code : SplitList(row.status)) {
        const int c = std::stoi(code);
        p.status.push_back(StatusRange{c, c});
      }
    }
    p.builtin = true;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::vector<Policy> BuiltinPolicies() {
  // Read once: every compile with the built-ins (each engine, each reload)
  // asks for them.
  static const std::vector<Policy>* const kParsed =
      new std::vector<Policy>(ParseBuiltins());
  return *kParsed;
}

std::string_view BuiltinPolicySource(std::string_view name) {
  for (const BuiltinRow& row : kBuiltins) {
    if (row.name == name) return row.source;
  }
  return {};
}

}  // namespace mxlimit
