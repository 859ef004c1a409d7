// Fuzz target: the replay log-line parsers (src/replay/log_parsers.h) and
// format detection.
//
// The input is split at '\n' into at most 64 lines; every line goes through
// every parser (tsv, Synapse, nginx, synapse-json, Caddy), bare and behind
// each prefix (journald, docker). Invariants per parser and line:
//   * a rejected line leaves the record untouched and never reports
//     kTooLong (only the line reader sets that);
//   * an accepted record's views all lie inside the line; the method is a
//     1-32 byte token; the target is non-empty visible ASCII; the address is
//     non-empty and has no blank; a user is empty or "@...:..." of at most
//     255 visible bytes, and a federation origin comes without a user;
//   * parsing is deterministic, and a trailing '\r' (CRLF logs) changes
//     nothing;
//   * a stripped prefix leaves a suffix of the line, and a prefixed line
//     parses exactly as its inner text does.
// `DetectFormatWithVotes` must count exactly the lines each parser accepts
// and pick a format with the most votes.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/replay/log_parsers.h"
#include "tests/fuzz/fuzz_check.h"

namespace mxlimit::fuzz {
namespace {

using replay::LogFormat;
using replay::LogRecord;
using replay::ParseResult;

constexpr std::string_view kSentinelText = "sentinel";

LogRecord Sentinel() {
  LogRecord r;
  r.time_ms = -4242;
  r.method = r.target = r.client_ip = r.user = r.acting_user = r.origin_server =
      r.forwarded_for = kSentinelText;
  return r;
}

bool Same(std::string_view a, std::string_view b) {
  return a.data() == b.data() && a.size() == b.size();
}

bool SameRecord(const LogRecord& a, const LogRecord& b) {
  return a.time_ms == b.time_ms && Same(a.method, b.method) &&
         Same(a.target, b.target) && Same(a.client_ip, b.client_ip) &&
         Same(a.user, b.user) && Same(a.acting_user, b.acting_user) &&
         Same(a.origin_server, b.origin_server) &&
         Same(a.forwarded_for, b.forwarded_for);
}

// Same text (for records of two different buffers).
bool EqualRecord(const LogRecord& a, const LogRecord& b) {
  return a.time_ms == b.time_ms && a.method == b.method &&
         a.target == b.target && a.client_ip == b.client_ip &&
         a.user == b.user && a.acting_user == b.acting_user &&
         a.origin_server == b.origin_server &&
         a.forwarded_for == b.forwarded_for;
}

bool Inside(std::string_view line, std::string_view view) {
  if (view.empty()) return true;
  return view.data() >= line.data() &&
         view.data() + view.size() <= line.data() + line.size();
}

bool AllVisible(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7F;
  });
}

bool UserShaped(std::string_view user) {
  return user.empty() ||
         (user.size() <= 255 && user.front() == '@' &&
          user.find(':') != std::string_view::npos && AllVisible(user));
}

void CheckAccepted(LogFormat format, std::string_view line,
                   const LogRecord& r) {
  for (std::string_view v : {r.method, r.target, r.client_ip, r.user,
                             r.acting_user, r.origin_server, r.forwarded_for}) {
    MXLIMIT_FUZZ_CHECK(Inside(line, v));
  }
  MXLIMIT_FUZZ_CHECK(!r.method.empty() && r.method.size() <= 32 &&
                     AllVisible(r.method));
  MXLIMIT_FUZZ_CHECK(!r.target.empty() && AllVisible(r.target));
  MXLIMIT_FUZZ_CHECK(!r.client_ip.empty() && AllVisible(r.client_ip));
  MXLIMIT_FUZZ_CHECK(UserShaped(r.user));
  MXLIMIT_FUZZ_CHECK(UserShaped(r.acting_user));
  MXLIMIT_FUZZ_CHECK(r.origin_server.empty() || r.user.empty());
  if (format == LogFormat::kTsv) MXLIMIT_FUZZ_CHECK(r.time_ms >= 0);
  if (format == LogFormat::kNginx || format == LogFormat::kCaddy) {
    MXLIMIT_FUZZ_CHECK(r.user.empty());
  }
  if (format != LogFormat::kNginx) MXLIMIT_FUZZ_CHECK(r.forwarded_for.empty());
}

