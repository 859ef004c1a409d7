#include "src/shared/redis/resp_reader.h"

#include <hiredis/read.h>

#include <algorithm>
#include <cstring>

namespace mxlimit::internal {

namespace {

// Every callback gets its read task; the root task carries the reader's
// privdata (hiredis sets it only there), which points at our RespReply.
RespReply* ReplyOf(const redisReadTask* task) {
  while (task->parent != nullptr) task = task->parent;
  return static_cast<RespReply*>(task->privdata);
}

// The root of a new reply: forget the previous one.
void StartReply(RespReply* r, RespReply::Type type) {
  r->type = type;
  r->elements = 0;
  r->malformed = false;
  r->text_size = 0;
  r->run_id_size = 0;
  r->role = RespReply::Role::kUnknown;
}

// hiredis needs a non-null object back from each callback (null means out of
// memory); the objects are never used, so all are the reply itself.
void* CreateString(const redisReadTask* task, char* str, size_t len) {
  RespReply* r = ReplyOf(task);
  if (task->parent != nullptr) {
    r->malformed = true;
    return r;
  }
  RespReply::Type type = RespReply::Type::kString;
  if (task->type == REDIS_REPLY_ERROR) type = RespReply::Type::kError;
  if (task->type == REDIS_REPLY_STATUS) type = RespReply::Type::kStatus;
  StartReply(r, type);
  r->text_size = std::min(len, r->text.size());
  std::memcpy(r->text.data(), str, r->text_size);
  // INFO server: "...\r\nrun_id:<40 hex>\r\n...".
  const std::string_view body(str, len);
  constexpr std::string_view kRunId = "run_id:";
  if (const size_t at = body.find(kRunId); at != std::string_view::npos) {
    const std::string_view rest = body.substr(at + kRunId.size());
    const size_t end = std::min(rest.find_first_of("\r\n"), rest.size());
    r->run_id_size = std::min(end, r->run_id.size());
    std::memcpy(r->run_id.data(), rest.data(), r->run_id_size);
  }
  // INFO replication: "role:master" or "role:slave".
  constexpr std::string_view kRole = "role:";
  if (const size_t at = body.find(kRole); at != std::string_view::npos) {
    r->role = body.substr(at + kRole.size(), 6) == "master"
                  ? RespReply::Role::kMaster
                  : RespReply::Role::kReplica;
  }
  return r;
}

void* CreateArray(const redisReadTask* task, int elements) {
  RespReply* r = ReplyOf(task);
  if (task->parent != nullptr) {
    r->malformed = true;  // Nested arrays: not an mxl:1 reply.
    return r;
  }
  StartReply(r, RespReply::Type::kArray);
  r->elements = elements < 0 ? 0 : static_cast<size_t>(elements);
  if (r->elements > r->integers.size()) r->malformed = true;
  return r;
}

void* CreateInteger(const redisReadTask* task, long long value) {
  RespReply* r = ReplyOf(task);
  if (task->parent == nullptr) {
    StartReply(r, RespReply::Type::kInteger);
    r->integers[0] = value;
    return r;
  }
  if (task->idx >= 0 && static_cast<size_t>(task->idx) < r->integers.size()) {
    r->integers[static_cast<size_t>(task->idx)] = value;
  } else {
    r->malformed = true;
  }
  return r;
}

void* CreateNil(const redisReadTask* task) {
  RespReply* r = ReplyOf(task);
  if (task->parent != nullptr) {
    r->malformed = true;
  } else {
    StartReply(r, RespReply::Type::kNil);
  }
  return r;
}

void FreeObject(void*) {}

redisReplyObjectFunctions kFunctions = {CreateString, CreateArray,
                                        CreateInteger, CreateNil, FreeObject};

}  // namespace

RespReader::~RespReader() {
  if (reader_ != nullptr) redisReaderFree(reader_);
}

bool RespReader::Reset() {
  if (reader_ != nullptr) redisReaderFree(reader_);
  reader_ = redisReaderCreateWithFunctions(&kFunctions);
  if (reader_ == nullptr) return false;
  reader_->privdata = &reply_;
  // Never shrink the input buffer when it empties: hiredis would free it and
  // malloc a new one after every burst larger than 16 KiB.
  reader_->maxbuf = 0;
  return true;
}

bool RespReader::Feed(const char* data, size_t size) {
  return reader_ != nullptr && redisReaderFeed(reader_, data, size) == REDIS_OK;
}

RespReader::Next RespReader::Read() {
  if (reader_ == nullptr) return Next::kProtocolError;
  void* reply = nullptr;
  if (redisReaderGetReply(reader_, &reply) != REDIS_OK) {
    return Next::kProtocolError;
  }
  return reply == nullptr ? Next::kNeedMore : Next::kReply;
}

}  // namespace mxlimit::internal
