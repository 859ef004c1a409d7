// mxlimit/options.h and src/options/store_url.h: the grammar of `store.url`.
// Only the shape: whether the host resolves or the server answers is the
// store's business, at run time.

#include "src/options/store_url.h"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/hex.h"
#include "mxlimit/ip.h"
#include "mxlimit/options.h"
#include "src/util/quote.h"

namespace mxlimit {
namespace internal {
namespace {

constexpr std::string_view kRedis = "redis://";
constexpr std::string_view kRedisTls = "rediss://";
constexpr std::string_view kSentinel = "redis-sentinel://";
constexpr std::string_view kCluster = "redis-cluster://";
constexpr std::string_view kUnix = "unix://";
constexpr std::string_view kShapes =
    "redis://HOST:PORT[/DB], redis://[USER]:PASSWORD@HOST:PORT[/DB] (or "
    "rediss:// for TLS), "
    "redis-sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/NAME[/DB], "
    "redis-cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...] "
    "or unix:///PATH[?db=DB]";
constexpr size_t kMaxHosts = 16;
constexpr int kMaxDb = 2147483647;

// Plain decimal in [min, max], the whole of `text`.
bool ReadNumber(std::string_view text, int min, int max, int* out) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min ||
      value > max) {
    return false;
  }
  *out = value;
  return true;
}

bool IsHostnameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool HasControlByte(std::string_view text) {
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7F) return true;
  }
  return false;
}

// `%XX` escapes decoded; false for a '%' not followed by two hex digits.
bool PercentDecode(std::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out->push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return false;
    const int hi = HexDigitValue(text[i + 1]);
    const int lo = HexDigitValue(text[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// USER:PASSWORD or :PASSWORD, before the '@'. "" or what is wrong.
std::string ReadUserInfo(std::string_view info, StoreEndpoint& e) {
  const size_t colon = info.find(':');
  if (colon == std::string_view::npos || colon + 1 == info.size()) {
    return "the part before '@' must be USER:PASSWORD or :PASSWORD, with "
           "a password";
  }
  if (!PercentDecode(info.substr(0, colon), &e.user) ||
      !PercentDecode(info.substr(colon + 1), &e.password)) {
    return "a '%' in the user or password must start a %XX escape (%25 for "
           "'%')";
  }
  return "";
}

// HOST:PORT or [IPv6]:PORT. "" or what is wrong.
std::string ReadHostPort(std::string_view rest, StoreEndpoint& e) {
  std::string_view host;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find("]:");
    if (close == std::string_view::npos) {
      return "an IPv6 host needs brackets and a port, as in [::1]:6379";
    }
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
    if (host.find(':') == std::string_view::npos ||
        !ParseIpAddress(host).ok()) {
      return "the host in brackets must be an IPv6 address";
    }
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) {
      return "the port is missing (Redis listens on 6379 by default)";
    }
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.empty()) return "the host is missing";
    for (char c : host) {
      if (!IsHostnameByte(c)) {
        return "the host must be a DNS name, an IPv4 address or a bracketed "
               "IPv6 address";
      }
    }
  }
  if (!ReadNumber(port, 1, 65535, &e.port)) {
    return "the port must be a number from 1 to 65535";
  }
  e.host = std::string(host);
  return "";
}

// The part after "redis://". "" or what is wrong.
std::string ReadRedis(std::string_view rest, StoreEndpoint& e) {
  // The user info ends at the last '@': a password may hold '@', a host
  // never does.
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    if (std::string why = ReadUserInfo(rest.substr(0, at), e); !why.empty()) {
      return why;
    }
    rest.remove_prefix(at + 1);
  }
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (!ReadNumber(rest.substr(slash + 1), 0, kMaxDb, &e.db)) {
      return "the database after '/' must be a number from 0 to 2147483647";
    }
    rest = rest.substr(0, slash);
  }
  return ReadHostPort(rest, e);
}

// HOST:PORT[,HOST:PORT...], at most kMaxHosts. "" or what is wrong.
std::string ReadHostList(std::string_view hosts, std::string_view what,
                         std::vector<StoreEndpoint::HostPort>& out) {
  while (true) {
    const size_t comma = hosts.find(',');
    StoreEndpoint one;
    if (std::string why = ReadHostPort(hosts.substr(0, comma), one);
        !why.empty()) {
      return absl::StrCat("a ", ToAbsl(what), ": ", why);
    }
    if (out.size() == kMaxHosts) {
      return absl::StrCat("at most ", kMaxHosts, " ", ToAbsl(what), "s");
    }
    out.push_back({one.host, one.port});
    if (comma == std::string_view::npos) break;
    hosts.remove_prefix(comma + 1);
  }
  return "";
}

// The part after "redis-sentinel://". "" or what is wrong.
std::string ReadSentinel(std::string_view rest, StoreEndpoint& e) {
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    if (std::string why = ReadUserInfo(rest.substr(0, at), e); !why.empty()) {
      return why;
    }
    rest.remove_prefix(at + 1);
  }
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return "the primary's name is missing: "
           "redis-sentinel://HOST:PORT,HOST:PORT/NAME";
  }
  std::string_view hosts = rest.substr(0, slash);
  std::string_view name = rest.substr(slash + 1);
  if (const size_t db = name.find('/'); db != std::string_view::npos) {
    if (!ReadNumber(name.substr(db + 1), 0, kMaxDb, &e.db)) {
      return "the database after the name must be a number from 0 to "
             "2147483647";
    }
    name = name.substr(0, db);
  }
  if (name.empty()) return "the primary's name is empty";
  for (char c : name) {
    if (!IsHostnameByte(c)) {
      return "the primary's name may hold letters, digits, '.', '-' and '_'";
    }
  }
  e.master_name = std::string(name);
  return ReadHostList(hosts, "Sentinel", e.sentinels);
}

