// Replies from Redis, decoded by hiredis's RESP reader into one preallocated
// `RespReply` instead of a tree of malloc'ed redisReply objects: a
// connection reads every reply of its life without allocating (hiredis's own
// input buffer grows to its high-water mark once and then stays).
//
// Only what a `RedisStore` needs is kept: the mxl:1 reply (an array of up to
// 1 + kMaxStoreBuckets integers), a status or error line, a bulk string's
// first bytes (SCRIPT LOAD's sha1), INFO's run_id and role.
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_RESP_READER_H_
#define MXLIMIT_SHARED_REDIS_RESP_READER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/shared/store.h"

struct redisReader;  // <hiredis/read.h>

namespace mxlimit::internal {

struct RespReply {
  enum class Type : uint8_t {
    kString,
    kArray,
    kInteger,
    kNil,
    kStatus,
    kError
  };

  Type type = Type::kNil;
  // kArray: its elements, which must all be integers (else `malformed`).
  // kInteger: integers[0].
  size_t elements = 0;
  std::array<int64_t, 1 + kMaxStoreBuckets> integers{};
  // An element that was not an integer, or more elements than fit.
  bool malformed = false;
  // kStatus, kError, kString: the first bytes (an error's text is short).
  std::array<char, 128> text{};
  size_t text_size = 0;
  // A string that carried a `run_id:` line (INFO server): its 40 hex
  // characters; empty otherwise.
  std::array<char, 40> run_id{};
  size_t run_id_size = 0;

  // A string that carried a `role:` line (INFO replication).
  enum class Role : uint8_t { kUnknown, kMaster, kReplica };
  Role role = Role::kUnknown;

  std::string_view text_view() const { return {text.data(), text_size}; }
  std::string_view run_id_view() const { return {run_id.data(), run_id_size}; }
};

class RespReader {
 public:
  RespReader() = default;
  ~RespReader();
  RespReader(const RespReader&) = delete;
  RespReader& operator=(const RespReader&) = delete;

  // Starts afresh (a new connection): allocates hiredis's reader. False when
  // out of memory.
  bool Reset();

  // False on a protocol error (the connection must be dropped), or before
  // a successful Reset().
  bool Feed(const char* data, size_t size);

  enum class Next : uint8_t { kReply, kNeedMore, kProtocolError };
  // Decodes the next whole reply into reply().
  Next Read();
  const RespReply& reply() const { return reply_; }

 private:
  redisReader* reader_ = nullptr;
  RespReply reply_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_RESP_READER_H_
