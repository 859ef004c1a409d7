#include "src/engine/tier_directory.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::internal {

// Locks only a shared directory (see the top of the header).
class TierDirectory::ReadLock {
 public:
  explicit ReadLock(const TierDirectory& d) : d_(d) {
    if (d_.synchronized_) d_.mu_.lock_shared();
  }
  ~ReadLock() {
    if (d_.synchronized_) d_.mu_.unlock_shared();
  }
  ReadLock(const ReadLock&) = delete;
  ReadLock& operator=(const ReadLock&) = delete;

 private:
  const TierDirectory& d_;
};

class TierDirectory::WriteLock {
 public:
  explicit WriteLock(TierDirectory& d) : d_(d) {
    if (d_.synchronized_) d_.mu_.lock();
  }
  ~WriteLock() {
    if (d_.synchronized_) d_.mu_.unlock();
  }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  TierDirectory& d_;
};

namespace {

uint64_t LoadBigEndian(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::little) {
    v = __builtin_bswap64(v);
  }
  return v;
}

void StoreBigEndian(uint64_t v, uint8_t* p) {
  if constexpr (std::endian::native == std::endian::little) {
    v = __builtin_bswap64(v);
  }
  std::memcpy(p, &v, 8);
}

// The first `bits` (0-64) bits of a word.
uint64_t FirstBits(int bits) {
  return bits <= 0 ? 0 : bits >= 64 ? ~uint64_t{0} : ~(~uint64_t{0} >> bits);
}

}  // namespace

TierDirectory::NetKey TierDirectory::KeyOf(const IpAddress& ip, int bits) {
  NetKey k;
  k.bits = static_cast<uint8_t>(bits);
  k.high = LoadBigEndian(ip.bytes.data()) & FirstBits(bits);
  k.low = LoadBigEndian(ip.bytes.data() + 8) & FirstBits(bits - 64);
  return k;
}

TierDirectory::NetKey TierDirectory::KeyOf(const Cidr& network) {
  return KeyOf(network.base,
               network.v4 ? network.prefix_len + 96 : network.prefix_len);
}

namespace {

// The filter's hashes: independent multiplies folded once, inline (abseil's
// string hash is a call into its shared library, on every request). A
// crafted collision costs its sender one probe of a map that abseil's own
// hash protects.
constexpr uint64_t kMul[4] = {0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL,
                              0x165667B19E3779F9ULL, 0xD6E8FEB86659FD93ULL};

uint64_t Fold(uint64_t h) {
  h = (h ^ (h >> 32)) * kMul[1];
  return h ^ (h >> 29);
}

}  // namespace

uint64_t TierDirectory::UserHash(std::string_view user_id) {
  uint64_t h = user_id.size() * kMul[3];
  size_t i = 0;
  for (; i + 8 <= user_id.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, user_id.data() + i, 8);
    h ^= (w + kMul[(i >> 3) & 3]) * kMul[((i >> 3) + 1) & 3];
  }
  // The last bytes as one fixed-size load (overlapping the words above):
  // a copy of a variable length would be a call.
  uint64_t tail = 0;
  if (user_id.size() >= 8) {
    std::memcpy(&tail, user_id.data() + user_id.size() - 8, 8);
  } else {
    for (; i < user_id.size(); ++i) {
      tail = tail << 8 | static_cast<uint8_t>(user_id[i]);
    }
  }
  h ^= (tail + kMul[2]) * kMul[0];
  return Fold(h);
}

uint64_t TierDirectory::NetHash(const NetKey& key) {
  return Fold(((key.high ^ kMul[2]) * kMul[0]) ^
              ((key.low ^ kMul[3]) * kMul[1]) ^ (key.bits * kMul[2]));
}

void TierDirectory::Mark(uint64_t hash) {
  filter_[WordOf(hash)] |= BitsOf(hash);
}

void TierDirectory::Prefetch(std::string_view user_id, const IpAddress& client,
                             TierProbe& probe) const {
  // A shared directory's lengths may change under another thread: only a
  // lone limiter's (its caller's lock held) prefetches.
  if (synchronized_) return;
  if (!user_id.empty()) {
    probe.user = UserHash(user_id);
    __builtin_prefetch(&filter_[WordOf(probe.user)]);
  }
  uint8_t n = 0;
  probe.gated = !lengths_.empty() && !GateOpen(client);
  for (uint8_t bits : probe.gated ? std::span<const uint8_t>()
                                  : std::span<const uint8_t>(lengths_)) {
    if (n == TierProbe::kMaxLengths) break;
    probe.net[n] = NetHash(KeyOf(client, bits));
    __builtin_prefetch(&filter_[WordOf(probe.net[n])]);
    ++n;
  }
  probe.lengths = n;
  probe.ready = true;
}

