#include "src/util/query.h"

#include <span>
#include <string_view>

#include "mxlimit/appservice.h"
#include "mxlimit/internal/hex.h"

namespace mxlimit {
namespace {

// The query of `target`: after its first '?', up to any '#'. False when it
// has none.
bool QueryOf(std::string_view target, std::string_view& query) {
  const size_t fragment = target.find('#');
  if (fragment != std::string_view::npos) target = target.substr(0, fragment);
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return false;
  query = target.substr(q + 1);
  return true;
}

}  // namespace

bool internal::QueryParameter(std::string_view target, std::string_view name,
                              std::span<char> buffer, std::string_view& value,
                              bool& found) {
  found = false;
  std::string_view query;
  if (!QueryOf(target, query)) return true;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view()
                                          : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != name) continue;
    const std::string_view raw =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    size_t n = 0;
    found = true;
    value = raw;  // what a caller gets when the value cannot be decoded
    for (size_t i = 0; i < raw.size(); ++i) {
      if (n == buffer.size()) return false;
      char c = raw[i];
      if (c == '%') {
        if (i + 2 >= raw.size()) return false;
        const int hi = internal::HexDigitValue(raw[i + 1]);
        const int lo = internal::HexDigitValue(raw[i + 2]);
        if (hi < 0 || lo < 0) return false;
        c = static_cast<char>(hi << 4 | lo);
        i += 2;
      } else if (c == '+') {
        c = ' ';
      }
      buffer[n++] = c;
    }
    value = std::string_view(buffer.data(), n);
    found = true;
    return true;  // the first occurrence counts, as in Synapse
  }
  return true;
}

namespace {

// Whether `raw` (one parameter name as sent) decodes to `name`.
bool NameDecodesTo(std::string_view raw, std::string_view name) {
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%' && i + 2 < raw.size()) {
      const int hi = internal::HexDigitValue(raw[i + 1]);
      const int lo = internal::HexDigitValue(raw[i + 2]);
      if (hi >= 0 && lo >= 0) {
        c = static_cast<char>(hi << 4 | lo);
        i += 2;
      }
    } else if (c == '+') {
      c = ' ';
    }
    if (n == name.size() || name[n] != c) return false;
    ++n;
  }
  return n == name.size();
}

}  // namespace

bool internal::QueryHasParameter(std::string_view target,
                                 std::string_view name) {
  std::string_view query;
  if (!QueryOf(target, query)) return false;
  // (Two vectorised scans: find_first_of tests each byte against the set.)
  if (query.find('%') == std::string_view::npos &&
      query.find('+') == std::string_view::npos) {
    // Nothing to decode (the usual query): find the name where a pair
    // starts, ending where the pair's name does.
    for (size_t at = query.find(name); at != std::string_view::npos;
         at = query.find(name, at + 1)) {
      const size_t end = at + name.size();
      if ((at == 0 || query[at - 1] == '&') &&
          (end == query.size() || query[end] == '=' || query[end] == '&')) {
        return true;
      }
    }
    return false;
  }
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view()
                                          : query.substr(amp + 1);
    if (NameDecodesTo(pair.substr(0, pair.find('=')), name)) return true;
  }
  return false;
}

std::string_view AppserviceUserId(std::string_view target,
                                  std::span<char> buffer) {
  std::string_view value;
  bool found = false;
  internal::QueryParameter(target, "user_id", buffer, value, found);
  return value;
}

}  // namespace mxlimit
