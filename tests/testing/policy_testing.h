// Shared fixtures for the policy tests: a small table of real Matrix route
// keys (index = RouteId, as a normalizer would number them) and a policy
// builder.

#ifndef MXLIMIT_TESTS_TESTING_POLICY_TESTING_H_
#define MXLIMIT_TESTS_TESTING_POLICY_TESTING_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/policy.h"
#include "mxlimit/rate.h"
#include "mxlimit/route.h"

namespace mxlimit::testing {

enum TestRoute : RouteId {
  kFallback = kFallbackRouteId,
  kSend,
  kState,
  kKeysClaim,
  kKeysUpload,
  kKeysQuery,
  kKeysChanges,
  kLogin,
  kMediaDownload,
  kMediaThumbnail,
  kSync,
  kRegister,
  kMessages,
  kJoinByAlias,
  kJoinRoom,
  kInvite,
  kCreateRoom,
  kMediaCreate,
  kMediaUpload,
  kMediaUploadTo,
  kReportEvent,
  kReportRoom,
  kReportUser,
  kRegisterEmailToken,
  kAccount3pidEmailToken,
  kRedact,
  kRoomKeys,
  kTyping,
  kRouteCount
};

inline constexpr std::string_view kRouteKeys[kRouteCount] = {
    kFallbackRouteKey,
    "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}",
    "/_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}",
    "/_matrix/client/v3/keys/claim",
    "/_matrix/client/v3/keys/upload",
    "/_matrix/client/v3/keys/query",
    "/_matrix/client/v3/keys/changes",
    "/_matrix/client/v3/login",
    "/_matrix/client/v1/media/download/{serverName}/{mediaId}",
    "/_matrix/client/v1/media/thumbnail/{serverName}/{mediaId}",
    "/_matrix/client/v3/sync",
    "/_matrix/client/v3/register",
    "/_matrix/client/v3/rooms/{roomId}/messages",
    "/_matrix/client/v3/join/{roomIdOrAlias}",
    "/_matrix/client/v3/rooms/{roomId}/join",
    "/_matrix/client/v3/rooms/{roomId}/invite",
    "/_matrix/client/v3/createRoom",
    "/_matrix/media/v1/create",
    "/_matrix/media/v3/upload",
    "/_matrix/media/v3/upload/{serverName}/{mediaId}",
    "/_matrix/client/v3/rooms/{roomId}/report/{eventId}",
    "/_matrix/client/v3/rooms/{roomId}/report",
    "/_matrix/client/v3/users/{userId}/report",
    "/_matrix/client/v3/register/email/requestToken",
    "/_matrix/client/v3/account/3pid/email/requestToken",
    "/_matrix/client/v3/rooms/{roomId}/redact/{eventId}/{txnId}",
    "/_matrix/client/v3/room_keys/keys/{roomId}",
    "/_matrix/client/v3/rooms/{roomId}/typing/{userId}",
};

inline Rate PerHour(int64_t n) { return *Rate::Create(n, TimeUnit::kHour); }

inline Policy MakePolicy(std::string name, std::string match,
                         Scope scope = Scope::kIp, bool share = false,
                         std::initializer_list<std::string> methods = {}) {
  Policy p;
  p.name = std::move(name);
  p.match = {std::move(match)};
  p.scope = scope;
  p.share_threshold = share;
  p.methods = methods;
  p.rate = PerHour(10);
  return p;
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_POLICY_TESTING_H_