namespace {

// ::ffff:0:0/96, where IPv4 clients live, as NetKey words.
constexpr uint64_t kV4MappedHigh = 0;
constexpr uint64_t kV4MappedLow = uint64_t{0xFFFF} << 32;

// The gate's bit for the 16 bits `first16` of an IPv4 (`v4`) or IPv6
// address.
size_t GateBit(bool v4, uint64_t first16) {
  return (v4 ? 65536 : 0) + static_cast<size_t>(first16);
}

}  // namespace

void TierDirectory::MarkNetwork(const NetKey& key) {
  Mark(NetHash(key));
  auto set = [&](size_t bit) { gate_[bit >> 6] |= uint64_t{1} << (bit & 63); };
  const bool in_v4 = key.bits >= 96 && key.high == kV4MappedHigh &&
                     (key.low >> 32) == (kV4MappedLow >> 32);
  if (in_v4) {
    if (key.bits - 96 >= 16) {
      set(GateBit(true, (key.low >> 16) & 0xFFFF));
    } else {
      gate_v4_all_ = true;
    }
    return;
  }
  if (key.bits >= 16) {
    set(GateBit(false, key.high >> 48));
  } else {
    gate_v6_all_ = true;
  }
  // An IPv6 network holding ::ffff:0:0/96 (e.g. ::/0) holds IPv4 clients.
  if (key.bits <= 96) {
    const uint64_t high_mask = FirstBits(key.bits);
    const uint64_t low_mask = FirstBits(key.bits - 64);
    if ((kV4MappedHigh & high_mask) == key.high &&
        (kV4MappedLow & low_mask) == key.low) {
      gate_v4_all_ = true;
    }
  }
}

bool TierDirectory::GateOpen(const IpAddress& client) const {
  const bool v4 = client.is_v4();
  if (v4 ? gate_v4_all_ : gate_v6_all_) return true;
  const size_t first16 = v4 ? size_t{client.bytes[12]} << 8 | client.bytes[13]
                            : size_t{client.bytes[0]} << 8 | client.bytes[1];
  const size_t bit = GateBit(v4, first16);
  return (gate_[bit >> 6] >> (bit & 63)) & 1;
}

void TierDirectory::Unmarked() {
  if (++filter_stale_ > users_.size() + networks_.size()) RebuildFilter();
}

void TierDirectory::RebuildFilter() {
  std::fill(filter_.begin(), filter_.end(), 0);
  std::fill(gate_.begin(), gate_.end(), 0);
  gate_v4_all_ = false;
  gate_v6_all_ = false;
  for (const auto& [user, e] : users_) Mark(UserHash(user));
  for (const auto& [key, e] : networks_) MarkNetwork(key);
  filter_stale_ = 0;
}

Cidr TierDirectory::CidrOf(const NetKey& key) {
  Cidr c;
  StoreBigEndian(key.high, c.base.bytes.data());
  StoreBigEndian(key.low, c.base.bytes.data() + 8);
  c.v4 = key.bits >= 96 && c.base.is_v4();
  c.prefix_len = c.v4 ? key.bits - 96 : key.bits;
  return c;
}

void TierDirectory::Install(std::shared_ptr<const TierSet> tiers) {
  if (tiers == nullptr) tiers = std::make_shared<const TierSet>();
  WriteLock lock(*this);
  std::vector<std::string_view> names;
  for (size_t i = 0; i < tiers->size(); ++i) {
    names.push_back(
        *names_.insert(tiers->tier(static_cast<uint16_t>(i)).name).first);
  }
  // Runtime assignments follow their tier's name into the new set.
  auto remap = [&](uint16_t old) -> uint16_t {
    if (old == kNoTier) return kNoTier;
    std::optional<uint16_t> now = tiers->Find(tier_names_[old]);
    return now.value_or(kNoTier);
  };
  runtime_count_ = 0;
  for (auto it = users_.begin(); it != users_.end();) {
    Entry& e = it->second;
    e.file = kNoTier;
    e.runtime = remap(e.runtime);
    if (e.runtime != kNoTier) ++runtime_count_;
    if (e.runtime == kNoTier) {
      users_.erase(it++);
    } else {
      ++it;
    }
  }
  for (auto it = networks_.begin(); it != networks_.end();) {
    Entry& e = it->second;
    e.file = kNoTier;
    e.runtime = remap(e.runtime);
    if (e.runtime != kNoTier) ++runtime_count_;
    if (e.runtime == kNoTier) {
      networks_.erase(it++);
    } else {
      ++it;
    }
  }
  const TierOptions& o = tiers->options();
  for (const TierUser& u : o.users) {
    users_[u.user_id].file = *tiers->Find(u.tier);
  }
  for (const TierNetwork& n : o.networks) {
    networks_[KeyOf(n.network)].file = *tiers->Find(n.tier);
  }
  tiers_ = std::move(tiers);
  tier_names_ = std::move(names);
  Recount();
}

