#include "src/shared/store_keys.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "mxlimit/user_id.h"

namespace mxlimit::internal {

namespace {

// Turns an operator's secret of any length into a SipHash key.
constexpr SipKey kStretchKey{0x6d786c3a31207365ULL, 0x6372657420737472ULL};

// Fields go into a fixed buffer, each behind its length: names, layers and
// user IDs are bounded (policy.h, user_id.h), route templates nearly so; a
// longer route is cut, which still names it uniquely among real routes.
class FieldWriter {
 public:
  void Add(std::string_view bytes) {
    const size_t n = std::min(bytes.size(), kMaxField);
    Byte(static_cast<uint8_t>(n & 0xFF));
    Byte(static_cast<uint8_t>(n >> 8));
    // An empty view may have no data pointer, which memcpy must not see.
    if (n > 0) std::memcpy(buf_.data() + size_, bytes.data(), n);
    size_ += n;
  }
  void Add(int64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::string_view view() const {
    return {reinterpret_cast<const char*>(buf_.data()), size_};
  }

 private:
  static constexpr size_t kMaxField = 512;
  void Byte(uint8_t b) { buf_[size_++] = b; }
  // name, layer, route, subject at kMaxField + 2, plus 7 integers.
  std::array<uint8_t, 4 * (kMaxField + 2) + size_t{8} * 8 + 16> buf_{};
  size_t size_ = 0;
};

// 24 bits: slots are 14.
constexpr size_t kTagDigits = 4;

}  // namespace

StoreKeyer::StoreKeyer(std::string_view secret, bool hash_tags)
    : hash_tags_(hash_tags) {
  const SipDigest d = SipHash128(kStretchKey, secret);
  std::memcpy(&key_.k0, d.data(), 8);
  std::memcpy(&key_.k1, d.data() + 8, 8);
}

StoreKey StoreKeyer::IpKey(const Policy& policy, std::string_view route,
                           const IpAddress& masked) const {
  return Make(
      'i', policy, route,
      std::string_view(reinterpret_cast<const char*>(masked.bytes.data()),
                       masked.bytes.size()),
      false);
}

StoreKey StoreKeyer::UserKey(const Policy& policy, std::string_view route,
                             std::string_view user_id, bool overflow) const {
  return Make('u', policy, route, overflow ? std::string_view() : user_id,
              overflow);
}

StoreKey StoreKeyer::SubjectKey(char scope, const Policy& policy,
                                std::string_view route,
                                std::string_view subject, bool overflow) const {
  return Make(scope, policy, route, overflow ? std::string_view() : subject,
              overflow);
}

StoreKey StoreKeyer::Make(char scope, const Policy& p, std::string_view route,
                          std::string_view subject, bool overflow) const {
  FieldWriter w;
  w.Add(std::string_view(p.name));
  w.Add(static_cast<int64_t>(p.scope));
  w.Add(p.rate.requests_per_unit());
  w.Add(static_cast<int64_t>(p.rate.unit()));
  w.Add(p.rate.burst());
  w.Add(static_cast<int64_t>(p.sharing));
  w.Add(std::string_view(p.layer));
  w.Add(p.client_prefix.has_value()
            ? int64_t{p.client_prefix->ipv4} << 8 | p.client_prefix->ipv6
            : int64_t{-1});
  w.Add(route);
  w.Add(static_cast<int64_t>(overflow));
  w.Add(subject);
  const SipDigest d = SipHash128(key_, w.view());

  StoreKey k;
  constexpr std::string_view kPrefix = "mxl:1:";
  char* out = k.bytes.data();
  std::memcpy(out, kPrefix.data(), kPrefix.size());
  out += kPrefix.size();
  *out++ = scope;
  *out++ = ':';
  out = AppendBase64Url(d, out);
  if (hash_tags_) {
    FieldWriter tag;
    tag.Add(std::string_view(&scope, 1));
    tag.Add(static_cast<int64_t>(overflow));
    tag.Add(subject);
    const SipDigest t = SipHash128(key_, tag.view());
    char digits[24];
    AppendBase64Url(t, digits);
    *out++ = '{';
    out = std::copy_n(digits, kTagDigits, out);
    *out++ = '}';
  }
  k.size = static_cast<uint8_t>(out - k.bytes.data());
  return k;
}

std::string StoreKeyer::TiersKey() const {
  const SipDigest d = SipHash128(key_, "mxl:1 runtime tiers");
  char buf[32];
  char* end = AppendBase64Url(d, buf);
  // In a cluster the hash and its version share a slot (one MULTI).
  if (hash_tags_) return "mxl:1:tiers:{" + std::string(buf, end) + "}";
  return "mxl:1:tiers:" + std::string(buf, end);
}

}  // namespace mxlimit::internal
