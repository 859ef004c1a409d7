#include "src/daemon/log.h"

#include <unistd.h>

#include <ctime>
#include <string>

#include "src/util/quote.h"

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

void AppendValue(std::string& line, std::string_view v) {
  if (IsPlain(v)) {
    line.append(v);
    return;
  }
  line.push_back('"');
  line.append(internal::EscapeForOutput(v));
  line.push_back('"');
}

}  // namespace

void Log(std::string_view level, std::string_view message,
         std::initializer_list<LogField> fields) {
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
  AppendValue(line, message);
  for (const LogField& f : fields) {
    line.push_back(' ');
    line.append(f.first);
    line.push_back('=');
    AppendValue(line, f.second);
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

}  // namespace mxlimit::daemon
