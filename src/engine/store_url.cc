// mxlimit/options.h: the shape of `store.url`. Only the shape: whether the
// host resolves or the server answers is the store's business, at run time.

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/ip.h"
#include "mxlimit/options.h"
#include "src/util/quote.h"

namespace mxlimit {
namespace {

using internal::ToAbsl;

constexpr std::string_view kRedis = "redis://";
constexpr std::string_view kUnix = "unix://";
constexpr std::string_view kShapes =
    "redis://HOST:PORT[/DB], redis://[USER]:PASSWORD@HOST:PORT[/DB] or "
    "unix:///PATH[?db=DB]";

// Plain decimal in [min, max].
bool ReadNumber(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return !text.empty() && ec == std::errc() && ptr == end && value >= min &&
         value <= max;
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

// The problem with the part after "redis://" (password already redacted
// in `shown`).
std::string RedisProblem(std::string_view rest) {
  // The user info ends at the last '@': a password may hold '@', a host
  // never does.
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view info = rest.substr(0, at);
    if (info.find(':') == std::string_view::npos) {
      return "the part before '@' must be USER:PASSWORD or :PASSWORD";
    }
    rest.remove_prefix(at + 1);
  }
  std::string_view db;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!ReadNumber(db, 0, 2147483647)) {
      return "the database after '/' must be a number from 0 to 2147483647";
    }
  }
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
  if (!ReadNumber(port, 1, 65535)) {
    return "the port must be a number from 1 to 65535";
  }
  return "";
}

std::string UnixProblem(std::string_view rest) {
  std::string_view path = rest;
  if (const size_t q = rest.find('?'); q != std::string_view::npos) {
    path = rest.substr(0, q);
    const std::string_view query = rest.substr(q + 1);
    if (query.substr(0, 3) != "db=" ||
        !ReadNumber(query.substr(3), 0, 2147483647)) {
      return "the only query is ?db=DB, a number from 0 to 2147483647";
    }
  }
  if (path.size() < 2 || path.front() != '/') {
    return "the socket path must be absolute: unix:///run/redis/redis.sock";
  }
  return "";
}

}  // namespace

std::string RedactStoreUrl(std::string_view url) {
  if (url.substr(0, kRedis.size()) != kRedis) return std::string(url);
  const std::string_view rest = url.substr(kRedis.size());
  const size_t at = rest.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  const std::string_view info = rest.substr(0, at);
  const size_t colon = info.find(':');
  if (colon == std::string_view::npos) return std::string(url);
  return absl::StrCat(ToAbsl(kRedis), ToAbsl(info.substr(0, colon + 1)), "***",
                      ToAbsl(rest.substr(at)));
}

std::string StoreUrlProblem(std::string_view url) {
  const std::string shown = internal::QuoteForError(RedactStoreUrl(url));
  auto problem = [&](std::string_view why) {
    return absl::StrCat("got ", shown, ", expected ", ToAbsl(kShapes), ": ",
                        ToAbsl(why));
  };
  if (url.empty()) return problem("it is empty");
  if (HasControlByte(url)) return problem("it holds a control character");
  if (url.substr(0, kRedis.size()) == kRedis) {
    std::string why = RedisProblem(url.substr(kRedis.size()));
    return why.empty() ? "" : problem(why);
  }
  if (url.substr(0, kUnix.size()) == kUnix) {
    std::string why = UnixProblem(url.substr(kUnix.size()));
    return why.empty() ? "" : problem(why);
  }
  if (url.substr(0, 9) == "rediss://") {
    return problem(
        "TLS (rediss://) is not supported; use a local Redis or "
        "a TLS tunnel");
  }
  return problem("the scheme must be redis:// or unix://");
}

}  // namespace mxlimit
