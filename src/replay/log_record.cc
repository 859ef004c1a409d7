#include "src/replay/log_record.h"

#include <span>
#include <string_view>

#include "absl/strings/ascii.h"
#include "src/replay/log_parsers.h"
#include "src/replay/text_scan.h"

namespace mxlimit::replay {

using internal::Scanner;

std::string_view LogFormatName(LogFormat format) {
  switch (format) {
    case LogFormat::kTsv:
      return "tsv";
    case LogFormat::kSynapse:
      return "synapse";
    case LogFormat::kNginx:
      return "nginx";
    case LogFormat::kSynapseJson:
      return "synapse-json";
    case LogFormat::kCaddy:
      return "caddy";
  }
  return "unknown";
}

std::optional<LogFormat> ParseLogFormatName(std::string_view name) {
  for (int i = 0; i < kLogFormatCount; ++i) {
    const auto f = static_cast<LogFormat>(i);
    if (name == LogFormatName(f)) return f;
  }
  return std::nullopt;
}

std::string_view LogPrefixName(LogPrefix prefix) {
  switch (prefix) {
    case LogPrefix::kNone:
      return "none";
    case LogPrefix::kJournald:
      return "journald";
    case LogPrefix::kDocker:
      return "docker";
  }
  return "unknown";
}

std::string_view ParseResultName(ParseResult result) {
  switch (result) {
    case ParseResult::kOk:
      return "ok";
    case ParseResult::kEmpty:
      return "empty line";
    case ParseResult::kNotRequest:
      return "not a request line";
    case ParseResult::kTooLong:
      return "line too long";
    case ParseResult::kBadTimestamp:
      return "bad timestamp";
    case ParseResult::kBadClientAddress:
      return "bad client address";
    case ParseResult::kBadUser:
      return "bad user";
    case ParseResult::kBadRequestLine:
      return "bad request line";
    case ParseResult::kMalformed:
      return "malformed line";
  }
  return "unknown";
}

ParseResult ParseLogLine(LogFormat format, std::string_view line,
                         LogRecord* out) {
  switch (format) {
    case LogFormat::kTsv:
      return ParseTsvLine(line, out);
    case LogFormat::kSynapse:
      return ParseSynapseLine(line, out);
    case LogFormat::kNginx:
      return ParseNginxLine(line, out);
    case LogFormat::kSynapseJson:
      return ParseSynapseJsonLine(line, out);
    case LogFormat::kCaddy:
      return ParseCaddyLine(line, out);
  }
  return ParseResult::kMalformed;
}

ParseResult ParsePrefixedLogLine(LogPrefix prefix, LogFormat format,
                                 std::string_view line, LogRecord* out) {
  std::string_view inner = line;
  if (prefix != LogPrefix::kNone && !StripLogPrefix(prefix, line, &inner)) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Scanner s(line);
    s.SkipBlanks();
    return s.done() ? ParseResult::kEmpty : ParseResult::kNotRequest;
  }
  return ParseLogLine(format, inner, out);
}

namespace {

// "YYYY-MM-DD HH:MM:SS,mmm - " followed by something: the prefix of every
// line Synapse's default log format writes, whatever the logger.
bool HasSynapseLogPrefix(std::string_view line) {
  static constexpr std::string_view kShape = "0000-00-00 00:00:00,000 - ";
  if (line.size() <= kShape.size()) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    if (kShape[i] == '0'
            ? !absl::ascii_isdigit(static_cast<unsigned char>(line[i]))
            : line[i] != kShape[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

FormatDetection DetectFormatWithVotes(
    std::span<const std::string_view> first_lines) {
  // Order of preference on equal votes: the more specific format first.
  static constexpr LogFormat kOrder[] = {
      LogFormat::kSynapse, LogFormat::kSynapseJson, LogFormat::kCaddy,
      LogFormat::kNginx, LogFormat::kTsv};
  FormatDetection result;
  bool synapse_prefix = false;
  LogRecord scratch;
  for (std::string_view line : first_lines) {
    synapse_prefix = synapse_prefix || HasSynapseLogPrefix(line);
    for (LogFormat f : kOrder) {
      if (ParseLogLine(f, line, &scratch) == ParseResult::kOk) {
        ++result.votes[static_cast<int>(f)];
      }
    }
  }
  int best = 0;
  for (LogFormat f : kOrder) {
    int v = result.votes[static_cast<int>(f)];
    if (v > best) {
      best = v;
      result.format = f;
    }
  }
  result.recognized = best > 0;
  if (!result.recognized) {
    result.format = synapse_prefix ? LogFormat::kSynapse : LogFormat::kTsv;
  }
  return result;
}

bool IsRequestId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) return false;
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace mxlimit::replay