// The part after "redis-cluster://": seed nodes, no database (a cluster
// has only database 0). "" or what is wrong.
std::string ReadCluster(std::string_view rest, StoreEndpoint& e) {
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    if (std::string why = ReadUserInfo(rest.substr(0, at), e); !why.empty()) {
      return why;
    }
    rest.remove_prefix(at + 1);
  }
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && db != "0") {
      return "Redis Cluster has only database 0: "
             "redis-cluster://HOST:PORT,HOST:PORT";
    }
    rest = rest.substr(0, slash);
  }
  return ReadHostList(rest, "cluster node", e.cluster_nodes);
}

// The part after "unix://". "" or what is wrong.
std::string ReadUnix(std::string_view rest, StoreEndpoint& e) {
  std::string_view path = rest;
  if (const size_t q = rest.find('?'); q != std::string_view::npos) {
    path = rest.substr(0, q);
    const std::string_view query = rest.substr(q + 1);
    if (query.substr(0, 3) != "db=" ||
        !ReadNumber(query.substr(3), 0, kMaxDb, &e.db)) {
      return "the only query is ?db=DB, a number from 0 to 2147483647";
    }
  }
  if (path.size() < 2 || path.front() != '/') {
    return "the socket path must be absolute: unix:///run/redis/redis.sock";
  }
  e.unix_path = std::string(path);
  return "";
}

// What is wrong with `url`, or "" with `e` filled in.
std::string Read(std::string_view url, StoreEndpoint& e) {
  if (url.empty()) return "it is empty";
  if (HasControlByte(url)) return "it holds a control character";
  if (url.substr(0, kRedis.size()) == kRedis) {
    return ReadRedis(url.substr(kRedis.size()), e);
  }
  if (url.substr(0, kUnix.size()) == kUnix) {
    return ReadUnix(url.substr(kUnix.size()), e);
  }
  if (url.substr(0, kRedisTls.size()) == kRedisTls) {
    e.tls = true;
    return ReadRedis(url.substr(kRedisTls.size()), e);
  }
  if (url.substr(0, kSentinel.size()) == kSentinel) {
    return ReadSentinel(url.substr(kSentinel.size()), e);
  }
  if (url.substr(0, kCluster.size()) == kCluster) {
    return ReadCluster(url.substr(kCluster.size()), e);
  }
  return "the scheme must be redis://, rediss://, redis-sentinel://, "
         "redis-cluster:// or unix://";
}

}  // namespace

bool IsClusterStoreUrl(std::string_view url) {
  return url.substr(0, kCluster.size()) == kCluster;
}

bool IsTlsStoreUrl(std::string_view url) {
  return url.substr(0, kRedisTls.size()) == kRedisTls;
}

absl::StatusOr<StoreEndpoint> ParseStoreUrl(std::string_view url) {
  StoreEndpoint e;
  const std::string why = Read(url, e);
  if (why.empty()) return e;
  return absl::InvalidArgumentError(
      absl::StrCat("got ", QuoteForError(RedactStoreUrl(url)), ", expected ",
                   ToAbsl(kShapes), ": ", why));
}

}  // namespace internal

std::string RedactStoreUrl(std::string_view url) {
  // Any shape is redacted, not only a well-formed redis:// URL: the text of
  // a malformed one is what an error message quotes (`rediss://:PW@h:1`,
  // `REDIS://`, `redis//:PW@h:1`, `unix://:PW@/s.sock`, `?password=PW`).
  std::string out;
  out.reserve(url.size());
  std::string_view rest = url;
  // Everything before the last '@' is user information: a password may
  // hold '@', '/', '?' or ':', a host none of them.
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    // The scheme and its separator stay ("redis://", "rediss://",
    // "redis//", "redis:"), as long as they are followed by something.
    size_t prefix = 0;
    while (prefix < at &&
           (absl::ascii_isalnum(static_cast<unsigned char>(rest[prefix])) ||
            rest[prefix] == '+' || rest[prefix] == '.' ||
            rest[prefix] == '-')) {
      ++prefix;
    }
    const size_t scheme_end = prefix;
    while (prefix < at && (rest[prefix] == ':' || rest[prefix] == '/')) {
      ++prefix;
    }
    if (prefix == scheme_end) prefix = 0;  // "PW@host": no scheme at all
    const std::string_view info = rest.substr(prefix, at - prefix);
    out.append(rest.substr(0, prefix));
    // USER:PASSWORD keeps the user; anything else is all password (also
    // "SECRET:" with an empty password, where the secret may be the user).
    const size_t colon = info.find(':');
    if (colon != std::string_view::npos && colon + 1 < info.size()) {
      out.append(info.substr(0, colon + 1));
    }
    out.append("***");
    rest.remove_prefix(at);
  }
  // Query values but the database's: `?password=` is a common spelling in
  // other clients' URLs.
  const size_t q = rest.find('?');
  out.append(rest.substr(0, q));
  if (q == std::string_view::npos) return out;
  out.push_back('?');
  std::string_view query = rest.substr(q + 1);
  while (true) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    const size_t eq = param.find('=');
    if (param.substr(0, eq) == "db") {
      out.append(param);
    } else if (eq != std::string_view::npos) {
      out.append(param.substr(0, eq + 1));
      out.append("***");
    } else if (!param.empty()) {
      out.append("***");
    }
    if (amp == std::string_view::npos) break;
    out.push_back('&');
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::string StoreUrlProblem(std::string_view url) {
  absl::StatusOr<internal::StoreEndpoint> e = internal::ParseStoreUrl(url);
  return e.ok() ? "" : std::string(e.status().message());
}

}  // namespace mxlimit
