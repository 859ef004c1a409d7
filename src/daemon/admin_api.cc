#include "src/daemon/admin_api.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/mutex.h"
#include "mxlimit/ip.h"
#include "mxlimit/tiers.h"
#include "src/daemon/log.h"
#include "src/daemon/wall_clock.h"
#include "src/policy/tiers_json.h"
#include "src/util/flat_json.h"
#include "src/util/secret_file.h"

namespace mxlimit::daemon {
namespace {

using internal::FromAbsl;

constexpr std::string_view kPrefix = "/_mxlimit/admin/v1/";
constexpr std::string_view kUsersPath = "tiers/users/";
constexpr std::string_view kNetworksPath = "tiers/networks/";

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes decoded; false for a malformed one.
bool PercentDecode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = HexValue(in[i + 1]);
    const int lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

AdminReply Json(int status, std::string body) {
  return AdminReply{status, std::move(body)};
}

// InvalidArgument and NotFound (no such tier) are the caller's to fix (400);
// ResourceExhausted is the override cap (507).
AdminReply FromStatus(const absl::Status& status) {
  const std::string message(FromAbsl(status.message()));
  switch (status.code()) {
    case absl::StatusCode::kResourceExhausted:
      return AdminError(507, "M_RESOURCE_LIMIT_EXCEEDED", message);
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
      return AdminError(400, "M_INVALID_PARAM", message);
    default:
      return AdminError(500, "M_UNKNOWN", message);
  }
}

// The subject of a tiers/users/ or tiers/networks/ path, of the kind the
// path names.
absl::StatusOr<TierSubject> PathSubject(std::string_view kind,
                                        std::string_view raw,
                                        std::string& decoded) {
  if (!PercentDecode(raw, decoded)) {
    return absl::InvalidArgumentError("a malformed %-escape in the path");
  }
  absl::StatusOr<TierSubject> subject = ParseTierSubject(decoded);
  if (!subject.ok()) return subject.status();
  const bool user = kind == kUsersPath;
  if (user != (subject->kind == TierSubjectKind::kUser)) {
    return absl::InvalidArgumentError(
        user ? "expected a user ID such as @bot:example.org under tiers/users/"
             : "expected a network or address such as 10.0.0.0/8 under "
               "tiers/networks/");
  }
  return subject;
}

// The subject as listings write it: a user ID, or a canonical network.
std::string Canonical(const TierSubject& s) {
  return s.kind == TierSubjectKind::kUser ? s.user_id : FormatCidr(s.network);
}

// `subject`'s runtime assignment at `now`, to put back if a change cannot
// be shared.
std::optional<TierAssignment> RuntimeOf(const SharedLimiter& limiter,
                                        std::string_view subject,
                                        MonotonicTime now) {
  for (TierAssignment& a : limiter.ListTiers(now)) {
    if (a.runtime && a.subject == subject) return std::move(a);
  }
  return std::nullopt;
}

void PutBack(SharedLimiter& limiter, std::string_view subject,
             const std::optional<TierAssignment>& before, MonotonicTime now) {
  if (before.has_value()) {
    (void)limiter.SetTier(subject, before->tier, before->expires, now);
  } else {
    (void)limiter.ClearTier(subject);
  }
}

AdminReply Unshared(const absl::Status& s) {
  return AdminError(503, "M_UNAVAILABLE",
                    absl::StrCat("the store did not take the change, so "
                                 "nothing changed: ",
                                 s.message()));
}

}  // namespace

AdminReply AdminError(int status, std::string_view errcode,
                      std::string_view message) {
  return Json(status,
              absl::StrCat("{\"errcode\":", internal::JsonString(errcode),
                           ",\"error\":", internal::JsonString(message), "}"));
}

absl::StatusOr<AdminToken> AdminToken::Load(const std::string& path) {
  absl::StatusOr<std::string> text = internal::ReadSecretFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("--admin-token-file ", path, ": ",
                                     text.status().message()));
  }
  absl::StatusOr<AdminToken> token = FromText(*text);
  if (!token.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--admin-token-file ", path, ": ", token.status().message()));
  }
  return token;
}

absl::StatusOr<AdminToken> AdminToken::FromText(std::string_view token) {
  if (token.size() < kMinAdminTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token is ", token.size(), " bytes; at least ", kMinAdminTokenBytes,
        " are needed (e.g. openssl rand -hex 32)"));
  }
  for (const char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "the token holds a space, a control byte or a non-ASCII byte; it "
          "is sent in a header (e.g. openssl rand -hex 32)");
    }
  }
  AdminToken t;
  t.key_ = internal::RandomSipKey();
  t.digest_ = internal::SipHash128(t.key_, token);
  return t;
}

