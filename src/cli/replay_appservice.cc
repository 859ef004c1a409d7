#include "src/cli/replay_appservice.h"

#include <string_view>

#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/hex.h"

namespace mxlimit::cli {
namespace {

using internal::HexDigitValue;
using internal::ToAbsl;

// `raw` percent-decoded into `buffer`; empty when it does not fit or an
// escape is malformed.
std::string_view PercentDecode(std::string_view raw,
                               std::array<char, kMaxUserIdBytes>& buffer) {
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (n == buffer.size()) return {};
    char c = raw[i];
    if (c == '%') {
      if (i + 2 >= raw.size()) return {};
      const int hi = HexDigitValue(raw[i + 1]);
      const int lo = HexDigitValue(raw[i + 2]);
      if (hi < 0 || lo < 0) return {};
      c = static_cast<char>(hi << 4 | lo);
      i += 2;
    }
    buffer[n++] = c;
  }
  return std::string_view(buffer.data(), n);
}

}  // namespace

std::string_view MasqueradedUserId(std::string_view target,
                                   std::array<char, kMaxUserIdBytes>& buffer) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view query = target.substr(q + 1);
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view()
                                          : query.substr(amp + 1);
    static constexpr std::string_view kKey = "user_id=";
    if (pair.substr(0, kKey.size()) != kKey) continue;
    const std::string_view user =
        PercentDecode(pair.substr(kKey.size()), buffer);
    return IsWellFormedUserId(user) ? user : std::string_view();
  }
  return {};
}

ReplayAppservices::ReplayAppservices(const std::vector<std::string>& users,
                                     bool rate_limited)
    : users_(users.begin(), users.end()), rate_limited_(rate_limited) {}

void ReplayAppservices::Apply(const replay::LogRecord& record,
                              Request* request) {
  if (users_.empty()) return;
  if (!record.acting_user.empty() &&
      users_.contains(ToAbsl(record.acting_user))) {
    // The log already names the puppet as the user acted for.
    if (!rate_limited_) request->exempt = true;
    return;
  }
  if (record.user.empty() || !users_.contains(ToAbsl(record.user))) return;
  const std::string_view puppet = MasqueradedUserId(record.target, puppet_);
  if (puppet.empty() || puppet == record.user || !rate_limited_) {
    request->exempt = true;
    return;
  }
  request->user_id = puppet;
}

}  // namespace mxlimit::cli