void TierDirectory::AddNetwork(const NetKey& key) {
  if (per_length_[key.bits]++ == 0) RebuildLengths();
}

void TierDirectory::EraseNetwork(const NetKey& key) {
  if (--per_length_[key.bits] == 0) RebuildLengths();
}

void TierDirectory::RebuildLengths() {
  lengths_.clear();
  for (int bits = 128; bits >= 0; --bits) {
    if (per_length_[bits] != 0) lengths_.push_back(static_cast<uint8_t>(bits));
  }
}

void TierDirectory::Recount() {
  per_length_.fill(0);
  for (const auto& [key, entry] : networks_) ++per_length_[key.bits];
  RebuildLengths();
  RebuildFilter();
  Count();
}

void TierDirectory::Count() {
  count_.store(users_.size() + networks_.size(), std::memory_order_relaxed);
}

const TierDirectory::Entry* TierDirectory::FindEntry(
    std::string_view user_id, const IpAddress& client, int64_t now_ns,
    const TierProbe* probe, const NetKey** network, bool* user) const {
  if (probe != nullptr && !probe->ready) probe = nullptr;
  if (!user_id.empty() && !users_.empty() &&
      MayHold(probe != nullptr ? probe->user : UserHash(user_id))) {
    auto it = users_.find(ToAbsl(user_id));
    if (it != users_.end() && it->second.Effective(now_ns) != kNoTier) {
      *user = true;
      return &it->second;
    }
  }
  const bool gated =
      probe != nullptr ? probe->gated : !lengths_.empty() && !GateOpen(client);
  for (size_t i = 0; !gated && i < lengths_.size(); ++i) {
    const bool probed = probe != nullptr && i < probe->lengths;
    if (probed && !MayHold(probe->net[i])) continue;
    // Built only once the probe's filter lets it through.
    const NetKey key = KeyOf(client, lengths_[i]);
    if (!probed && !MayHold(NetHash(key))) continue;
    auto it = networks_.find(key);
    if (it != networks_.end() && it->second.Effective(now_ns) != kNoTier) {
      *network = &it->first;
      return &it->second;
    }
  }
  return nullptr;
}

TierMatch TierDirectory::Find(std::string_view user_id, const IpAddress& client,
                              MonotonicTime now, const TierProbe* probe) const {
  ReadLock lock(*this);
  const NetKey* network = nullptr;
  bool user = false;
  const Entry* e =
      FindEntry(user_id, client, now.nanoseconds(), probe, &network, &user);
  if (e == nullptr) return {};
  const uint16_t tier = e->Effective(now.nanoseconds());
  return TierMatch{tier_names_[tier], tier, tiers_.get()};
}

TierAssignment TierDirectory::Report(TierSubjectKind kind, std::string subject,
                                     uint16_t tier, bool runtime,
                                     int64_t expires_ns) const {
  TierAssignment a;
  a.kind = kind;
  a.subject = std::move(subject);
  a.tier = std::string(tier_names_[tier]);
  a.runtime = runtime;
  if (runtime && expires_ns != kNever) {
    a.expires = MonotonicTime::FromNanoseconds(expires_ns);
  }
  return a;
}

std::optional<TierAssignment> TierDirectory::Describe(std::string_view user_id,
                                                      const IpAddress& client,
                                                      MonotonicTime now) const {
  ReadLock lock(*this);
  const NetKey* network = nullptr;
  bool user = false;
  const int64_t now_ns = now.nanoseconds();
  const Entry* e = FindEntry(user_id, client, now_ns, nullptr, &network, &user);
  if (e == nullptr) return std::nullopt;
  const uint16_t tier = e->Effective(now_ns);
  const bool runtime = tier == e->runtime && e->expires_ns > now_ns;
  if (user) {
    return Report(TierSubjectKind::kUser, std::string(user_id), tier, runtime,
                  e->expires_ns);
  }
  return Report(TierSubjectKind::kNetwork, FormatCidr(CidrOf(*network)), tier,
                runtime, e->expires_ns);
}

