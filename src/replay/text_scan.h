// -----------------------------------------------------------------------------
// File: replay/text_scan.h
// -----------------------------------------------------------------------------
//
// Internal to the log parsers: a forward-only cursor over one line, the field
// shape checks the parsers share, and civil times (on std::chrono's calendar).
// Everything is inline, allocation-free and bounds-checked: a helper that does
// not find what it expects returns false and leaves the cursor where it was.

#ifndef MXLIMIT_REPLAY_TEXT_SCAN_H_
#define MXLIMIT_REPLAY_TEXT_SCAN_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::replay::internal {

// Character classes are abseil's (absl/strings/ascii.h), which take the byte
// as unsigned and are false for every byte >= 0x80. The ones used here:
// ascii_isgraph is printable ASCII without space (0x21-0x7E, what a URI, a
// user ID or a token may hold) and ascii_isblank is space and tab only.

// RFC 9110 `tchar`.
inline bool IsTokenChar(char c) {
  if (absl::ascii_isalnum(static_cast<unsigned char>(c))) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

// An HTTP method: a token of 1..32 characters.
inline bool IsHttpMethod(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// A request target as a server receives it: origin form ("/…"), absolute
// form ("http://…", "https://…", scanners and proxy probes send those), or
// "*" (OPTIONS *); visible ASCII only (raw bytes >= 0x80 and controls are
// junk in every format we read, since servers log them escaped).
inline bool IsRequestTarget(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isgraph(static_cast<unsigned char>(c))) return false;
  }
  if (s[0] == '/') return true;
  if (s == "*") return true;
  auto starts_ci = [&](std::string_view prefix) {
    return s.size() > prefix.size() &&
           absl::StartsWithIgnoreCase(mxlimit::internal::ToAbsl(s),
                                      mxlimit::internal::ToAbsl(prefix));
  };
  return starts_ci("http://") || starts_ci("https://");
}

// "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/2", "HTTP/3".
inline bool IsHttpProtocol(std::string_view s) {
  if (s.size() < 6 || s.substr(0, 5) != "HTTP/" ||
      !absl::ascii_isdigit(static_cast<unsigned char>(s[5]))) {
    return false;
  }
  if (s.size() == 6) return true;
  return s.size() == 8 && s[6] == '.' &&
         absl::ascii_isdigit(static_cast<unsigned char>(s[7]));
}

// Shape check only: hex digits, '.' and ':' (at least one separator), an
// optional "%zone" suffix, at most 45 characters before the zone (the longest
// IPv6 text with an IPv4 tail). `mxlimit::ParseIpAddress` validates properly.
inline bool LooksLikeIpAddress(std::string_view s) {
  size_t zone = s.find('%');
  std::string_view addr = s.substr(0, zone);
  if (addr.size() < 2 || addr.size() > 45) return false;
  bool separator = false;
  for (char c : addr) {
    if (c == '.' || c == ':') {
      separator = true;
    } else if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  if (!separator) return false;
  if (zone != std::string_view::npos) {
    std::string_view name = s.substr(zone + 1);
    if (name.empty() || name.size() > 32) return false;
    for (char c : name) {
      if (!IsTokenChar(c)) return false;
    }
  }
  return true;
}

// User IDs are checked with mxlimit::IsWellFormedUserId (mxlimit/user_id.h),
// the rule the limiter and the config loader use.

// A server name: DNS name or IP literal with an optional port; letters,
// digits, ".-:[]", at most 255 bytes.
inline bool IsServerName(std::string_view s) {
  if (s.empty() || s.size() > 255) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
          c == '-' || c == ':' || c == '[' || c == ']')) {
      return false;
    }
  }
  return true;
}

// Synapse's request loggers: "synapse.access.http.<tag>" or
// "synapse.access.https.<tag>" (shared by the text and JSON parsers).
inline bool IsSynapseAccessLogger(std::string_view name) {
  for (std::string_view prefix : {std::string_view("synapse.access.http."),
                                  std::string_view("synapse.access.https.")}) {
    if (name.size() > prefix.size() &&
        name.substr(0, prefix.size()) == prefix) {
      return true;
    }
  }
  return false;
}

