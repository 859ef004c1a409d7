// Redis Cluster's key space: 16384 hash slots, a key's slot the CRC16
// (XMODEM) of its hash tag (the bytes between the first '{' and the next
// '}', when not empty) or of the whole key; and the slot map a node
// answers to CLUSTER SLOTS. The rules are the Redis Cluster
// specification's ("Key distribution model", "Hash tags").
//
//   KeySlot("{user1000}.following") == KeySlot("{user1000}.followers")
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_CLUSTER_SLOTS_H_
#define MXLIMIT_SHARED_REDIS_CLUSTER_SLOTS_H_

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mxlimit::internal {

inline constexpr uint16_t kClusterSlots = 16384;

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, no reflection.
uint16_t Crc16(std::string_view bytes);

// The slot `key` belongs to, 0 to 16383.
uint16_t KeySlot(std::string_view key);

// One range of slots and the primary that serves it.
struct SlotRange {
  uint16_t first = 0;
  uint16_t last = 0;
  std::string host;
  int port = 0;
};

// The ranges of a CLUSTER SLOTS reply, primaries only. An empty, "?" or
// nil host in the reply (a node that does not know or give its address)
// means `asked_host`, the node that was asked. InvalidArgument for a reply of
// another shape.
absl::StatusOr<std::vector<SlotRange>> ParseClusterSlots(
    const redisReply& reply, std::string_view asked_host);

// A MOVED or ASK error, `MOVED 3999 127.0.0.1:6381`: the slot and where it
// is now. False for any other text.
struct Redirect {
  bool ask = false;
  uint16_t slot = 0;
  std::string_view host;
  int port = 0;
};
bool ParseRedirect(std::string_view error, Redirect* out);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_CLUSTER_SLOTS_H_
