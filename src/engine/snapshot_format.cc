#include "src/engine/snapshot_format.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "mxlimit/snapshot.h"

namespace mxlimit::internal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the snapshot format is written as the host's bytes");

constexpr char kMagic[8] = {'M', 'X', 'L', 'S', 'N', 'A', 'P', '\0'};
constexpr size_t kFlushBytes = size_t{1} << 20;
// More policies than any set holds (PolicyId is 16 bits).
constexpr uint32_t kMaxPolicies = 1u << 16;

uint64_t Fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

size_t KeyBytes(SnapshotTable t) { return t == SnapshotTable::kIp ? 20 : 48; }

class Reader {
 public:
  explicit Reader(std::istream& in) : in_(in) {}

  // False (and `error` set) when the stream ends first.
  bool Get(void* data, size_t n, const char* what) {
    in_.read(static_cast<char*>(data), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in_.gcount()) != n) {
      error_ = absl::DataLossError(absl::StrCat(
          "snapshot is truncated: it ends inside ", what, " at byte ", at_));
      return false;
    }
    hash_ = Fnv(hash_, data, n);
    at_ += n;
    return true;
  }
  template <typename T>
  bool GetValue(T& v, const char* what) {
    return Get(&v, sizeof(v), what);
  }
  // Reads and discards `n` bytes, hashing them.
  bool Skip(uint64_t n, const char* what) {
    char buf[4096];
    while (n > 0) {
      const size_t step =
          n < sizeof(buf) ? static_cast<size_t>(n) : sizeof(buf);
      if (!Get(buf, step, what)) return false;
      n -= step;
    }
    return true;
  }

  uint64_t hash() const { return hash_; }
  uint64_t at() const { return at_; }
  absl::Status error() const { return error_; }

 private:
  std::istream& in_;
  uint64_t hash_ = 0xcbf29ce484222325ULL;
  uint64_t at_ = 0;
  absl::Status error_;
};

}  // namespace

void SnapshotWriter::Put(const void* data, size_t n) {
  hash_ = Fnv(hash_, data, n);
  buffer_.append(static_cast<const char*>(data), n);
  if (buffer_.size() >= kFlushBytes) Flush();
}

void SnapshotWriter::Flush() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void SnapshotWriter::Header(int64_t wall_ns, uint64_t route_fingerprint,
                            std::span<const PolicyFingerprint> policies) {
  buffer_.reserve(kFlushBytes + 64);
  Put(kMagic, sizeof(kMagic));
  PutValue<uint32_t>(kSnapshotVersion);
  PutValue<uint32_t>(0);
  PutValue<int64_t>(wall_ns);
  PutValue<uint64_t>(route_fingerprint);
  PutValue<uint32_t>(static_cast<uint32_t>(policies.size()));
  for (const PolicyFingerprint& p : policies) {
    PutValue<uint16_t>(p.first);
    PutValue<uint64_t>(p.second);
  }
}

void SnapshotWriter::BeginSection(SnapshotTable table, uint64_t count) {
  PutValue<uint8_t>(static_cast<uint8_t>(table));
  PutValue<uint64_t>(count);
}

void SnapshotWriter::Entry(const void* key, size_t key_bytes, int64_t lead_ns) {
  Put(key, key_bytes);
  PutValue<int64_t>(lead_ns);
}

absl::Status SnapshotWriter::Finish() {
  PutValue<uint8_t>(kSnapshotEnd);
  const uint64_t sum = hash_;
  buffer_.append(reinterpret_cast<const char*>(&sum), sizeof(sum));
  Flush();
  out_.flush();
  if (!out_.good()) return absl::DataLossError("cannot write the snapshot");
  return absl::OkStatus();
}

absl::StatusOr<StagedSnapshot> ReadSnapshot(std::istream& in,
                                            size_t max_entries) {
  Reader r(in);
  StagedSnapshot s;
  char magic[sizeof(kMagic)];
  if (!r.Get(magic, sizeof(magic), "the header")) return r.error();
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError("not an mxlimit snapshot (no MXLSNAP header)");
  }
  uint32_t version = 0;
  uint32_t reserved = 0;
  uint32_t policies = 0;
  if (!r.GetValue(version, "the header") ||
      !r.GetValue(reserved, "the header")) {
    return r.error();
  }
  if (version != kSnapshotVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("snapshot format version ", version,
                     "; this build reads version ", kSnapshotVersion));
  }
  if (!r.GetValue(s.wall_ns, "the header") ||
      !r.GetValue(s.route_fingerprint, "the header") ||
      !r.GetValue(policies, "the header")) {
    return r.error();
  }
  if (policies > kMaxPolicies) {
    return absl::DataLossError(
        absl::StrCat("snapshot is corrupt: ", policies, " policies"));
  }
  s.policies.resize(policies);
  for (PolicyFingerprint& p : s.policies) {
    if (!r.GetValue(p.first, "the policies") ||
        !r.GetValue(p.second, "the policies")) {
      return r.error();
    }
  }
  size_t budget = max_entries;
  while (true) {
    uint8_t table = 0;
    if (!r.GetValue(table, "a section")) return r.error();
    if (table == kSnapshotEnd) break;
    if (table > static_cast<uint8_t>(SnapshotTable::kTarget)) {
      return absl::DataLossError(
          absl::StrCat("snapshot is corrupt: unknown table ", int{table},
                       " at byte ", r.at() - 1));
    }
    const auto kind = static_cast<SnapshotTable>(table);
    uint64_t count = 0;
    if (!r.GetValue(count, "a section")) return r.error();
    const size_t entry_bytes = KeyBytes(kind) + sizeof(int64_t);
    // The oldest beyond what the tables can hold are read past, unstaged.
    const uint64_t skipped = count > budget ? count - budget : 0;
    if (skipped > 0 && (skipped > (uint64_t{1} << 40) / entry_bytes ||
                        !r.Skip(skipped * entry_bytes, "a bucket"))) {
      return r.error().ok() ? absl::DataLossError(
                                  "snapshot is corrupt: "
                                  "a section too large")
                            : r.error();
    }
    for (uint64_t i = skipped; i < count; ++i) {
      SnapshotEntry e;
      e.table = kind;
      if (!r.Get(e.key.data(), KeyBytes(kind), "a bucket") ||
          !r.GetValue(e.lead_ns, "a bucket")) {
        return r.error();
      }
      s.entries.push_back(e);
    }
    budget -= static_cast<size_t>(count - skipped);
  }
  const uint64_t expected = r.hash();
  uint64_t sum = 0;
  in.read(reinterpret_cast<char*>(&sum), sizeof(sum));
  if (in.gcount() != sizeof(sum)) {
    return absl::DataLossError("snapshot is truncated: no checksum");
  }
  if (sum != expected) {
    return absl::DataLossError("snapshot is corrupt: the checksum differs");
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    return absl::DataLossError("snapshot is corrupt: bytes after the end");
  }
  return s;
}

}  // namespace mxlimit::internal