void TierDirectory::PruneExpired(int64_t now_ns) {
  auto prune = [&](auto& map) {
    for (auto it = map.begin(); it != map.end();) {
      Entry& e = it->second;
      if (e.runtime != kNoTier && e.expires_ns <= now_ns) {
        e.runtime = kNoTier;
        e.expires_ns = kNever;
        --runtime_count_;
      }
      if (e.runtime == kNoTier && e.file == kNoTier) {
        map.erase(it++);
      } else {
        ++it;
      }
    }
  };
  prune(users_);
  prune(networks_);
  Recount();
}

absl::Status TierDirectory::Set(const TierSubject& subject,
                                std::string_view tier,
                                std::optional<MonotonicTime> expires,
                                MonotonicTime now) {
  WriteLock lock(*this);
  std::optional<uint16_t> index =
      tiers_ != nullptr ? tiers_->Find(tier) : std::nullopt;
  if (!index.has_value()) {
    std::string known;
    for (std::string_view n : tier_names_) {
      absl::StrAppend(&known, known.empty() ? "" : ", ", ToAbsl(n));
    }
    return absl::NotFoundError(absl::StrCat(
        "no tier is named \"", ToAbsl(tier.substr(0, kMaxTierNameBytes)), "\"",
        known.empty() ? " (the policy file defines none)"
                      : absl::StrCat(" (defined: ", known, ")")));
  }
  if (expires.has_value() && *expires <= now) {
    return absl::InvalidArgumentError("expires: already past");
  }
  Entry* entry = nullptr;
  if (subject.kind == TierSubjectKind::kUser) {
    auto it = users_.find(subject.user_id);
    if (it != users_.end()) entry = &it->second;
  } else {
    auto it = networks_.find(KeyOf(subject.network));
    if (it != networks_.end()) entry = &it->second;
  }
  const bool adds = entry == nullptr || entry->runtime == kNoTier;
  if (adds && runtime_count_ >= kMaxTierOverrides) {
    PruneExpired(now.nanoseconds());
    if (runtime_count_ >= kMaxTierOverrides) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "already ", kMaxTierOverrides,
          " runtime tier assignments (the cap); clear some first"));
    }
    entry = nullptr;  // the prune may have moved or erased it
  }
  if (entry == nullptr) {
    if (subject.kind == TierSubjectKind::kUser) {
      entry = &users_[subject.user_id];
      Mark(UserHash(subject.user_id));
    } else {
      const NetKey key = KeyOf(subject.network);
      entry = &networks_[key];
      AddNetwork(key);
      MarkNetwork(key);
    }
  }
  if (entry->runtime == kNoTier) ++runtime_count_;
  entry->runtime = *index;
  entry->expires_ns = expires.has_value() ? expires->nanoseconds() : kNever;
  Count();
  return absl::OkStatus();
}

absl::Status TierDirectory::Clear(const TierSubject& subject) {
  WriteLock lock(*this);
  auto clear = [&](auto& map, const auto& key) -> bool {
    auto it = map.find(key);
    if (it == map.end() || it->second.runtime == kNoTier) return false;
    --runtime_count_;
    if (it->second.file == kNoTier) {
      if constexpr (std::is_same_v<std::decay_t<decltype(key)>, NetKey>) {
        EraseNetwork(key);
      }
      map.erase(it);
      Unmarked();
    } else {
      it->second.runtime = kNoTier;
      it->second.expires_ns = kNever;
    }
    return true;
  };
  const bool cleared = subject.kind == TierSubjectKind::kUser
                           ? clear(users_, subject.user_id)
                           : clear(networks_, KeyOf(subject.network));
  if (!cleared) {
    return absl::NotFoundError(
        "no runtime tier assignment for that subject (assignments in the "
        "policy file change with the file)");
  }
  Count();
  return absl::OkStatus();
}

std::vector<TierAssignment> TierDirectory::List(MonotonicTime now) const {
  ReadLock lock(*this);
  const int64_t now_ns = now.nanoseconds();
  std::vector<TierAssignment> out;
  auto add = [&](TierSubjectKind kind, const std::string& subject,
                 const Entry& e) {
    if (e.file != kNoTier) {
      out.push_back(Report(kind, subject, e.file, false, kNever));
    }
    if (e.runtime != kNoTier && e.expires_ns > now_ns) {
      out.push_back(Report(kind, subject, e.runtime, true, e.expires_ns));
    }
  };
  for (const auto& [user, e] : users_) add(TierSubjectKind::kUser, user, e);
  for (const auto& [key, e] : networks_) {
    add(TierSubjectKind::kNetwork, FormatCidr(CidrOf(key)), e);
  }
  std::sort(out.begin(), out.end(),
            [](const TierAssignment& a, const TierAssignment& b) {
              return std::tie(a.kind, a.subject, a.runtime) <
                     std::tie(b.kind, b.subject, b.runtime);
            });
  return out;
}

}  // namespace mxlimit::internal
