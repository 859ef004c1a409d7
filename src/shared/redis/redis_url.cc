#include "src/shared/redis/redis_url.h"

#include <charconv>
#include <string>
#include <system_error>

#include "absl/status/status.h"

namespace mxlimit::internal {

namespace {

constexpr std::string_view kExpected =
    "expected redis://[[user:]password@]host[:port][/db] or "
    "unix:///path[?db=N]";

absl::Status Invalid(std::string_view why) {
  return absl::InvalidArgumentError(std::string("store.url: ") +
                                    std::string(why) + "; " +
                                    std::string(kExpected));
}

// A decimal in [lo, hi], the whole of `s`.
bool ParseInt(std::string_view s, int lo, int hi, int* out) {
  if (s.empty()) return false;
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool PercentDecode(std::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out->push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return false;
    const int hi = HexDigit(s[i + 1]), lo = HexDigit(s[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// Redis numbers its databases from 0; 16 by default, more if configured.
constexpr int kMaxDb = 1 << 20;

absl::StatusOr<RedisEndpoint> ParseUnix(std::string_view rest) {
  RedisEndpoint e;
  std::string_view path = rest, query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    path = rest.substr(0, q);
    query = rest.substr(q + 1);
  }
  if (path.empty() || path.front() != '/') {
    return Invalid(
        "a unix URL needs an absolute path (unix:///run/redis.sock)");
  }
  e.unix_path = std::string(path);
  if (!query.empty()) {
    if (query.substr(0, 3) != "db=" ||
        !ParseInt(query.substr(3), 0, kMaxDb, &e.db)) {
      return Invalid("the only query a unix URL takes is ?db=N, N >= 0");
    }
  }
  return e;
}

absl::StatusOr<RedisEndpoint> ParseTcp(std::string_view rest) {
  RedisEndpoint e;
  // The authority ends at the first '/' after the last '@' (a password may
  // hold '/' only percent-encoded, as in any URL).
  std::string_view authority = rest, db;
  const size_t at = rest.rfind('@');
  const size_t slash =
      rest.find('/', at == std::string_view::npos ? 0 : at + 1);
  if (slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    db = rest.substr(slash + 1);
    if (!db.empty() && !ParseInt(db, 0, kMaxDb, &e.db)) {
      return Invalid("the database after '/' must be a number >= 0");
    }
  }
  std::string_view hostport = authority;
  if (at != std::string_view::npos && at < authority.size()) {
    const std::string_view userinfo = authority.substr(0, at);
    hostport = authority.substr(at + 1);
    const size_t colon = userinfo.find(':');
    std::string_view user, password = userinfo;
    if (colon != std::string_view::npos) {
      user = userinfo.substr(0, colon);
      password = userinfo.substr(colon + 1);
    }
    if (!PercentDecode(user, &e.user) ||
        !PercentDecode(password, &e.password)) {
      return Invalid("bad percent-encoding in the user or password");
    }
    if (e.password.empty()) {
      return Invalid("an '@' needs a password before it");
    }
  }
  std::string_view port;
  if (!hostport.empty() && hostport.front() == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) {
      return Invalid("an IPv6 host needs a closing ']'");
    }
    e.host = std::string(hostport.substr(1, close - 1));
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Invalid("junk after the IPv6 host");
      port = after.substr(1);
      if (port.empty()) return Invalid("an empty port after ':'");
    }
  } else {
    const size_t colon = hostport.rfind(':');
    if (colon != std::string_view::npos) {
      e.host = std::string(hostport.substr(0, colon));
      port = hostport.substr(colon + 1);
      if (port.empty()) return Invalid("an empty port after ':'");
    } else {
      e.host = std::string(hostport);
    }
  }
  if (e.host.empty()) return Invalid("no host");
  if (e.host.find_first_of("@/?# ") != std::string::npos) {
    return Invalid("the host has a character a host cannot have");
  }
  if (!port.empty() && !ParseInt(port, 1, 65535, &e.port)) {
    return Invalid("the port must be a number from 1 to 65535");
  }
  return e;
}

}  // namespace

absl::StatusOr<RedisEndpoint> ParseRedisUrl(std::string_view url) {
  constexpr std::string_view kRedis = "redis://", kUnix = "unix://";
  if (url.substr(0, kRedis.size()) == kRedis) {
    return ParseTcp(url.substr(kRedis.size()));
  }
  if (url.substr(0, kUnix.size()) == kUnix) {
    return ParseUnix(url.substr(kUnix.size()));
  }
  if (url.substr(0, 9) == "rediss://") {
    return Invalid(
        "TLS (rediss://) is not supported: use a Unix socket or a "
        "TLS tunnel");
  }
  return Invalid("unknown scheme");
}

}  // namespace mxlimit::internal
