// Finds the room a request addresses: the raw path segment that a route's
// `{roomId}` or `{roomIdOrAlias}` placeholder stands for, percent-decoded.
// Room-scope policies key their buckets by it.
//
// Built once from the normalizer's request forms (`RouteNormalizer::forms()`),
// which list every shape a route is served under (version aliases such as
// `/_matrix/client/api/v1/...` have more segments than the stable key), so the
// segment is found by the form the path actually has, never by counting
// segments of the key.
//
// Internal: not installed, not part of the public API. Immutable once built;
// shared by every engine of a ShardedLimiter.

#ifndef MXLIMIT_ENGINE_ROOM_LOCATOR_H_
#define MXLIMIT_ENGINE_ROOM_LOCATOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/route.h"

namespace mxlimit::internal {

// The placeholders that stand for a room in route templates, and whether a
// template (a route key or form) has one: the one definition the policy set,
// the config loader and the locator use.
constexpr bool IsRoomPlaceholder(std::string_view segment) {
  return segment == "{roomId}" || segment == "{roomIdOrAlias}";
}
constexpr bool RouteKeyHasRoom(std::string_view key) {
  return key.find("{roomId}") != std::string_view::npos ||
         key.find("{roomIdOrAlias}") != std::string_view::npos;
}

// Longest room ID or alias the spec allows, in bytes.
inline constexpr size_t kMaxRoomBytes = 255;

// A room value decoded into a caller's buffer.
struct RoomValue {
  std::string_view value;
  // A room ID ('!') or alias ('#') of 2 to kMaxRoomBytes decoded bytes, none
  // of them a control byte, space or DEL. Anything else keys one overflow
  // bucket per policy and route, as a malformed user ID does.
  bool valid = false;
};

class RoomLocator {
 public:
  explicit RoomLocator(const RouteNormalizer& normalizer);

  RoomLocator(const RoomLocator&) = delete;
  RoomLocator& operator=(const RoomLocator&) = delete;

  // The raw (still percent-encoded) segment of `path` (query-free) that the
  // room placeholder of `route` stands for; empty when the route has none or
  // no form of it fits the path. Never allocates.
  std::string_view RawSegment(RouteId route, std::string_view path) const;

  // `RawSegment` decoded into `buf`. Never allocates.
  RoomValue Find(RouteId route, std::string_view path,
                 std::array<char, kMaxRoomBytes>& buf) const;

 private:
  struct Form {
    // Literal segments (empty for placeholders), in order.
    std::vector<std::string> segments;
    uint8_t room = 0;  // index of the room placeholder
  };
  // Where a route's room is for a path of a given segment count, when every
  // form of that count agrees (the usual case): no literal to compare.
  struct ByCount {
    uint8_t count = 0;
    uint8_t room = 0;
    bool agreed = true;
  };
  // By RouteId: the forms that have a room placeholder, and their shortcut
  // per segment count.
  std::vector<std::vector<Form>> forms_;
  std::vector<std::vector<ByCount>> by_count_;
};

// Percent-decodes `raw` into `buf` and judges it (see RoomValue). A value
// longer than the buffer is invalid.
RoomValue DecodeRoom(std::string_view raw,
                     std::array<char, kMaxRoomBytes>& buf);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_ROOM_LOCATOR_H_