bool AdminToken::Matches(std::string_view authorization) const {
  constexpr std::string_view kScheme = "bearer ";
  std::string_view presented;
  bool bearer = false;
  if (authorization.size() > kScheme.size()) {
    bearer =
        EqualsIgnoringCase(authorization.substr(0, kScheme.size()), kScheme);
    presented = authorization.substr(kScheme.size());
  }
  // The digest is taken and compared whatever came, so a missing or
  // malformed header costs what a wrong token does.
  const internal::SipDigest d = internal::SipHash128(key_, presented);
  uint8_t diff = 0;
  for (size_t i = 0; i < d.size(); ++i) diff |= d[i] ^ digest_[i];
  return bearer & (diff == 0);
}

AdminApi::AdminApi(SharedLimiter& limiter, AdminToken token,
                   std::function<void()> on_change, TierSync* shared)
    : limiter_(limiter),
      token_(token),
      on_change_(std::move(on_change)),
      shared_(shared) {}

AdminReply AdminApi::Handle(const AdminRequest& r, MonotonicTime now) {
  if (!token_.Matches(r.authorization)) {
    const bool missing = r.authorization.empty();
    Log("warn", "admin request refused",
        {{"peer", r.peer}, {"reason", missing ? "no token" : "wrong token"}});
    return missing ? AdminError(401, "M_MISSING_TOKEN",
                                "an admin token is required: Authorization: "
                                "Bearer <the --admin-token-file token>")
                   : AdminError(401, "M_UNKNOWN_TOKEN",
                                "the admin token is not recognised");
  }
  std::string_view path = r.target.substr(0, r.target.find('?'));
  if (path.substr(0, kPrefix.size()) != kPrefix) {
    return AdminError(404, "M_UNRECOGNIZED", "no such admin endpoint");
  }
  path.remove_prefix(kPrefix.size());
  auto method_not_allowed = [] {
    return AdminError(405, "M_UNRECOGNIZED",
                      "this method is not allowed on this endpoint");
  };
  if (path == "tiers") {
    return r.method == "GET" ? Tiers(now) : method_not_allowed();
  }
  if (path == "reset") {
    return r.method == "POST" ? Reset(r.body, r.peer) : method_not_allowed();
  }
  for (const std::string_view kind : {kUsersPath, kNetworksPath}) {
    if (path.substr(0, kind.size()) != kind || path.size() == kind.size()) {
      continue;
    }
    const std::string_view subject = path.substr(kind.size());
    if (r.method == "PUT") return SetTier(kind, subject, r.body, r.peer, now);
    if (r.method == "DELETE") return ClearTier(kind, subject, r.peer);
    return method_not_allowed();
  }
  return AdminError(404, "M_UNRECOGNIZED", "no such admin endpoint");
}

AdminReply AdminApi::Tiers(MonotonicTime now) const {
  const std::vector<TierAssignment> all = limiter_.ListTiers(now);
  size_t runtime = 0;
  for (const TierAssignment& a : all) runtime += a.runtime ? 1 : 0;
  return Json(200, absl::StrCat("{\"assignments\":",
                                internal::TierAssignmentsJson(all, now),
                                ",\"runtime\":", runtime,
                                ",\"max_runtime\":", kMaxTierOverrides, "}"));
}