// y-m-d as a std::chrono date. REQUIRES: 1 <= m <= 12, 1 <= d <= 31 and
// |y| <= 32767 (month and day keep values only up to 255, year up to 32767).
inline std::chrono::year_month_day CivilDate(int y, int m, int d) {
  return std::chrono::year_month_day(
      std::chrono::year(y), std::chrono::month(static_cast<unsigned>(m)),
      std::chrono::day(static_cast<unsigned>(d)));
}

// y-m-d is a date of the proleptic Gregorian calendar, in years 1 to 9999
// (the logs write four digits).
inline bool IsValidDate(int y, int m, int d) {
  if (y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31) return false;
  return CivilDate(y, m, d).ok();
}

// Milliseconds since the epoch of a civil UTC time; the caller has validated
// the fields (second 60, a leap second, is accepted and folds onto :00+1).
inline int64_t CivilToEpochMs(int y, int mo, int d, int h, int mi, int s,
                              int ms) {
  const auto t = std::chrono::sys_days(CivilDate(y, mo, d)) +
                 std::chrono::hours(h) + std::chrono::minutes(mi) +
                 std::chrono::seconds(s) + std::chrono::milliseconds(ms);
  return t.time_since_epoch().count();
}

// A forward-only cursor over one line.
class Scanner;

// The figures of a Synapse "Processed request: " message, read from just
// after that marker: the processing time, then (past the usage figures)
// the response's size and status, and a '!' after it if any. Both Synapse
// parsers read them so.
bool ScanProcessedFigures(Scanner* s, int64_t* processing_ms,
                          int64_t* body_bytes, int* status);

class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  bool done() const { return pos_ >= text_.size(); }
  std::string_view rest() const { return text_.substr(pos_); }
  char peek() const { return done() ? '\0' : text_[pos_]; }

  // Consumes `lit` if the input continues with it.
  bool Consume(std::string_view lit) {
    if (text_.size() - pos_ < lit.size() ||
        text_.compare(pos_, lit.size(), lit) != 0) {
      return false;
    }
    pos_ += lit.size();
    return true;
  }

  // Everything up to the first `delim`; consumes both. False (nothing
  // consumed) if `delim` does not occur.
  bool TakeUntil(std::string_view delim, std::string_view* field) {
    size_t at = text_.find(delim, pos_);
    if (at == std::string_view::npos) return false;
    *field = text_.substr(pos_, at - pos_);
    pos_ = at + delim.size();
    return true;
  }

  // Up to the next blank (space or tab) or the end; consumes the field only.
  std::string_view TakeField() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           !absl::ascii_isblank(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  // Skips spaces and tabs; returns how many.
  size_t SkipBlanks() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           absl::ascii_isblank(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
    return pos_ - start;
  }

  // Exactly `n` decimal digits.
  bool FixedDigits(int n, int* value) {
    if (text_.size() - pos_ < static_cast<size_t>(n)) return false;
    int v = 0;
    for (int i = 0; i < n; ++i) {
      char c = text_[pos_ + i];
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
      v = v * 10 + (c - '0');
    }
    *value = v;
    pos_ += n;
    return true;
  }

  // 1..max_digits decimal digits (max_digits <= 18, so no overflow).
  bool Digits(int max_digits, int64_t* value) {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() &&
           absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (static_cast<int>(pos_ - start) == max_digits) {
        pos_ = start;
        return false;
      }
      v = v * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == start) return false;
    *value = v;
    return true;
  }

  // "12.345" seconds (fraction optional, any length) as rounded ms.
  bool SecondsAsMs(int64_t* ms) {
    size_t start = pos_;
    int64_t whole = 0;
    if (!Digits(9, &whole)) return false;
    int64_t frac = 0;
    if (Consume(".")) {
      int n = 0;
      bool round_up = false;
      while (!done() &&
             absl::ascii_isdigit(static_cast<unsigned char>(peek()))) {
        int digit = peek() - '0';
        if (n < 3) {
          frac = frac * 10 + digit;
        } else if (n == 3) {
          round_up = digit >= 5;
        }
        ++n;
        ++pos_;
      }
      if (n == 0) {
        pos_ = start;
        return false;
      }
      for (int i = n; i < 3; ++i) frac *= 10;
      if (round_up) ++frac;
    }
    *ms = whole * 1000 + frac;
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace mxlimit::replay::internal

#endif  // MXLIMIT_REPLAY_TEXT_SCAN_H_
