// -----------------------------------------------------------------------------
// File: replay/appservice.h
// -----------------------------------------------------------------------------
//
// `mxlimit replay --appservice-user @bot:server [--appservice-rate-limited]`:
// what the limiter is told about requests of appservice users, the way
// docs/embedding.md asks an embedder to do it. A log has no access tokens, so
// an appservice is known by its sender's user ID:
//   - the bot's own requests are exempt (the spec excludes the sender from
//     rate limiting);
//   - requests it makes as one of its users (a puppet) are exempt, or with
//     `--appservice-rate-limited` (the registration's `rate_limited: true`)
//     charged to the puppet.
// A puppet request is one whose acting user is the bot (Synapse logs
// "{@bot:s|@puppet:s}", TerseJson `authenticated_entity`), or one by the bot
// with a `?user_id=@puppet:s` query parameter (tsv, where the logger wrote
// the token's user), read by mxlimit::AppserviceUserId exactly as mxlimitd
// reads it (`+` is a space; a value that cannot be decoded is charged as
// sent, to the overflow bucket).
//
// Example:
//   ReplayAppservices appservices({"@telegrambot:example.org"}, false);
//   appservices.Apply(record, &request);  // request.exempt is now set

#ifndef MXLIMIT_REPLAY_APPSERVICE_H_
#define MXLIMIT_REPLAY_APPSERVICE_H_

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "mxlimit/request.h"
#include "mxlimit/user_id.h"
#include "src/replay/log_record.h"

namespace mxlimit::replay {

class ReplayAppservices {
 public:
  // REQUIRES: every user is well formed (the CLI checks them first).
  ReplayAppservices(const std::vector<std::string>& users, bool rate_limited);

  // Sets `request->exempt`, or `request->user_id` to the puppet, when the
  // record is an appservice user's. `request->user_id` may then view this
  // object's buffer (valid until the next call) or `record.target`.
  // Allocation-free.
  void Apply(const LogRecord& record, Request* request);

  bool empty() const { return users_.empty(); }

 private:
  absl::flat_hash_set<std::string> users_;
  bool rate_limited_;
  // Backing store for the decoded `?user_id=`, as large as mxlimitd's.
  std::array<char, 1024> puppet_{};
};

}  // namespace mxlimit::replay

#endif  // MXLIMIT_REPLAY_APPSERVICE_H_