// Behind each prefix: the stripped text is a suffix of the line, and the
// prefixed parse equals the parse of that text.
void CheckPrefixes(LogFormat format, std::string_view line) {
  for (replay::LogPrefix p :
       {replay::LogPrefix::kJournald, replay::LogPrefix::kDocker}) {
    std::string_view inner;
    const bool stripped = replay::StripLogPrefix(p, line, &inner);
    LogRecord prefixed = Sentinel();
    const ParseResult result =
        replay::ParsePrefixedLogLine(p, format, line, &prefixed);
    MXLIMIT_FUZZ_CHECK(result != ParseResult::kTooLong);
    if (!stripped) {
      MXLIMIT_FUZZ_CHECK(result == ParseResult::kNotRequest ||
                         result == ParseResult::kEmpty);
      MXLIMIT_FUZZ_CHECK(SameRecord(prefixed, Sentinel()));
      continue;
    }
    MXLIMIT_FUZZ_CHECK(inner.size() <= line.size() &&
                       inner.data() + inner.size() ==
                           line.data() + line.size());
    LogRecord bare = Sentinel();
    MXLIMIT_FUZZ_CHECK(replay::ParseLogLine(format, inner, &bare) == result);
    MXLIMIT_FUZZ_CHECK(SameRecord(prefixed, bare));
  }
}

ParseResult ParseAndCheck(LogFormat format, std::string_view line) {
  LogRecord first = Sentinel();
  const ParseResult result = replay::ParseLogLine(format, line, &first);
  MXLIMIT_FUZZ_CHECK(result != ParseResult::kTooLong);
  if (result != ParseResult::kOk) {
    MXLIMIT_FUZZ_CHECK(SameRecord(first, Sentinel()));
  } else {
    CheckAccepted(format, line, first);
  }
  LogRecord second = Sentinel();
  MXLIMIT_FUZZ_CHECK(replay::ParseLogLine(format, line, &second) == result);
  MXLIMIT_FUZZ_CHECK(SameRecord(first, second));

  if (line.empty() || line.back() != '\r') {
    const std::string crlf = std::string(line) + "\r";
    LogRecord third = Sentinel();
    MXLIMIT_FUZZ_CHECK(replay::ParseLogLine(format, crlf, &third) == result);
    if (result == ParseResult::kOk)
      MXLIMIT_FUZZ_CHECK(EqualRecord(first, third));
  }
  return result;
}

}  // namespace
}  // namespace mxlimit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxlimit::fuzz;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines;
  while (!text.empty() && lines.size() < 64) {
    size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view()
                                         : text.substr(end + 1);
  }
  std::array<int, mxlimit::replay::kLogFormatCount> accepted{};
  for (std::string_view line : lines) {
    for (int i = 0; i < mxlimit::replay::kLogFormatCount; ++i) {
      const auto f = static_cast<LogFormat>(i);
      if (ParseAndCheck(f, line) == ParseResult::kOk) ++accepted[i];
      CheckPrefixes(f, line);
    }
  }
  // Detection of a prefix never fails; it answers one of the three.
  const mxlimit::replay::LogPrefix prefix =
      mxlimit::replay::DetectLogPrefix(lines);
  MXLIMIT_FUZZ_CHECK(prefix == mxlimit::replay::LogPrefix::kNone ||
                     prefix == mxlimit::replay::LogPrefix::kJournald ||
                     prefix == mxlimit::replay::LogPrefix::kDocker);
  const mxlimit::replay::FormatDetection detected =
      mxlimit::replay::DetectFormatWithVotes(lines);
  MXLIMIT_FUZZ_CHECK(detected.votes == accepted);
  const int best = *std::max_element(accepted.begin(), accepted.end());
  MXLIMIT_FUZZ_CHECK(detected.recognized == (best > 0));
  if (best > 0) {
    MXLIMIT_FUZZ_CHECK(accepted[static_cast<int>(detected.format)] == best);
  }
  return 0;
}