AdminReply AdminApi::SetTier(std::string_view kind, std::string_view raw,
                             std::string_view body, std::string_view peer,
                             MonotonicTime now) {
  std::string decoded;
  absl::StatusOr<TierSubject> subject = PathSubject(kind, raw, decoded);
  if (!subject.ok()) return FromStatus(subject.status());
  absl::StatusOr<internal::FlatJson> json = internal::ParseFlatJson(body);
  if (!json.ok()) {
    return AdminError(400, "M_NOT_JSON", FromAbsl(json.status().message()));
  }
  for (const auto& [name, value] : json->members()) {
    if (name != "tier" && name != "expires_in_ms") {
      return AdminError(400, "M_INVALID_PARAM",
                        absl::StrCat("unknown field \"", name,
                                     "\"; expected tier and expires_in_ms"));
    }
  }
  const internal::JsonValue* tier = json->Find("tier");
  if (tier == nullptr || tier->kind != internal::JsonValue::kString) {
    return AdminError(400, "M_INVALID_PARAM",
                      "\"tier\" must be the name of a tier of the policy "
                      "file's tiers: section");
  }
  std::optional<MonotonicTime> expires;
  int64_t expires_in_ms = 0;
  if (const internal::JsonValue* e = json->Find("expires_in_ms");
      e != nullptr && e->kind != internal::JsonValue::kNull) {
    if (e->kind != internal::JsonValue::kInteger || e->integer < 1 ||
        e->integer > kMaxAdminExpiresInMs) {
      return AdminError(
          400, "M_INVALID_PARAM",
          absl::StrCat("\"expires_in_ms\" must be an integer from 1 to ",
                       kMaxAdminExpiresInMs,
                       " (a year), or absent for no expiry"));
    }
    expires_in_ms = e->integer;
    expires = now + std::chrono::milliseconds(expires_in_ms);
  }
  const std::string canonical = Canonical(*subject);
  internal::MutexLock change(shared_ != nullptr ? shared_->change_mu()
                                                : unshared_mu_);
  const std::optional<TierAssignment> before =
      shared_ != nullptr ? RuntimeOf(limiter_, canonical, now) : std::nullopt;
  if (absl::Status s = limiter_.SetTier(decoded, tier->text, expires, now);
      !s.ok()) {
    return FromStatus(s);
  }
  if (shared_ != nullptr) {
    absl::Status s = shared_->Publish(
        canonical, tier->text,
        expires ? std::optional<int64_t>(Clocks::At(now).WallMs(*expires))
                : std::nullopt);
    if (!s.ok()) {
      PutBack(limiter_, canonical, before, now);
      return Unshared(s);
    }
  }
  const std::string ms = expires ? std::to_string(expires_in_ms) : "never";
  Log("info", "tier set",
      {{"subject", canonical},
       {"tier", tier->text},
       {"expires_in_ms", ms},
       {"peer", peer}});
  if (on_change_) on_change_();
  TierAssignment a;
  a.kind = subject->kind;
  a.subject = canonical;
  a.tier = tier->text;
  a.runtime = true;
  a.expires = expires;
  std::string out;
  internal::AppendTierAssignmentJson(out, a, now);
  return Json(200, std::move(out));
}

AdminReply AdminApi::ClearTier(std::string_view kind, std::string_view raw,
                               std::string_view peer) {
  std::string decoded;
  absl::StatusOr<TierSubject> subject = PathSubject(kind, raw, decoded);
  if (!subject.ok()) return FromStatus(subject.status());
  const std::string canonical = Canonical(*subject);
  const MonotonicTime now = MonotonicTime::FromSteadyClock();
  internal::MutexLock change(shared_ != nullptr ? shared_->change_mu()
                                                : unshared_mu_);
  const std::optional<TierAssignment> before =
      shared_ != nullptr ? RuntimeOf(limiter_, canonical, now) : std::nullopt;
  if (absl::Status s = limiter_.ClearTier(decoded); !s.ok()) {
    if (s.code() == absl::StatusCode::kNotFound) {
      return AdminError(404, "M_NOT_FOUND", FromAbsl(s.message()));
    }
    return FromStatus(s);
  }
  if (shared_ != nullptr) {
    if (absl::Status s = shared_->Unpublish(canonical); !s.ok()) {
      PutBack(limiter_, canonical, before, now);
      return Unshared(s);
    }
  }
  Log("info", "tier cleared", {{"subject", canonical}, {"peer", peer}});
  if (on_change_) on_change_();
  return Json(200, "{}");
}

AdminReply AdminApi::Reset(std::string_view body, std::string_view peer) {
  absl::StatusOr<internal::FlatJson> json = internal::ParseFlatJson(body);
  if (!json.ok()) {
    return AdminError(400, "M_NOT_JSON", FromAbsl(json.status().message()));
  }
  const internal::JsonValue* user = json->Find("user_id");
  const internal::JsonValue* address = json->Find("address");
  if (json->members().size() != 1 ||
      (user == nullptr) == (address == nullptr)) {
    return AdminError(400, "M_INVALID_PARAM",
                      "expected exactly one of \"user_id\" (a user ID) and "
                      "\"address\" (an address or network)");
  }
  const internal::JsonValue& v = user != nullptr ? *user : *address;
  if (v.kind != internal::JsonValue::kString) {
    return AdminError(400, "M_INVALID_PARAM", "expected a string");
  }
  const bool is_user = !v.text.empty() && v.text[0] == '@';
  if (is_user != (user != nullptr)) {
    return AdminError(400, "M_INVALID_PARAM",
                      user != nullptr
                          ? "\"user_id\" must be a user ID such as "
                            "@alice:example.org"
                          : "\"address\" must be an address or network such "
                            "as 192.0.2.7 or 10.0.0.0/8");
  }
  absl::StatusOr<size_t> dropped = limiter_.ResetBuckets(v.text);
  if (!dropped.ok()) return FromStatus(dropped.status());
  Log("info", "buckets reset",
      {{"subject", v.text},
       {"buckets", std::to_string(*dropped)},
       {"peer", peer}});
  return Json(200, absl::StrCat("{\"reset\":", *dropped, "}"));
}

}  // namespace mxlimit::daemon
