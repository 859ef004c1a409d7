#include "src/replay/appservice.h"

#include <string_view>

#include "mxlimit/appservice.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::replay {
namespace {

using internal::ToAbsl;

}  // namespace

ReplayAppservices::ReplayAppservices(const std::vector<std::string>& users,
                                     bool rate_limited)
    : users_(users.begin(), users.end()), rate_limited_(rate_limited) {}

void ReplayAppservices::Apply(const LogRecord& record, Request* request) {
  if (users_.empty()) return;
  if (!record.acting_user.empty() &&
      users_.contains(ToAbsl(record.acting_user))) {
    // The log already names the puppet as the user acted for.
    if (!rate_limited_) request->exempt = true;
    return;
  }
  if (record.user.empty() || !users_.contains(ToAbsl(record.user))) return;
  // Read as mxlimitd reads it, so both charge the same user.
  const std::string_view puppet = AppserviceUserId(record.target, puppet_);
  if (puppet.empty() || puppet == record.user || !rate_limited_) {
    request->exempt = true;
    return;
  }
  request->user_id = puppet;
}

}  // namespace mxlimit::replay
