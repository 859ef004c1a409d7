#include "src/shared/redis/cluster_slots.h"

#include <array>
#include <charconv>

namespace mxlimit::internal {
namespace {

constexpr std::array<uint16_t, 256> kCrc16Table = [] {
  std::array<uint16_t, 256> t{};
  for (int i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
    t[i] = crc;
  }
  return t;
}();

bool ReadPort(std::string_view text, int* port) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *port);
  return !text.empty() && ec == std::errc() && ptr == end && *port >= 1 &&
         *port <= 65535;
}

}  // namespace

uint16_t Crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (const char c : bytes) {
    crc = static_cast<uint16_t>(
        (crc << 8) ^
        kCrc16Table[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xFF]);
  }
  return crc;
}

uint16_t KeySlot(std::string_view key) {
  if (const size_t open = key.find('{'); open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return Crc16(key) & (kClusterSlots - 1);
}

absl::StatusOr<std::vector<SlotRange>> ParseClusterSlots(
    const redisReply& reply, std::string_view asked_host) {
  if (reply.type == REDIS_REPLY_ERROR) {
    return absl::InvalidArgumentError(std::string(reply.str, reply.len));
  }
  if (reply.type != REDIS_REPLY_ARRAY) {
    return absl::InvalidArgumentError("CLUSTER SLOTS: not an array");
  }
  std::vector<SlotRange> ranges;
  for (size_t i = 0; i < reply.elements; ++i) {
    const redisReply& r = *reply.element[i];
    // [first, last, [host, port, id, ...], replicas...]
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 3 ||
        r.element[0]->type != REDIS_REPLY_INTEGER ||
        r.element[1]->type != REDIS_REPLY_INTEGER ||
        r.element[2]->type != REDIS_REPLY_ARRAY || r.element[2]->elements < 2) {
      return absl::InvalidArgumentError("CLUSTER SLOTS: a malformed range");
    }
    const long long first = r.element[0]->integer;
    const long long last = r.element[1]->integer;
    const redisReply& node = *r.element[2];
    if (first < 0 || last < first || last >= kClusterSlots ||
        (node.element[0]->type != REDIS_REPLY_STRING &&
         node.element[0]->type != REDIS_REPLY_NIL) ||
        node.element[1]->type != REDIS_REPLY_INTEGER ||
        node.element[1]->integer < 1 || node.element[1]->integer > 65535) {
      return absl::InvalidArgumentError("CLUSTER SLOTS: a malformed range");
    }
    SlotRange range;
    range.first = static_cast<uint16_t>(first);
    range.last = static_cast<uint16_t>(last);
    if (node.element[0]->type == REDIS_REPLY_STRING) {
      range.host.assign(node.element[0]->str, node.element[0]->len);
    }
    // "", "?" or nil (Redis 7) when the node does not know its address or
    // will not say: the node asked is the one to use.
    if (range.host.empty() || range.host == "?") range.host = asked_host;
    range.port = static_cast<int>(node.element[1]->integer);
    ranges.push_back(std::move(range));
  }
  return ranges;
}

bool ParseRedirect(std::string_view error, Redirect* out) {
  Redirect r;
  if (error.substr(0, 6) == "MOVED ") {
    error.remove_prefix(6);
  } else if (error.substr(0, 4) == "ASK ") {
    r.ask = true;
    error.remove_prefix(4);
  } else {
    return false;
  }
  const size_t space = error.find(' ');
  if (space == std::string_view::npos) return false;
  int slot = -1;
  const std::string_view slot_text = error.substr(0, space);
  auto [ptr, ec] = std::from_chars(slot_text.data(),
                                   slot_text.data() + slot_text.size(), slot);
  if (ec != std::errc() || ptr != slot_text.data() + slot_text.size() ||
      slot < 0 || slot >= kClusterSlots) {
    return false;
  }
  const std::string_view address = error.substr(space + 1);
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos ||
      !ReadPort(address.substr(colon + 1), &r.port)) {
    return false;
  }
  r.host = address.substr(0, colon);
  r.slot = static_cast<uint16_t>(slot);
  *out = r;
  return true;
}

}  // namespace mxlimit::internal
