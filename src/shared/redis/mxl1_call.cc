#include "src/shared/redis/mxl1_call.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace mxlimit::internal {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// Appends RESP to a buffer the caller sized; no bounds checks on the hot
// path, kMxl1CallMaxBytes is the proof.
class RespWriter {
 public:
  explicit RespWriter(char* out) : begin_(out), p_(out) {}

  void Header(size_t argc) {
    *p_++ = '*';
    Number(static_cast<int64_t>(argc));
  }
  void Bulk(std::string_view s) {
    *p_++ = '$';
    Number(static_cast<int64_t>(s.size()));
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    *p_++ = '\r';
    *p_++ = '\n';
  }
  void BulkInt(int64_t v) {
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, v);
    Bulk(std::string_view(digits, static_cast<size_t>(r.ptr - digits)));
  }
  size_t size() const { return static_cast<size_t>(p_ - begin_); }

 private:
  // A number and CRLF, as after '*' and '$'.
  void Number(int64_t v) {
    p_ = std::to_chars(p_, p_ + 24, v).ptr;
    *p_++ = '\r';
    *p_++ = '\n';
  }

  char* begin_;
  char* p_;
};

std::string_view OpName(StoreOpKind kind) {
  switch (kind) {
    case StoreOpKind::kCheck:
      return "check";
    case StoreOpKind::kPeek:
      return "peek";
    case StoreOpKind::kCharge:
      return "charge";
    case StoreOpKind::kSync:
      return "sync";
  }
  return "check";
}

}  // namespace

size_t FormatMxl1Call(const StoreOp& op, std::string_view sha1, char* out) {
  assert(op.count <= kMaxStoreBuckets);
  assert(sha1.size() == 40);
  const size_t n = std::min<size_t>(op.count, kMaxStoreBuckets);
  // A late op names its time; others keep the shorter call.
  const int64_t at = op.kind == StoreOpKind::kSync
                         ? 0
                         : std::clamp<int64_t>(op.at_ns, 0, kMaxStoreAtNs);
  RespWriter w(out);
  w.Header(3 + 4 + 4 * n + (at > 0 ? 1 : 0));
  w.Bulk("EVALSHA");
  w.Bulk(sha1);
  w.BulkInt(static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const StoreKey& key = op.buckets[i].key;
    w.Bulk(std::string_view(key.bytes.data(),
                            std::min<size_t>(key.size, StoreKey::kCapacity)));
  }
  w.Bulk(OpName(op.kind));
  w.BulkInt(op.cost);
  if (op.caller_clock) {
    // Seconds and nanoseconds: the script never holds an absolute time in
    // ns as one (inexact) Lua number.
    const int64_t now = std::max<int64_t>(op.now_ns, 0);
    w.BulkInt(now / kNanosPerSecond);
    w.BulkInt(now % kNanosPerSecond);
  } else {
    w.Bulk("");
    w.Bulk("");
  }
  for (size_t i = 0; i < n; ++i) {
    const StoreBucket& b = op.buckets[i];
    w.BulkInt(b.interval_ns);
    w.BulkInt(b.burst);
    if (op.kind == StoreOpKind::kSync) {
      w.BulkInt(b.delta_ns);
      continue;
    }
    const std::string_view mode = b.mode == BucketMode::kEnforcing  ? "1"
                                  : b.mode == BucketMode::kObserved ? "2"
                                                                    : "0";
    const int64_t queue = std::clamp<int64_t>(b.queue_ns, 0, kMaxStoreAtNs);
    if (queue == 0) {
      w.Bulk(mode);
    } else {
      // "<mode>/<queue>": the bucket's lead is kept up to tau + queue.
      char text[24];
      text[0] = mode[0];
      text[1] = '/';
      const auto r = std::to_chars(text + 2, text + sizeof text, queue);
      w.Bulk(std::string_view(text, static_cast<size_t>(r.ptr - text)));
    }
  }
  if (at > 0) w.BulkInt(at);
  assert(w.size() <= kMxl1CallMaxBytes);
  return w.size();
}

std::string FormatRespCommand(std::span<const std::string_view> args) {
  std::string out;
  out.push_back('*');
  out.append(std::to_string(args.size()));
  out.append("\r\n");
  for (std::string_view a : args) {
    out.push_back('$');
    out.append(std::to_string(a.size()));
    out.append("\r\n");
    out.append(a);
    out.append("\r\n");
  }
  return out;
}

}  // namespace mxlimit::internal
