// An engine's part of a snapshot (mxlimit/snapshot.h): writing its tables
// and putting staged buckets back. Apart from engine.cc so that none of it
// joins Check's flattened call tree.

#include <algorithm>
#include <cstring>
#include <vector>

#include "mxlimit/internal/mutex.h"
#include "src/engine/engine.h"
#include "src/policy/bucket_fingerprint.h"

namespace mxlimit::internal {
namespace {

constexpr SnapshotTable kSubjectTables[] = {
    SnapshotTable::kOrigin, SnapshotTable::kRoom, SnapshotTable::kTarget};

Scope ScopeOf(SnapshotTable t) {
  switch (t) {
    case SnapshotTable::kOrigin:
      return Scope::kOrigin;
    case SnapshotTable::kRoom:
      return Scope::kRoom;
    default:
      return Scope::kTarget;
  }
}

int64_t Lead(const GcraState& s, MonotonicTime now) {
  return s.tat == GcraState::kFresh ? INT64_MIN : s.tat - now.nanoseconds();
}

template <typename Table>
void WriteTable(SnapshotWriter& w, SnapshotTable kind, const Table& table,
                MonotonicTime now) {
  w.BeginSection(kind, table.size());
  table.ForEach([&](const auto& key, const GcraState& state) {
    w.Entry(&key, sizeof(key), Lead(state, now));
  });
}

template <typename Table, typename Key>
void Put(Table& table, const Key& key, int64_t tat_ns) {
  GcraState* state = table.FindOrAdmit(key);
  if (state->tat == GcraState::kFresh || state->tat < tat_ns) {
    state->tat = tat_ns;
  }
}

}  // namespace

std::vector<PolicyFingerprint> Engine::PolicyFingerprints() const {
  std::vector<PolicyFingerprint> out;
  out.reserve(bucket_token_.size());
  for (size_t id = 0; id < bucket_token_.size(); ++id) {
    out.emplace_back(
        bucket_token_[id],
        BucketFingerprint(policies_->policy(static_cast<PolicyId>(id))));
  }
  return out;
}

uint64_t Engine::RouteFingerprint() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (std::string_view key : route_keys_) {
    for (const char c : key) {
      h ^= static_cast<uint8_t>(c);
      h *= 0x100000001b3ULL;
    }
    h ^= 0xFF;  // a separator no key holds
    h *= 0x100000001b3ULL;
  }
  return h;
}

void Engine::WriteBuckets(SnapshotWriter& w, MonotonicTime now,
                          bool scope_tables) const {
  WriteTable(w, SnapshotTable::kIp, ip_table_, now);
  WriteTable(w, SnapshotTable::kUser, user_table_, now);
  if (!scope_tables) return;
  MutexLock lock(scope_tables_->mu);
  for (SnapshotTable t : kSubjectTables) {
    WriteTable(w, t, scope_tables_->of(ScopeOf(t)), now);
  }
}

size_t Engine::SnapshotCapacity(bool scope_tables) const {
  size_t n = ip_table_.capacity() + user_table_.capacity();
  if (scope_tables) {
    MutexLock lock(scope_tables_->mu);
    for (SnapshotTable t : kSubjectTables) {
      n += scope_tables_->of(ScopeOf(t)).capacity();
    }
  }
  return n;
}

void Engine::RestoreBucket(const SnapshotEntry& e, uint16_t token,
                           int64_t tat_ns) {
  // A restored bucket may lack its byte: IdleChecks must know.
  if (IdleToken(token)) NoteIdleTat(tat_ns);
  if (e.table == SnapshotTable::kIp) {
    IpBucketKey key;
    std::memcpy(&key, e.key.data(), sizeof(key));
    key.policy = token;
    Put(ip_table_, key, tat_ns);
    return;
  }
  UserBucketKey key;
  std::memcpy(&key, e.key.data(), sizeof(key));
  key.Rekey(token, key.route());
  if (e.table == SnapshotTable::kUser) {
    Put(user_table_, key, tat_ns);
    return;
  }
  MutexLock lock(scope_tables_->mu);
  Put(scope_tables_->of(ScopeOf(e.table)), key, tat_ns);
}

}  // namespace mxlimit::internal
