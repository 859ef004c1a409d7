// What journald and docker put in front of a log line (see StripLogPrefix in
// log_parsers.h), and which of them a log carries.

#include <string_view>

#include "absl/strings/ascii.h"
#include "src/replay/log_parsers.h"
#include "src/replay/text_scan.h"

namespace mxlimit::replay {
namespace {

using internal::Scanner;

// Longest host name and syslog identifier ("python3[1234]") we accept, far
// above real ones: a longer first word is not a journald prefix.
constexpr size_t kMaxHost = 255;
constexpr size_t kMaxIdentifier = 128;
constexpr size_t kMaxServiceName = 128;

bool IsDigit(char c) {
  return absl::ascii_isdigit(static_cast<unsigned char>(c));
}

// "Dec 01 10:00:00" or "Dec  1 10:00:00" (syslog's space-padded day), with
// an optional fraction of a second.
bool ShortTime(Scanner* s) {
  const std::string_view rest = s->rest();
  if (rest.size() < 15 ||
      !absl::ascii_isupper(static_cast<unsigned char>(rest[0])) ||
      !absl::ascii_islower(static_cast<unsigned char>(rest[1])) ||
      !absl::ascii_islower(static_cast<unsigned char>(rest[2])) ||
      rest[3] != ' ' || !(IsDigit(rest[4]) || rest[4] == ' ') ||
      !IsDigit(rest[5])) {
    return false;
  }
  Scanner t(rest.substr(7));
  int h, m, sec;
  if (rest[6] != ' ' || !t.FixedDigits(2, &h) || !t.Consume(":") ||
      !t.FixedDigits(2, &m) || !t.Consume(":") || !t.FixedDigits(2, &sec)) {
    return false;
  }
  if (!s->Consume(rest.substr(0, 15))) return false;
  // `-o short-precise`: microseconds after the seconds.
  if (s->Consume(".")) {
    int64_t fraction = 0;
    if (!s->Digits(18, &fraction)) return false;
  }
  return true;
}

// RFC 3339 as docker (2026-11-30T10:00:00.123456789Z) and journalctl's
// short-iso (2026-12-01T10:00:00+0000, or +00:00) write it.
bool IsoTime(Scanner* s) {
  Scanner t(s->rest());
  int v;
  if (!(t.FixedDigits(4, &v) && t.Consume("-") && t.FixedDigits(2, &v) &&
        t.Consume("-") && t.FixedDigits(2, &v) && t.Consume("T") &&
        t.FixedDigits(2, &v) && t.Consume(":") && t.FixedDigits(2, &v) &&
        t.Consume(":") && t.FixedDigits(2, &v))) {
    return false;
  }
  if (t.Consume(".")) {
    int64_t fraction;
    if (!t.Digits(18, &fraction)) return false;
  }
  if (!t.Consume("Z")) {
    if (!t.Consume("+") && !t.Consume("-")) return false;
    if (!t.FixedDigits(2, &v)) return false;
    t.Consume(":");
    if (!t.FixedDigits(2, &v)) return false;
  }
  const size_t length = s->rest().size() - t.rest().size();
  return s->Consume(s->rest().substr(0, length));
}

// "python3[123]", "matrix-synapse[9]" or "synapse", then ": ".
bool Identifier(Scanner* s) {
  std::string_view ident;
  if (!s->TakeUntil(": ", &ident) && !s->TakeUntil(":", &ident)) return false;
  if (ident.empty() || ident.size() > kMaxIdentifier) return false;
  const size_t open = ident.find('[');
  const std::string_view name = ident.substr(0, open);
  if (name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isgraph(static_cast<unsigned char>(c))) return false;
  }
  if (open == std::string_view::npos) return true;
  const std::string_view pid = ident.substr(open + 1);
  if (pid.size() < 2 || pid.back() != ']') return false;
  for (char c : pid.substr(0, pid.size() - 1)) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

bool StripJournald(std::string_view line, std::string_view* inner) {
  Scanner s(line);
  if (!ShortTime(&s) && !IsoTime(&s)) return false;
  if (!s.Consume(" ")) return false;
  const std::string_view host = s.TakeField();
  if (host.empty() || host.size() > kMaxHost || !s.Consume(" ")) return false;
  if (!Identifier(&s)) return false;
  *inner = s.rest();
  return true;
}

// "synapse_1  | " / "synapse-1  | ": a compose service name, padding, "| ".
// An empty log line is printed as "synapse_1  |" with nothing after.
bool ServiceName(Scanner* s) {
  const std::string_view rest = s->rest();
  size_t i = 0;
  while (i < rest.size() && i <= kMaxServiceName &&
         (absl::ascii_isalnum(static_cast<unsigned char>(rest[i])) ||
          rest[i] == '_' || rest[i] == '-' || rest[i] == '.')) {
    ++i;
  }
  if (i == 0 || i > kMaxServiceName) return false;
  size_t j = i;
  while (j < rest.size() && rest[j] == ' ') ++j;
  if (j == i || j >= rest.size() || rest[j] != '|') return false;
  ++j;
  if (j < rest.size()) {
    if (rest[j] != ' ') return false;
    ++j;
  }
  return s->Consume(rest.substr(0, j));
}

bool StripDocker(std::string_view line, std::string_view* inner) {
  Scanner s(line);
  const bool named = ServiceName(&s);
  bool timed = false;
  if (IsoTime(&s)) {
    // "--timestamps" puts one space between the time and the line.
    if (!s.Consume(" ") && !s.done()) return false;
    timed = true;
  }
  if (!named && !timed) return false;
  *inner = s.rest();
  return true;
}

}  // namespace

bool StripLogPrefix(LogPrefix prefix, std::string_view line,
                    std::string_view* inner) {
  switch (prefix) {
    case LogPrefix::kNone:
      *inner = line;
      return true;
    case LogPrefix::kJournald:
      return StripJournald(line, inner);
    case LogPrefix::kDocker:
      return StripDocker(line, inner);
  }
  return false;
}

LogPrefix DetectLogPrefix(std::span<const std::string_view> first_lines) {
  int journald = 0, docker = 0;
  std::string_view ignored;
  for (std::string_view line : first_lines) {
    journald += StripJournald(line, &ignored) ? 1 : 0;
    docker += StripDocker(line, &ignored) ? 1 : 0;
  }
  if (journald == 0 && docker == 0) return LogPrefix::kNone;
  return journald >= docker ? LogPrefix::kJournald : LogPrefix::kDocker;
}

}  // namespace mxlimit::replay
