#include "src/daemon/log.h"

#include <unistd.h>

#include <ctime>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace mxlimit::daemon {
namespace {

bool IsPlain(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') ||
        std::string_view("._-:/@[]+,").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string LogfmtValue(std::string_view v) {
  if (IsPlain(v)) return std::string(v);
  // logfmt quotes with double quotes only: a double quote and a backslash
  // take a backslash, a single quote none (C escaping gives it one, which a
  // logfmt reader keeps, or refuses as an unknown escape). Controls and bytes
  // from 0x7F up are hex escapes, so that nothing in a value can end the line
  // or steer a terminal.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : v) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if (b < 0x20 || b >= 0x7F) {
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

namespace {

void WriteLine(std::string_view level, std::string_view message,
               std::span<const LogField> fields) {
  char ts[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  const size_t n = std::strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::string line = "ts=";
  line.append(ts, n);
  line.append(" level=");
  line.append(level);
  line.append(" msg=");
  line.append(LogfmtValue(message));
  for (const LogField& f : fields) {
    line.push_back(' ');
    line.append(f.first);
    line.push_back('=');
    line.append(LogfmtValue(f.second));
  }
  line.push_back('\n');
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t w = write(STDERR_FILENO, p, left);
    if (w <= 0) return;
    p += w;
    left -= static_cast<size_t>(w);
  }
}

}  // namespace

void Log(std::string_view level, std::string_view message,
         std::initializer_list<LogField> fields) {
  WriteLine(level, message,
            std::span<const LogField>(fields.begin(), fields.size()));
}

void LogFields(std::string_view level, std::string_view message,
               std::span<const std::pair<std::string, std::string>> fields) {
  std::vector<LogField> views;
  views.reserve(fields.size());
  for (const auto& [key, value] : fields) views.emplace_back(key, value);
  WriteLine(level, message, views);
}

}  // namespace mxlimit::daemon
